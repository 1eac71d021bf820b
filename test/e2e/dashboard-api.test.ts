// Issue 13, the dashboard's API against a running `dropline run` and the sandbox: a file's
// activity (timeline, reports by minute, errors by code), its reports as downloads, the
// actions (refused with a clear message where the state does not allow them, and from any
// other site), the file check (validate --source's answer, masked, nothing stored), the
// service's health, and the login that keeps the ops token in a session cookie.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { PipelineHarness, parseCsv, personalizedFile } from '../helpers/pipeline-harness.ts';

const TOKEN = 'dashboard-api-ops-token-0123456789';
/** A number too long for Colombia: INVALID_NUMBER, and a value the pages must mask. */
const LONG = '573001234567890123';
const gen = personalizedFile(400, 71);
const content = `${gen.content}${LONG};Hola\n`;

let h: PipelineHarness;
let m: Manifest;
let origin: string;
let cookie: string;

/** A raw request with exactly the headers given (fetch adds Origin and Sec-Fetch-* of its own). */
function raw(
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((done, fail) => {
    const req = request(url, { method, headers, timeout: 20_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (s: string) => {
        text += s;
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
    req.end(body);
  });
}

const bearer = { authorization: `Bearer ${TOKEN}` };
const post = (path: string, headers: Record<string, string>, body?: string | Buffer) =>
  raw('POST', `${h.opsUrl}${path}`, headers, body);
const get = (path: string, headers: Record<string, string> = bearer) =>
  raw('GET', `${h.opsUrl}${path}`, headers);

beforeAll(async () => {
  h = await PipelineHarness.create({
    ops: { token: TOKEN },
    // Slow enough for a file to be paused while it is sent (3000 recipients: ten seconds).
    api: { chunkSize: 100, ratePerSecond: 300 },
    // Below the file check's own 64 MB: such a file is answered as the daemon would.
    source: { maxFileBytes: 1_000_000 },
    sandbox: { deliveryDelayMs: 50, failureRatio: 0.1 },
  });
  await h.start();
  origin = h.opsUrl;
  await h.dropFile('campaña noviembre.txt', content);
  m = await h.waitForState('campaña noviembre.txt', 'completed', { timeoutMs: 40_000 });
  const login = await post(
    '/login',
    { 'content-type': 'application/json', origin },
    JSON.stringify({ token: TOKEN }),
  );
  expect(login.status).toBe(200);
  cookie = String(login.headers['set-cookie']).split(';')[0]!;
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('a campaign page’s data', () => {
  it('activity: the timeline of states, reports by minute summing to the counts, errors by code with masked lines', async () => {
    const r = await get(`/api/files/${m.fileId}/activity`);
    expect(r.status).toBe(200);
    const a = JSON.parse(r.body) as {
      events: { at: string; state: string; reason: string | null }[];
      deliveries: { minute: string; delivered: number; undelivered: number; unknown: number }[];
      errors: { code: string; count: number; hint: string; lines: { line: number; value?: string }[] }[];
      actions: string[];
    };
    expect(a.events.map((e) => e.state)).toEqual(['validating', 'sending', 'submitted', 'completed']);
    const sum = (k: 'delivered' | 'undelivered' | 'unknown') => a.deliveries.reduce((n, d) => n + d[k], 0);
    expect(sum('delivered')).toBe(m.counts.delivered);
    expect(sum('undelivered')).toBe(m.counts.undelivered - m.counts.unknown);
    expect(m.counts.undelivered).toBeGreaterThan(0);
    expect(sum('unknown')).toBe(0);
    const invalid = a.errors.find((e) => e.code === 'INVALID_NUMBER');
    expect(invalid?.count).toBe(m.counts.invalid);
    expect(invalid?.hint).not.toBe('');
    const long = invalid?.lines.find((l) => l.line === gen.records + 1);
    expect(long?.value).toBe('57300**********123');
    expect(r.body).not.toContain(LONG);
    // A completed file can be neither paused, resumed, cancelled nor retried.
    expect(a.actions).toEqual([]);
  });

  it('report.csv and errors.csv download with the rows dropline report gives', async () => {
    const r = await get(`/api/files/${m.fileId}/report.csv`);
    expect(r.status).toBe(200);
    expect(r.headers['content-disposition']).toContain(
      `filename*=UTF-8''campa%C3%B1a%20noviembre.${m.fileId}.report.csv`,
    );
    const cli = await h.cli(['report', m.fileId]);
    expect(r.body).toBe(cli.stdout);
    expect(parseCsv(r.body).length).toBe(gen.records + 2);
    const e = await get(`/api/files/${m.fileId}/errors.csv`);
    expect(e.status).toBe(200);
    expect(parseCsv(e.body).length).toBe(m.counts.invalid + 1);
    expect((await get('/api/files/nope/report.csv')).status).toBe(404);
  });

  it('the header: sent today, the delivery rate, reports waiting, the service (GET /api/summary)', async () => {
    const s = JSON.parse((await get('/api/summary')).body) as Record<string, unknown>;
    expect(s).toMatchObject({
      timezone: 'America/Bogota',
      sending: 0,
      sentToday: m.counts.submitted,
      deliveredToday: m.counts.delivered,
      reportsWaiting: 0,
      service: { state: 'ok' },
    });
    expect(s.deliveryRate).toBeCloseTo(
      m.counts.delivered / (m.counts.delivered + m.counts.undelivered - m.counts.unknown),
    );
  });

  it('the list searches by name, fileId prefix and state', async () => {
    await h.dropFile('otra.txt', personalizedFile(5, 72).content);
    await h.waitForState('otra.txt', 'completed');
    const names = async (query: string) =>
      (JSON.parse((await get(`/api/files?${query}`)).body) as Manifest[]).map((f) => f.name);
    expect(await names('q=CAMPAÑA')).toEqual(['campaña noviembre.txt']);
    expect(await names(`q=${m.fileId.slice(0, 6)}`)).toContain('campaña noviembre.txt');
    expect((await names('state=completed')).sort()).toEqual(['campaña noviembre.txt', 'otra.txt']);
    expect(await names('state=paused')).toEqual([]);
    expect((await get('/api/files?state=nonsense')).status).toBe(400);
  });
});

describe('actions', () => {
  it('are refused with the reason when the state does not allow them, and for an unknown file', async () => {
    const r = await post(`/api/files/${m.fileId}/resume`, bearer);
    expect(r.status).toBe(409);
    const body = JSON.parse(r.body) as { error: string; code: string; hint: string; params: object };
    expect(body.code).toBe('DROPLINE_ERR_FILE_STATE');
    expect(body.error).toContain('is completed; resume applies to a file that is paused');
    // Its parameters, for the page to word it in its reader's language (issue 33).
    expect(body.params).toEqual({ fileId: m.fileId, state: 'completed', action: 'resume', from: 'paused' });
    const retry = await post(`/api/files/${m.fileId}/retry`, bearer);
    expect(retry.status).toBe(409);
    expect(JSON.parse(retry.body).params).toEqual({
      fileId: m.fileId,
      state: 'completed',
      action: 'retry',
      from: 'partial or sending',
    });
    expect((await post('/api/files/nope/pause', bearer)).status).toBe(404);
    expect((await post(`/api/files/${m.fileId}/explode`, bearer)).status).toBe(404);
  });

  it('pause and resume a file being sent: nothing more goes out while it is paused', async () => {
    const slow = personalizedFile(3000, 73);
    await h.dropFile('lenta.txt', slow.content);
    const sending = await h.waitForState('lenta.txt', 'sending', {
      where: (f) => f.name === 'lenta.txt' && f.counts.submitted > 0,
    });
    const paused = await post(`/api/files/${sending.fileId}/pause`, { ...bearer, origin });
    expect(paused.status).toBe(200);
    expect((JSON.parse(paused.body) as Manifest).state).toBe('paused');
    const settled = async () => (await h.ledger(sending.fileId)).destinations;
    await new Promise((r) => setTimeout(r, 800)); // the chunk in flight ends
    const before = await settled();
    await new Promise((r) => setTimeout(r, 1500));
    expect(await settled()).toBe(before);
    expect(before).toBeLessThan(slow.valid.length);
    const m2 = (await h.files()).find((f) => f.fileId === sending.fileId)!;
    expect(m2.reason).toBe('paused from the dashboard');
    expect((await post(`/api/files/${sending.fileId}/resume`, { ...bearer, origin })).status).toBe(200);
    const done = await h.waitForState('lenta.txt', ['submitted', 'completed'], { timeoutMs: 40_000 });
    expect(done.counts.submitted).toBe(slow.valid.length);
    expect((await h.ledger(sending.fileId)).duplicates).toBe(0);
  });
});

describe('checking a file', () => {
  it('answers what validate --source --json answers, masked, and stores and sends nothing', async () => {
    const filesBefore = (await h.files()).length;
    const ledgerBefore = (await h.ledger()).destinations;
    const r = await post('/api/validate?source=local&name=prueba.txt', { ...bearer, origin }, content);
    expect(r.status).toBe(200);
    const answer = JSON.parse(r.body) as Record<string, unknown> & { errors: { value?: string }[] };
    const local = `${h.dir}/prueba.txt`;
    const { writeFile } = await import('node:fs/promises');
    await writeFile(local, content);
    const cli = JSON.parse(
      (await h.cli(['validate', local, '--source', 'local', '--json'])).stdout,
    ) as Record<string, unknown>;
    for (const k of [
      'records',
      'valid',
      'invalid',
      'duplicates',
      'suppressed',
      'segments',
      'accepted',
      'layout',
    ])
      expect(answer[k], k).toEqual(cli[k]);
    expect(answer.file).toBe('prueba.txt');
    expect(r.body).not.toContain(LONG);
    expect(answer.errors.some((e) => e.value === '57300**********123')).toBe(true);
    expect((await h.files()).length).toBe(filesBefore);
    expect((await h.ledger()).destinations).toBe(ledgerBefore);
  });

  it('a template’s merged example is shown with the numbers in it masked', async () => {
    const file = '#! message: Hola {{nombre}}, le escribimos al {{numero}}\nnumero;nombre\n3001234567;Ana\n';
    const r = await post('/api/validate?source=local&name=plantilla.txt', bearer, file);
    expect(r.status).toBe(200);
    const answer = JSON.parse(r.body) as { templates: { example: string }[] };
    expect(answer.templates.map((t) => t.example)).toEqual(['Hola Ana, le escribimos al 30012**567']);
    expect(r.body).not.toContain('3001234567');
  });

  it('reads the file’s name as the daemon does (`*.bulk.txt` is bulk)', async () => {
    const bulk = '573001234567;Hola\n3001234567\n3001234568\n';
    const r = await post('/api/validate?source=local&name=promo.bulk.txt', bearer, bulk);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(`${h.dir}/promo.bulk.txt`, bulk);
    const cli = JSON.parse(
      (await h.cli(['validate', `${h.dir}/promo.bulk.txt`, '--source', 'local', '--json'])).stdout,
    ) as Record<string, unknown>;
    expect(cli.layout).toBe('bulk');
    expect((JSON.parse(r.body) as Record<string, unknown>).layout).toBe('bulk');
  });

  it('refuses a file over the size limit, declared or streamed, and an unknown source', async () => {
    const big = await post('/api/validate?source=local', {
      ...bearer,
      'content-length': String(65 * 1024 * 1024),
    });
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body).error).toContain('64 MB');
    // Streamed without a length: cut off at the limit, the connection closed after the answer.
    const streamed = await new Promise<{ status: number; body: string }>((done, fail) => {
      const req = request(
        `${h.opsUrl}/api/validate?source=local`,
        { method: 'POST', headers: bearer },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (s: string) => {
            text += s;
          });
          res.on('end', () => done({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', fail);
      const block = Buffer.alloc(1024 * 1024, 0x31);
      let sent = 0;
      const pump = () => {
        while (sent < 70 && req.write(block)) sent++;
        if (sent < 70) req.once('drain', pump);
        else req.end();
      };
      pump();
    });
    expect(streamed.body).toContain('64 MB');
    expect(streamed.status).toBe(413);
    expect((await post('/api/validate?source=nope', bearer, 'x')).status).toBe(400);
    // Over the source's maxFileBytes, within the check's limit: rejected as the daemon would.
    const over = await post('/api/validate?source=local', bearer, '3001234567;hola\n'.repeat(80_000));
    expect(over.status).toBe(200);
    expect((JSON.parse(over.body) as { rejection: { code: string } }).rejection.code).toBe('FILE_TOO_LARGE');
  });
});

describe('service health', () => {
  it('shows the three monitoring endpoints of the account, answered by the sandbox', async () => {
    const r = await get('/api/service-health');
    expect(r.status).toBe(200);
    const accounts = JSON.parse(r.body) as { account: string; endpoints: { name: string; ok: boolean }[] }[];
    expect(accounts.map((a) => a.account)).toEqual(['default']);
    expect(accounts[0]!.endpoints.map((e) => [e.name, e.ok])).toEqual([
      ['platformmonitory', true],
      ['effectivitybyclient', true],
      ['msgmtclient', true],
    ]);
    expect(r.body).not.toContain('Bearer');
  });
});

describe('access', () => {
  it('the API asks for the token; the page itself holds no data and loads', async () => {
    expect((await get('/api/files', {})).status).toBe(401);
    expect((await get(`/api/files/${m.fileId}/report.csv`, {})).status).toBe(401);
    const page = await get('/', {});
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).not.toContain(m.fileId);
  });

  it('a login sets an HttpOnly, SameSite=Strict session cookie that is not the token; a wrong one is refused', async () => {
    const wrong = await post('/login', { 'content-type': 'application/json', origin }, '{"token":"nope"}');
    expect(wrong.status).toBe(401);
    const ok = await post(
      '/login',
      { 'content-type': 'application/json', origin },
      JSON.stringify({ token: TOKEN }),
    );
    const setCookie = String(ok.headers['set-cookie']);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).not.toContain(TOKEN);
    expect((await get('/api/files', { cookie })).status).toBe(200);
    // A forged or tampered cookie is nothing.
    const [name, value] = cookie.split('=') as [string, string];
    const [expires, mac] = value.split('.') as [string, string];
    expect((await get('/api/files', { cookie: `${name}=${Number(expires) + 1000}.${mac}` })).status).toBe(
      401,
    );
    const logout = await post('/logout', { cookie, origin });
    expect(String(logout.headers['set-cookie'])).toMatch(/Max-Age=0/);
  });

  it('an action from another site is refused, with or without the cookie; a tool with the token needs no Origin', async () => {
    const before = (await h.files()).find((f) => f.fileId === m.fileId)!.state;
    const evil = await post(`/api/files/${m.fileId}/cancel`, { cookie, origin: 'http://evil.example' });
    expect(evil.status).toBe(403);
    expect(JSON.parse(evil.body).error).toContain('Origin http://evil.example is not this server');
    expect(
      (await post(`/api/files/${m.fileId}/cancel`, { cookie, 'sec-fetch-site': 'cross-site' })).status,
    ).toBe(403);
    // A browser always sends Origin with a POST: a cookie without one is not a page of ours.
    expect((await post(`/api/files/${m.fileId}/cancel`, { cookie })).status).toBe(403);
    expect((await post('/login', { origin: 'http://evil.example' }, `{"token":"${TOKEN}"}`)).status).toBe(
      403,
    );
    // The right Origin with the cookie, or the Bearer token alone, reach the action (refused
    // here only because the file is completed).
    expect((await post(`/api/files/${m.fileId}/cancel`, { cookie, origin })).status).toBe(409);
    expect((await post(`/api/files/${m.fileId}/cancel`, bearer)).status).toBe(409);
    // Behind a proxy that sends Host: localhost, the browser's host comes as X-Forwarded-Host.
    const proxied = {
      cookie,
      origin: 'https://campanas.example',
      'x-forwarded-host': 'campanas.example, proxy-2',
    };
    expect((await post(`/api/files/${m.fileId}/cancel`, proxied)).status).toBe(409);
    expect(
      (await post(`/api/files/${m.fileId}/cancel`, { ...proxied, origin: 'https://evil.example' })).status,
    ).toBe(403);
    expect((await h.files()).find((f) => f.fileId === m.fileId)!.state).toBe(before);
  });
});

describe('on loopback without a token', () => {
  let open: PipelineHarness;
  beforeAll(async () => {
    open = await PipelineHarness.create({});
    await open.start();
  }, 30_000);
  afterAll(async () => {
    await open?.close();
  });

  it('another site’s page cannot act through the browser (Origin checked), the same page can', async () => {
    await open.dropFile('a.txt', personalizedFile(5, 74).content);
    const f = await open.waitForState('a.txt', 'completed');
    const url = `${open.opsUrl}/api/files/${f.fileId}/cancel`;
    expect((await raw('POST', url, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await raw('POST', url, { origin: 'null' })).status).toBe(403);
    expect((await raw('POST', url, { origin: open.opsUrl })).status).toBe(409);
    // Without a token, X-Forwarded-Host is not trusted: a name rebound to a proxy in front
    // would get it set to the attacker's own host.
    const proxied = { origin: 'https://evil.example', 'x-forwarded-host': 'evil.example' };
    expect((await raw('POST', url, proxied)).status).toBe(403);
    const meta = await raw('GET', `${open.opsUrl}/api/meta`, {});
    expect(meta.status).toBe(200);
    expect((JSON.parse(meta.body) as { login: boolean }).login).toBe(false);
  });
});
