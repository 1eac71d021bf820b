// MoMessageAnswerer (docs/opt-outs.md "Answers") against a small POST /momessage server on
// loopback whose answers each case chooses (the sandbox's own /momessage is used end to end by
// test/e2e/replies-keywords.test.ts): the request's fields and Bearer, `Message: OK` taken,
// `ERROR` and HTTP failures rejected without the token, a 401 renewing the token once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TwoWayClient } from '../../src/channels/twoway/client.ts';
import {
  AnswerNotTaken,
  answerersByShortCode,
  MoMessageAnswerer,
  type ReplyAnswerer,
  twoWayAnswerer,
} from '../../src/replies/answers.ts';
import type { MoLedgerEntry } from '../../src/sandbox/mo-ledger.ts';
import { startSandbox } from '../../src/sandbox/server.ts';

interface Seen {
  path: string;
  auth: string | undefined;
  body: unknown;
}
let server: Server;
let base: string;
const seen: Seen[] = [];
let answers: { status: number; body: unknown }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => {
      raw += c.toString('utf8');
    });
    req.on('end', () => {
      seen.push({ path: req.url ?? '', auth: req.headers.authorization, body: JSON.parse(raw) });
      const a = answers.shift() ?? { status: 200, body: { Id: 'mo-1', Message: 'OK', Status: '0' } };
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));
beforeEach(() => {
  seen.length = 0;
  answers = [];
});

function tokens() {
  let n = 1;
  const dropped: string[] = [];
  return {
    dropped,
    get: async () => `tok-${n}`,
    invalidate: (t: string) => {
      dropped.push(t);
      n++;
    },
  };
}

describe('MoMessageAnswerer', () => {
  it('posts MessageText, PhoneNumber and ShortCode with the Bearer token; OK is taken', async () => {
    const a = new MoMessageAnswerer({ baseUrl: base, tokens: tokens() });
    await a.answer('573001112233', '890123', 'Acme: ayuda en acme.co');
    expect(seen).toEqual([
      {
        path: '/api/momessage',
        auth: 'Bearer tok-1',
        body: { MessageText: 'Acme: ayuda en acme.co', PhoneNumber: '573001112233', ShortCode: '890123' },
      },
    ]);
  });

  it('ERROR rejects with the Status; an HTTP failure rejects without the token', async () => {
    const a = new MoMessageAnswerer({ baseUrl: base, tokens: tokens() });
    answers = [{ status: 200, body: { Id: '', Message: 'ERROR', Status: '17' } }];
    await expect(a.answer('573001112233', '890123', 'x')).rejects.toThrow('ERROR (Status 17)');
    answers = [{ status: 500, body: { message: 'boom, token tok-1' } }];
    const err = await a.answer('573001112233', '890123', 'x').catch((e: Error) => e);
    expect((err as Error).message).toContain('answered 500');
    expect((err as Error).message).not.toContain('tok-1');
  });

  // docs/opt-outs.md "Answers": an answer surely not taken stays owed; one that may have been is not sent again.
  it('a 429, 500 or 503 and a refused connection are AnswerNotTaken; other refusals are not', async () => {
    const a = new MoMessageAnswerer({ baseUrl: base, tokens: tokens() });
    for (const status of [429, 500, 503]) {
      answers = [{ status, body: {} }];
      await expect(a.answer('573001112233', '890123', 'x')).rejects.toBeInstanceOf(AnswerNotTaken);
    }
    for (const [status, body] of [
      [400, {}],
      [504, {}],
      [200, { Id: '', Message: 'ERROR', Status: '17' }],
    ] as const) {
      answers = [{ status, body }];
      const err = await a.answer('573001112233', '890123', 'x').catch((e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(AnswerNotTaken);
    }
    // A port nothing listens on any more: the request was never written.
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((done) => closed.close(() => done()));
    const away = new MoMessageAnswerer({ baseUrl: `http://127.0.0.1:${port}/api`, tokens: tokens() });
    await expect(away.answer('573001112233', '890123', 'x')).rejects.toBeInstanceOf(AnswerNotTaken);
  });

  it('no token (the login failed): AnswerNotTaken, nothing posted', async () => {
    const failing = {
      get: async (): Promise<string> => {
        throw new Error('POST /token answered 503: busy');
      },
      invalidate: () => {},
    };
    const a = new MoMessageAnswerer({ baseUrl: base, tokens: failing });
    await expect(a.answer('573001112233', '890123', 'x')).rejects.toBeInstanceOf(AnswerNotTaken);
    expect(seen).toEqual([]);
  });

  it('a 401 renews the token and tries once more', async () => {
    const t = tokens();
    const a = new MoMessageAnswerer({ baseUrl: base, tokens: t });
    answers = [{ status: 401, body: { message: 'expired' } }];
    await a.answer('573001112233', '890123', 'x');
    expect(seen.map((s) => s.auth)).toEqual(['Bearer tok-1', 'Bearer tok-2']);
    expect(t.dropped).toEqual(['tok-1']);
    answers = [
      { status: 401, body: {} },
      { status: 401, body: {} },
    ];
    await expect(a.answer('573001112233', '890123', 'x')).rejects.toThrow('answered 401');
  });
});

describe('twoWayAnswerer and answerersByShortCode', () => {
  it("a two-way account's client answers from its short code; another code is refused", async () => {
    const sandbox = await startSandbox({
      timeScale: 0.001,
      notify: false,
      accounts: [{ username: 'acme', password: 'clave', shortCodes: ['890123'] }],
    });
    const client = new TwoWayClient({ baseUrl: sandbox.url, username: 'acme', password: 'clave' });
    try {
      const a = twoWayAnswerer(client);
      await a.answer('573001112233', '890123', 'Cobros Acme: 601 555 0000');
      const ledger = (await (await fetch(`${sandbox.url}/_sandbox/momessage/ledger`)).json()) as {
        entries: MoLedgerEntry[];
      };
      expect(ledger.entries.map((e) => [e.account, e.shortCode, e.phoneNumber, e.text])).toEqual([
        ['acme', '890123', '573001112233', 'Cobros Acme: 601 555 0000'],
      ]);
      await expect(a.answer('573001112233', '85000', 'x')).rejects.toThrow(/^POST \/momessage: rejected: /);
    } finally {
      await client.close();
      await sandbox.close();
    }
  });

  it('routes each short code to its own answerer, any other to the fallback', async () => {
    const calls: string[] = [];
    const named = (name: string): ReplyAnswerer => ({
      answer: async (to, shortCode) => void calls.push(`${name} ${to} ${shortCode}`),
    });
    const a = answerersByShortCode(new Map([['890123', named('cobros')]]), named('sms'));
    await a.answer('573001112233', '890123', 'x');
    await a.answer('573001112233', '85000', 'x');
    expect(calls).toEqual(['cobros 573001112233 890123', 'sms 573001112233 85000']);
  });
});
