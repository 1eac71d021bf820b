// POST /mtmessage: one SMS or RCS send, Bearer or Basic, its notifications to the account
// webhook (not to a URL in the request). The service's interface leaves much "not shown"; the
// sandbox's readings are in docs/sandbox.md "POST /mtmessage".
//
// - Type 1 (bulk): MessageText to every number of Devices (`<number>-<number>`).
// - Type 2 (personalized): MessagePattern with `{0}`, `{1}`… and MessageData an array with one
//   array of values per device, in the order of Devices.
// - Type 3 (template): not available (Status 1): the service's templates are not described.
// - A business rejection (an invalid device, RCS not set up, a pattern without its values) is
//   200 with Status 1 and the reason in MessageText, and nothing is sent; a body that breaks
//   the structure (not JSON, Type not 1 to 3, a field of the wrong type) is 400.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Accounts } from './accounts.ts';
import type { Faults } from './faults.ts';
import { applyStatusFault, jsonBody, parseBasic, type RequestRecord, sendJson } from './http.ts';
import type { Ledger } from './ledger.ts';
import type { NotificationJob, Notifier } from './notifier.ts';
import { smsSegments } from './validate.ts';

export interface MtMessageDeps {
  readonly accounts: Accounts;
  readonly faults: Faults;
  readonly ledger: Ledger;
  readonly notifier: Notifier;
  readonly random: () => number;
  readonly now: () => number;
  readonly nextTransactionNumber: () => string;
  readonly notifyEnabled: boolean;
  readonly deliveryDelayMs: number;
  readonly failureRatio: number;
  readonly log: (r: RequestRecord) => void;
}

/** A device: 8 to 15 digits (Colombian numbers are 12: 57 and the mobile), no `+`. */
const DEVICE = /^\d{8,15}$/;
const DATE_MESSAGE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

interface Send {
  readonly channel: 'SMS' | 'RCS';
  readonly texts: readonly string[];
  readonly devices: readonly string[];
  readonly customMessageId: string;
  readonly callbackData: string;
}

type Checked = { ok: true; send: Send } | { ok: false; status: 400 | 200; reason: string };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The body's structure (400) and then its business rules (Status 1). */
export function checkMtMessage(body: unknown, rcsAllowed: boolean): Checked {
  const bad = (reason: string): Checked => ({ ok: false, status: 400, reason });
  const rejected = (reason: string): Checked => ({ ok: false, status: 200, reason });
  if (!isObject(body)) return bad('the body is not a JSON object');
  const type = body.Type;
  if (type !== 1 && type !== 2 && type !== 3) return bad('Type must be the integer 1, 2 or 3');
  for (const f of [
    'Devices',
    'MessageText',
    'MessagePattern',
    'TemplateId',
    'CustomMessageId',
    'DateMessage',
  ])
    if (body[f] !== undefined && typeof body[f] !== 'string') return bad(`${f} must be text`);
  if (body.Channel !== undefined && body.Channel !== 'SMS' && body.Channel !== 'RCS')
    return bad('Channel must be SMS or RCS');
  if (body.FlashSMS !== undefined && body.FlashSMS !== 0 && body.FlashSMS !== 1)
    return bad('FlashSMS must be 0 or 1');
  if (body.CallbackData !== undefined && !isObject(body.CallbackData))
    return bad('CallbackData must be a JSON object');
  if (body.DateMessage !== undefined && !DATE_MESSAGE.test(body.DateMessage as string))
    return bad('DateMessage must be yyyy-MM-dd HH:mm:ss');
  if (type === 3) return rejected('templates (Type 3) are not available for this account');
  const channel = (body.Channel as 'SMS' | 'RCS' | undefined) ?? 'SMS';
  if (channel === 'RCS' && !rcsAllowed) return rejected('RCS is not set up for this account');
  const devices = ((body.Devices as string | undefined) ?? '').split('-').filter((d) => d !== '');
  if (devices.length === 0) return rejected('Devices names no number');
  const wrong = devices.find((d) => !DEVICE.test(d));
  if (wrong !== undefined) return rejected(`invalid device ${wrong.slice(0, 20)}`);
  let texts: string[];
  if (type === 1) {
    const text = body.MessageText as string | undefined;
    if (!text) return rejected('MessageText is required with Type 1');
    texts = devices.map(() => text);
  } else {
    const pattern = body.MessagePattern as string | undefined;
    const data = body.MessageData;
    if (!pattern) return rejected('MessagePattern is required with Type 2');
    if (!Array.isArray(data) || data.length !== devices.length)
      return rejected('MessageData must hold one array of values per device, in the order of Devices');
    texts = [];
    for (const values of data) {
      if (!Array.isArray(values) || !values.every((v) => typeof v === 'string'))
        return rejected('each MessageData element is an array of text values');
      let missing = false;
      const text = pattern.replace(/\{(\d+)\}/g, (_, i: string) => {
        const v = values[Number(i)] as string | undefined;
        if (v === undefined) missing = true;
        return v ?? '';
      });
      if (missing) return rejected('a MessageData element has fewer values than MessagePattern uses');
      texts.push(text);
    }
  }
  return {
    ok: true,
    send: {
      channel,
      texts,
      devices,
      customMessageId: (body.CustomMessageId as string | undefined) ?? '',
      callbackData: body.CallbackData === undefined ? '' : JSON.stringify(body.CallbackData),
    },
  };
}

export function createMtMessageHandler(deps: MtMessageDeps) {
  const { accounts, faults, ledger, notifier, random, now, log } = deps;
  return function handleMtMessage(req: IncomingMessage, res: ServerResponse, raw: Buffer | null) {
    let account: string | undefined;
    let destinations = 0;
    const done = (status: number, body: unknown, fault?: string) => {
      log({ endpoint: '/mtmessage', status, destinations, account, fault, at: Date.now() });
      sendJson(res, status, body);
    };
    // Bearer (recommended) or Basic.
    const auth = req.headers.authorization ?? '';
    const bearer = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
    const basic = bearer ? null : parseBasic(auth);
    const check = bearer ? accounts.check(bearer) : null;
    const user = check?.ok
      ? check.username
      : basic && accounts.checkPassword(basic.username, basic.password)
        ? basic.username
        : undefined;
    const fired = faults.pickIfAny('mtmessage', random, user);
    if (fired?.rule.account !== undefined) account = fired.rule.account;
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;
    if (user === undefined)
      return done(401, {
        message:
          check && !check.ok
            ? check.reason
            : basic
              ? 'wrong Basic credentials'
              : 'a Bearer token or Basic credentials are required',
      });
    account = user;
    const read = jsonBody(raw);
    if (!read.ok) return done(read.status, { message: read.message });
    const checked = checkMtMessage(read.body, accounts.rcs(user));
    if (!checked.ok) {
      if (checked.status === 400) return done(400, { message: checked.reason });
      return done(200, { TransactionNumber: '', Status: 1, MessageText: checked.reason });
    }
    const { send } = checked;
    destinations = send.devices.length;
    const transactionNumber = deps.nextTransactionNumber();
    // The ledger keeps massive-shaped batches: no bulkId, the CustomMessageId for every device.
    ledger.recordBatch(
      transactionNumber,
      Buffer.from(
        JSON.stringify({
          bulkId: '',
          messages: send.devices.map((to, i) => ({
            text: send.texts[i],
            destinations: [{ to, messageId: send.customMessageId }],
          })),
        }),
      ),
    );
    const webhook = accounts.webhook(user);
    if (deps.notifyEnabled && webhook) {
      const authorization =
        webhook.username !== undefined
          ? `Basic ${Buffer.from(`${webhook.username}:${webhook.password ?? ''}`).toString('base64')}`
          : undefined;
      const acceptedAt = now();
      send.devices.forEach((to, i) => {
        const job: NotificationJob = {
          url: webhook.url,
          contentType: 'application/json',
          transactionNumber,
          to,
          messageId: send.customMessageId,
          callbackData: send.callbackData,
          bulkId: '',
          smsCount: send.channel === 'RCS' ? 1 : smsSegments(send.texts[i]!),
          statusName: random() < deps.failureRatio ? 'NO_SUCCESS' : 'DELIVERED_TO_HANDSET',
          account: user,
          acceptedAt,
          authorization,
        };
        notifier.schedule(job, deps.deliveryDelayMs);
      });
    }
    if (fired?.kind === 'timeout') {
      log({ endpoint: '/mtmessage', status: 0, destinations, account, fault: 'timeout', at: Date.now() });
      return;
    }
    if (fired?.kind === 'reset') {
      log({ endpoint: '/mtmessage', status: 0, destinations, account, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    done(200, { TransactionNumber: transactionNumber, Status: 0, MessageText: '' });
  };
}
