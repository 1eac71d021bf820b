// What `validate` says of a read file, the parts every channel's description uses (each
// channel's `describe` puts its own lines together from these).
import { type ReadSummary, TEMPLATES_LISTED } from '../format/read-types.ts';

export const fmt = (n: number) => n.toLocaleString('en-US');

export const quote = (text: string, max: number) =>
  JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);

/** "; countries CO 3, MX 1" (most first), or nothing when no number was read. */
export function countriesNote(s: ReadSummary): string {
  const countries = Object.entries(s.countries)
    .sort((a, b) => b[1] - a[1])
    .map(([c, n]) => `${c} ${fmt(n)}`)
    .join(', ');
  return countries ? `; countries ${countries}` : '';
}

/** What the file costs: segments by country, and what transliteration saves (or costs). */
export function costLines(s: ReadSummary): string[] {
  const out: string[] = [];
  const byCountry = Object.entries(s.segmentsByCountry)
    .map(([c, n]) => `${c} ${fmt(n)}`)
    .join(', ');
  if (byCountry) out.push(`  segments by country: ${byCountry}`);
  const t = s.transliteration;
  const written = t.segmentsAsWritten;
  const translit = t.segmentsTransliterated;
  const diff = written - translit;
  const effect = diff === 0 ? 'no difference' : diff > 0 ? `${fmt(diff)} fewer` : `${fmt(-diff)} more`;
  if (t.mode === 'gsm7') {
    out.push(
      `  transliteration gsm7: ${fmt(translit)} segments sent, ${fmt(written)} as written (${effect}; ${fmt(t.recipientsChanged)} recipients' texts changed)`,
    );
  } else {
    out.push(
      `  transliteration never: ${fmt(written)} segments as written; with --transliterate gsm7 ${fmt(translit)} (${effect}; ${fmt(t.recipientsChanged)} recipients' texts would change)`,
    );
  }
  return out;
}

/** One merged example per template (docs/format.md "Format 1.1"): message text only. */
export function templateLines(s: ReadSummary): string[] {
  const out: string[] = [];
  for (const t of s.templates) {
    out.push(`  template ${quote(t.template, 160)}`);
    out.push(`    example (line ${t.line}): ${quote(t.example, 320)}`);
  }
  if (s.templates.length >= TEMPLATES_LISTED) out.push(`  (the first ${TEMPLATES_LISTED} templates)`);
  return out;
}
