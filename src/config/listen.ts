// Listen addresses: how `host:port` is read (one parser for the configuration and the
// servers), and which addresses only this machine can reach (the ops API needs no token there).
import { isIP } from 'node:net';

/**
 * `host:port`, `[ipv6]:port` → [host, port], or why not. One parser for the schema and for
 * the servers, so that an address the configuration accepts is one they can listen on.
 */
export function parseListenAddress(listen: string): [string, number] | string {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(listen);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || host === undefined || port > 65_535)
    return `"${listen}" is not host:port (e.g. 127.0.0.1:8080, [::1]:8080; port 0 to 65535)`;
  if (
    m[1] !== undefined
      ? isIP(host) !== 6
      : isIP(host) === 0 && !/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host)
  )
    return `"${listen}": ${host} is neither an IP address nor a host name`;
  return [host, port];
}

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
