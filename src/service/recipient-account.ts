// What the accounts of the channels that send one request a recipient (WhatsApp, two-way SMS)
// share: the account's own client (recipient-client.ts), closed with it, and how an
// account of the configuration is opened: its client's connections and its send budget.
import type { AccountOpening } from '../channels/channel.ts';
import { ChannelAccount, type ChannelAccountOptions } from './channel-account.ts';
import type { RecipientClientOptions } from './recipient-client.ts';

export abstract class RecipientAccount<M, C extends { close(): Promise<void> }> extends ChannelAccount<M> {
  protected readonly client: C;

  constructor(opts: ChannelAccountOptions & { readonly client: C }) {
    super(opts);
    this.client = opts.client;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** An account's settings as the configuration gives them (after its channel was checked). */
interface RecipientAccountConfig {
  readonly baseUrl: string;
  readonly username: string;
  readonly concurrency?: number | undefined;
  readonly ratePerSecond?: number | undefined;
}

/**
 * The client's and the account's options of an account of the configuration: `chunkRecipients`
 * requests at once a chunk in flight; its budget in the store named by `channel`, the host and
 * the username.
 */
export function recipientOpening(
  o: AccountOpening,
  a: RecipientAccountConfig,
  channel: string,
  chunkRecipients: number,
): { client: RecipientClientOptions; account: ChannelAccountOptions } {
  const concurrency = a.concurrency ?? o.api.concurrency;
  return {
    client: {
      baseUrl: a.baseUrl,
      username: a.username,
      password: o.secret,
      // Each chunk in flight is up to chunkRecipients requests at once.
      connections: concurrency * chunkRecipients,
      timeoutMs: o.api.timeoutMs,
      retry: o.api.retry,
    },
    account: {
      name: o.name,
      concurrency,
      ratePerSecond: a.ratePerSecond ?? o.api.ratePerSecond,
      permitLeaseMs: o.permitLeaseMs,
      ...o.budget(`${channel}\n${a.baseUrl}\n${a.username}`),
    },
  };
}
