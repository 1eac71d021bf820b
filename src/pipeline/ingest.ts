// The pipeline's ingest stage (docs/architecture.md "The pipeline"): a claimed file read from
// its source, checked against its claim, its recipients recorded and its chunks planned.
import { createHash } from 'node:crypto';
import pLimit from 'p-limit';
import type { Prepared } from '../channels/channel.ts';
import { channelOf } from '../channels/index.ts';
import type { SourceConfig } from '../config/schema.ts';
import { type FileReasonCode, rejectionReason, type TextParams } from '../errors.ts';
import type { Sniff } from '../format/decode.ts';
import { makeNumberRules, type NumberRules } from '../format/numbers.ts';
import { type ReadBatch, type ReadSummary, readDropFile, refuseOtherChannel } from '../format/reader.ts';
import { ChunkPlanner } from '../plan/chunks.ts';
import { fileRefusalOf, type Source, SourceFileError } from '../sources/source.ts';
import { type FileContent, type FileRecord, NOTHING_SENT, type RecipientInsert } from '../store/store.ts';
import type { PipelineContext } from './context.ts';
import type { Leases } from './lease.ts';
import type { Outputs } from './outputs.ts';
import type { Schedule } from './schedule.ts';

// Rows per insertRecipients transaction (~500 for a million rows). 10,000 cost no less time
// but kept ~10k row objects alive across young-generation GCs: V8 grew its new space to
// 128 MB during ingest (peak RSS ~380 MB at 1M recipients against ~290 MB with 2,000).
const INSERT_BATCH = 2000;

/** Batches of recipients being inserted while the reader goes on (ingest). */
const INSERTS_IN_FLIGHT = 2;

/** Claim-time sniffs kept for their ingest: a claim batch's worth, and more. */
const SNIFFS_KEPT = 2000;

/** Files read at once by one worker (each holds its duplicate index and read buffers). */
const READS_AT_ONCE = 2;

export function tooLarge(
  maxBytes: number,
  bytes: number,
): { reason: 'FILE_TOO_LARGE'; message: string; params: TextParams } {
  return {
    reason: 'FILE_TOO_LARGE',
    message: `the file is larger than ${maxBytes} bytes (maxFileBytes): ${bytes} bytes or more`,
    params: { max: maxBytes, bytes },
  };
}

/**
 * The bytes of a claimed file, checked against its claim as they pass: never more than the
 * claimed size, and at the end exactly its size and sha256. Whatever reads through it
 * (the reader's sniff and parse passes) fails with FILE_CHANGED before it can finish on
 * content other than the claimed one, so nothing of it reaches `sending`.
 */
export async function* claimedBytes(
  chunks: AsyncIterable<Uint8Array>,
  claimed: Pick<FileRecord, 'path' | 'bytes' | 'sha256'>,
): AsyncGenerator<Uint8Array> {
  const hash = createHash('sha256');
  let bytes = 0;
  const changed = (what: string): SourceFileError =>
    new SourceFileError(
      'FILE_CHANGED',
      `${claimed.path} changed after it was claimed (${what}; claimed ${claimed.bytes} bytes, sha256 ${claimed.sha256})`,
    );
  for await (const chunk of chunks) {
    bytes += chunk.byteLength;
    if (bytes > claimed.bytes) throw changed(`more than ${claimed.bytes} bytes now`);
    hash.update(chunk);
    yield chunk;
  }
  if (bytes !== claimed.bytes) throw changed(`${bytes} bytes now`);
  const sha256 = hash.digest('hex');
  if (sha256 !== claimed.sha256) throw changed(`sha256 ${sha256} now`);
}

/** `items` until one fails with a file refusal, which is kept in `out`; other errors pass. */
async function* untilRefused<T>(
  items: AsyncIterable<T>,
  path: string,
  out: { error: SourceFileError | null },
): AsyncGenerator<T> {
  try {
    yield* items;
  } catch (err) {
    const refusal = fileRefusalOf(err, path);
    if (!refusal) throw err;
    out.error = refusal;
  }
}

/** Reads claimed files (a few at once) into the store. */
export class Ingest {
  readonly c: PipelineContext;
  readonly leases: Leases;
  readonly outputs: Outputs;
  readonly schedule: Schedule;

  constructor(c: PipelineContext, leases: Leases, outputs: Outputs, schedule: Schedule) {
    this.c = c;
    this.leases = leases;
    this.outputs = outputs;
    this.schedule = schedule;
  }

  private readonly rules = new Map<string, NumberRules>();
  /** Claim-time sniffs by sha256, for the ingest that follows (rememberSniff). */
  private readonly sniffs = new Map<string, Sniff>();
  /** Records read so far of the files this process is reading (progress before the counts exist). */
  readonly reading = new Map<string, number>();
  /** Files read and recorded at once, whatever the files in flight (memory stays flat). */
  readonly reads = pLimit(READS_AT_ONCE);
  private numberRules(cfg: SourceConfig): NumberRules {
    let r = this.rules.get(cfg.name);
    if (!r) {
      r = makeNumberRules(cfg.defaultCountry, cfg.allowedCountries);
      this.rules.set(cfg.name, r);
    }
    return r;
  }

  /**
   * The claim's read of a file (encoding, BOM, line count), kept by content for its ingest:
   * the reader then reads the file once more instead of twice. Keyed by sha256, so it can
   * never describe other bytes than those it was made of; and the ingest's one read is
   * checked against the same sha256 (claimedBytes).
   */
  rememberSniff(sniffed: Sniff): void {
    if (sniffed.sha256 === null) return;
    if (this.sniffs.size >= SNIFFS_KEPT) this.sniffs.delete(this.sniffs.keys().next().value!);
    this.sniffs.set(sniffed.sha256, sniffed);
  }

  /** Reads a claimed file into the store: its rows, its chunks, then scheduled or sending. */
  async ingest(file: FileRecord): Promise<void> {
    const source = this.c.source(file.source);
    const cfg = this.c.sourceConfig(file.source);
    await this.c.toProcessing(file, source);
    file = await this.c.mustGet(file.fileId);
    this.leases.fence(file.fileId);
    await this.c.store.clearRecipients(file.fileId);
    // A chunk is what the account's requests carry at once (an email request at most 50
    // recipients; WhatsApp's the few sent together), api.chunkSize at most.
    const planner = new ChunkPlanner(
      Math.min(this.c.accountOf(file.source).chunkRecipients, this.c.config.api.chunkSize),
    );
    if (file.bytes > cfg.maxFileBytes) {
      await this.refuse(file, source, tooLarge(cfg.maxFileBytes, file.bytes));
      return;
    }
    const rows = new RowBatch(planner);
    const refused = await this.#readRows(file, source, cfg, rows);
    if (refused) {
      await this.refuse(file, source, refused);
      return;
    }
    this.leases.fence(file.fileId);
    if (rows.rows.length > 0) await this.c.store.insertRecipients(file.fileId, rows.rows);
    if (!rows.summary) throw new Error('the reader ended without a summary');
    await this.#conclude(file, source, cfg, { summary: rows.summary, bulkText: rows.bulkText }, planner);
  }

  /**
   * Reads the file through the reader into `rows`, inserting full batches as it goes; the
   * last batch is left in `rows`. A refusal (changed since the claim, not a regular file…)
   * ends the read and is returned; its rows go.
   */
  async #readRows(
    file: FileRecord,
    source: Source,
    cfg: SourceConfig,
    rows: RowBatch,
  ): Promise<SourceFileError | null> {
    const claimed = file;
    const sniffed = this.sniffs.get(file.sha256);
    this.sniffs.delete(file.sha256);
    const refused: { error: SourceFileError | null } = { error: null };
    const read = readDropFile(() => claimedBytes(source.open(claimed.path), claimed), {
      ...(sniffed?.bytes === file.bytes ? { sniffed } : {}),
      name: file.name,
      layout: cfg.layout,
      numberRules: this.numberRules(cfg),
      suppression: (await this.c.suppression?.forSource(file.source)) ?? null,
      consent: (await this.c.consent?.forChannel(cfg.channel)) ?? null,
      maxInvalidRatio: cfg.maxInvalidRatio,
      maxFileBytes: cfg.maxFileBytes,
      allowDirectives: cfg.allowDirectives,
      transliterate: cfg.transliterate,
      sendAtTimeZone: this.schedule.windowOf(file.source)?.spec.timezone ?? 'America/Bogota',
      channel: cfg.channel,
      email: cfg.email ?? null,
      whatsapp: cfg.whatsapp ?? null,
    });
    // What compliance prints beside the file's contacts: the lists it is read against.
    const lists = [
      ...(this.c.suppression?.checked?.(file.source) ?? []),
      ...(this.c.consent?.checked() ?? []),
    ];
    if (lists.length > 0) await this.c.store.recordFileChecks(file.fileId, { lists });
    const inserts = new RowInserts(this.c, this.leases, file.fileId, this.reading);
    // The progress entry goes whatever ends the read (a store error too).
    try {
      for await (const batch of untilRefused(read, file.path, refused)) {
        for (const item of batch) rows.add(item);
        if (rows.rows.length >= INSERT_BATCH) await inserts.insert(rows.take(), rows.idx);
      }
      await inserts.settle(0);
    } finally {
      // A read that failed: its inserts end before anything else touches the file's rows.
      await inserts.ended();
      this.reading.delete(file.fileId);
    }
    return refused.error;
  }

  /** After the read: the file rejected, or its chunks planned and the file scheduled or sending. */
  async #conclude(
    file: FileRecord,
    source: Source,
    cfg: SourceConfig,
    read: { summary: ReadSummary; bulkText: string | null },
    planner: ChunkPlanner,
  ): Promise<void> {
    const { summary } = read;
    const patch = {
      ...patchOf(summary),
      bulkText: read.bulkText,
      shortCode: this.c.shortCodeOf(file.source),
    };
    refuseOtherChannel(summary, cfg.channel);
    // What the file's account checks (or reads) before anything is planned: an email file's
    // template and shared attachments.
    const prepared = await this.#prepare(file, source, summary, patch.content);
    patch.content = prepared.content;
    if (!summary.accepted || prepared.refusal) {
      const { code, message, params } = prepared.refusal ?? summary.rejection!;
      const rejection = { code, message };
      const rejected = await this.c.transition(file.fileId, 'rejected', ['validating'], {
        ...patch,
        rejection,
        ...rejectionReason({ ...rejection, params: params ?? {} }),
      });
      if (rejected) await this.outputs.finishFailed(rejected, source);
      return;
    }
    const planned = planner.chunks();
    const chunks = planned.length;
    this.leases.fence(file.fileId);
    await this.c.store.insertChunks(file.fileId, planned);
    const sendAt = summary.directives.sendAt?.at ?? null;
    const now = this.c.now();
    const start = this.schedule.startOf({ source: file.source, sendAt }, now);
    if (start === null || start.getTime() > now.getTime())
      await this.c.transition(file.fileId, 'scheduled', ['validating'], {
        ...patch,
        sendAt,
        ...this.schedule.scheduledPatch({ source: file.source, sendAt }, start),
      });
    else await this.c.transition(file.fileId, 'sending', ['validating'], { ...patch, sendAt });
    // The manifest only: every row of the report would still say pending. Its counts are
    // known without counting a million rows: nothing of the file was sent yet (sending
    // starts after validating, and clearRecipients wiped any earlier attempt).
    await this.outputs.writeReports(file.fileId, {
      report: false,
      counts: { ...patch.counts, ...NOTHING_SENT, chunks, chunksPending: chunks },
    });
  }

  #prepare(
    file: FileRecord,
    source: Source,
    summary: ReadSummary,
    content: FileContent | null,
  ): Promise<Prepared> {
    const account = this.c.accountOf(file.source);
    if (!account.prepare) return Promise.resolve({ content, refusal: null });
    return account.prepare({
      fileId: file.fileId,
      name: file.name,
      source,
      summary,
      content,
      keepAttachments: async (attachments) => {
        this.leases.fence(file.fileId);
        await this.c.store.setAttachments(file.fileId, attachments);
      },
      log: this.c.log,
    });
  }

  /**
   * A claimed file that cannot be read as claimed (changed since, a link or FIFO in its
   * place, unreadable): rejected alone, with none of the rows read from it kept.
   */
  private async refuse(
    file: FileRecord,
    source: Source,
    refusal: { reason: FileReasonCode; message: string; params?: TextParams },
  ): Promise<void> {
    this.leases.fence(file.fileId);
    await this.c.store.clearRecipients(file.fileId);
    const rejection = { code: refusal.reason, message: refusal.message };
    this.c.log.warn(
      { fileId: file.fileId, source: file.source, file: file.name, code: refusal.reason },
      `${file.name} rejected ${refusal.reason}: ${refusal.message}`,
    );
    const rejected = await this.c.transition(file.fileId, 'rejected', ['validating'], {
      rejection,
      ...rejectionReason({ ...rejection, params: refusal.params ?? {} }),
      // The records-read progress of a read it ended: none of those rows is kept.
      counts: { records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0, segments: 0 },
    });
    if (rejected) await this.outputs.finishFailed(rejected, source);
  }
}

/** What a file's read records on it: its layout, counts, cost, content and first errors. */
function patchOf(summary: ReadSummary) {
  return {
    layout: summary.layout,
    encoding: summary.encoding,
    separator: summary.separator,
    header: summary.header,
    priority: summary.directives.priority,
    counts: {
      records: summary.records,
      valid: summary.valid,
      invalid: summary.invalid,
      duplicates: summary.duplicates,
      suppressed: summary.suppressed,
      segments: summary.segments,
    },
    errorCounts: summary.errorCounts as Record<string, number>,
    cost: { segmentsByCountry: summary.segmentsByCountry, transliteration: summary.transliteration },
    content: channelOf(summary.channel).contentOf(summary),
    errors: summary.errors
      .slice(0, 100)
      .map((e) => ({ line: e.line, code: e.code, message: e.message, value: e.value })),
  };
}

/** A file's rows as the reader yields its records, each placed in its chunk, in batches for the store. */
class RowBatch {
  rows: RecipientInsert[] = [];
  /** The last row's id. */
  idx = 0;
  summary: ReadSummary | null = null;
  readonly #planner: ChunkPlanner;
  /**
   * A bulk file's message (its first bulk recipient's text: k > 0 only in bulk files), kept on
   * the file (FileRecord.bulkText), not on its rows.
   */
  bulkText: string | null = null;
  #bulkTextSeen = false;

  constructor(planner: ChunkPlanner) {
    this.#planner = planner;
  }

  add(item: ReadBatch[number]): void {
    switch (item.kind) {
      case 'recipient': {
        if (item.k > 0 && !this.#bulkTextSeen) {
          this.bulkText = item.text;
          this.#bulkTextSeen = true;
        }
        this.rows.push({
          idx: ++this.idx,
          line: item.line,
          k: item.k,
          number: item.number,
          value: null,
          messageId: item.messageId,
          generatedMessageId: item.messageId === null,
          text: item.k === 0 ? item.text : null,
          chunkSeq: this.#planner.place(item.number),
          outcome: 'pending',
          code: null,
          detail: null,
          smsCount: item.segments,
        });
        break;
      }
      case 'invalid':
      case 'duplicate':
      case 'suppressed':
        this.rows.push({
          idx: ++this.idx,
          line: item.line,
          k: item.k,
          number: item.number,
          value: item.value,
          messageId: null,
          text: null,
          chunkSeq: null,
          outcome: item.kind,
          code: item.code,
          detail: item.message,
          smsCount: null,
        });
        break;
      case 'summary':
        this.summary = item;
        break;
      default:
        break;
    }
  }

  /** The rows gathered so far; the batch starts again empty. */
  take(): RecipientInsert[] {
    const rows = this.rows;
    this.rows = [];
    return rows;
  }
}

/**
 * Inserts in flight while the next batch is read and validated: a store in another process
 * (PostgreSQL) writes batches on connections of their own while this thread parses. Each
 * batch's rows carry their ids (idx), so the order they commit in does not matter; all are
 * settled before anything else writes the file's rows.
 */
class RowInserts {
  readonly #c: PipelineContext;
  readonly #leases: Leases;
  readonly #fileId: string;
  readonly #reading: Map<string, number>;
  readonly #inserting = new Set<Promise<void>>();
  /** The first insert that failed: thrown by the next settle, however long ago it ended. */
  #failed: { err: unknown } | null = null;
  readonly #seen = { records: 0, valid: 0, invalid: 0, duplicates: 0, suppressed: 0 };
  #shownAt = Date.now();

  constructor(c: PipelineContext, leases: Leases, fileId: string, reading: Map<string, number>) {
    this.#c = c;
    this.#leases = leases;
    this.#fileId = fileId;
    this.#reading = reading;
  }

  /** Until at most `max` inserts are in flight; then the first failure is thrown. */
  async settle(max: number): Promise<void> {
    while (this.#inserting.size > max) await Promise.race(this.#inserting);
    if (this.#failed) throw this.#failed.err;
  }

  /** Every insert started has ended (failed or not). */
  async ended(): Promise<void> {
    await Promise.all(this.#inserting);
  }

  /** Starts inserting `rows` (ids up to `last`) once fewer than INSERTS_IN_FLIGHT are in flight. */
  async insert(rows: RecipientInsert[], last: number): Promise<void> {
    await this.settle(INSERTS_IN_FLIGHT - 1);
    const fileId = this.#fileId;
    this.#leases.fence(fileId);
    const insert = this.#c.store.insertRecipients(fileId, rows).then(async () => {
      this.#reading.set(fileId, Math.max(last, this.#reading.get(fileId) ?? 0));
      const seen = this.#seen;
      for (const r of rows) {
        // One row a record, but a bulk line of several numbers: counted at its first.
        if (r.k <= 1) seen.records++;
        if (r.outcome === 'pending') seen.valid++;
        else if (r.outcome === 'invalid') seen.invalid++;
        else if (r.outcome === 'duplicate') seen.duplicates++;
        else if (r.outcome === 'suppressed') seen.suppressed++;
      }
      this.#c.touch(fileId);
      // `status` in another process shows how far the read got (rows committed): one
      // small UPDATE at most every half second, the final counts replace it.
      if (Date.now() - this.#shownAt < 500) return;
      this.#shownAt = Date.now();
      this.#leases.fence(fileId);
      await this.#c.store.updateFile(fileId, { counts: { ...seen, segments: 0 } });
    });
    const tracked: Promise<void> = insert
      .catch((err: unknown) => {
        this.#failed ??= { err };
      })
      .finally(() => this.#inserting.delete(tracked));
    this.#inserting.add(tracked);
  }
}
