// docs/format.md "How dropline tells the layouts apart": which layout a file uses, and whether its
// first data line is a header.
import { SEPARATORS } from './records.ts';

export type Layout = 'personalized' | 'bulk';

/** Lower-case, trimmed, without accents: how header names are compared. */
export function normaliseHeaderName(s: string): string {
  return s.trim().replace(/^"|"$/g, '').trim().toLowerCase().normalize('NFD').replace(/\p{M}/gu, '');
}

export const NUMBER_COLUMNS = new Set([
  'number',
  'numero',
  'celular',
  'telefono',
  'movil',
  'phone',
  'msisdn',
  'to',
  'destination',
]);
/** docs/format.md "Email files": the address column of an email file, in place of the number column. */
export const EMAIL_COLUMNS = new Set(['email', 'correo', 'destinatario', 'recipient']);
export const MESSAGE_COLUMNS = new Set(['message', 'mensaje', 'text', 'texto', 'sms']);
export const MESSAGE_ID_COLUMNS = new Set(['messageid', 'message_id', 'id', 'referencia', 'reference']);

/** The text of the first field: up to the first separator character. */
function firstField(line: string): string {
  let end = line.length;
  for (const sep of SEPARATORS) {
    const i = line.indexOf(sep);
    if (i !== -1 && i < end) end = i;
  }
  return line.slice(0, end);
}

/** The first field names a recipient column (`columns`: NUMBER_COLUMNS, or EMAIL_COLUMNS for email). */
export function isHeaderLine(line: string, columns: ReadonlySet<string> = NUMBER_COLUMNS): boolean {
  return columns.has(normaliseHeaderName(firstField(line)));
}

/**
 * A number-like token (`+`, digits, space, `-`, `.`, `(`, `)`; at least 7 digits; never a
 * TAB) immediately followed by a separator.
 */
export function startsWithNumberThenSeparator(line: string): boolean {
  let digits = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
    else if (c === 43 || c === 32 || c === 45 || c === 46 || c === 40 || c === 41) continue;
    else return digits >= 7 && SEPARATORS.includes(line[i]!);
  }
  return false;
}

export function layoutFromName(name: string): Layout | null {
  const lower = name.toLowerCase();
  if (lower.endsWith('.bulk.txt')) return 'bulk';
  if (lower.endsWith('.personalized.txt')) return 'personalized';
  return null;
}

export interface LayoutChoice {
  layout: Layout;
  header: boolean;
}

/**
 * In the order docs/format.md gives: configured layout, file name, header, number + SEP, bulk. An
 * email file is headed (an address column first: personalized, its other columns the
 * recipient's fields) or lists addresses (bulk, without a message record).
 */
export function chooseLayout(
  firstDataLine: string,
  name: string,
  configured: Layout | null,
  email = false,
): LayoutChoice {
  const forced = configured ?? layoutFromName(name);
  if (forced === 'bulk') return { layout: 'bulk', header: false };
  if (email)
    return isHeaderLine(firstDataLine, EMAIL_COLUMNS)
      ? { layout: 'personalized', header: true }
      : { layout: 'bulk', header: false };
  const header = isHeaderLine(firstDataLine);
  if (forced === 'personalized' || header) return { layout: 'personalized', header };
  return startsWithNumberThenSeparator(firstDataLine)
    ? { layout: 'personalized', header: false }
    : { layout: 'bulk', header: false };
}
