// docs/format.md "Encoding and lines": bytes → text. Pure: byte chunks in, facts or text chunks out.
//
// The encoding is decided for the whole file before any record is read (a first pass),
// because the Windows-1252 fallback applies to the whole file when any byte is not UTF-8,
// and that byte may be the last one. The same pass finds NUL bytes, the size and the line
// count (which sizes the duplicate index).
import { isAscii, isUtf8 } from 'node:buffer';
import { createHash, type Hash } from 'node:crypto';

export type TextEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252';

export interface Sniff {
  bytes: number;
  encoding: TextEncoding;
  /** A NUL byte in a file without a UTF-16 BOM. */
  binary: boolean;
  /**
   * The number of physical lines (LF, CR or CRLF) when the sniff counted them, or an estimate
   * from the file's head (estimateLines); sizes the duplicate index, which grows when it is
   * exceeded.
   */
  lineEstimate: number;
  /** Set when the sniff was asked to hash, and the file was not cut short by `maxBytes`. */
  sha256: string | null;
  /** The file is larger than `maxBytes`: the sniff stopped reading. */
  tooLarge: boolean;
}

export type ByteChunks = AsyncIterable<Uint8Array>;

/** The fewest bytes a recipient takes: a number of seven digits and a line break or separator. */
const MIN_RECIPIENT_BYTES = 8;

/**
 * How many recipient lines a file of `size` bytes likely has, from its first bytes `head`:
 * the lines there that can hold a record (not blank, not a `#` line), in proportion, and
 * never more than one a MIN_RECIPIENT_BYTES. It sizes the duplicate index when the file is
 * parsed while it is sniffed (validate): a head unlike the rest of the file only costs the
 * index a growth or some room. A head extrapolated line for line, blank lines included,
 * sized a 72 MB file that opens with 256 KB of blank lines for ~79 million recipients: 827
 * MB of peak RSS for its 4 million (measured).
 */
export function estimateLines(head: Uint8Array, size: number): number {
  const b = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  // Lines end in LF or CRLF, or in CR alone (an old Mac export): then the head has no LF.
  const breaks = b.indexOf(10) === -1 && b.indexOf(13) !== -1 ? 13 : 10;
  let records = 0;
  for (let start = 0; start < b.length; ) {
    const c = b[start]!;
    if (c !== 10 && c !== 13 && c !== 35) records++;
    const end = b.indexOf(breaks, start);
    if (end === -1) break;
    start = end + 1;
  }
  if (b.length >= size) return records;
  const extrapolated = Math.ceil(((records * size) / Math.max(b.length, 1)) * 1.05);
  return Math.min(extrapolated, Math.ceil(size / MIN_RECIPIENT_BYTES));
}

/** Length of `b` up to the end of its last complete UTF-8 sequence. */
function completeUtf8Length(b: Uint8Array): number {
  let i = b.length - 1;
  let back = 0;
  while (i >= 0 && back < 3 && (b[i]! & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i < 0) return b.length;
  const lead = b[i]!;
  const need = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return b.length - i >= need ? b.length : i;
}

function countByte(b: Uint8Array, value: number): number {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  let n = 0;
  let i = buf.indexOf(value);
  while (i !== -1) {
    n++;
    i = buf.indexOf(value, i + 1);
  }
  return n;
}

/**
 * The sniff pass fed one chunk at a time, so that it can run over the chunks another reader
 * is reading (validate on a small file: one read, no second thread).
 */
export class Sniffer {
  readonly #maxBytes: number;
  readonly #hash: Hash | null;
  #bytes = 0;
  readonly #head = [0, 0];
  #headLength = 0;
  #utf16: 'utf-16le' | 'utf-16be' | null = null;
  #validUtf8 = true;
  #binary = false;
  #lf = 0;
  #cr = 0;
  #carry: Uint8Array | null = null;
  /** An estimate the caller has already (estimateLines): the lines are not counted. */
  readonly #lineEstimate: number | null;

  constructor(options: { hash?: boolean; maxBytes?: number; lineEstimate?: number } = {}) {
    this.#maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    this.#hash = options.hash ? createHash('sha256') : null;
    this.#lineEstimate = options.lineEstimate ?? null;
  }

  /** Reads a chunk (the caller may reuse its buffer afterwards); false once over maxBytes. */
  update(chunk: Uint8Array): boolean {
    this.#bytes += chunk.byteLength;
    if (this.#bytes > this.#maxBytes) return false;
    this.#hash?.update(chunk);
    // The BOM may arrive split across chunks (a stream is free to cut anywhere).
    const head = this.#head;
    if (this.#headLength < 2) {
      for (let i = 0; i < chunk.byteLength && this.#headLength < 2; i++) head[this.#headLength++] = chunk[i]!;
      if (this.#headLength === 2) {
        if (head[0] === 0xff && head[1] === 0xfe) this.#utf16 = 'utf-16le';
        else if (head[0] === 0xfe && head[1] === 0xff) this.#utf16 = 'utf-16be';
      }
    }
    // One native call a line break: ~40 ms of a million-line file.
    if (this.#lineEstimate === null) {
      this.#lf += countByte(chunk, 0x0a);
      this.#cr += countByte(chunk, 0x0d);
    }
    if (this.#utf16) return true;
    if (!this.#binary && Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).indexOf(0) !== -1)
      this.#binary = true;
    if (this.#validUtf8) {
      const b: Uint8Array = this.#carry ? Buffer.concat([this.#carry, chunk]) : chunk;
      const cut = completeUtf8Length(b);
      this.#validUtf8 = isUtf8(b.subarray(0, cut));
      // A copy: the chunk's buffer may be reused for the next read.
      this.#carry = cut < b.length ? Uint8Array.prototype.slice.call(b, cut) : null;
    }
    return true;
  }

  /** What the chunks read so far say, as the whole file's sniff. */
  result(): Sniff {
    if (this.#bytes > this.#maxBytes) {
      return {
        bytes: this.#bytes,
        encoding: 'utf-8',
        binary: false,
        lineEstimate: 0,
        sha256: null,
        tooLarge: true,
      };
    }
    // A file that ends inside a UTF-8 sequence is not UTF-8.
    const validUtf8 = this.#validUtf8 && this.#carry === null;
    const encoding: TextEncoding = this.#utf16 ?? (validUtf8 ? 'utf-8' : 'windows-1252');
    return {
      bytes: this.#bytes,
      encoding,
      // A first chunk shorter than the BOM was checked before the BOM was known.
      binary: this.#binary && this.#utf16 === null,
      lineEstimate: this.#lineEstimate ?? Math.max(this.#lf, this.#cr) + 1,
      sha256: this.#hash ? this.#hash.digest('hex') : null,
      tooLarge: false,
    };
  }
}

export async function sniff(
  chunks: ByteChunks,
  options: { hash?: boolean; maxBytes?: number } = {},
): Promise<Sniff> {
  const sniffer = new Sniffer(options);
  for await (const chunk of chunks) if (!sniffer.update(chunk)) break;
  return sniffer.result();
}

/** A UTF-8 BOM (EF BB BF) read as Windows-1252. */
const UTF8_BOM_AS_1252 = '\u00ef\u00bb\u00bf';

/**
 * Bytes decoded at a time. The text of one piece stays under V8's large-object size
 * (~128 KiB), so it dies young; whole 256 KiB reads decoded at once became large objects
 * in the old generation, and the garbage of a long file piled up there between full
 * collections (peak memory grew with file size).
 */
const DECODE_PIECE = 32 * 1024;

/**
 * The bytes of the text decodeText yielded last when they are that text exactly, a byte a
 * code unit (ASCII, nothing of a character carried from the bytes before): what reads the
 * text may read a part of it from the bytes instead, at the same index, until decodeText is
 * resumed (the bytes may be reused after). null otherwise.
 */
export interface TextBytes {
  bytes: Uint8Array | null;
}

/** Decodes byte chunks as `encoding` into text chunks; a BOM is dropped. */
export async function* decodeText(
  chunks: ByteChunks,
  encoding: TextEncoding,
  view: TextBytes = { bytes: null },
): AsyncGenerator<string> {
  // UTF-8 and Windows-1252 read ASCII as ASCII, a byte a character.
  const ascii = encoding === 'utf-8' || encoding === 'windows-1252';
  // WHATWG TextDecoder strips the BOM of its own encoding (ignoreBOM false). A file that
  // starts with a UTF-8 BOM but has a byte that is not UTF-8 further on is read as
  // Windows-1252: its BOM is dropped too, not read as "ï»¿" (docs/format.md "Encoding and lines").
  const decoder = new TextDecoder(encoding);
  let head: string | null = encoding === 'windows-1252' ? '' : null;
  const strip = (s: string): string => (s.startsWith(UTF8_BOM_AS_1252) ? s.slice(3) : s);
  for await (const bytes of chunks) {
    for (let at = 0; at < bytes.byteLength; at += DECODE_PIECE) {
      const chunk = bytes.subarray(at, at + DECODE_PIECE);
      let text = decoder.decode(chunk, { stream: true });
      if (head !== null) {
        head += text;
        if (head.length < UTF8_BOM_AS_1252.length) continue;
        text = strip(head);
        head = null;
      }
      if (text.length === 0) continue;
      // The same length: nothing of an earlier piece's last character came out with it.
      view.bytes = ascii && text.length === chunk.length && isAscii(chunk) ? chunk : null;
      yield text;
    }
  }
  view.bytes = null;
  const rest = head === null ? decoder.decode() : strip(head + decoder.decode());
  if (rest.length > 0) yield rest;
}
