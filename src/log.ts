// One pino logger for the process: one JSON line per event on stderr (stdout is for
// command output), secrets redacted by key, phone numbers masked by the callers
// (maskNumber) and URL query strings never logged (they carry the notify token).
import { type Logger, pino } from 'pino';

export type { Logger };

const REDACT = [
  'password',
  'token',
  'accessToken',
  'refreshToken',
  'authorization',
  'notifyUrl',
  '*.password',
  '*.token',
  '*.accessToken',
  '*.refreshToken',
  '*.authorization',
  '*.notifyUrl',
  'secrets',
  '*.secrets',
];

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
