// A WhatsApp account as the pipeline sends with it (channel-account.ts): a chunk is at most
// WHATSAPP_CHUNK_RECIPIENTS recipients, one request each (whatsapp.ts), sent together once the
// chunk's turn has come, from the file's sending number or the account's.
import type { ChunkDestination, FileWhatsApp } from '../store/store.ts';
import { ChannelAccount, type ChannelAccountOptions, type RecipientOutcome } from './channel-account.ts';
import type { WhatsAppClient } from './whatsapp.ts';

/**
 * Recipients a WhatsApp chunk: each is its own request (spec 2.7), all in flight together, so a
 * crash leaves at most this many of a chunk in doubt.
 */
export const WHATSAPP_CHUNK_RECIPIENTS = 10;

export interface WhatsAppAccountOptions extends ChannelAccountOptions {
  readonly client: WhatsAppClient;
  /** The account's sending number (spec 2.7 `source`), unless a file names another. */
  readonly source: string;
}

export class WhatsAppAccount extends ChannelAccount<FileWhatsApp> {
  protected readonly maxRecipients = WHATSAPP_CHUNK_RECIPIENTS;
  readonly #client: WhatsAppClient;
  readonly #source: string;

  constructor(opts: WhatsAppAccountOptions) {
    super(opts);
    this.#client = opts.client;
    this.#source = opts.source;
  }

  /** Each destination's text is its template parameters as a JSON array (the reader's WhatsApp recipients). */
  protected deliver(
    content: FileWhatsApp,
    rows: readonly ChunkDestination[],
    signal: AbortSignal,
  ): Promise<{ outcomes: RecipientOutcome[]; requests: number }> {
    const source = content.source ?? this.#source;
    return this.#client.send(
      rows.map((r) => ({
        source,
        destination: r.number,
        templateId: content.templateId,
        parameters: r.text === null || r.text === '' ? [] : (JSON.parse(r.text) as string[]),
      })),
      signal,
    );
  }
}
