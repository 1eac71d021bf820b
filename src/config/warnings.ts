// Settings that work but invite trouble: `dropline run` logs each one as a warning at start.

import { parseListenAddress } from './listen.ts';
import type { Config } from './schema.ts';

/** Shorter than this, a notify (or ops) token can be guessed by whoever can reach its server. */
export const MIN_NOTIFY_TOKEN_LENGTH = 16;

const EVERY_INTERFACE = new Set(['0.0.0.0', '::']);

export function startupWarnings(
  config: Config,
  secrets: { notifyToken: string; opsToken?: string | undefined },
): string[] {
  const warnings: string[] = [];
  if (secrets.notifyToken.length < MIN_NOTIFY_TOKEN_LENGTH) {
    warnings.push(
      `notify.token has ${secrets.notifyToken.length} characters: use at least ${MIN_NOTIFY_TOKEN_LENGTH} (e.g. openssl rand -base64 24); whoever guesses it can post delivery reports`,
    );
  }
  // The ops server does not slow down wrong tokens: its length is the defence.
  if (secrets.opsToken !== undefined && secrets.opsToken.length < MIN_NOTIFY_TOKEN_LENGTH) {
    warnings.push(
      `ops.token has ${secrets.opsToken.length} characters: use at least ${MIN_NOTIFY_TOKEN_LENGTH} (e.g. openssl rand -base64 24); whoever guesses it can see every campaign and pause or cancel them`,
    );
  }
  const ops = parseListenAddress(config.ops.listen);
  if (typeof ops !== 'string' && EVERY_INTERFACE.has(ops[0])) {
    warnings.push(
      `ops.listen ${config.ops.listen} serves the ops API on every interface: bind it to 127.0.0.1 or a private address unless it is protected in front`,
    );
  }
  return warnings;
}
