// Shared by test/service and test/sandbox: real HTTP on 127.0.0.1, port 0, nothing mocked.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PlannedChunk } from '../../src/service/wire.ts';

export async function getJson<T = unknown>(url: string): Promise<T> {
  const res = await fetch(url);
  return (await res.json()) as T;
}

export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** Polls `check` until it returns a value other than undefined/false; the wait is for a state, not a time. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function number(i: number): string {
  return `5730${String(i).padStart(8, '0')}`;
}

export function makeChunk(
  size: number,
  opts: {
    chunkId?: string;
    bulkId?: string;
    bad?: readonly number[];
    text?: string;
    callbackData?: string;
  } = {},
): PlannedChunk {
  const bad = new Set(opts.bad ?? []);
  const destinations = Array.from({ length: size }, (_, i) => ({
    to: bad.has(i) ? `57300${i}x` : number(i),
    messageId: `m${i}`,
  }));
  return {
    chunkId: opts.chunkId ?? 'c1',
    bulkId: opts.bulkId ?? 'b1',
    messages: [{ text: opts.text ?? 'Hola, prueba', destinations }],
    callbackData: opts.callbackData,
  };
}

export interface ReceivedRequest {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  readonly at: number;
}

export interface Receiver {
  readonly url: string;
  readonly received: ReceivedRequest[];
  close(): Promise<void>;
}

/** A bare receiver; `answer` picks the status (default 200). */
export async function startReceiver(
  answer: (req: ReceivedRequest, res: ServerResponse) => number | null = () => 200,
): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = {
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(r);
      const status = answer(r, res);
      if (status === null) return; // hold: never answer
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status === 200 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A port that refuses connections (listened once, then closed). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
