// POST /momessage: two-way SMS, one message to one number from a short code of the account,
// Bearer only; replies to it return to that short code (the SMPP server for replies). The
// service shows the fields and `Message` OK or ERROR; the rest is the sandbox's reading,
// written down in docs/sandbox.md "POST /momessage".
//
// - 200 `{Id, Message: "OK", Status: 0}`: taken; `Id` is a transaction number.
// - 200 `{Id: "", Message: "ERROR", Status: n}`: refused, nothing sent: 1 PhoneNumber is not
//   a number, 2 ShortCode is not one of the account's, 3 MessageText is empty.
// - 400: not a JSON object, or a field that is not text.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerAccount } from './bearer.ts';
import { applyStatusFault, jsonBody, sendJson } from './http.ts';
import type { SandboxState } from './state.ts';
import { checkNumber } from './validate.ts';

export const MOMESSAGE_PATH = '/momessage';

/** The sandbox's `Status` values (the service does not show its own). */
export const MO_STATUS = { ok: 0, badNumber: 1, notShortCode: 2, noText: 3 } as const;

type Checked =
  | { readonly ok: true; readonly text: string; readonly phoneNumber: string; readonly shortCode: string }
  | { readonly ok: false; readonly status: 400; readonly reason: string }
  | { readonly ok: false; readonly status: number; readonly reason: null };

/** The body's structure (400), then its business rules (ERROR with the sandbox's Status). */
export function checkMoMessage(body: unknown, shortCodes: readonly string[]): Checked {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { ok: false, status: 400, reason: 'the body is not a JSON object' };
  const o = body as Record<string, unknown>;
  for (const f of ['MessageText', 'PhoneNumber', 'ShortCode'])
    if (o[f] !== undefined && typeof o[f] !== 'string')
      return { ok: false, status: 400, reason: `${f} must be text` };
  const text = (o.MessageText as string | undefined) ?? '';
  const phoneNumber = (o.PhoneNumber as string | undefined) ?? '';
  const shortCode = (o.ShortCode as string | undefined) ?? '';
  if (checkNumber(phoneNumber) !== null) return { ok: false, status: MO_STATUS.badNumber, reason: null };
  if (!shortCodes.includes(shortCode)) return { ok: false, status: MO_STATUS.notShortCode, reason: null };
  if (text.trim() === '') return { ok: false, status: MO_STATUS.noText, reason: null };
  return { ok: true, text, phoneNumber, shortCode };
}

export function createMoMessageHandler(
  state: SandboxState,
): (req: IncomingMessage, res: ServerResponse, raw: Buffer | null) => void {
  const { accounts, faults, meter, random, log } = state;
  return (req, res, raw) => {
    let account: string | undefined;
    let shortCode: string | undefined;
    const done = (status: number, body: unknown, fault?: string) => {
      log({ endpoint: MOMESSAGE_PATH, status, destinations: 1, account, shortCode, fault, at: Date.now() });
      sendJson(res, status, body);
    };
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const check = bearer ? accounts.check(bearer) : null;
    const fired = faults.pickIfAny('momessage', random, check?.ok ? check.username : undefined);
    if (fired?.rule.account !== undefined) account = fired.rule.account;
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;
    const token = bearerAccount(check, fired, state);
    if (token.username !== undefined) account = token.username;
    if (token.refusal) return done(401, { message: token.refusal.message }, token.refusal.fault);
    const user = token.username;
    const read = jsonBody(raw);
    if (!read.ok) return done(read.status, { message: read.message });
    const { body } = read;
    const shortCodeOf = (body as { ShortCode?: unknown } | null)?.ShortCode;
    if (typeof shortCodeOf === 'string') shortCode = shortCodeOf;
    const checked = checkMoMessage(body, accounts.shortCodes(user));
    if (!checked.ok) {
      if (checked.reason !== null) return done(400, { message: checked.reason });
      return done(200, { Id: '', Message: 'ERROR', Status: checked.status });
    }
    const id = state.nextTransactionNumber();
    state.moLedger.record({
      account: user,
      shortCode: checked.shortCode,
      phoneNumber: checked.phoneNumber,
      text: checked.text,
      id,
    });
    state.sentFrom(checked.phoneNumber, checked.shortCode, user);
    meter.accepted(user, 1, Date.now());
    // timeout and reset: a service that took the message and whose answer was lost.
    if (fired?.kind === 'timeout') {
      log({ endpoint: MOMESSAGE_PATH, status: 0, account, shortCode, fault: 'timeout', at: Date.now() });
      return;
    }
    if (fired?.kind === 'reset') {
      log({ endpoint: MOMESSAGE_PATH, status: 0, account, shortCode, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    done(200, { Id: id, Message: 'OK', Status: MO_STATUS.ok });
  };
}
