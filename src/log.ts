// One pino logger for the process: one JSON line per event on stderr (stdout is for
// command output), secrets redacted by key, phone numbers masked by the callers
// (maskNumber) and URL query strings never logged (they carry the notify token).
import { type Logger, pino } from 'pino';

export type { Logger };

const SECRET_KEYS = [
  'password',
  'passphrase',
  'token',
  'accessToken',
  'refreshToken',
  'authorization',
  'notifyUrl',
  'apiKey',
  'secret',
  'secretAccessKey',
  'secrets',
  '["x-api-key"]',
];
// At the top and one level down (an `err` or `config` object logged whole).
const REDACT = SECRET_KEYS.flatMap((k) => [k, k.startsWith('[') ? `*${k}` : `*.${k}`]);

export function createLogger(options: { level?: string; name?: string } = {}): Logger {
  return pino(
    {
      name: options.name ?? 'dropline',
      level: options.level ?? process.env.DROPLINE_LOG_LEVEL ?? 'info',
      redact: { paths: REDACT, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    pino.destination({ fd: 2, sync: true }),
  );
}

export const silentLogger: Logger = pino({ level: 'silent' });

/**
 * Keeps a failure that repeats (the same source error every poll, the same step failing every
 * second) to one log line a while: the first is logged, then at most one per `intervalMs`
 * with the number held back in between; a different message is logged at once.
 */
export class RepeatGate {
  readonly #intervalMs: number;
  readonly #seen = new Map<string, { message: string; at: number; held: number }>();

  constructor(intervalMs = 60_000) {
    this.#intervalMs = intervalMs;
  }

  /** Whether to log `message` under `key` now; `repeated` is how many were held back. */
  pass(key: string, message: string, now = Date.now()): { log: boolean; repeated: number } {
    const seen = this.#seen.get(key);
    if (seen && seen.message === message && now - seen.at < this.#intervalMs) {
      seen.held++;
      return { log: false, repeated: 0 };
    }
    const repeated = seen?.message === message ? seen.held : 0;
    this.#seen.set(key, { message, at: now, held: 0 });
    return { log: true, repeated };
  }

  /** The failure under `key` is over: true when one was logged (worth saying it recovered). */
  clear(key: string): boolean {
    return this.#seen.delete(key);
  }
}
