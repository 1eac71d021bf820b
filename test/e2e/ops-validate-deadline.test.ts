// Issue 32, item 15: "check a file" (POST /api/validate) takes two uploads at once. Two
// uploads that trickle (a byte now and then, never finishing) held both places for minutes and
// every other check was answered 429. An upload's body has ops.uploadTimeoutMs to arrive:
// past it the upload is answered 408 and its place freed.
import { type ClientRequest, request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PipelineHarness } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({ ops: { uploadTimeoutMs: 1000 } });
  await h.start();
});

afterAll(async () => {
  await h?.close();
});

interface Answered {
  status: number;
  body: string;
}

/** An upload announcing `bytes` and sending one line of them every 100 ms, never the rest. */
function trickle(bytes: number): { answered: Promise<Answered>; req: ClientRequest } {
  let timer: NodeJS.Timeout | undefined;
  const req = request(`${h.opsUrl}/api/validate?source=local&name=lento.txt`, {
    method: 'POST',
    headers: { 'content-length': String(bytes) },
  });
  const answered = new Promise<Answered>((done, fail) => {
    req.on('response', (res) => {
      clearInterval(timer);
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (s: string) => {
        body += s;
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', (err) => {
      clearInterval(timer);
      fail(err);
    });
  });
  req.flushHeaders();
  timer = setInterval(() => req.write('3001234567;hola\n'), 100);
  return { answered, req };
}

async function check(text: string): Promise<Answered> {
  const res = await fetch(`${h.opsUrl}/api/validate?source=local&name=normal.txt`, {
    method: 'POST',
    body: text,
  });
  return { status: res.status, body: await res.text() };
}

it('answers two trickling uploads 408 at the body deadline, and the next check is made', async () => {
  const slow = [trickle(1_000_000), trickle(1_000_000)];
  try {
    // Both places taken: a third check waits its turn (429), as before.
    await expect
      .poll(async () => (await check('3001234567;hola\n')).status, { timeout: 10_000, interval: 50 })
      .toBe(429);
    // The deadline passes for both: answered 408, with what to do.
    const answers = await Promise.all(slow.map((s) => s.answered));
    for (const a of answers) {
      expect(a.status).toBe(408);
      expect(JSON.parse(a.body).error).toContain('ops.uploadTimeoutMs');
    }
    // Their places are free: a normal check is answered at once.
    const ok = await check('3001234567;hola\n3009876543;chao\n');
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ records: 2, valid: 2 });
  } finally {
    for (const s of slow) s.req.destroy();
  }
}, 30_000);
