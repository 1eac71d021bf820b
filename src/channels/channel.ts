// What a channel is to the rest of dropline (docs/architecture.md "Channels"): the rules its
// files are read with, what a read file keeps as its content, how `validate` describes it,
// and its accounts, which send a file's chunks and check a file before it is planned. A definition is pure (the reader imports the registry); its
// account and client are loaded only when an account of the channel is opened.

import type { AccountConfig, Config } from '../config/schema.ts';
import type { TextParams } from '../errors.ts';
import type { ReadContext, RecordRules } from '../format/channel-rules.ts';
import type { ReadSummary } from '../format/read-types.ts';
import type { Logger } from '../log.ts';
import type { ChunkSendResult } from '../service/channel-account.ts';
import type { BudgetSource, Flow } from '../service/dispatch.ts';
import type { Monitored } from '../service/monitoring.ts';
import type { TokenShare } from '../service/token.ts';
import type { Source } from '../sources/source.ts';
import type { ChunkDestination, FileAttachment, FileContent } from '../store/store.ts';
import type { ChannelDirective, ChannelName } from './names.ts';

export interface Channel {
  readonly name: ChannelName;
  /** The channel-only `#!` directives its files take (BAD_DIRECTIVE names the channels of one). */
  readonly directives: readonly ChannelDirective[];
  /** Its record rules, for one file (the reader's seam: format/channel-rules.ts). */
  rules(ctx: ReadContext): RecordRules;
  /** What a read file sends, as the store keeps it on the file (null: a plain sms file). */
  contentOf(summary: ReadSummary): FileContent | null;
  /** What `validate` says of a read file of the channel (its channel, message and cost lines). */
  describe(summary: ReadSummary, templateCheck: string | null): string[];
  /**
   * `validate` with the source's account at hand: what the account says of the file (email: is
   * its template stored), or undefined when the channel asks nothing.
   */
  checkWithAccount?(summary: ReadSummary, account: AccountConfig): Promise<string>;
  /** Opens an account of the channel (its client is loaded now). */
  openAccount(opening: AccountOpening): Promise<SendingAccount>;
}

/** What the composition root gives a channel to open one of its accounts. */
export interface AccountOpening {
  readonly name: string;
  readonly config: AccountConfig;
  /** Its secret (password or API key, as names.ts says), read from the configuration. */
  readonly secret: string;
  readonly api: Config['api'];
  /** Where the service sends delivery reports (sms, rcs); undefined: nowhere (no receiver). */
  readonly notifyUrl: string | undefined;
  /** A permit outlives a worker that died holding it by this much. */
  readonly permitLeaseMs: number;
  /** The account's send budget in the store, shared by every worker: `identity` names it as the service knows it. */
  budget(identity: string): AccountBudget;
  /** Its token shared through the store by every process with the same credentials (`identity`, hashed). */
  tokenShare(identity: string): TokenShare;
}

export interface AccountBudget {
  readonly owner: string;
  readonly budget: BudgetSource;
  readonly onBudgetError: (err: unknown, what: string) => void;
}

/** One chunk's send on an account: null when it was not sent (stopped while waiting, or `start` said no). */
export interface ChunkSendOptions {
  readonly signal: AbortSignal;
  readonly flow: Flow;
  /** The write-ahead: the chunk committed inflight once its turn on the account came. */
  readonly start: () => Promise<boolean>;
}

/** How one file's chunks go out with an account. */
export interface ChunkSender {
  send(
    seq: number,
    rows: readonly ChunkDestination[],
    options: ChunkSendOptions,
  ): Promise<ChunkSendResult | null>;
}

/** A file about to be sent: what its account needs of it. */
export interface OutgoingFile {
  readonly fileId: string;
  readonly content: FileContent | null;
  /** A bulk file's message (kept once), else null. */
  readonly bulkText: string | null;
  /** Its source's `shortCode` (docs/channels.md "Two-way SMS"): where replies return; null: none set. */
  readonly shortCode: string | null;
  /** An email file's shared attachments, as read with it. */
  attachments(): Promise<FileAttachment[]>;
}

/** A file just read, before its chunks are planned: what an account may check or add. */
export interface PreparingFile {
  readonly fileId: string;
  readonly name: string;
  readonly source: Source;
  /** Its read (a check may reject it: summary.accepted false, with the reason). */
  readonly summary: ReadSummary;
  readonly content: FileContent | null;
  /** Keeps the file's attachments in the store (under the file's lease). */
  keepAttachments(attachments: FileAttachment[]): Promise<void>;
  readonly log: Logger;
}

/** What a preparation decided: the content to keep, or a refusal of the file. */
export type Prepared =
  | { readonly content: FileContent | null; readonly refusal: null }
  | {
      readonly content: FileContent | null;
      /** `params`: what `message` says beyond the code (the file's reason's parameters). */
      readonly refusal: { code: string; message: string; params?: TextParams };
    };

/** An account of a channel, opened from the configuration. */
export interface SendingAccount {
  readonly name: string;
  readonly channel: ChannelName;
  /** Chunks of one file in flight at once. */
  readonly concurrency: number;
  /** Recipients a chunk holds at most: what its requests carry at once (api.chunkSize may lower it). */
  readonly chunkRecipients: number;
  /** The service's own health checks of the account (sms, rcs): /readyz and `dropline status`. */
  readonly monitored?: Monitored | undefined;
  sender(file: OutgoingFile): Promise<ChunkSender>;
  /** A file just read, checked (and its extras read) before anything is planned. */
  prepare?(file: PreparingFile): Promise<Prepared>;
  close(): Promise<void>;
}
