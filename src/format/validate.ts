// A drop file checked as `dropline validate` and the dashboard's file check do it (docs/format.md):
// nothing is sent, nothing stored. The CLI command and the ops API both import this module.
import { open, stat } from 'node:fs/promises';
import module from 'node:module';
import { basename } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config, SourceConfig } from '../config/schema.ts';
import { DroplineError } from '../errors.ts';
import { moduleUrl } from '../module-url.ts';
import { sendWindowOf } from '../plan/send-window.ts';
import type { ConsentCheck } from './consent.ts';
import { type ByteChunks, estimateLines, type Sniff, Sniffer } from './decode.ts';
import type { AllowDirectives, Channel } from './directives.ts';
import { readFileChunks } from './file-chunks.ts';
import type { Layout } from './layout.ts';
import { makeNumberRules } from './numbers.ts';
import {
  DEFAULTS,
  type EmailContentOptions,
  type ReadSummary,
  readDropFile,
  refuseOtherChannel,
  type TransliterateMode,
  type WhatsAppContentOptions,
} from './reader.ts';
import type { SuppressionList } from './suppression.ts';

/** The sniff pass (with the sha256, ~0.35 s a 100 MB) on a worker thread. */
function sniffInWorker(path: string, maxBytes: number): Promise<Sniff> {
  return new Promise((resolve, reject) => {
    // The worker uses the process's compile cache too (bin/dropline.js enables it), or it
    // would strip and compile its modules again: ~35 MB and ~70 ms instead of ~20 and ~35.
    const cache = module.getCompileCacheDir?.();
    const worker = new Worker(moduleUrl('./sniff-worker.ts', import.meta.url), {
      workerData: { path, maxBytes },
      ...(cache ? { env: { ...process.env, NODE_COMPILE_CACHE: cache } } : {}),
    });
    worker.once('message', (m: { sniff?: Sniff; error?: string }) => {
      void worker.terminate();
      if (m.sniff) resolve(m.sniff);
      else reject(new DroplineError('DROPLINE_ERR_FILE_UNREADABLE', `${path}: ${m.error}`));
    });
    worker.once('error', reject);
  });
}

/**
 * Up to this size validate sniffs on its own thread, over the chunks it parses: a worker
 * thread costs ~70 ms to start and ~35 MB (its own heap and type stripper), more than the
 * sniff of a file this small (~1 ms a MB) on this thread.
 */
const SNIFF_INLINE_BYTES = 64 * 1024 * 1024;

/**
 * The chunks of `chunks`, each sniffed before the reader has it. Not closed when the
 * reader stops early: the caller reads the rest into the sniffer.
 */
async function* sniffedChunks(chunks: AsyncIterator<Uint8Array>, sniffer: Sniffer): ByteChunks {
  for (let r = await chunks.next(); !r.done; r = await chunks.next()) {
    sniffer.update(r.value);
    yield r.value;
  }
}

/**
 * What the file most likely is, from its first bytes: UTF-8 without NUL bytes (a UTF-16
 * BOM says otherwise), with as many lines as its first chunk suggests.
 */
async function guess(path: string, size: number): Promise<Sniff | null> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(Math.min(size, 256 * 1024));
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    if ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)) return null;
    const lineEstimate = estimateLines(head.subarray(0, bytesRead), size);
    return { bytes: size, encoding: 'utf-8', binary: false, lineEstimate, sha256: null, tooLarge: false };
  } finally {
    await fh.close();
  }
}

export interface ValidateOptions {
  json?: boolean;
  layout?: Layout;
  maxInvalidRatio: number;
  defaultCountry: string;
  allowedCountries?: string[];
  /** --suppression-list: this list alone (a path, s3://bucket/key or <sourceName>:<path>). */
  suppressionList?: string;
  /** The lists already read (the daemon's SuppressionLists.forSource): used as they are. */
  suppression?: SuppressionList | null;
  /**
   * With a configuration: the lists of `source` (the global one and its own, any form), and
   * the sources `<sourceName>:<path>` names. Read once per validation.
   */
  suppressionConfig?: Pick<Config, 'suppressionList' | 'sources'>;
  /**
   * The consent list's check of the source's channel (NO_CONSENT, docs/opt-outs.md "Consent
   * lists"), read by the caller (validate's command, the ops API): format/ reads no list itself.
   */
  consent?: ConsentCheck | null;
  /** The source's channel (a file's `#! channel:` wins) and an email or WhatsApp source's content. */
  channel?: Channel;
  email?: EmailContentOptions;
  whatsapp?: WhatsAppContentOptions;
  maxLineLength: number;
  /** The source's maxFileBytes when a configuration gives one. */
  maxFileBytes?: number;
  source?: string;
  /** The source's `allowDirectives` (docs/format.md "Directives") when a configuration gives one. */
  allowDirectives?: AllowDirectives;
  /** The source's `transliterate` (or --transliterate); default never. */
  transliterate?: TransliterateMode;
  /** `#! sendAt:` without an offset: the source's send window's zone (default America/Bogota). */
  sendAtTimeZone?: string;
  /** Files up to this size are sniffed on this thread (default SNIFF_INLINE_BYTES; tests set 0). */
  sniffInlineBytes?: number;
}

export async function validateFile(path: string, opts: ValidateOptions): Promise<ReadSummary> {
  const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
    throw new DroplineError('DROPLINE_ERR_FILE_UNREADABLE', `${path}: ${err.code ?? err.message}`);
  });
  if (!info.isFile()) throw new DroplineError('DROPLINE_ERR_FILE_UNREADABLE', `${path}: not a regular file`);
  let rules: ReturnType<typeof makeNumberRules>;
  try {
    rules = makeNumberRules(opts.defaultCountry, opts.allowedCountries ?? null);
  } catch (err) {
    throw new DroplineError('DROPLINE_ERR_USAGE', (err as Error).message);
  }
  const suppression =
    opts.suppression !== undefined
      ? opts.suppression
      : opts.suppressionList || opts.suppressionConfig
        ? await (await import('../pipeline/suppression-lists.ts')).readListsOnce({
            config: opts.suppressionConfig ?? null,
            source: opts.source,
            only: opts.suppressionList,
          })
        : null;
  const maxFileBytes = opts.maxFileBytes ?? DEFAULTS.maxFileBytes;
  const read = async (
    sniffed: Sniff | undefined,
    chunks: () => ByteChunks = () => readFileChunks(path),
  ): Promise<ReadSummary> => {
    let summary: ReadSummary | null = null;
    for await (const batch of readDropFile(chunks, {
      name: basename(path),
      layout: opts.layout ?? null,
      numberRules: rules,
      suppression,
      consent: opts.consent ?? null,
      maxInvalidRatio: opts.maxInvalidRatio,
      maxLineLength: opts.maxLineLength,
      maxFileBytes,
      allowDirectives: opts.allowDirectives ?? true,
      transliterate: opts.transliterate ?? 'never',
      channel: opts.channel ?? 'sms',
      email: opts.email ?? null,
      whatsapp: opts.whatsapp ?? null,
      ...(opts.sendAtTimeZone ? { sendAtTimeZone: opts.sendAtTimeZone } : {}),
      items: false,
      ...(sniffed ? { sniffed } : {}),
    })) {
      const last = batch[batch.length - 1];
      if (last?.kind === 'summary') summary = last;
    }
    if (!summary) throw new Error('the reader ended without a summary');
    return summary;
  };
  let summary: ReadSummary;
  try {
    if (info.size > maxFileBytes) summary = await read(undefined);
    else {
      // The file is parsed on the likely guess while it is sniffed and hashed: by this
      // thread, over the chunks the reader reads, for a small file; by a worker, reading
      // it again, for a large one. The rare file the guess got wrong (not UTF-8, NUL
      // bytes) is parsed again as what it is.
      const likely = await guess(path, info.size);
      let sniffed: Sniff;
      if (likely && info.size <= (opts.sniffInlineBytes ?? SNIFF_INLINE_BYTES)) {
        // The lines are not counted again: the guess's estimate sized the duplicate index.
        const sniffer = new Sniffer({
          hash: true,
          maxBytes: maxFileBytes,
          lineEstimate: likely.lineEstimate,
        });
        const chunks = readFileChunks(path)[Symbol.asyncIterator]();
        try {
          summary = await read(likely, () => sniffedChunks(chunks, sniffer));
          // The reader may stop early (a rejection): the sniff reads the rest.
          for (let r = await chunks.next(); !r.done; r = await chunks.next()) sniffer.update(r.value);
        } catch (err) {
          await chunks.return?.(undefined);
          throw err;
        }
        sniffed = sniffer.result();
      } else {
        const sniffing = sniffInWorker(path, maxFileBytes);
        sniffing.catch(() => {});
        summary = likely ? await read(likely) : await read(await sniffing);
        sniffed = await sniffing;
      }
      if (likely && (sniffed.encoding !== 'utf-8' || sniffed.binary)) summary = await read(sniffed);
      summary.sha256 = sniffed.sha256;
    }
  } catch (err) {
    if (err instanceof DroplineError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code) throw new DroplineError('DROPLINE_ERR_FILE_UNREADABLE', `${path}: ${code}`);
    throw err;
  }
  // The reader stops counting at FILE_TOO_LARGE: the file's real size is known here.
  summary.bytes = info.size;
  // With a source, as the daemon would: a file for another channel is refused.
  if (opts.source !== undefined) refuseOtherChannel(summary, opts.channel ?? 'sms');
  return summary;
}

export function toJson(file: string, s: ReadSummary): Record<string, unknown> {
  return {
    file,
    channel: s.channel,
    email: s.email,
    whatsapp: s.whatsapp,
    bytes: s.bytes,
    sha256: s.sha256,
    encoding: s.encoding,
    layout: s.layout,
    separator: s.separator,
    header: s.header,
    columns: s.columns,
    message: s.message,
    records: s.records,
    valid: s.valid,
    invalid: s.invalid,
    duplicates: s.duplicates,
    suppressed: s.suppressed,
    noConsent: s.noConsent,
    segments: s.segments,
    encodings: s.encodings,
    countries: s.countries,
    segmentsByCountry: s.segmentsByCountry,
    transliteration: s.transliteration,
    templates: s.templates,
    accepted: s.accepted,
    // Its parameters are the dashboard's (docs/dashboard.md "Codes and languages").
    rejection: s.rejection && {
      code: s.rejection.code,
      message: s.rejection.message,
      hint: s.rejection.hint,
    },
    errors: s.errors,
    warnings: s.warnings,
    errorsTruncated: s.errorsTruncated,
    warningsTruncated: s.warningsTruncated,
    errorCounts: s.errorCounts,
    warningCounts: s.warningCounts,
    trailer: s.trailer,
    directives: s.directives,
  };
}

/** A source's rules as validate applies them (the dashboard's file check too). */
export function sourceValidateOptions(config: Config, source: SourceConfig): ValidateOptions {
  const opts: ValidateOptions = {
    maxInvalidRatio: source.maxInvalidRatio,
    defaultCountry: source.defaultCountry,
    maxLineLength: DEFAULTS.maxLineLength,
    maxFileBytes: source.maxFileBytes,
    allowDirectives: source.allowDirectives,
    transliterate: source.transliterate,
    source: source.name,
    channel: source.channel,
  };
  if (source.email) opts.email = source.email;
  if (source.whatsapp) opts.whatsapp = source.whatsapp;
  const window = source.sendWindow === undefined ? config.sendWindow : source.sendWindow;
  const zone = sendWindowOf(window)?.spec.timezone;
  if (zone) opts.sendAtTimeZone = zone;
  if (source.layout) opts.layout = source.layout;
  if (source.allowedCountries) opts.allowedCountries = source.allowedCountries;
  // The global list and the source's own, any form (read when the file is validated).
  if (config.suppressionList || source.suppressionList) opts.suppressionConfig = config;
  return opts;
}
