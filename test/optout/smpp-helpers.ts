// Shared by test/sandbox/smpp.test.ts and test/optout/*: a bare SMPP client (the smpp
// package's), the sandbox with its SMPP server, and a certificate made at test time. Real TCP
// on 127.0.0.1, nothing mocked.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConnectionOptions } from 'node:tls';
import smpp, { type PDU, type Session } from 'smpp';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/server.ts';
import type { SmppServerView } from '../../src/sandbox/smpp.ts';
import { getJson, postJson } from '../service/helpers.ts';

export type { PDU, Session };
export { smpp };

/** A sandbox with its SMPP server; `redeliveryMs` is not scaled (timeScale 1). */
export async function sandboxWithSmpp(
  smppOptions: NonNullable<SandboxOptions['smpp']> = {},
  options: SandboxOptions = {},
): Promise<Sandbox & { smpp: NonNullable<Sandbox['smpp']> }> {
  const s = await startSandbox({ notify: false, ...options, smpp: { redeliveryMs: 300, ...smppOptions } });
  if (!s.smpp) throw new Error('no SMPP server');
  return s as Sandbox & { smpp: NonNullable<Sandbox['smpp']> };
}

export const repliesView = (s: Sandbox) => getJson<SmppServerView>(`${s.url}/_sandbox/replies`);

export async function postReplies(s: Sandbox, body: unknown): Promise<{ queued: number; ids: string[] }> {
  const res = await postJson(`${s.url}/_sandbox/replies`, body);
  if (res.status !== 202)
    throw new Error(`POST /_sandbox/replies: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { queued: number; ids: string[] };
}

export async function dropSmpp(s: Sandbox, how?: 'destroy' | 'unbind' | 'silence'): Promise<number> {
  const res = await postJson(`${s.url}/_sandbox/smpp/drop`, how ? { how } : {});
  return (res.body as { dropped: number }).dropped;
}

/** A connected session (not bound); 'error' is swallowed, 'close' ends it. */
export async function connectSession(port: number, tls?: ConnectionOptions): Promise<Session> {
  const session = smpp.connect({ host: '127.0.0.1', port, ...(tls ? { ...tls, tls: true } : {}) });
  session.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    session.once(tls ? 'secureConnect' : 'connect', () => resolve());
    session.once('close', () => reject(new Error('closed before connecting')));
  });
  return session;
}

/** Sends a request and resolves with its response. */
export function request(
  session: Session,
  command: string,
  fields: Record<string, unknown> = {},
): Promise<PDU> {
  return new Promise((resolve, reject) => {
    if (!session.send(new smpp.PDU(command, fields), resolve))
      reject(new Error('the session is not writable'));
  });
}

export async function bind(
  port: number,
  systemId = 'demo',
  password = 'demo',
  mode: 'bind_receiver' | 'bind_transmitter' | 'bind_transceiver' = 'bind_receiver',
  tls?: ConnectionOptions,
): Promise<{ session: Session; resp: PDU }> {
  const session = await connectSession(port, tls);
  const resp = await request(session, mode, { system_id: systemId, password, interface_version: 0x34 });
  return { session, resp };
}

/**
 * A bound receiver made of the bare library: keeps every deliver_sm it gets and answers each
 * with what `answer` says (a status, or null: no answer at all).
 */
export async function bareReceiver(
  port: number,
  answer: (pdu: PDU, index: number) => number | null = () => 0,
  systemId = 'demo',
  password = 'demo',
): Promise<{ session: Session; delivered: PDU[]; closed: Promise<void> }> {
  // Listening before the bind: the server delivers what waits as soon as it has bound.
  const session = await connectSession(port);
  const delivered: PDU[] = [];
  session.on('deliver_sm', (pdu: PDU) => {
    const status = answer(pdu, delivered.length);
    delivered.push(pdu);
    if (status !== null) session.send(pdu.response(status === 0 ? {} : { command_status: status }));
  });
  const resp = await request(session, 'bind_receiver', {
    system_id: systemId,
    password,
    interface_version: 0x34,
  });
  if (resp.command_status !== 0) throw new Error(`bind refused: ${resp.command_status}`);
  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
  return { session, delivered, closed };
}

/** The text the library decoded from a deliver_sm (short_message, else message_payload). */
export function pduText(pdu: PDU): string {
  const sm = (pdu.short_message as { message?: unknown } | undefined)?.message;
  if (typeof sm === 'string' && sm !== '') return sm;
  const mp = (pdu.message_payload as { message?: unknown } | undefined)?.message;
  return typeof mp === 'string' ? mp : '';
}

/** A self-signed certificate for 127.0.0.1 and localhost, made now with openssl (never committed). */
export function testCertificate(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'dropline-smpp-tls-'));
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key), cert: readFileSync(cert) };
}

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string;
}

/** A pino-like logger that keeps its lines. */
export function memoryLogger(): {
  lines: LogLine[];
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
} {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (obj: object, msg: string): void => {
      lines.push({ level, obj: obj as Record<string, unknown>, msg });
    };
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}
