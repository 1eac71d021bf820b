// The one line `send` redraws on a terminal: at most 80 columns (a wrapped line cannot be
// redrawn with \r), the numbers first and the file's name shortened to make room, with a
// percentage, a rate and an ETA in each phase so that it visibly moves.
import type { Manifest } from '../../pipeline/reports.ts';

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
/** Rate over the last few seconds: steady enough to read, quick to follow a change. */
const WINDOW_MS = 5000;

function clock(seconds: number): string {
  const s = Math.ceil(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export class ProgressMeter {
  readonly #width: number;
  #phase = '';
  #samples: { t: number; n: number }[] = [];

  /** `columns`: the terminal's width; the line keeps to 80 columns in a wider one. */
  constructor(columns = 80) {
    this.#width = Math.max(20, Math.min(columns || 80, 80)) - 1;
  }

  /** The line for a file being read, before the store has its counts. */
  reading(name: string, records: number, now = Date.now()): string {
    const rate = this.#rate('validating', records, now);
    return this.#fit(name, `validating ${fmt(records)} records${rate === null ? '' : ` · ${fmt(rate)}/s`}`);
  }

  line(m: Manifest, now = Date.now()): string {
    const c = m.counts;
    if (m.state === 'validating' || m.state === 'waiting') return this.reading(m.name, c.records, now);
    let phase: string;
    let done: number;
    let total: number;
    if (m.state === 'sending') {
      phase = 'sending';
      done = c.submitted + c.rejected + c.failed + c.inDoubt;
      total = c.valid;
    } else if (m.state === 'submitted') {
      phase = 'delivery';
      done = c.delivered + c.undelivered + c.accepted;
      total = c.submitted;
    } else return this.#fit(m.name, m.state);
    const rate = this.#rate(phase, done, now);
    const pct = total > 0 ? Math.floor((100 * done) / total) : 100;
    let body = `${phase} ${pct}% ${fmt(done)}/${fmt(total)}`;
    if (rate !== null) {
      body += ` · ${fmt(rate)}/s`;
      if (rate > 0 && done < total) body += ` · ETA ${clock((total - done) / rate)}`;
    }
    return this.#fit(m.name, body);
  }

  /** Per second over the window, or null until there are two samples of this phase. */
  #rate(phase: string, n: number, now: number): number | null {
    if (phase !== this.#phase) {
      this.#phase = phase;
      this.#samples = [];
    }
    this.#samples.push({ t: now, n });
    while (this.#samples.length > 2 && now - this.#samples[1]!.t >= WINDOW_MS) this.#samples.shift();
    const first = this.#samples[0]!;
    const ms = now - first.t;
    return ms > 0 ? ((n - first.n) * 1000) / ms : null;
  }

  /** `<name> <body>` in the width: the name gives way first (ending in …), then the body. */
  #fit(name: string, body: string): string {
    const room = this.#width - [...body].length - 1;
    const chars = [...name];
    if (room >= chars.length) return `${name} ${body}`;
    if (room >= 8) return `${chars.slice(0, room - 1).join('')}… ${body}`;
    return [...body].slice(0, this.#width).join('');
  }
}
