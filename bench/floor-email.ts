// The floor of the email bench: read the email drop file and post the same bodies dropline
// sends (50 recipients each: from, subject, html, payload[{recipient, fields}]) to the
// sandbox's POST /email/v1/deliver with a bare undici Pool, `concurrency` requests in flight,
// the x-api-key header. It reads each 202 and counts the recipients it lists as accepted.
// Usage: node bench/floor-email.ts <file> <sandbox url> <concurrency> <api key>
import { createReadStream } from 'node:fs';
import { Pool } from 'undici';
import { FROM, HTML } from './email-drop.ts';

const [path, url, concurrencyArg, apiKey] = process.argv.slice(2) as [string, string, string, string];
const BATCH = 50;
const concurrency = Number(concurrencyArg);
const pool = new Pool(url, { connections: concurrency, pipelining: 1 });

let inflight = 0;
let waiters: (() => void)[] = [];
let posted = 0;
let accepted = 0;
let failure: Error | null = null;
async function post(body: string): Promise<void> {
  while (inflight >= concurrency) await new Promise<void>((r) => waiters.push(r));
  if (failure) throw failure;
  inflight++;
  void pool
    .request({
      method: 'POST',
      path: '/email/v1/deliver',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': apiKey },
      body,
    })
    .then(async (r) => {
      const text = await r.body.text();
      if (r.statusCode !== 202) throw new Error(`status ${r.statusCode}: ${text.slice(0, 200)}`);
      const answer = JSON.parse(text) as { recipients: { status: string }[] };
      for (const x of answer.recipients) if (x.status === 'accepted') accepted++;
      posted++;
    })
    .catch((err: Error) => {
      failure ??= err;
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
let subject = '';
let header: string[] | null = null;
let payload: { recipient: string; fields: Record<string, string> }[] = [];
const flush = async () => {
  if (payload.length === 0) return;
  const body = JSON.stringify({ from: FROM, subject, html: HTML, payload });
  payload = [];
  await post(body);
};
const line = async (l: string) => {
  if (header === null) {
    if (l.startsWith('#!')) {
      const m = /^#!\s*subject:\s*(.*)$/.exec(l);
      if (m) subject = m[1]!.trim();
    } else header = l.split(';');
    return;
  }
  if (l === '') return;
  const cols = l.split(';');
  const fields: Record<string, string> = {};
  for (let c = 1; c < header.length; c++) fields[header[c]!] = cols[c] ?? '';
  payload.push({ recipient: cols[0]!, fields });
  if (payload.length === BATCH) await flush();
};
for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
  const parts = (rest + decoder.decode(chunk as Buffer, { stream: true })).split('\n');
  rest = parts.pop() ?? '';
  for (const l of parts) await line(l);
}
if (rest !== '') await line(rest);
await flush();
while (inflight > 0) await new Promise<void>((r) => waiters.push(r));
await pool.close();
if (failure) throw failure;
process.stdout.write(`${JSON.stringify({ posted, accepted })}\n`);
