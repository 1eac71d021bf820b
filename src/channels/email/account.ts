// An email account as the pipeline sends with it (service/channel-account.ts): one chunk, at
// most 50 recipients, a POST /email/v1/deliver (client.ts), from the account's sender; and,
// when a file is read, its template checked against the account's stored ones and its shared
// attachments read (attachments.ts).
import { refuseUnknownTemplate } from '../../format/email.ts';
import {
  ChannelAccount,
  type ChannelAccountOptions,
  type RecipientOutcome,
} from '../../service/channel-account.ts';
import type { ChunkDestination } from '../../store/store.ts';
import type {
  AccountOpening,
  ChunkSender,
  OutgoingFile,
  Prepared,
  PreparingFile,
  SendingAccount,
} from '../channel.ts';
import { readAttachments } from './attachments.ts';
import { EMAIL_MAX_RECIPIENTS, EmailClient, type EmailContent } from './client.ts';

export interface EmailAccountOptions extends ChannelAccountOptions {
  readonly client: EmailClient;
  /** The sender (`from`, `fromName`: docs/service.md "Email"): the account's, checked by the service. */
  readonly from: string;
  readonly fromName?: string | undefined;
}

/** What a file sends: a stored template, or a subject and an HTML body (docs/format.md "Email files"). */
export type EmailMessage = Omit<EmailContent, 'from' | 'fromName'>;

/** How long the account's template list is used before it is asked again. */
const TEMPLATES_FRESH_MS = 60_000;

export class EmailAccount extends ChannelAccount<EmailMessage> implements SendingAccount {
  readonly channel = 'email';
  readonly chunkRecipients = EMAIL_MAX_RECIPIENTS;
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

  async sender(file: OutgoingFile): Promise<ChunkSender> {
    if (file.content?.channel !== 'email') throw new Error(`${file.fileId} is not an email file`);
    // Its shared attachments as read with the file (the folder may have changed since).
    const { attachments: listed, ...rest } = file.content;
    const message = listed?.length ? { ...rest, attachments: await file.attachments() } : rest;
    return { send: (_seq, rows, options) => this.sendChunk(message, rows, options) };
  }

  /**
   * A file's templateId must be one of the account's stored templates: else it is rejected
   * UNKNOWN_TEMPLATE before anything is sent. When the list cannot be had (the service away,
   * the key refused), the file goes on: the service checks the templateId of each recipient
   * anyway, and a refused key pauses the file. Then its shared attachments, read now and kept
   * with it (nothing is sent yet).
   */
  async prepare(file: PreparingFile): Promise<Prepared> {
    const { summary } = file;
    if (summary.accepted && summary.email?.templateId) await this.#checkTemplate(file);
    if (!summary.accepted || file.content?.channel !== 'email')
      return { content: file.content, refusal: null };
    const read = await readAttachments(file.source, file.name);
    if (!read.ok) return { content: file.content, refusal: { code: read.reason, message: read.message } };
    if (read.attachments.length === 0) return { content: file.content, refusal: null };
    await file.keepAttachments(read.attachments);
    return { content: { ...file.content, attachments: read.listed }, refusal: null };
  }

  async #checkTemplate(file: PreparingFile): Promise<void> {
    let available: readonly string[];
    try {
      available = await this.templateIds();
      // Not there: asked again unless the list is a few seconds old (a template created just
      // now, the file dropped again at once).
      const templateId = file.summary.email?.templateId;
      if (templateId && !available.includes(templateId)) available = await this.templateIds(5_000);
    } catch (err) {
      file.log.warn(
        { fileId: file.fileId, err: (err as Error).message },
        'the email templates could not be listed: the service checks the templateId when sending',
      );
      return;
    }
    refuseUnknownTemplate(file.summary, available);
  }

  close(): Promise<void> {
    return this.#client.close();
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

/** An email account of the configuration, with its own HTTP client. */
export function openEmailAccount(o: AccountOpening): EmailAccount {
  const a = o.config;
  if (a.channel !== 'email') throw new Error(`accounts.${o.name}: not an email account`);
  const concurrency = a.concurrency ?? o.api.concurrency;
  const client = new EmailClient({
    baseUrl: a.baseUrl,
    apiKey: o.secret,
    concurrency,
    timeoutMs: o.api.timeoutMs,
    retry: o.api.retry,
  });
  return new EmailAccount({
    name: o.name,
    client,
    from: a.from,
    fromName: a.fromName,
    concurrency,
    ratePerSecond: a.ratePerSecond ?? o.api.ratePerSecond,
    permitLeaseMs: o.permitLeaseMs,
    // The account as the service knows it: its key.
    ...o.budget(`email\n${a.baseUrl}\n${o.secret}`),
  });
}
