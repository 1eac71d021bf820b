// The floor for the end-to-end bench: read the drop file, and post the same chunk bodies
// (1000 destinations, the same JSON shape) with a bare undici Pool to the sandbox.
// Usage: node bench/floor-send.ts <file> <bulk|personalized> <sandbox url> <chunkSize> <concurrency>
import { createReadStream } from 'node:fs';
import { Pool } from 'undici';

const [path, kind, url, chunkSizeArg, concurrencyArg] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const chunkSize = Number(chunkSizeArg);
const concurrency = Number(concurrencyArg);
const pool = new Pool(url, { connections: concurrency });
const auth = await pool.request({
  method: 'POST',
  path: '/token',
  headers: {
    authorization: `Basic ${Buffer.from('demo:demo').toString('base64')}`,
    'content-type': 'application/json',
  },
  body: JSON.stringify({ grant_type: 'password' }),
});
const token = ((await auth.body.json()) as { access_token: string }).access_token;

let inflight = 0;
let waiters: (() => void)[] = [];
let posted = 0;
async function post(body: string): Promise<void> {
  while (inflight >= concurrency) await new Promise<void>((r) => waiters.push(r));
  inflight++;
  void pool
    .request({
      method: 'POST',
      path: '/mtmessage/massive',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    })
    .then(async (r) => {
      await r.body.text();
      if (r.statusCode !== 200) throw new Error(`status ${r.statusCode}`);
      posted++;
    })
    .finally(() => {
      inflight--;
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    });
}

const decoder = new TextDecoder();
let rest = '';
let message: string | null = kind === 'bulk' ? null : '';
let batch: { to: string; messageId: string; text: string }[] = [];
let line = 0;
const flush = async () => {
  if (batch.length === 0) return;
  const byText = new Map<string, { to: string; messageId: string }[]>();
  for (const d of batch) {
    let l = byText.get(d.text);
    if (!l) byText.set(d.text, (l = []));
    l.push({ to: d.to, messageId: d.messageId });
  }
  const body = JSON.stringify({
    bulkId: 'floor',
    messages: [...byText].map(([text, destinations]) => ({
      text,
      destinations,
      notifyUrl: 'http://127.0.0.1:9/notify?token=x',
      notifyContentType: 'application/json',
    })),
  });
  batch = [];
  await post(body);
};
for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
  const parts = (rest + decoder.decode(chunk as Buffer, { stream: true })).split('\n');
  rest = parts.pop() ?? '';
  for (const l of parts) {
    line++;
    if (message === null) {
      message = l;
      continue;
    }
    const i = l.indexOf(';');
    const to = i === -1 ? l : l.slice(0, i);
    if (!/^\d{12}$/.test(to)) continue;
    batch.push({ to, messageId: `floor-${line}`, text: i === -1 ? message : l.slice(i + 1) });
    if (batch.length === chunkSize) await flush();
  }
}
await flush();
while (inflight > 0) await new Promise<void>((r) => waiters.push(r));
await pool.close();
process.stdout.write(`${JSON.stringify({ posted })}\n`);
