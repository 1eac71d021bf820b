// docs/contract.md stays in step with the command line (the fastify errors-versus-docs
// habit): every command the program registers is in its commands table and no other; every
// flag of a command is in its "Flags" list and no flag listed is missing from the program;
// the JSON that `validate --json` and the manifest print has no field the page leaves out,
// and the page lists no top-level field they lack. The JSON comes from the real commands.

import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerCommands } from '../../src/cli/commands/index.ts';
import { REPO, runCli } from '../helpers/cli.ts';

const doc = readFileSync(join(REPO, 'docs/contract.md'), 'utf8');

/** The text of a `##`/`###` section of the page, up to the next heading of its level or higher. */
function section(heading: string): string {
  const start = doc.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`docs/contract.md has no "${heading}"`);
  const level = heading.indexOf(' ');
  const rest = doc.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`\\n#{1,${level}} `));
  return end < 0 ? rest : rest.slice(0, end);
}

const program = new Command('dropline');
registerCommands(program, () => {});
const commands = program.commands.filter((c) => c.name() !== 'help');

/** The first indented JSON block of a section, its `// comments` removed. */
function jsonBlock(text: string): string {
  const lines = text.split('\n');
  const first = lines.findIndex((l) => /^ {4}\{/.test(l));
  const block: string[] = [];
  for (const l of lines.slice(first)) {
    if (!l.startsWith('    ')) break;
    block.push(l.replace(/\s\/\/.*$/, ''));
  }
  return block.join('\n');
}

/** The keys at the outermost level of a documented JSON object (braces counted, strings skipped). */
function topLevelKeys(block: string): Set<string> {
  const keys = new Set<string>();
  let depth = 0;
  for (const m of block.matchAll(/"((?:[^"\\]|\\.)*)"\s*(:?)|([{[])|([}\]])/g)) {
    if (m[3]) depth++;
    else if (m[4]) depth--;
    else if (m[2] && depth === 1) keys.add(m[1]!);
  }
  return keys;
}

/** Every key of a JSON value, as `a.b.c` paths; the values of `maps` (keyed by data) not entered. */
function keyPaths(value: unknown, maps: ReadonlySet<string>, at = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => keyPaths(v, maps, at));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => {
    const path = at ? `${at}.${k}` : k;
    return [path, ...(maps.has(path) ? [] : keyPaths(v, maps, path))];
  });
}

/** Whether the block names the key (`"key":`). */
const documents = (block: string, path: string) => block.includes(`"${path.split('.').at(-1)}":`);

describe('docs/contract.md against the program', () => {
  it('the commands table lists every command, and only those', () => {
    const table = section('## Commands')
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => /^\| `([a-z-]+)/.exec(l)![1]!);
    expect(table.sort()).toEqual(commands.map((c) => c.name()).sort());
  });

  it('"Flags" names every flag of every command, and no flag a command lacks', () => {
    const flags = new Map<string, Set<string>>();
    for (const line of section('## Commands').split('\n- ').slice(1)) {
      const head = /^((?:`[a-z-]+`(?:, )?)+):/.exec(line);
      if (!head) continue;
      const named = new Set([...line.slice(head[0].length).matchAll(/`(--[a-z-]+)/g)].map((m) => m[1]!));
      for (const c of head[1]!.matchAll(/`([a-z-]+)`/g)) flags.set(c[1]!, named);
    }
    for (const c of commands) {
      const own = c.options.map((o) => o.long!).filter((f) => f !== '--help');
      if (own.length === 0) continue;
      const listed = flags.get(c.name());
      expect(listed, `no "- \`${c.name()}\`:" line in Flags`).toBeDefined();
      expect(
        own.filter((f) => !listed!.has(f)),
        `${c.name()}: flags missing from docs`,
      ).toEqual([]);
      expect(
        [...listed!].filter((f) => !own.includes(f)),
        `${c.name()}: flags the docs list that the program lacks`,
      ).toEqual([]);
    }
  });

  it('validate --json: every field printed is documented, every documented field printed', async () => {
    const block = jsonBlock(section('### `validate --json`'));
    const r = await runCli(['validate', 'samples/mistakes.txt', '--json'], { env: { DROPLINE_CONFIG: '' } });
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    const maps = new Set(['encodings', 'countries', 'errorCounts', 'warningCounts']);
    expect(keyPaths(out, maps).filter((p) => !documents(block, p))).toEqual([]);
    expect([...topLevelKeys(block)].filter((k) => !(k in out))).toEqual([]);
  });

  it('the manifest: every field printed is documented, every documented field printed', async () => {
    const block = jsonBlock(section('## Manifest'));
    const cwd = await mkdtemp(join(tmpdir(), 'dropline-contract-'));
    try {
      const r = await runCli(['send', join(REPO, 'samples/mistakes.txt'), '--wait', '--json'], {
        cwd,
        env: { DROPLINE_CONFIG: '' },
        timeout: 60_000,
      });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      const maps = new Set(['timestamps', 'errorCounts', 'cost.segmentsByCountry']);
      expect(keyPaths(out, maps).filter((p) => !documents(block, p))).toEqual([]);
      expect([...topLevelKeys(block)].filter((k) => !(k in out))).toEqual([]);
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
  });
});
