// A WhatsApp account as the pipeline sends with it (channel-account.ts): a chunk is at most
// WHATSAPP_CHUNK_RECIPIENTS recipients, one request each (whatsapp.ts), sent together once the
// chunk's turn has come, from the file's sending number or the account's.
import type { ChannelAccountOptions, RecipientOutcome } from '../../service/channel-account.ts';
import { RecipientAccount, recipientOpening } from '../../service/recipient-account.ts';
import type { ChunkDestination, FileWhatsApp } from '../../store/store.ts';
import type { AccountOpening, ChunkSender, OutgoingFile, SendingAccount } from '../channel.ts';
import { WhatsAppClient } from './client.ts';

/**
 * Recipients a WhatsApp chunk: each is its own request (docs/channels.md "WhatsApp"), all in flight together, so a
 * crash leaves at most this many of a chunk in doubt.
 */
export const WHATSAPP_CHUNK_RECIPIENTS = 10;

export interface WhatsAppAccountOptions extends ChannelAccountOptions {
  readonly client: WhatsAppClient;
  /** The account's sending number (`source`, docs/channels.md "WhatsApp"), unless a file names another. */
  readonly source: string;
}

export class WhatsAppAccount
  extends RecipientAccount<FileWhatsApp, WhatsAppClient>
  implements SendingAccount
{
  readonly channel = 'whatsapp';
  readonly chunkRecipients = WHATSAPP_CHUNK_RECIPIENTS;
  readonly #source: string;

  constructor(opts: WhatsAppAccountOptions) {
    super(opts);
    this.#source = opts.source;
  }

  async sender(file: OutgoingFile): Promise<ChunkSender> {
    const content = file.content;
    if (content?.channel !== 'whatsapp') throw new Error(`${file.fileId} is not a WhatsApp file`);
    const { bulkText } = file;
    return {
      // A bulk file's recipients after its first share the first one's parameters (stored once).
      send: (_seq, rows, options) =>
        this.sendChunk(
          content,
          bulkText === null ? rows : rows.map((r) => (r.text === null ? { ...r, text: bulkText } : r)),
          options,
        ),
    };
  }

  /** Each destination's text is its template parameters as a JSON array (the reader's WhatsApp recipients). */
  protected deliver(
    content: FileWhatsApp,
    rows: readonly ChunkDestination[],
    signal: AbortSignal,
  ): Promise<{ outcomes: RecipientOutcome[]; requests: number }> {
    const source = content.source ?? this.#source;
    return this.client.send(
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

/** A WhatsApp account of the configuration, with its own HTTP client. */
export function openWhatsAppAccount(o: AccountOpening): WhatsAppAccount {
  const a = o.config;
  if (a.channel !== 'whatsapp') throw new Error(`accounts.${o.name}: not a WhatsApp account`);
  const opening = recipientOpening(o, a, 'whatsapp', WHATSAPP_CHUNK_RECIPIENTS);
  return new WhatsAppAccount({
    ...opening.account,
    client: new WhatsAppClient(opening.client),
    source: a.source,
  });
}
