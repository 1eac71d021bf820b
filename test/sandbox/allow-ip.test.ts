// docs/sandbox.md "IP allowlist": "Requests from IP addresses that are not authorized get 403." The
// sandbox's allowlist (--allow-ip, startSandbox({ allowIps })): every service path answers 403 to an
// address outside it, the /_sandbox/ test surface stays open, and dropline's client reports
// the refusal as the account's (forbidden), with the service's message.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ipAllowList, type RequestRecord, type Sandbox, startSandbox } from '../../src/sandbox/server.ts';
import { ServiceClient } from '../../src/service/client.ts';
import { getJson, makeChunk } from '../service/helpers.ts';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function sandboxAllowing(allowIps: string[]): Promise<Sandbox> {
  const s = await startSandbox({ timeScale: 0.001, notify: false, allowIps });
  open.push(s);
  return s;
}

/** POST or GET `path` from the local address `from` (Linux routes all of 127.0.0.0/8 to loopback). */
function call(
  s: Sandbox,
  method: 'GET' | 'POST',
  path: string,
  from: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: s.port, method, path, localAddress: from, headers },
      (res) => {
        let text = '';
        res.on('data', (b: Buffer) => {
          text += b;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const basic = `Basic ${Buffer.from('demo:demo').toString('base64')}`;

describe('the sandbox IP allowlist', () => {
  it('answers 403 on every service path to an address outside the list, and serves one inside it', async () => {
    const s = await sandboxAllowing(['127.0.0.2']);
    const token = { authorization: basic, 'content-type': 'application/json' };
    const grant = JSON.stringify({ grant_type: 'password' });
    const outside = [
      await call(s, 'POST', '/token', '127.0.0.1', token, grant),
      await call(s, 'POST', '/mtmessage/massive', '127.0.0.1', { 'content-type': 'application/json' }, '{}'),
      await call(s, 'POST', '/email/v1/deliver', '127.0.0.1', { 'x-api-key': 'demo-email-key' }, '{}'),
      await call(s, 'GET', '/email/v1/templates', '127.0.0.1', { 'x-api-key': 'demo-email-key' }),
      await call(s, 'GET', '/platformmonitory', '127.0.0.1'),
    ];
    expect(outside.map((r) => r.status)).toEqual([403, 403, 403, 403, 403]);
    expect(JSON.parse(outside[0]!.text)).toEqual({ message: 'the IP address 127.0.0.1 is not authorized' });
    // The same login from the listed address is served.
    const inside = await call(s, 'POST', '/token', '127.0.0.2', token, grant);
    expect(inside.status).toBe(200);
    expect(JSON.parse(inside.text)).toHaveProperty('access_token');
    // The test surface is not the service: it stays open, and logs the refusals.
    const { requests } = await getJson<{ requests: RequestRecord[] }>(`${s.url}/_sandbox/requests`);
    expect(requests.filter((r) => r.status === 403).map((r) => r.endpoint)).toEqual([
      '/token',
      '/mtmessage/massive',
      '/email/v1/deliver',
      '/email/v1/templates',
      '/platformmonitory',
    ]);
  });

  it('takes CIDR ranges, IPv6 and dual-stack forms, and refuses entries that are not addresses', () => {
    const allow = ipAllowList(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', '::1']);
    expect(allow('10.200.3.4')).toBe(true);
    expect(allow('11.0.0.1')).toBe(false);
    expect(allow('192.168.1.7')).toBe(true);
    expect(allow('192.168.1.8')).toBe(false);
    expect(allow('::ffff:10.1.2.3')).toBe(true);
    expect(allow('::ffff:11.1.2.3')).toBe(false);
    expect(allow('2001:db8:1::5')).toBe(true);
    expect(allow('2001:db9::5')).toBe(false);
    expect(allow('::1')).toBe(true);
    expect(allow(undefined)).toBe(false);
    for (const bad of ['localhost', '10.0.0.0/33', '10.0.0.0/', '1.2.3.4/8/9', '::1/129', '10.0.0.0/x'])
      expect(() => ipAllowList([bad]), bad).toThrow(/is not an IP address or a CIDR range/);
  });

  it("dropline's client meets the refusal as the account's: forbidden, with the service's message", async () => {
    const s = await sandboxAllowing(['10.9.9.9']);
    const client = new ServiceClient({
      baseUrl: s.url,
      username: 'demo',
      password: 'demo',
      retry: { baseMs: 5 },
    });
    open.push(client);
    const result = await client.sendChunk(makeChunk(3, { chunkId: 'c1', bulkId: 'b1' }));
    expect(result.parts[0]!.outcome).toMatchObject({ kind: 'forbidden' });
    expect(JSON.stringify(result.parts[0]!.outcome)).toContain('127.0.0.1 is not authorized');
  });
});
