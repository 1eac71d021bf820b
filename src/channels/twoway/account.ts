// A two-way SMS account as the pipeline sends with it (channel-account.ts): a chunk is at most
// TWOWAY_CHUNK_RECIPIENTS recipients, one POST /momessage each (client.ts), sent together once
// the chunk's turn has come, from the file's source's short code or the account's.
import type { ChannelAccountOptions, RecipientOutcome } from '../../service/channel-account.ts';
import { RecipientAccount, recipientOpening } from '../../service/recipient-account.ts';
import type { ChunkDestination } from '../../store/store.ts';
import type { AccountOpening, ChunkSender, OutgoingFile, SendingAccount } from '../channel.ts';
import { TwoWayClient } from './client.ts';

/**
 * Recipients a two-way chunk: each is its own request (docs/channels.md "Two-way SMS"), all in
 * flight together, so a crash leaves at most this many of a chunk in doubt.
 */
export const TWOWAY_CHUNK_RECIPIENTS = 10;

export interface TwoWayAccountOptions extends ChannelAccountOptions {
  readonly client: TwoWayClient;
  /** The short code assigned to the account, unless the file's source names another. */
  readonly shortCode: string;
}

/** What one chunk of a file is sent with: its short code and, for a bulk file, its message. */
interface TwoWaySend {
  readonly shortCode: string;
  readonly bulkText: string | null;
}

export class TwoWayAccount extends RecipientAccount<TwoWaySend, TwoWayClient> implements SendingAccount {
  readonly channel = 'twoway';
  readonly chunkRecipients = TWOWAY_CHUNK_RECIPIENTS;
  readonly #shortCode: string;

  constructor(opts: TwoWayAccountOptions) {
    super(opts);
    this.#shortCode = opts.shortCode;
  }

  async sender(file: OutgoingFile): Promise<ChunkSender> {
    if (file.content?.channel !== 'twoway') throw new Error(`${file.fileId} is not a two-way file`);
    const send: TwoWaySend = { shortCode: file.shortCode ?? this.#shortCode, bulkText: file.bulkText };
    return { send: (_seq, rows, options) => this.sendChunk(send, rows, options) };
  }

  /**
   * What answers to users' replies to the account's short code go out with (docs/opt-outs.md
   * "Answers"): its client, so its token, retries and in-doubt rules.
   */
  get replies(): { readonly shortCode: string; readonly client: TwoWayClient } {
    return { shortCode: this.#shortCode, client: this.client };
  }

  /** A bulk file's recipients after its first share its message (stored once). */
  protected deliver(
    send: TwoWaySend,
    rows: readonly ChunkDestination[],
    signal: AbortSignal,
  ): Promise<{ outcomes: RecipientOutcome[]; requests: number }> {
    return this.client.send(
      rows.map((r) => ({
        text: r.text ?? send.bulkText ?? '',
        phoneNumber: r.number,
        shortCode: send.shortCode,
      })),
      signal,
    );
  }
}

/** A two-way account of the configuration: the SMS host's token, shared as its SMS accounts share it. */
export function openTwoWayAccount(o: AccountOpening): TwoWayAccount {
  const a = o.config;
  if (a.channel !== 'twoway') throw new Error(`accounts.${o.name}: not a two-way account`);
  const opening = recipientOpening(o, a, 'twoway', TWOWAY_CHUNK_RECIPIENTS);
  const client = new TwoWayClient({
    ...opening.client,
    token: { expiresInUnitMs: o.api.tokenExpiresInUnitMs, maxLifetimeS: o.api.tokenMaxLifetimeS },
    // The same identity as an SMS account's (sms/account.ts openMtAccount): the service keeps one
    // token per account, so an SMS and a two-way account on the same credentials share it.
    tokenShare: o.tokenShare(`${a.baseUrl}\n${a.username}\n${o.secret}`),
  });
  return new TwoWayAccount({ ...opening.account, client, shortCode: a.shortCode });
}
