// Which listen addresses only this machine can reach: the ops API needs no token there.
import { isIP } from 'node:net';
import { parseListenAddress } from './schema.ts';

/** `127.0.0.0/8`, `::1` (bracketed or not), `::ffff:127.x.x.x` and `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h.startsWith('::ffff:127.');
  return false;
}

/** Whether `host:port` listens on loopback only (a malformed address is not). */
export function isLoopbackListen(listen: string): boolean {
  const parsed = parseListenAddress(listen);
  return typeof parsed !== 'string' && isLoopbackHost(parsed[0]);
}
