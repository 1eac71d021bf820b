// POST /mtmessage/massive (docs/sandbox.md "POST /mtmessage/massive"): a batch of messages,
// Bearer only, checked as the sandbox reads the service's request rules; each accepted
// destination recorded in the ledger and, with a notifyUrl, its status notification scheduled.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerAccount } from './bearer.ts';
import { applyStatusFault, sendJson } from './http.ts';
import type { NotificationJob } from './notifier.ts';
import type { SandboxState } from './state.ts';
import { checkMassive, type MassiveCheck, smsSegments } from './validate.ts';

type Checked = Extract<MassiveCheck, { ok: true }>;
type Destination = { to: string; messageId: string; status: number };

export function createMassiveHandler(
  state: SandboxState,
): (req: IncomingMessage, res: ServerResponse, raw: Buffer | null, bytes: number) => void {
  const { accounts, faults, meter, random, log: logRequest } = state;
  return (req, res, raw, bytes) => {
    const { parsed, destinations } = readBody(raw);
    let account: string | undefined;
    let shortCode: string | undefined;
    const bulkId =
      typeof (parsed as { bulkId?: unknown } | undefined)?.bulkId === 'string'
        ? (parsed as { bulkId: string }).bulkId
        : undefined;
    const endpoint = '/mtmessage/massive';
    const done = (status: number, body: unknown, fault?: string) => {
      logRequest({ endpoint, status, destinations, account, bulkId, shortCode, fault, at: Date.now() });
      sendJson(res, status, body);
    };
    const auth = req.headers.authorization ?? '';
    const bearer = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
    const check = bearer ? accounts.check(bearer) : null;
    // A fault of one account fires only for a request that carries its valid token.
    const fired = faults.pick('massive', random(), check?.ok ? check.username : undefined);
    if (fired?.rule.account !== undefined) account = fired.rule.account;
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;

    const token = bearerAccount(check, fired, state);
    if (token.username !== undefined) account = token.username;
    if (token.refusal) return done(401, { message: token.refusal.message }, token.refusal.fault);
    const user = token.username;
    const maxBody = faults.state.maxBodyBytes ?? state.defaultMaxBody;
    if (raw === null || bytes > maxBody) {
      return done(413, { message: `the body is larger than ${maxBody} bytes` });
    }
    if (parsed === undefined) return done(400, { message: 'the body is not valid JSON' });
    const checked = checkMassive(parsed);
    if (!checked.ok) return done(400, { message: checked.reason });
    const codes = [...new Set(checked.messages.flatMap((m) => (m.shortCode === null ? [] : [m.shortCode])))];
    if (codes.length > 0) shortCode = codes.join(',');
    const foreign = codes.find((c) => !accounts.shortCodes(user).includes(c));
    if (foreign !== undefined)
      return done(400, { message: `shortCode ${foreign} is not a short code of this account` });

    const transactionNumber = state.nextTransactionNumber();
    state.ledger.recordBatch(transactionNumber, raw);
    meter.accepted(user, destinations, Date.now());
    const answer = accept(state, checked, user, transactionNumber);
    // timeout and reset model a service that processed the request and whose answer was lost.
    if (fired?.kind === 'timeout') {
      logRequest({ endpoint, status: 0, destinations, fault: 'timeout', at: Date.now() });
      return;
    }
    if (fired?.kind === 'reset') {
      logRequest({ endpoint, status: 0, destinations, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    done(200, { transactionNumber, bulkId: checked.bulkId, status: 0, destinations: answer });
  };
}

/** The body as JSON (undefined when it is not) and its destinations (0 when unreadable). */
function readBody(raw: Buffer | null): { parsed: unknown; destinations: number } {
  if (!raw) return { parsed: undefined, destinations: 0 };
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    return { parsed, destinations: countBodyDestinations(parsed) };
  } catch {
    return { parsed: undefined, destinations: 0 };
  }
}

/** Counts an accepted batch in the traffic and schedules its notifications; the answer's list. */
function accept(state: SandboxState, checked: Checked, username: string, transactionNumber: string) {
  const acceptedAt = state.now();
  const tally = state.traffic.accepting(username, acceptedAt);
  const answer: Destination[] = [];
  for (const m of checked.messages) {
    const notify = state.notifyEnabled && m.notifyUrl;
    const smsCount = notify ? smsSegments(m.text) : 0;
    for (const d of m.destinations) {
      const messageId = d.messageId ?? '';
      answer.push({ to: d.to, messageId, status: 0 });
      tally.add(d.to);
      if (m.shortCode !== null) state.sentFrom(d.to, m.shortCode, username);
      if (!notify) continue;
      const job: NotificationJob = {
        url: notify,
        contentType: m.notifyContentType,
        transactionNumber,
        to: d.to,
        messageId,
        callbackData: m.callbackData,
        bulkId: checked.bulkId,
        smsCount,
        statusName: state.random() < state.failureRatio ? 'NO_SUCCESS' : 'DELIVERED_TO_HANDSET',
        account: username,
        acceptedAt,
      };
      state.notifier.schedule(job, state.deliveryDelayMs);
    }
  }
  return answer;
}

function countBodyDestinations(body: unknown): number {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return 0;
  let n = 0;
  for (const m of messages) {
    const d = (m as { destinations?: unknown } | null)?.destinations;
    if (Array.isArray(d)) n += d.length;
  }
  return n;
}
