// An email account as the pipeline sends with it (channel-account.ts): one chunk, at most 50
// recipients, a POST /email/v1/deliver (email.ts), from the account's sender; and the
// account's stored templates, for the check made when a file is read.
import type { ChunkDestination } from '../store/store.ts';
import { ChannelAccount, type ChannelAccountOptions, type RecipientOutcome } from './channel-account.ts';
import { EMAIL_MAX_RECIPIENTS, type EmailClient, type EmailContent } from './email.ts';

export interface EmailAccountOptions extends ChannelAccountOptions {
  readonly client: EmailClient;
  /** The sender (spec 2.8 `from`, `fromName`): the account's, checked by the service. */
  readonly from: string;
  readonly fromName?: string | undefined;
}

/** What a file sends: a stored template, or a subject and an HTML body (FORMAT.md 8.3). */
export type EmailMessage = Omit<EmailContent, 'from' | 'fromName'>;

/** How long the account's template list is used before it is asked again. */
const TEMPLATES_FRESH_MS = 60_000;

export class EmailAccount extends ChannelAccount<EmailMessage> {
  protected readonly maxRecipients = EMAIL_MAX_RECIPIENTS;
  readonly #client: EmailClient;
  readonly #from: Pick<EmailContent, 'from' | 'fromName'>;
  #templates: { at: number; ids: Promise<readonly string[]> } | null = null;

  constructor(opts: EmailAccountOptions) {
    super(opts);
    this.#client = opts.client;
    this.#from =
      opts.fromName === undefined ? { from: opts.from } : { from: opts.from, fromName: opts.fromName };
  }

  /** Each destination's text is its fields as JSON (the reader's email recipients), its number the address. */
  protected async deliver(
    message: EmailMessage,
    rows: readonly ChunkDestination[],
    signal: AbortSignal,
  ): Promise<{ outcomes: RecipientOutcome[]; requests: number }> {
    return this.#client.send(
      { ...message, ...this.#from },
      rows.map((r) => ({ recipient: r.number, fields: fieldsOf(r.text) })),
      signal,
    );
  }

  /**
   * The account's stored templates (GET /email/v1/templates), asked again when the list held is
   * older than `maxAgeMs` (a minute by default). A failure is thrown and not kept: the next call
   * asks again.
   */
  templateIds(maxAgeMs = TEMPLATES_FRESH_MS, now: number = Date.now()): Promise<readonly string[]> {
    if (this.#templates === null || now - this.#templates.at >= maxAgeMs) {
      const ids = this.#client.templates();
      const entry = { at: now, ids };
      this.#templates = entry;
      ids.catch(() => {
        if (this.#templates === entry) this.#templates = null;
      });
    }
    return this.#templates.ids;
  }
}

function fieldsOf(text: string | null): Record<string, string> | undefined {
  if (text === null || text === '') return undefined;
  const parsed = JSON.parse(text) as Record<string, string>;
  return Object.keys(parsed).length > 0 ? parsed : undefined;
}
