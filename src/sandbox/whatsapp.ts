// POST /MultiChannelInput/SendMessageMetaWhatsApp: one template message to one recipient,
// Basic authentication. A 200 confirms receipt and creates a transaction number; it does not
// confirm delivery (no notification is described for WhatsApp). The service leaves the
// answer's body and the refusals unshown; the sandbox's readings are in docs/sandbox.md
// "WhatsApp".
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AcceptedLedger } from './accepted-ledger.ts';
import type { Accounts } from './accounts.ts';
import type { Faults } from './faults.ts';
import { applyStatusFault, jsonBody, parseBasic, type RequestRecord, sendJson } from './http.ts';
import type { Meter } from './meter.ts';

export const WHATSAPP_PATH = '/MultiChannelInput/SendMessageMetaWhatsApp';

/** What the sandbox accepted, keyed by sending number, recipient, template and parameters. */
export interface WhatsAppLedgerEntry {
  readonly account: string;
  readonly source: string;
  readonly destination: string;
  readonly templateId: string;
  readonly parameters: readonly string[];
  count: number;
  transactionNumber: string;
}

/** Duplicates: messages accepted more than once (same number, recipient, template and parameters). */
export class WhatsAppLedger extends AcceptedLedger<WhatsAppLedgerEntry> {
  constructor() {
    super(
      (e) => [e.source, e.destination, e.templateId, e.parameters],
      (found, e) => {
        found.transactionNumber = e.transactionNumber;
      },
    );
  }
}

export interface WhatsAppDeps {
  readonly accounts: Accounts;
  readonly faults: Faults;
  readonly ledger: WhatsAppLedger;
  readonly meter: Meter;
  readonly random: () => number;
  readonly nextTransactionNumber: () => string;
  readonly log: (r: RequestRecord) => void;
}

const NUMBER = /^\d{8,15}$/;

export function createWhatsAppHandler(deps: WhatsAppDeps) {
  const { accounts, faults, ledger, meter, random, log } = deps;
  return function handleWhatsApp(req: IncomingMessage, res: ServerResponse, raw: Buffer | null) {
    let account: string | undefined;
    const done = (status: number, body: unknown, fault?: string) => {
      log({ endpoint: WHATSAPP_PATH, status, account, fault, at: Date.now() });
      sendJson(res, status, body);
    };
    const basic = parseBasic(req.headers.authorization);
    const user = basic && accounts.checkPassword(basic.username, basic.password) ? basic.username : undefined;
    const fired = faults.pickIfAny('whatsapp', random, user);
    if (fired?.rule.account !== undefined) account = fired.rule.account;
    if (fired && applyStatusFault(fired, res, (status, body) => done(status, body, fired.kind))) return;
    // Basic with the account's username and password (no token).
    if (user === undefined)
      return done(401, { message: basic ? 'wrong Basic credentials' : 'Basic credentials are required' });
    account = user;
    const setup = accounts.whatsapp(user);
    if (!setup) return done(403, { message: 'WhatsApp is not enabled for this account' });
    const read = jsonBody(raw);
    if (!read.ok) return done(read.status, { message: read.message });
    const body = read.body as Record<string, unknown>;
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return done(400, { message: 'the body is not a JSON object' });
    const { source, destination, templateId, parameters } = body;
    for (const [name, v] of [
      ['source', source],
      ['destination', destination],
      ['templateId', templateId],
    ] as const)
      if (typeof v !== 'string' || v === '') return done(400, { message: `${name} is required text` });
    if (!Array.isArray(parameters) || !parameters.every((p) => typeof p === 'string'))
      return done(400, { message: 'parameters must be an array of text' });
    if (!setup.numbers.includes(source as string))
      return done(400, {
        message: `source ${String(source).slice(0, 20)} is not a sending number of this account`,
      });
    if (!NUMBER.test(destination as string))
      return done(400, {
        message: `destination ${String(destination).slice(0, 20)} is not a number of 8 to 15 digits`,
      });
    const count = setup.templates[templateId as string];
    if (count === undefined)
      return done(400, {
        message: `template ${String(templateId).slice(0, 40)} is not an approved template of this account`,
      });
    if (parameters.length !== count)
      return done(400, {
        message: `template ${templateId as string} takes ${count} parameter(s), ${parameters.length} given`,
      });
    const transactionNumber = deps.nextTransactionNumber();
    ledger.record({
      account: user,
      source: source as string,
      destination: destination as string,
      templateId: templateId as string,
      parameters: parameters as string[],
      transactionNumber,
    });
    meter.accepted(`whatsapp:${user}`, 1, Date.now());
    if (fired?.kind === 'timeout') {
      log({ endpoint: WHATSAPP_PATH, status: 0, account, fault: 'timeout', at: Date.now() });
      return;
    }
    if (fired?.kind === 'reset') {
      log({ endpoint: WHATSAPP_PATH, status: 0, account, fault: 'reset', at: Date.now() });
      req.socket.destroy();
      return;
    }
    done(200, { transactionNumber });
  };
}
