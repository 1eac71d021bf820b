/**
 * The addresses of an email file, in dropline's reading (docs/format.md "Email
 * files"). `normalizeEmail` applies these rules, in this order; the first that fails is the
 * message (the caller reports it under INVALID_EMAIL):
 * - white space around the value is removed (String.prototype.trim: spaces, tabs, no-break
 *   spaces, a BOM), then one surrounding pair of `<` `>` and the white space just inside it;
 *   nothing else is removed;
 * - a display name (`Ana <ana@x.co>`) and a `mailto:` prefix make the value invalid;
 * - a quoted local part (`"a b"@x.co`) is refused (RFC 5321 allows it; files never need it);
 * - no white space or control or format character (Unicode Cc, Cf) anywhere;
 * - exactly one `@`, with something before and after it;
 * - the local part: at most 64 UTF-8 octets (RFC 5321 4.5.3.1.1); a dot-atom (RFC 5322
 *   atext and dots, no leading, trailing or double dot); a non-ASCII letter, digit or mark is
 *   allowed (RFC 6531 SMTPUTF8), other non-ASCII characters (symbols, punctuation) are not;
 * - an IP literal domain (`[192.0.2.1]`, or a domain that is all digits and dots) is refused;
 * - the domain as written: ASCII letters, digits, hyphens and dots, or non-ASCII characters
 *   (no `%`: node's converter would percent-decode it and send another domain);
 * - the domain converted by node's url.domainToASCII (IDNA/UTS 46: punycode, lower case; ''
 *   is a failure): at least two labels; each label 1 to 63 octets of letters, digits and
 *   hyphens, not starting or ending with a hyphen; the last label not all digits;
 * - the address as sent (local part as written, domain in ASCII) at most 254 octets (RFC 5321
 *   4.5.3.1.3 path of 256 less its brackets, errata 1690); the domain is then at most 252,
 *   within the RFC's 255.
 * The address sent keeps the local part as written (it may be case-sensitive; it is not
 * Unicode-normalized) and the domain in ASCII, lower case: `josé@bücher.de` is sent as
 * `josé@xn--bcher-kva.de`.
 * Messages show the value cut to 60 characters, control and format characters escaped.
 */
import { domainToASCII } from 'node:url';
import { REASONS } from '../errors.ts';
import type { ReadSummary } from './read-types.ts';

export type EmailResult = { ok: true; address: string } | { ok: false; message: string };

const MAX_LOCAL = 64;
const MAX_ADDRESS = 254;
const MAX_LABEL = 63;
const MAX_SHOWN = 60;
/** RFC 5322 atext: letters, digits and ! # $ % & ' * + - / = ? ^ _ ` { | } ~ (ASCII). */
const ATEXT = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]$/;
/** RFC 6531: a non-ASCII letter, digit or mark (not punctuation or symbols like « or ©). */
const UTF8_LOCAL = /^[\p{L}\p{N}\p{M}]$/u;
const LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
/** The domain as written: ASCII letters, digits, hyphens, dots, or any non-ASCII character. */
const DOMAIN_WRITTEN = /^(?:[A-Za-z0-9.-]|[^\x00-\x7f])+$/u;
// Control and format characters and every kind of white space (Unicode included).
const SPACE_OR_CONTROL = /[\s\p{Cc}\p{Cf}]/u;
const UNPRINTABLE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** A value for a message: at most 60 characters of it (whole code points), unprintables escaped. */
function shown(s: string): string {
  const chars = [...s];
  const cut = chars.length > MAX_SHOWN ? `${chars.slice(0, MAX_SHOWN - 3).join('')}...` : s;
  return cut.replace(UNPRINTABLE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

export function normalizeEmail(raw: string): EmailResult {
  const written = String(raw ?? '').trim();
  let s = written;
  if (s.startsWith('<') && s.endsWith('>')) s = s.slice(1, -1).trim();
  const fail = (why: string): EmailResult => ({ ok: false, message: `${shown(written)}: ${why}` });
  if (s.length === 0) return { ok: false, message: 'the address is missing' };
  if (/<[^<>]*>$/.test(s)) return fail('a display name (Name <address>) is not accepted');
  if (/^mailto:/i.test(s)) return fail('a mailto: prefix is not accepted');
  if (s.startsWith('"')) return fail('a quoted local part ("…"@) is not accepted');
  if (SPACE_OR_CONTROL.test(s)) return fail('spaces and control characters are not accepted');
  const at = s.indexOf('@');
  if (at < 0) return fail('there is no @');
  if (s.indexOf('@', at + 1) >= 0) return fail('there is more than one @');
  const local = s.slice(0, at);
  const domain = s.slice(at + 1);
  if (local.length === 0) return fail('nothing before the @');
  if (domain.length === 0) return fail('no domain after the @');
  if (bytes(local) > MAX_LOCAL) return fail(`more than ${MAX_LOCAL} octets before the @`);
  if (local.startsWith('.') || local.endsWith('.') || local.includes('..'))
    return fail('a dot starts or ends the part before the @, or follows another dot');
  for (const ch of local) {
    if (ch === '.' || ATEXT.test(ch) || (ch.codePointAt(0)! > 0x7f && UTF8_LOCAL.test(ch))) continue;
    return fail(`${ch} is not accepted before the @`);
  }
  if (domain.startsWith('[') || /^[\d.]+$/.test(domain))
    return fail('an IP address as domain is not accepted');
  if (!DOMAIN_WRITTEN.test(domain))
    return fail('the domain has a character other than letters, digits, hyphens and dots');
  const ascii = domainToASCII(domain);
  if (ascii === '') return fail('the domain is not a valid domain name');
  const labels = ascii.split('.');
  if (labels.length < 2) return fail('the domain has no dot (example.com)');
  for (const label of labels) {
    if (label.length === 0) return fail('the domain has an empty label (two dots, or a dot at an end)');
    if (label.length > MAX_LABEL) return fail(`a domain label has more than ${MAX_LABEL} octets`);
    if (!LABEL.test(label))
      return fail(
        /^-|-$/.test(label)
          ? 'a domain label starts or ends with a hyphen'
          : 'the domain has a character other than letters, digits, hyphens and dots',
      );
  }
  if (/^\d+$/.test(labels.at(-1)!)) return fail('the last label of the domain is all digits');
  const address = `${local}@${ascii}`;
  if (bytes(address) > MAX_ADDRESS) return fail(`the address has more than ${MAX_ADDRESS} octets`);
  return { ok: true, address };
}

/**
 * For logs and pages: the first character before the last @, then ***, then the @ and the
 * domain (`a***@example.com`); with nothing before the @, `***@domain`; without an @, the
 * first character and *** (`n***`); nothing, `***`. Never throws.
 */
export function maskEmail(address: string): string {
  let s: string;
  try {
    s = typeof address === 'string' ? address : String(address ?? '');
  } catch {
    return '***';
  }
  const at = s.lastIndexOf('@');
  const local = at < 0 ? s : s.slice(0, at);
  const first = [...local][0] ?? '';
  return at < 0 ? `${first}***` : `${first}***${s.slice(at)}`;
}

/**
 * An email file whose `#! templateId:` (or its source's `email.templateId`) is not among the
 * account's stored templates (`available`, GET /email/v1/templates): rejected UNKNOWN_TEMPLATE,
 * nothing sent. A file already rejected, or without a templateId, is left as it is.
 */
export function refuseUnknownTemplate(summary: ReadSummary, available: readonly string[]): void {
  const templateId = summary.email?.templateId;
  if (!summary.accepted || templateId == null || available.includes(templateId)) return;
  const line = summary.directives.templateId?.line;
  const listed = available.slice(0, 10).join(', ');
  summary.accepted = false;
  summary.rejection = {
    code: 'UNKNOWN_TEMPLATE',
    message: `${line === undefined ? '' : `line ${line}: `}the email account has no template ${templateId.slice(0, 60)} (its templates: ${available.length === 0 ? 'none' : `${listed}${available.length > 10 ? ', …' : ''}`})`,
    hint: REASONS.UNKNOWN_TEMPLATE.hint,
    params: line === undefined ? {} : { line },
  };
}
