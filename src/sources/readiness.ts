// When is a file in an inbox complete (docs/sources.md "When is a file complete?")? Pure: the
// caller passes the time and the probes, so tests run on fake time and every backend shares it.
import { parseTrailer } from '../format/records.ts';
import type { Source, SourceEntry } from './source.ts';

export type Readiness = 'stable' | 'marker' | 'trailer';

export interface ReadinessOptions {
  mode: Readiness;
  /** `stable`: how long size and mtime must stay unchanged across observations. */
  stableMs: number;
  /** `marker`/`trailer`: from first sight to `timedOut` (the pipeline rejects MISSING_TRAILER). */
  incompleteTimeoutMs: number;
}

export interface ReadinessProbes {
  hasMarker(e: SourceEntry): Promise<boolean>;
  hasTrailer(e: SourceEntry): Promise<boolean>;
}

export interface Observation {
  ready: SourceEntry[];
  timedOut: SourceEntry[];
}

/** Enough for the trailer line plus trailing blank lines; UTF-16 doubles the bytes. */
export const TRAILER_TAIL_BYTES = 1024;

/** Probes in flight at once: remote backends pay a round trip each. */
const PROBE_CONCURRENCY = 8;

interface Tracked {
  size: number;
  mtimeMs: number;
  etag: string | undefined;
  firstSeen: number;
  /** Start of the current run of observations that all saw the same size/mtime/etag. */
  since: number;
  /** Observations in the current run (1 = just seen or just changed). */
  runs: number;
  /** `trailer`: this version of the file was read and has no trailer; don't read it again. */
  noTrailer: boolean;
  reported: boolean;
  timedOutReported: boolean;
}

export class ReadinessTracker {
  readonly #options: ReadinessOptions;
  readonly #tracked = new Map<string, Tracked>();
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ReadinessOptions) {
    this.#options = options;
  }

  /**
   * Feed one full listing of the inbox at time `now` (ms). Returns the entries that became
   * ready now, and those that timed out waiting for a trailer/marker. Each is reported
   * once; call `forget` to have a path considered afresh (e.g. after a failed claim).
   * A probe that throws counts as "not yet" (wrap the probes to log). Calls are serialised.
   */
  observe(listing: SourceEntry[], now: number, probes: ReadinessProbes): Promise<Observation> {
    const run = this.#queue.then(() => this.#observe(listing, now, probes));
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Forget an entry (claimed, moved). */
  forget(path: string): void {
    this.#tracked.delete(path);
  }

  async #observe(listing: SourceEntry[], now: number, probes: ReadinessProbes): Promise<Observation> {
    const { mode, stableMs, incompleteTimeoutMs } = this.#options;
    const seen = new Set<string>();
    const candidates: { entry: SourceEntry; state: Tracked }[] = [];
    const ready: SourceEntry[] = [];

    for (const entry of listing) {
      if (seen.has(entry.path)) continue;
      seen.add(entry.path);
      let state = this.#tracked.get(entry.path);
      if (state === undefined) {
        state = {
          size: entry.size,
          mtimeMs: entry.mtimeMs,
          etag: entry.etag,
          firstSeen: now,
          since: now,
          runs: 1,
          noTrailer: false,
          reported: false,
          timedOutReported: false,
        };
        this.#tracked.set(entry.path, state);
      } else if (state.size !== entry.size || state.mtimeMs !== entry.mtimeMs || state.etag !== entry.etag) {
        // Still being written, or replaced by another file: it earns readiness again.
        state.size = entry.size;
        state.mtimeMs = entry.mtimeMs;
        state.etag = entry.etag;
        state.since = now;
        state.runs = 1;
        state.noTrailer = false;
        state.reported = false;
      } else {
        state.runs++;
      }
      if (state.reported) continue;
      if (mode === 'stable') {
        if (now - state.since >= stableMs) {
          state.reported = true;
          ready.push(entry);
        }
      } else if (state.runs >= 2 && !(mode === 'trailer' && state.noTrailer)) {
        // The probe comes after the cheap two-observation guard: a growing file costs nothing.
        candidates.push({ entry, state });
      }
    }

    for (const path of this.#tracked.keys()) if (!seen.has(path)) this.#tracked.delete(path);

    const results = await mapLimited(candidates, PROBE_CONCURRENCY, async ({ entry }) => {
      try {
        return mode === 'marker' ? await probes.hasMarker(entry) : await probes.hasTrailer(entry);
      } catch {
        return false;
      }
    });

    const timedOut: SourceEntry[] = [];
    candidates.forEach(({ entry, state }, i) => {
      // Forgotten, or the path reused, while the probes ran.
      if (this.#tracked.get(entry.path) !== state) return;
      if (results[i]) {
        state.reported = true;
        ready.push(entry);
      } else if (mode === 'trailer') {
        state.noTrailer = true;
      }
    });
    if (mode !== 'stable') {
      for (const entry of listing) {
        const state = this.#tracked.get(entry.path);
        if (state === undefined || state.reported || state.timedOutReported) continue;
        if (now - state.firstSeen >= incompleteTimeoutMs) {
          state.timedOutReported = true;
          timedOut.push(entry);
        }
      }
    }
    return { ready, timedOut };
  }
}

/**
 * Whether the tail of a file ends with a trailer line (docs/format.md "Proving a file is complete:
 * trailer"): the last non-blank line is `EOF` or `EOF<SEP><n>`. `requested` is the byte count asked
 * of `readTail`: when the tail is that long its first line may be cut, so it is not trusted as a
 * whole line.
 */
export function tailHasTrailer(tail: string, requested: number): boolean {
  const cut = tail.length >= requested;
  // UTF-16 files: the ASCII trailer read as latin1 is its letters with NULs in between.
  const text = tail.includes('\0') ? tail.replaceAll('\0', '') : tail;
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    if (i === 0 && cut) return false;
    return parseTrailer(line) !== undefined;
  }
  return false;
}

/** The probes for a source: `inbox/<name>.done` beside the file, and its tail. */
export function sourceProbes(source: Source, tailBytes = TRAILER_TAIL_BYTES): ReadinessProbes {
  return {
    hasMarker: (e) => source.exists(`${e.path}.done`),
    hasTrailer: async (e) => tailHasTrailer(await source.readTail(e.path, tailBytes), tailBytes),
  };
}

/**
 * `fn` over `items`, at most `limit` at a time, results in order. The first failure stops
 * the workers from starting more and is thrown once the running ones are done.
 */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failed) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Whether a `.done` marker's content agrees with the sha256 of the file claimed: null when
 * it does, or declares nothing (an empty marker, or any text without a `sha256=` line);
 * otherwise why not (MARKER_MISMATCH). The line is `sha256=<64 hex digits>`, any case,
 * blanks around allowed; the first such line counts.
 */
export function markerMismatch(content: string, sha256: string): string | null {
  const line = content
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\r|\n/)
    .map((l) => /^\s*sha256\s*=\s*(.*?)\s*$/i.exec(l))
    .find((m) => m !== null);
  if (!line) return null;
  const declared = line[1]!;
  if (!/^[0-9a-f]{64}$/i.test(declared))
    return `the marker's sha256=${JSON.stringify(declared.slice(0, 80))} is not 64 hexadecimal digits`;
  if (declared.toLowerCase() === sha256) return null;
  return `the marker says sha256=${declared.toLowerCase()}, the file claimed has sha256=${sha256}`;
}
