// The script a campaign engineer writes instead of dropline (issue 16), as the issue describes
// it: read the file with readline, split each line at `;`, POST batches of 1000 to
// /mtmessage/massive with one token; no validation, no state, no reports. It is allowed the
// same requests in flight as dropline. Kept plain on purpose: fetch, readline, JSON.stringify.
// Usage: node bench/peer-script.ts <file> <sandbox url> <batch> <in flight>
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

const [path, url, batchArg, inflightArg] = process.argv.slice(2) as [string, string, string, string];
const BATCH = Number(batchArg);
const IN_FLIGHT = Number(inflightArg);

const login = await fetch(`${url}/token`, {
  method: 'POST',
  headers: {
    authorization: `Basic ${Buffer.from('demo:demo').toString('base64')}`,
    'content-type': 'application/json',
  },
  body: JSON.stringify({ grant_type: 'password' }),
});
const { access_token: token } = (await login.json()) as { access_token: string };

const running = new Set<Promise<void>>();
let sent = 0;
async function post(destinations: { to: string; text: string }[]): Promise<void> {
  const res = await fetch(`${url}/mtmessage/massive`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      bulkId: 'script',
      messages: destinations.map((d) => ({ text: d.text, destinations: [{ to: d.to }] })),
    }),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  await res.text();
  sent += destinations.length;
}

let batch: { to: string; text: string }[] = [];
const flush = async () => {
  if (batch.length === 0) return;
  const p = post(batch).finally(() => running.delete(p));
  running.add(p);
  batch = [];
  if (running.size >= IN_FLIGHT) await Promise.race(running);
};
for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
  const [to, text] = line.split(';');
  if (!to || !text) continue;
  batch.push({ to, text });
  if (batch.length === BATCH) await flush();
}
await flush();
await Promise.all(running);
process.stdout.write(`${JSON.stringify({ sent })}\n`);
