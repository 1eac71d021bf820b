// The IP allowlist (docs/sandbox.md "IP allowlist"): which client addresses the service answers.
import { BlockList, isIP } from 'node:net';

/**
 * A check of client addresses against `entries` (`10.0.0.5`, `10.0.0.0/8`, `::1`,
 * `2001:db8::/32`), with node's BlockList. An IPv4 client seen on a dual-stack socket
 * (`::ffff:127.0.0.1`) is checked as its IPv4 address. Throws on an entry that is neither.
 */
export function ipAllowList(entries: readonly string[]): (address: string | undefined) => boolean {
  const list = new BlockList();
  for (const entry of entries) {
    const [ip = '', bits, extra] = entry.trim().split('/');
    const type = isIP(ip);
    const prefix = bits === undefined ? null : Number(bits);
    if (
      type === 0 ||
      extra !== undefined ||
      (prefix !== null &&
        (bits === '' || !Number.isInteger(prefix) || prefix < 0 || prefix > (type === 4 ? 32 : 128)))
    )
      throw new Error(`"${entry}" is not an IP address or a CIDR range`);
    const family = type === 4 ? 'ipv4' : 'ipv6';
    if (prefix === null) list.addAddress(ip, family);
    else list.addSubnet(ip, prefix, family);
  }
  return (address) => {
    if (address === undefined) return false;
    const v4 = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : null;
    if (v4 !== null) return list.check(v4, 'ipv4');
    const type = isIP(address);
    return type !== 0 && list.check(address, type === 4 ? 'ipv4' : 'ipv6');
  };
}
