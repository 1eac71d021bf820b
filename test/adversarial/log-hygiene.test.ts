// What the daemon's log tells an operator (issue 10 item 19): weak settings are warned about
// at start, a failure that repeats every poll is not a line every poll, failed chunks and a
// `partial` file are warnings or errors, and a refused delivery report says why without the
// token.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { startupWarnings } from '../../src/config/warnings.ts';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

function logLines(output: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      // a line cut by the chunking of the pipe: the next read completes it
    }
  }
  return lines;
}

const BULK = (n: number) =>
  `Hola\n${Array.from({ length: n }, (_, i) => `3001${String(i).padStart(6, '0')}`).join('\n')}\n`;

describe('the daemon log', () => {
  let h: PipelineHarness | null = null;
  afterEach(async () => {
    await h?.close();
    h = null;
  });

  it('warns at start about a short notify token', async () => {
    h = await PipelineHarness.create();
    (h.config.notify as Record<string, unknown>).token = 'short-token';
    await writeFile(h.configPath, JSON.stringify(h.config));
    await h.start();
    const warned = await waitFor('the weak-token warning', () =>
      logLines(h!.daemonOutput).find((l) => l.level === 40 && /notify\.token/.test(l.msg)),
    );
    expect(warned.msg).toMatch(/16/);
    expect(h.daemonOutput).not.toContain('short-token');
  });

  it('logs a failed chunk and a partial file at warn or above', async () => {
    h = await PipelineHarness.create({ api: { retry: { baseMs: 10, maxMs: 20, maxAttempts: 2 } } });
    await h.start();
    await h.faults({ massive: { '500': 1 } });
    await h.dropFile('caida.txt', BULK(3));
    await h.waitForState('caida.txt', 'partial');
    const lines = await waitFor('the partial transition logged', () => {
      const all = logLines(h!.daemonOutput);
      return all.some((l) => /→ partial/.test(l.msg)) && all;
    });
    const chunk = lines.find((l) => /^chunk \d+ failed/.test(l.msg));
    expect(chunk?.level).toBeGreaterThanOrEqual(40);
    expect(lines.find((l) => /→ partial/.test(l.msg))?.level).toBeGreaterThanOrEqual(40);
  });

  it('logs the same source error once, not every poll, and says when it recovers', async () => {
    h = await PipelineHarness.create();
    const other = join(h.dir, 'other');
    h.config.sources = [
      ...(h.config.sources as Record<string, unknown>[]),
      { name: 'other', type: 'local', path: other, stableMs: 200, pollMs: 100 },
    ];
    await writeFile(h.configPath, JSON.stringify(h.config));
    await h.start();
    // The local source's inbox becomes a file: every poll (100 ms) fails to list it.
    await rm(join(h.drop, 'inbox'), { recursive: true });
    await writeFile(join(h.drop, 'inbox'), 'not a folder');
    await waitFor('the first listing error', () => h!.daemonOutput.includes('cannot list the inbox'));
    // A whole file through the other source: many polls of the broken one meanwhile.
    await writeFile(join(other, 'inbox', 'a.txt'), BULK(2));
    await h.waitForState('a.txt', 'completed');
    await writeFile(join(other, 'inbox', 'b.txt'), BULK(3));
    await h.waitForState('b.txt', 'completed');
    const errors = logLines(h.daemonOutput).filter((l) => l.msg.includes('cannot list the inbox'));
    expect(errors.length).toBe(1);

    await rm(join(h.drop, 'inbox'));
    await mkdir(join(h.drop, 'inbox'));
    await waitFor('the recovery line', () =>
      logLines(h!.daemonOutput).find((l) => l.source === 'local' && /listed again/.test(l.msg)),
    );
  });

  it('says why a delivery report was refused, without the token', async () => {
    h = await PipelineHarness.create();
    await h.start();
    const url = `http://127.0.0.1:${h.notifyPort}/notify`;
    const body = JSON.stringify({ results: [] });
    const headers = { 'content-type': 'application/json' };
    expect((await fetch(url, { method: 'POST', body, headers })).status).toBe(401);
    expect((await fetch(`${url}?token=WrongTokenValue99`, { method: 'POST', body, headers })).status).toBe(
      401,
    );
    const refused = await waitFor('two refusals logged', () => {
      const r = logLines(h!.daemonOutput).filter((l) => /refused/.test(l.msg));
      return r.length >= 2 && r;
    });
    const said = refused.map((l) => JSON.stringify(l)).join('\n');
    expect(said).toMatch(/missing/);
    expect(said).toMatch(/wrong/);
    expect(h.daemonOutput).not.toContain('WrongTokenValue99');
  });
});

describe('startupWarnings', () => {
  const secrets = (token: string): { notifyToken: string; opsToken?: string } => ({ notifyToken: token });
  it('names a notify token under 16 characters and ops on every interface', () => {
    const warnings = startupWarnings(
      parseConfig({ ops: { listen: '0.0.0.0:8080', token: 'o'.repeat(32) } }),
      secrets('abc'),
    );
    expect(warnings.join('\n')).toMatch(/notify\.token.*16/);
    expect(warnings.join('\n')).toMatch(/ops\.listen.*0\.0\.0\.0/);
  });
  it('is silent for a loopback ops server and a long token', () => {
    expect(startupWarnings(parseConfig({}), secrets('a'.repeat(32)))).toEqual([]);
    expect(
      startupWarnings(parseConfig({}), { ...secrets('a'.repeat(32)), opsToken: 'p'.repeat(16) }),
    ).toEqual([]);
  });
  it('names an ops token under 16 characters: /login and the Bearer check can be tried without end', () => {
    const warnings = startupWarnings(parseConfig({ ops: { token: 'x' } }), {
      ...secrets('a'.repeat(32)),
      opsToken: 'x',
    });
    expect(warnings.join('\n')).toMatch(/ops\.token has 1 characters: use at least 16/);
    expect(warnings.join('\n')).not.toMatch(/"x"|'x'/);
  });
});
