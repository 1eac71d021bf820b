// FORMAT.md 8.3: the addresses of an email file, in dropline's reading (docs/format.md "Email
// files"):
// - surrounding white space and one pair of `<` `>` are removed; nothing else is: a display
//   name (`Ana <ana@x.co>`) or `mailto:` makes the address invalid;
// - exactly one `@`; no white space or control character anywhere;
// - RFC 5321 4.5.3.1 lengths, in UTF-8 octets: at most 64 before the `@`, 254 in all (the
//   path's 256 less its brackets), each domain label at most 63 once in ASCII;
// - the local part a dot-atom (RFC 5322 atext and dots, no leading, trailing or double dot),
//   non-ASCII letters allowed (RFC 6531); a quoted local part (`"a b"@x.co`) is refused;
// - the domain: at least two labels of letters, digits and hyphens, none starting or ending
//   with a hyphen, the last not all digits; an international domain is converted to ASCII
//   (punycode) by node's url.domainToASCII, which also lower-cases it; an IP literal
//   (`[192.0.2.1]`) is refused.
// The address sent keeps the local part as written (it may be case-sensitive) and the domain
// in ASCII, lower case.
import { domainToASCII } from 'node:url';

export type EmailResult = { ok: true; address: string } | { ok: false; message: string };

const MAX_LOCAL = 64;
const MAX_ADDRESS = 254;
const MAX_LABEL = 63;
/** RFC 5322 atext: letters, digits and ! # $ % & ' * + - / = ? ^ _ ` { | } ~ (ASCII). */
const ATEXT = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]$/;
const LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
// Control characters and every kind of white space (Unicode included).
const SPACE_OR_CONTROL = /[\s\p{Cc}\p{Cf}]/u;

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** A value for a message: at most 60 characters. */
function shown(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

export function normalizeEmail(raw: string): EmailResult {
  let s = raw.trim();
  if (s.startsWith('<') && s.endsWith('>')) s = s.slice(1, -1).trim();
  const fail = (why: string): EmailResult => ({ ok: false, message: `${shown(raw.trim())}: ${why}` });
  if (s.length === 0) return { ok: false, message: 'the address is missing' };
  if (s.startsWith('"')) return fail('a quoted local part ("…"@) is not accepted');
  if (SPACE_OR_CONTROL.test(s)) return fail('an address has no spaces or control characters');
  const at = s.indexOf('@');
  if (at < 0) return fail('an address has an @');
  if (s.indexOf('@', at + 1) >= 0) return fail('an address has one @, not several');
  const local = s.slice(0, at);
  const domain = s.slice(at + 1);
  if (local.length === 0) return fail('nothing before the @');
  if (domain.length === 0) return fail('no domain after the @');
  if (/^mailto:/i.test(local)) return fail('write the address alone, without mailto:');
  if (bytes(local) > MAX_LOCAL) return fail(`at most ${MAX_LOCAL} octets before the @`);
  if (local.startsWith('.') || local.endsWith('.') || local.includes('..'))
    return fail('a dot may not start or end the part before the @, nor follow another');
  for (const ch of local) {
    if (ch === '.' || ATEXT.test(ch)) continue;
    // RFC 6531: a non-ASCII letter, digit or mark (not punctuation or symbols like « or ©).
    if (ch.codePointAt(0)! > 127 && /[\p{L}\p{N}\p{M}]/u.test(ch)) continue;
    return fail(`${ch} may not appear before the @`);
  }
  if (domain.startsWith('[')) return fail('an IP address as domain is not accepted');
  const ascii = domainToASCII(domain);
  if (ascii === '') return fail('the domain is not a valid domain name');
  const labels = ascii.split('.');
  if (labels.length < 2) return fail('the domain has a dot (example.com)');
  for (const label of labels) {
    if (label.length === 0) return fail('the domain has an empty label (two dots, or a dot at an end)');
    if (label.length > MAX_LABEL) return fail(`a domain label has at most ${MAX_LABEL} characters`);
    if (!LABEL.test(label))
      return fail('a domain label is letters, digits and hyphens, not starting or ending with a hyphen');
  }
  if (/^\d+$/.test(labels.at(-1)!)) return fail('the last label of the domain is not all digits');
  const address = `${local}@${ascii}`;
  if (bytes(address) > MAX_ADDRESS) return fail(`an address has at most ${MAX_ADDRESS} octets`);
  return { ok: true, address };
}

/** For logs and pages: the first character before the @, then ***, then the domain. */
export function maskEmail(address: string): string {
  const at = address.lastIndexOf('@');
  if (at === 0) return '***';
  const first = [...address][0] ?? '';
  return at < 0 ? `${first}***` : `${first}***${address.slice(at)}`;
}
