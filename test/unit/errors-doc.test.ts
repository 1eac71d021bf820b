import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS, REASONS, STATE_DETAILS } from '../../src/errors.ts';

const root = join(import.meta.dirname, '..', '..');
const doc = readFileSync(join(root, 'docs', 'errors.md'), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('docs/errors.md', () => {
  const known = new Set<string>([
    ...Object.keys(REASONS),
    ...Object.keys(ERRORS),
    ...Object.keys(STATE_DETAILS),
  ]);

  it('documents every code in the tables of src/errors.ts', () => {
    const missing = [...known].filter((code) => !doc.includes(`\`${code}\``));
    expect(missing).toEqual([]);
  });

  it('every code used in src/ is in the tables (and so in the docs)', () => {
    const used = new Set<string>();
    // src/sandbox/ stands in for the messaging service: its codes are that service's, not dropline's.
    for (const file of sourceFiles(join(root, 'src')).filter((f) => !f.includes(join('src', 'sandbox')))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\bcode:\s*'([A-Z][A-Z0-9_]+)'/g)) used.add(m[1]!);
      for (const m of text.matchAll(/'(DROPLINE_ERR_[A-Z0-9_]+)'/g)) used.add(m[1]!);
    }
    expect(used.size).toBeGreaterThan(0);
    expect([...used].filter((code) => !known.has(code))).toEqual([]);
  });
});
