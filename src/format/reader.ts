// The drop-file reader: bytes → recipients, record errors, warnings and a final summary,
// exactly as docs/format.md defines them. One streaming API for `validate` and the pipeline.
//
// Pure: the caller passes a function that opens the bytes (it is called twice: a sniff
// pass for the encoding, then the parse pass). Memory is bounded by the line-length limit
// plus the duplicate index (~12 bytes per distinct recipient); no record is kept.
//
// readDropFile drives three objects (docs/architecture.md "The reader"): the record parser
// (lines, quotes, the held trailer, the header, directives; record-parser.ts), the
// recipient stager (duplicates, suppression, batches; recipient-stager.ts) and the summary
// builder (counts, the verdict; summary-builder.ts). What differs by channel is in the
// channel's record rules (record-rules/).
import { REASONS } from '../errors.ts';
import { type ByteChunks, decodeText, sniff } from './decode.ts';
import type { Channel } from './directives.ts';
import { DEFAULTS, type ReadBatch, type ReadOptions, type ReadSummary } from './read-types.ts';
import { RecipientStager } from './recipient-stager.ts';
import { RecordParser } from './record-parser.ts';
import { SummaryBuilder } from './summary-builder.ts';

export * from './read-types.ts';

/**
 * Reads a drop file. `open` must return the same bytes each time it is called.
 */
export async function* readDropFile(open: () => ByteChunks, options: ReadOptions): AsyncGenerator<ReadBatch> {
  const maxFileBytes = options.maxFileBytes ?? DEFAULTS.maxFileBytes;
  const builder = new SummaryBuilder(
    options.maxListed ?? DEFAULTS.maxListed,
    options.transliterate ?? 'never',
  );
  const summary = builder.summary;
  const sniffed =
    options.sniffed ?? (await sniff(open(), { hash: options.hash ?? false, maxBytes: maxFileBytes }));
  summary.bytes = sniffed.bytes;
  summary.sha256 = sniffed.sha256;
  if (sniffed.tooLarge) {
    builder.reject('FILE_TOO_LARGE', `the file is larger than ${maxFileBytes} bytes`);
    yield [summary];
    return;
  }
  summary.encoding = sniffed.encoding;
  if (sniffed.binary) {
    builder.reject('BINARY_FILE');
    yield [summary];
    return;
  }
  const stager = new RecipientStager(
    builder,
    options.suppression ?? null,
    sniffed.lineEstimate,
    options.items ?? true,
    options.consent ?? null,
  );
  const parser = new RecordParser(options, builder, stager, options.maxLineLength ?? DEFAULTS.maxLineLength);
  for await (const text of decodeText(open(), sniffed.encoding, parser.textBytes)) {
    parser.push(text);
    stager.flush();
    if (stager.batch.length > 0) yield stager.take();
  }
  parser.end();
  if (stager.batch.length > 0) yield stager.take();
  yield [builder.finish(options.maxInvalidRatio ?? DEFAULTS.maxInvalidRatio)];
}

/**
 * A file read for another channel than its source sends (its `#! channel:`; docs/format.md
 * "Directives"): rejected BAD_DIRECTIVE, never sent by the source's channel: a source sends one
 * channel, its account's (docs/channels.md).
 */
export function refuseOtherChannel(summary: ReadSummary, sourceChannel: Channel): void {
  if (!summary.accepted || summary.channel === sourceChannel) return;
  const line = summary.directives.channel?.line;
  summary.accepted = false;
  summary.rejection = {
    code: 'BAD_DIRECTIVE',
    message: `${line === undefined ? '' : `line ${line}: `}this source sends ${sourceChannel}, not ${summary.channel}: drop the file in a source whose account sends ${summary.channel}`,
    hint: REASONS.BAD_DIRECTIVE.hint,
    params: line === undefined ? {} : { line },
  };
}
