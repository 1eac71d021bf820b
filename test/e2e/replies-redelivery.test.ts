// A reply an SMSC delivers again without the receipted_message_id TLV (docs/opt-outs.md "A reply
// delivered again"): `dropline run` bound to an SMSC of the test's own (the smpp package's
// server, real TCP) that takes the acknowledgements of its first bind for lost, as one whose
// deliver_sm_resp came too late or whose connection dropped, and delivers the same messages
// again at the next bind. Each is kept once, does what it asks once and is answered once.
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import smpp, { type PDU, type Session } from 'smpp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { csvRecords, PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

const HELP = 'Acme: ayuda en acme.co';
const A = '573001110001'; // AYUDA: answered with the help text
const B = '573001110002'; // SALIR: opted out
const C = '573001110003'; // AYUDA, delivered once after the others: its answer marks the end

interface Mo {
  from: string;
  text: string;
}

let h: PipelineHarness;
let server: Server;
let binds = 0;
/** The deliveries acknowledged with status 0, by bind. */
const acked: { bind: number; from: string }[] = [];

function deliver(session: Session, bind: number, mos: readonly Mo[], then?: () => void): void {
  let left = mos.length;
  for (const mo of mos)
    session.send(
      new smpp.PDU('deliver_sm', { source_addr: mo.from, destination_addr: '85000', short_message: mo.text }),
      (resp: PDU) => {
        if (resp.command_status === 0) acked.push({ bind, from: mo.from });
        if (--left === 0) then?.();
      },
    );
}

beforeAll(async () => {
  const twice: Mo[] = [
    { from: A, text: 'AYUDA' },
    { from: B, text: 'SALIR' },
  ];
  server = createServer((socket: Socket) => {
    const session = new smpp.Session({ socket });
    session.on('error', () => {});
    session.on('enquire_link', (pdu: PDU) => session.send(pdu.response()));
    session.on('unbind', (pdu: PDU) => session.send(pdu.response(), () => session.close()));
    session.on('bind_receiver', (pdu: PDU) => {
      const bind = ++binds;
      session.send(pdu.response());
      // First bind: both delivered, their answers taken for lost, the connection dropped.
      if (bind === 1) deliver(session, bind, twice, () => session.destroy());
      // Second: the same two again, then one more.
      else if (bind === 2)
        deliver(session, bind, twice, () => deliver(session, bind, [{ from: C, text: 'AYUDA' }]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  h = await PipelineHarness.create({
    sandbox: { accounts: [{ username: 'demo', password: 'demo', shortCodes: ['85000'] }] },
    config: {
      replies: {
        smpp: { host: '127.0.0.1', port, systemId: 'demo', password: 'demo' },
        helpText: HELP,
      },
    },
  });
  await h.start();
});

afterAll(async () => {
  await h?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

it('a reply delivered again without its message id: kept once, one opt-out, one answer', async () => {
  await waitFor('the second delivery and the last reply acknowledged', () =>
    Promise.resolve(acked.filter((a) => a.bind === 2).length === 3),
  );
  expect(acked.filter((a) => a.bind === 1).map((a) => a.from)).toEqual([A, B]);
  // C's answer goes out after the second deliveries were read (and any answer of theirs sent).
  await waitFor('the last reply answered', async () => (await h.moLedger()).some((e) => e.phoneNumber === C));

  const r = await h.cli(['replies']);
  expect(r.code, r.stderr).toBe(0);
  expect(csvRecords(r.stdout).map((x) => [x.from, x.text])).toEqual([
    [A, 'AYUDA'],
    [B, 'SALIR'],
    [C, 'AYUDA'],
  ]);
  const b = await h.cli(['optouts', B, '--json']);
  expect((JSON.parse(b.stdout) as { history: { change: string }[] }).history.map((c) => c.change)).toEqual([
    'opted_out',
  ]);
  expect((await h.moLedger()).map((e) => [e.phoneNumber, e.text, e.count])).toEqual([
    [A, HELP, 1],
    [C, HELP, 1],
  ]);
});
