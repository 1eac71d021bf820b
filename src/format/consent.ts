// Consent lists (docs/opt-outs.md "Consent lists (`consent.list`)"): who agreed to be
// contacted, and by which channels. One entry a line, `<number or address>;<channels>`,
// channels comma-separated (`573001234567;sms,whatsapp`, `ana@example.com;email`); blank
// lines and lines starting with `#` are skipped; a number in any form the drop files take
// (national numbers in the list's default country); an address compared in lower case.
// A number on several lines has every channel those lines give.

import { type NumberRules, normalizeNumber } from './numbers.ts';

/** Whether a recipient of one channel's file may be contacted (its sent form, or its address). */
export interface ConsentCheck {
  allows(key: string): boolean;
}

/** A consent list as read. */
export interface ConsentTable {
  /** The channels `key` (a sent-form number or an address) consented to, or undefined. */
  channelsOf(key: string): ReadonlySet<string> | undefined;
  /** The check of one channel's files. */
  forChannel(channel: string): ConsentCheck;
  /** Distinct numbers and addresses. */
  readonly size: number;
  /** Entry lines that were no number or address with known channels. */
  readonly invalid: number;
  /** Entry lines that were. */
  readonly entryLines: number;
}

/** The key an entry's first field stands for, or null: an address in lower case, else a number's sent form. */
export function consentKey(raw: string, rules: NumberRules): string | null {
  const value = raw.trim();
  if (value.includes('@')) return /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value) ? value.toLowerCase() : null;
  const n = normalizeNumber(value, rules);
  return n.ok ? n.number : null;
}

/**
 * Reads a consent list's text; `known`: the channel names (src/channels/names.ts, given by
 * the caller: format/ does not reach the channels), a line naming another is invalid, never
 * half-read.
 */
export function parseConsentList(text: string, rules: NumberRules, known: ReadonlySet<string>): ConsentTable {
  const table = new Map<string, Set<string>>();
  let invalid = 0;
  let entryLines = 0;
  for (const line of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const [first = '', channels = ''] = trimmed.split(';');
    const key = consentKey(first, rules);
    const names = channels
      .split(',')
      .map((c) => c.trim().toLowerCase())
      .filter((c) => c !== '');
    if (key === null || names.length === 0 || names.some((c) => !known.has(c))) {
      invalid++;
      continue;
    }
    entryLines++;
    let set = table.get(key);
    if (!set) table.set(key, (set = new Set()));
    for (const c of names) set.add(c);
  }
  return {
    channelsOf: (key) => table.get(key.toLowerCase()),
    forChannel: (channel) => ({ allows: (key) => table.get(key.toLowerCase())?.has(channel) ?? false }),
    size: table.size,
    invalid,
    entryLines,
  };
}
