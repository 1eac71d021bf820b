// Issue 10 item 16: the ops API is not a way around privacy or a way to stall the daemon.
// `/api/files` clamps its limit and pages with a Link header; raw invalid lines are masked in
// every manifest (API, status --json, reports/*.manifest.json); a token guards the API (and
// is required off loopback, checked when the config loads); on loopback only localhost
// Host headers are answered (DNS rebinding).
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { pageLimit } from '../../src/ops/server.ts';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

/** A raw HTTP GET with the headers given (fetch would not send a Host of our choosing). */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((done, fail) => {
    const req = request(url, { headers, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (s: string) => {
        body += s;
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
    req.end();
  });
}

const TOKEN = 'ops-token-for-the-test-0123456789';

describe('/api/files limits and pages', () => {
  it('clamps limit=-1 and huge limits, and pages through every file once with Link', async () => {
    h = await PipelineHarness.create({ ops: { token: TOKEN } });
    await h.start();
    // One after the other, so "newest first" is the order they were dropped in, reversed.
    for (let i = 0; i < 5; i++) {
      await h.dropFile(`f${i}.txt`, personalizedFile(10, 60 + i).content);
      await h.waitForState(`f${i}.txt`, 'completed');
    }
    const auth = { authorization: `Bearer ${TOKEN}` };

    expect(pageLimit('100000')).toBe(500);
    expect(pageLimit('0')).toBe(1);
    const minus = await rawGet(`${h.opsUrl}/api/files?limit=-1`, auth);
    expect(minus.status).toBe(200);
    expect((JSON.parse(minus.body) as Manifest[]).length).toBe(1);
    const bad = await rawGet(`${h.opsUrl}/api/files?limit=abc`, auth);
    expect(bad.status).toBe(400);

    const seen: string[] = [];
    let next: string | null = `${h.opsUrl}/api/files?limit=2`;
    for (let page = 0; next && page < 10; page++) {
      const r = await rawGet(next, auth);
      expect(r.status).toBe(200);
      seen.push(...(JSON.parse(r.body) as Manifest[]).map((m) => m.name));
      const link = r.headers.link as string | undefined;
      const m = link ? /<([^>]+)>;\s*rel="next"/.exec(link) : null;
      next = m ? new URL(m[1]!, h.opsUrl).toString() : null;
    }
    expect(seen).toEqual(['f4.txt', 'f3.txt', 'f2.txt', 'f1.txt', 'f0.txt']);
  });
});

describe('privacy of raw lines', () => {
  it('errors[].value and messages are masked in the API, status --json and the manifest file', async () => {
    h = await PipelineHarness.create({ source: { maxInvalidRatio: 0.9 } });
    await h.start();
    const gen = personalizedFile(10, 70);
    // Invalid lines that still carry a whole phone number (a wrong country, spaces, letters).
    const raw = ['+57 300 123 4567 8;Hola', '3001234567x;Hola', '5730012345678901;Hola'];
    await h.dropFile('privado.txt', `${gen.content}${raw.join('\n')}\n`);
    const m = await h.waitForState('privado.txt', 'completed');
    const fromApi = (await h.opsGet(`/api/files/${m.fileId}`)).body as Manifest;
    const status = await h.cli(['status', m.fileId, '--json']);
    const fromCli = JSON.parse(status.stdout) as Manifest;
    const onDisk = JSON.parse(await h.readReport(m, 'manifest.json')) as Manifest;
    for (const doc of [fromApi, fromCli, onDisk]) {
      expect(doc.errors.length).toBeGreaterThanOrEqual(3);
      const text = JSON.stringify(doc.errors);
      for (const digits of ['57300123456', '3001234567', '5730012345678901']) {
        expect(text.replace(/[^0-9*]/g, '')).not.toContain(digits);
      }
      expect(text).toContain('*');
    }
    // The report files keep the raw value: they are the account needed to fix the file.
    expect(await h.readReport(m)).toContain('3001234567x');
  });
});

describe('who may call the ops API', () => {
  it('with a token: 401 without it or with a wrong one; health stays open', async () => {
    h = await PipelineHarness.create({ ops: { token: TOKEN } });
    await h.start();
    expect((await rawGet(`${h.opsUrl}/api/files`, {})).status).toBe(401);
    expect((await rawGet(`${h.opsUrl}/api/files`, { authorization: 'Bearer nope' })).status).toBe(401);
    expect((await rawGet(`${h.opsUrl}/api/files`, { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect((await rawGet(`${h.opsUrl}/api/files`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    expect((await rawGet(`${h.opsUrl}/healthz`, {})).status).toBe(200);
    // Readiness stays open to probes, but its checks (files, backends' errors) only with the token.
    const open = await rawGet(`${h.opsUrl}/readyz`, {});
    expect(open.status).toBe(200);
    expect(JSON.parse(open.body)).toEqual({ ready: true });
    const full = await rawGet(`${h.opsUrl}/readyz`, { authorization: `Bearer ${TOKEN}` });
    expect(JSON.parse(full.body)).toMatchObject({ ready: true, checks: { store: 'ok' } });
    expect(h.daemonOutput).not.toContain(TOKEN);
  });

  it('on loopback, answers only Host names of this machine (DNS rebinding)', async () => {
    h = await PipelineHarness.create();
    await h.start();
    const port = new URL(h.opsUrl).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost']) {
      expect((await rawGet(`${h.opsUrl}/api/files`, { host })).status, host).toBe(200);
    }
    for (const host of [`evil.example:${port}`, 'attacker.test', `127.0.0.1.nip.io:${port}`]) {
      const r = await rawGet(`${h.opsUrl}/api/files`, { host });
      expect(r.status, host).toBe(421);
      expect(r.body).not.toContain('fileId');
    }
  });

  it('a non-loopback ops.listen without ops.token fails when the config loads', async () => {
    const base = { sources: [{ name: 'l', type: 'local', path: '/tmp/x' }] };
    expect(() => parseConfig({ ...base, ops: { listen: '0.0.0.0:8080' } })).toThrow(/ops\.token/);
    expect(() => parseConfig({ ...base, ops: { listen: '10.1.2.3:8080' } })).toThrow(/ops\.token/);
    expect(() => parseConfig({ ...base, ops: { listen: '0.0.0.0:8080', token: '' } })).toThrow(/ops\.token/);
    expect(parseConfig({ ...base, ops: { listen: '0.0.0.0:8080', token: TOKEN } }).ops.listen).toBe(
      '0.0.0.0:8080',
    );
    expect(parseConfig({ ...base, ops: { listen: '127.0.0.1:8080' } }).ops.listen).toBe('127.0.0.1:8080');
    expect(parseConfig({ ...base, ops: { listen: 'localhost:8080' } }).ops.listen).toBe('localhost:8080');

    // The daemon refuses to start with it, at once and with the code.
    h = await PipelineHarness.create({ ops: { listen: '0.0.0.0:0' } });
    const r = await h.cli(['run'], { timeoutMs: 20_000 });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('DROPLINE_ERR_CONFIG');
    expect(r.stderr).toContain('ops.token');
  });
});
