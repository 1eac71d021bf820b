// The pipeline's send stage (docs/architecture.md "The pipeline"): a file's chunks sent with
// its source's account, fairly among the files sending at once, until none is pending.
import type { ChunkSender } from '../channels/channel.ts';
import { DroplineError, stateReason } from '../errors.ts';
import type { Priority } from '../format/directives.ts';
import type { Flow } from '../service/dispatch.ts';
import type {
  ChunkDestination,
  ChunkRecord,
  ChunkResult,
  FileRecord,
  HoldBackOptions,
} from '../store/store.ts';
import type { PipelineContext } from './context.ts';
import { LeaseLost, type Leases } from './lease.ts';
import type { Outputs } from './outputs.ts';
import type { Progress } from './progress.ts';
import type { Schedule } from './schedule.ts';

/** A file's share of its account among the files sending at once, by its priority. */
const PRIORITY_WEIGHT = { high: 4, normal: 2, low: 1 } as const;

/** Sends the chunks of the files this worker holds. */
export class Sender {
  readonly c: PipelineContext;
  readonly leases: Leases;
  readonly outputs: Outputs;
  readonly progress: Progress;
  readonly schedule: Schedule;

  constructor(c: PipelineContext, leases: Leases, outputs: Outputs, progress: Progress, schedule: Schedule) {
    this.c = c;
    this.leases = leases;
    this.outputs = outputs;
    this.progress = progress;
    this.schedule = schedule;
  }

  /** The file's `#! priority:` directive, else its source's `priority`. */
  private priorityOf(file: FileRecord): Priority {
    return file.priority ?? this.c.sourceConfig(file.source).priority;
  }

  /** Sends the file's pending chunks (write-ahead: inflight is committed before each request). */
  async send(file: FileRecord): Promise<FileRecord> {
    const fileId = file.fileId;
    // Resumed, retried or taken over outside its window (or before its sendAt): it waits.
    const began = this.c.now();
    const start = this.schedule.startOf(file, began);
    if (start === null || start.getTime() > began.getTime()) return this.schedule.reschedule(file, start);
    // The window closes at this instant: no chunk starts after it.
    const closes =
      this.schedule.windowOf(file.source)?.closesAt(began)?.getTime() ?? Number.POSITIVE_INFINITY;
    const holding = this.holdBackOptions(file);
    await this.recordChecks(file, holding);
    await this.outputs.dropStaleReport(file);
    const pending = await this.c.store.listChunks(fileId, ['pending']);
    // A bulk file's message is kept on the file (docs/architecture.md "Stores: the same areas on each backend").
    const bulkText = file.layout === 'bulk' ? file.bulkText : null;
    // The file goes out with its source's account, as its channel sends (src/channels).
    const account = this.c.accountOf(file.source);
    // The read refused a file of another channel than its source's (refuseOtherChannel), and
    // the configuration a source whose account sends another: this is a defect, not input.
    const channel = file.content?.channel ?? 'sms';
    if (account.channel !== channel)
      throw new DroplineError(
        'DROPLINE_ERR_CONFIG',
        `source ${file.source}: ${account.name} is not a ${channel} account`,
      );
    const sender = await account.sender({
      fileId,
      content: file.content,
      bulkText,
      shortCode: this.c.sourceConfig(file.source).shortCode ?? null,
      attachments: () => this.c.store.attachments(fileId),
    });
    const run = new FileSend({
      c: this.c,
      leases: this.leases,
      fileId,
      pending,
      holding,
      closes,
      sender,
      // Its share of the account when other files send at once.
      flow: { id: fileId, weight: PRIORITY_WEIGHT[this.priorityOf(file)] },
    });
    // A worker that fails stops the others, and the drive ends only once each has recorded
    // what its request in flight came to: none is still out when the file's lease goes.
    const ended = await Promise.allSettled(
      Array.from({ length: account.concurrency }, () =>
        run.worker().catch((err: unknown) => {
          run.stop = true;
          throw err;
        }),
      ),
    );
    const failed = ended.find((e) => e.status === 'rejected');
    if (failed) throw failed.reason;
    return this.#afterSend(fileId, run);
  }

  /** After the workers ended: paused, rescheduled at closing time, partial, submitted, or still sending. */
  async #afterSend(fileId: string, run: FileSend): Promise<FileRecord> {
    this.leases.fence(fileId);
    const after = await this.c.mustGet(fileId);
    // Paused meanwhile: whoever did it wrote the report before the chunks in flight here were
    // recorded, so it is written again with their outcomes (cancelled: driveHeld closes it).
    if (after.state === 'paused') await this.outputs.writeAllReports(fileId);
    // Closing time: the chunks not started wait, pending, for the next opening.
    if (run.closed && after.state === 'sending' && !this.c.stopping.signal.aborted && !run.lease?.lost)
      return this.schedule.reschedule(after, this.schedule.startOf(after, this.c.now()));
    if (after.state !== 'sending' || run.stop) return after;
    // Chunk states only: the chunks table, not a count over every recipient of the file.
    const open = await this.c.store.listChunks(fileId, ['pending', 'inflight', 'failed', 'in_doubt']);
    if (open.some((c) => c.state === 'pending' || c.state === 'inflight')) return after;
    if (open.length > 0) {
      const failed = open.filter((c) => c.state === 'failed').length;
      const reason = stateReason('PARTIAL', { failed, inDoubt: open.length - failed }, fileId);
      const partial = await this.progress.finish(fileId, 'partial', ['sending'], reason);
      return partial ?? after;
    }
    return this.progress.submitted(fileId, ['sending']);
  }

  /**
   * What a chunk is checked against just before it is sent (Store.holdBack: the contact
   * ledger's day and week are the store's, on its clock); null when there is nothing to check
   * (no replies received, no contact limit).
   */
  private holdBackOptions(file: FileRecord): HoldBackOptions | null {
    const limit = this.c.config.contactLimit;
    const optOuts = this.c.config.replies.smpp !== null;
    if (!limit && !optOuts) return null;
    const account = this.c.sourceConfig(file.source).account;
    // One ledger per entity: every account naming it, whatever its channel.
    const contactLimit = limit
      ? {
          entity: this.c.config.accounts[account]?.entity ?? limit.entity,
          channel: file.content?.channel ?? 'sms',
          timezone: limit.timezone,
          perDay: limit.perDay,
          channelsPerWeek: limit.channelsPerWeek,
        }
      : null;
    return { optOuts, contactLimit };
  }

  /** What `dropline compliance` prints beside the file's contacts: who sent them, in which window. */
  private async recordChecks(file: FileRecord, holding: HoldBackOptions | null): Promise<void> {
    const limit = holding?.contactLimit;
    if (!limit) return;
    const own = this.c.sourceConfig(file.source).sendWindow;
    const window = own === undefined ? this.c.config.sendWindow : own;
    await this.c.store.recordFileChecks(file.fileId, {
      account: this.c.sourceConfig(file.source).account,
      channel: limit.channel,
      entity: limit.entity,
      window: window === null ? 'none' : typeof window === 'string' ? window : JSON.stringify(window),
    });
  }
}

interface FileSendOptions {
  c: PipelineContext;
  leases: Leases;
  fileId: string;
  /** The file's pending chunks, taken in order by the workers. */
  pending: ChunkRecord[];
  holding: HoldBackOptions | null;
  /** When the send window closes (ms since the epoch): no chunk starts after it. */
  closes: number;
  /** The file's chunks sent with its account. */
  sender: ChunkSender;
  flow: Flow;
}

/**
 * One file's send under its lease: its pending chunks taken in turn by the workers, each
 * chunk's recipients read ahead, set inflight (fenced) and held back when its turn on the
 * account comes, sent, and its result recorded. `stop` ends every worker between chunks.
 */
class FileSend {
  readonly #o: FileSendOptions;
  /** No worker takes another chunk (the file paused, cancelled, its lease lost or its window closed). */
  stop = false;
  /** The send window closed during the send. */
  closed = false;
  readonly lease: { lost: boolean } | undefined;
  /** The next chunk's destinations, read while this one is sent. */
  readonly #ahead = new Map<number, Promise<ChunkDestination[]>>();
  /** Chunks whose start held recipients back: their destinations are read again. */
  readonly #reread = new Set<number>();
  /**
   * Fenced in one statement: a chunk goes inflight only while this worker holds the file's
   * lease, unexpired (withLease's timer renews it), and the file is still sending (not
   * paused or cancelled).
   */
  readonly #guard: { owner: string; fileState: 'sending' };

  constructor(options: FileSendOptions) {
    this.#o = options;
    this.lease = options.leases.held.get(options.fileId);
    this.#guard = { owner: options.c.owner, fileState: 'sending' } as const;
  }

  #closing(): boolean {
    if (!this.closed && this.#o.c.now().getTime() >= this.#o.closes) this.closed = true;
    return this.closed;
  }

  /** Ends this worker's sends of the file (a lost lease): the others see `stop` between chunks. */
  #lost(): void {
    this.#o.leases.lose(this.#o.fileId);
    this.stop = true;
  }

  /**
   * A chunk's destinations (a read: its rows change only under this worker's lease, and it
   * still goes inflight before its request).
   */
  #destinations(seq: number): Promise<ChunkDestination[]> {
    return this.#o.c.store.chunkDestinations(this.#o.fileId, seq);
  }

  #readAhead(): void {
    const next = this.#o.pending[0];
    if (!next || this.#ahead.has(next.seq) || this.stop) return;
    const read = this.#destinations(next.seq);
    read.catch(() => {});
    this.#ahead.set(next.seq, read);
  }

  /** The chunk is inflight; false when it is not this worker's to send (stop or lost said why). */
  async #begin(seq: number): Promise<boolean> {
    const { c, fileId } = this.#o;
    // The send was stopped while this chunk waited for its turn (another worker failed, lost
    // the lease, or saw the file paused): it stays pending.
    if (this.stop) return false;
    // A chunk whose turn comes after closing time waits for the next opening, pending.
    if (this.#closing()) {
      this.stop = true;
      return false;
    }
    if (await this.#toInflight(seq)) return true;
    if (this.#reread.has(seq)) return false;
    const current = await c.store.getFile(fileId);
    if (current?.leaseOwner !== c.owner) {
      this.#lost();
      return false;
    }
    if (current.state !== 'sending') {
      this.stop = true;
      return false;
    }
    // Still this worker's and sending: the chunk was no longer pending, or the lease lapsed
    // with nobody taking the file (its renewal held up): renewed, then asked once more.
    if (!(await c.store.renewLease(fileId, c.owner, c.config.leaseMs))) {
      this.#lost();
      return false;
    }
    return this.#toInflight(seq);
  }

  /**
   * The write-ahead. Under campaign rules the store holds recipients back in the same
   * transaction (Store.beginChunk: opted out since the read, or contacted already), so a
   * contact is taken only by a chunk that goes out, on the day it goes out; when it held any
   * back, the chunk stays pending and its destinations are read again.
   */
  async #toInflight(seq: number): Promise<boolean> {
    const { c, fileId, holding } = this.#o;
    if (!holding) return c.store.setChunkState(fileId, seq, 'inflight', ['pending'], this.#guard);
    const begun = await c.store.beginChunk(fileId, seq, this.#guard, holding);
    if (typeof begun === 'object') {
      c.log.info({ fileId, chunk: seq, ...begun.held }, `chunk ${seq}: recipients held back`);
      this.#reread.add(seq);
    }
    return begun === 'began';
  }

  /** One worker: chunks taken in turn until none is left or the send stops. */
  async worker(): Promise<void> {
    // A chunk's result is recorded while the worker starts and sends its next chunk, one
    // result of this worker at a time: a crash meanwhile leaves it inflight, in doubt at the
    // next start, as a crash during its request would.
    const results = new ChunkResults(this.#o.c, this.#o.fileId);
    try {
      await this.#loop(results);
    } catch (err) {
      await results.last()?.catch(() => {});
      throw err;
    }
    // The worker's last result is recorded before it ends, whatever ended it.
    await results.last();
  }

  async #loop(results: ChunkResults): Promise<void> {
    const { c, fileId, pending, holding, sender, flow } = this.#o;
    const stopping = c.stopping.signal;
    for (let chunk = pending.shift(); chunk && !this.stop && !stopping.aborted; chunk = pending.shift()) {
      if (!this.lease || this.lease.lost) return this.#lost();
      if (this.#closing()) {
        // Not sent: it stays pending for the next opening.
        this.stop = true;
        return;
      }
      const read = this.#ahead.get(chunk.seq) ?? this.#destinations(chunk.seq);
      this.#ahead.delete(chunk.seq);
      const rows = await read;
      this.#readAhead();
      if (rows.length === 0 && holding) {
        // Every recipient of the chunk was held back: nothing to send, the chunk is done.
        await c.store.setChunkState(fileId, chunk.seq, 'accepted', ['pending'], this.#guard);
        continue;
      }
      // The chunk goes inflight only once its turn on the account has come (it may wait
      // behind other files' chunks): a chunk that only waited is never in doubt.
      const seq = chunk.seq;
      const options = { signal: stopping, flow, start: () => this.#begin(seq) };
      const sent = await sender.send(seq, rows, options);
      if (!sent) {
        // Recipients held back at its start: its other destinations go out in a new request.
        if (this.#reread.delete(seq)) pending.unshift(chunk);
        continue;
      }
      await results.record(seq, sent.result, rows.length);
      const refused = sent.refused;
      // 401/403: the account was refused; the file pauses with the service's reason.
      if (refused !== null) {
        this.stop = true;
        await results.last();
        try {
          await c.transition(
            fileId,
            'paused',
            ['sending'],
            stateReason('ACCOUNT_REFUSED', { text: refused }),
          );
        } catch (err) {
          if (err instanceof LeaseLost) return;
          throw err;
        }
      }
    }
  }
}

/** One worker's chunk results, recorded one at a time while its next chunk is sent. */
class ChunkResults {
  readonly #c: PipelineContext;
  readonly #fileId: string;
  #recording: Promise<void> | null = null;

  constructor(c: PipelineContext, fileId: string) {
    this.#c = c;
    this.#fileId = fileId;
  }

  /** The result being recorded, if any. */
  last(): Promise<void> | null {
    return this.#recording;
  }

  async record(seq: number, chunkResult: ChunkResult, destinations: number): Promise<void> {
    const c = this.#c;
    const fileId = this.#fileId;
    // The previous result first; this one is recorded even when that one failed.
    const prior = await this.#recording?.then(
      () => null,
      (err: unknown) => ({ err }),
    );
    // Not fenced: what the service answered is a fact, whoever holds the lease now (a
    // worker that took over meanwhile has this chunk in doubt, and this settles it).
    // Its contacts the service never took are given back only while the file is still this
    // worker's (docs/campaign-rules.md "Contacts given back").
    const recording = c.store
      .recordChunkResult(fileId, seq, chunkResult, { owner: c.owner })
      .then((state) => {
        c.touch(fileId);
        c.log[state === 'failed' ? 'error' : state === 'in_doubt' || state === 'rejected' ? 'warn' : 'info'](
          {
            fileId,
            chunk: seq,
            destinations,
            state,
            attempts: chunkResult.attempts,
            ...(chunkResult.errorCode ? { code: chunkResult.errorCode } : {}),
          },
          `chunk ${seq} ${state}`,
        );
      });
    this.#recording = recording;
    // Awaited by the next chunk or when the worker ends; until then its failure is not unhandled.
    recording.catch(() => {});
    if (prior) throw prior.err;
  }
}
