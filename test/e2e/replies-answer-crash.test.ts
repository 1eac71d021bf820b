// Answers owed survive a crash (docs/opt-outs.md "Answers"): a child `dropline run` keeps
// users' replies (help, an opt-out) while the service refuses every POST /momessage with a 503
// (answered at once, nothing taken), so their answers are still owed when the process is killed
// with SIGKILL. Restarted with the service well again, it sends each of them once; an answer
// sent before the crash is never sent again, nor is anything sent twice after.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const HELP = 'Acme: ayuda en acme.co';
const CONFIRM_OUT = 'No recibirás más mensajes de Acme.';
const A = '573001120001'; // AYUDA before the crash, answered before it
const B = '573001120002'; // AYUDA, its answer refused until the crash
const C = '573001120003'; // SALIR, its confirmation refused until the crash
const D = '573001120004'; // AYUDA after the restart: its answer marks the end

let h: PipelineHarness;

beforeAll(async () => {
  h = await PipelineHarness.create({
    sandbox: { accounts: [{ username: 'demo', password: 'demo', shortCodes: ['85000'] }], smpp: {} },
    config: (sandbox) => ({
      replies: {
        smpp: { host: '127.0.0.1', port: sandbox.smpp!.port, systemId: 'demo', password: 'demo' },
        helpText: HELP,
        confirmOptOut: CONFIRM_OUT,
      },
    }),
  });
  await h.start();
});

afterAll(async () => {
  await h?.close();
});

async function reply(from: string, text: string): Promise<void> {
  const res = await fetch(`${h.sandbox.url}/_sandbox/replies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([{ from, text }]),
  });
  expect(res.status, await res.text()).toBe(202);
}

const failures = () => h.daemonOutput.split('"msg":"reply answer failed"').length - 1;

it('answers owed when the process is killed are sent once after the restart', async () => {
  await reply(A, 'AYUDA');
  await waitFor('A answered', async () => (await h.moLedger()).some((e) => e.phoneNumber === A));

  await h.faults({ momessage: { '503': { probability: 1 } } });
  await reply(B, 'AYUDA');
  await reply(C, 'SALIR');
  await waitFor('both answers refused', () => Promise.resolve(failures() >= 2));
  expect(await h.moLedger()).toHaveLength(1);

  const daemon = h.daemon!;
  const exited = new Promise((done) => daemon.once('exit', done));
  daemon.kill('SIGKILL');
  await exited;
  h.daemon = null;
  await h.faults({});
  await h.start();

  await waitFor('B and C answered', async () => {
    const to = (await h.moLedger()).map((e) => e.phoneNumber);
    return to.includes(B) && to.includes(C);
  });
  await reply(D, 'AYUDA');
  await waitFor('D answered', async () => (await h.moLedger()).some((e) => e.phoneNumber === D));
  expect((await h.moLedger()).map((e) => [e.phoneNumber, e.text, e.count])).toEqual([
    [A, HELP, 1],
    [B, HELP, 1],
    [C, CONFIRM_OUT, 1],
    [D, HELP, 1],
  ]);

  // The store says so: every answer sent, none owed.
  const store = await openStore(String(h.config.store));
  try {
    const ids = (await store.replies({ limit: 10 })).map((r) => r.id);
    const states = await Promise.all(ids.map((id) => store.replyAnswer(id)));
    expect(states.map((s) => [s?.number, s?.state])).toEqual([
      [A, 'sent'],
      [B, 'sent'],
      [C, 'sent'],
      [D, 'sent'],
    ]);
    expect(await store.answersOwed(10)).toEqual([]);
  } finally {
    await store.close();
  }
});
