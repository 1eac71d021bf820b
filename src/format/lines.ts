// docs/format.md "Encoding and lines": text chunks → physical lines (LF, CRLF or a lone CR),
// numbered from 1. A line longer than `maxLength` is reported as too long and its text is not kept:
// memory stays bounded whatever the writer did.

export type LineSink = (text: string, lineNo: number, tooLong: boolean) => void;

/** How much of a too-long line is kept to show the user which line it was. */
const LONG_PREFIX = 40;

export class LineSplitter {
  private readonly maxLength: number;
  private readonly sink: LineSink;
  private carry = '';
  private lineNo = 0;
  /** Inside a too-long line: its prefix, kept for the error. */
  private longPrefix: string | null = null;
  /** The previous chunk ended with CR: an LF at the start of the next one belongs to it. */
  private pendingCR = false;
  /**
   * While the sink runs: where its line starts in the text pushed last, or -1 when the line
   * began in an earlier push (its start carried), or is the end's.
   */
  lineAt = -1;

  constructor(maxLength: number, sink: LineSink) {
    this.maxLength = maxLength;
    this.sink = sink;
  }

  push(s: string): void {
    const n = s.length;
    let start = 0;
    if (this.pendingCR) {
      this.pendingCR = false;
      if (s.charCodeAt(0) === 10) start = 1;
    }
    let lf = s.indexOf('\n', start);
    let cr = s.indexOf('\r', start);
    for (;;) {
      if (lf !== -1 && lf < start) lf = s.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = s.indexOf('\r', start);
      let brk: number;
      if (lf === -1) {
        if (cr === -1) break;
        brk = cr;
      } else brk = cr === -1 || lf < cr ? lf : cr;
      this.lineAt = this.carry.length > 0 || this.longPrefix !== null ? -1 : start;
      this.emit(s.slice(start, brk));
      if (brk === cr) {
        if (brk + 1 === n) {
          this.pendingCR = true;
          start = n;
        } else start = s.charCodeAt(brk + 1) === 10 ? brk + 2 : brk + 1;
      } else start = brk + 1;
    }
    if (start < n) this.keep(s.slice(start));
  }

  end(): void {
    this.lineAt = -1;
    if (this.carry.length > 0 || this.longPrefix !== null) this.emit('');
  }

  private keep(rest: string): void {
    if (this.longPrefix !== null) return;
    this.carry = this.carry.length > 0 ? this.carry + rest : rest;
    if (this.carry.length > this.maxLength) {
      this.longPrefix = this.carry.slice(0, LONG_PREFIX);
      this.carry = '';
    }
  }

  private emit(tail: string): void {
    this.lineNo++;
    if (this.longPrefix !== null) {
      const prefix = this.longPrefix;
      this.longPrefix = null;
      this.sink(prefix, this.lineNo, true);
      return;
    }
    const text = this.carry.length > 0 ? this.carry + tail : tail;
    this.carry = '';
    if (text.length > this.maxLength) this.sink(text.slice(0, LONG_PREFIX), this.lineNo, true);
    else this.sink(text, this.lineNo, false);
  }
}
