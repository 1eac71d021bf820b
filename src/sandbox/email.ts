// The email host of the sandbox (docs/service.md "Email"): POST /email/v1/deliver and
// GET /email/v1/templates, authenticated by `x-api-key`. Served on the sandbox's one listener
// under the /email/v1/ path prefix ({email_url} = the sandbox URL). Every choice where the
// service says "not shown" is in docs/sandbox.md, "Email".
//
// Status codes: 401 missing or unknown key; 403 key without email permission; 413 body above
// 20,000,000 bytes (Content-Length checked first, bytes counted while reading, nothing kept past
// the limit); 400 a body that is not JSON or breaks the request's structure (a field of the
// wrong type); otherwise 202, also when the request or some recipients fail validation.

import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Accounts, EmailAccess } from './accounts.ts';
import type { Faults } from './faults.ts';
import { applyStatusFault, type RequestRecord, sendJson } from './http.ts';

/** "20 MB" read as 20,000,000 bytes (the stricter reading: a client that fits here fits there). */
export const EMAIL_MAX_BODY_BYTES = 20_000_000;
export const EMAIL_MAX_RECIPIENTS = 50;
export const EMAIL_MAX_ATTACHMENTS = 10;
/** "8 MB" of decoded attachment bytes, read as 8,000,000. */
export const EMAIL_MAX_ATTACHMENT_BYTES = 8_000_000;
/** Bytes discarded after a 413 before the connection is destroyed instead. */
const MAX_DRAIN_BYTES = 64 * 2 ** 20;

export const DELIVER_PATH = '/email/v1/deliver';
export const TEMPLATES_PATH = '/email/v1/templates';

export type EmailOverallStatus = 'accepted' | 'partial' | 'rejected';

export interface EmailError {
  readonly code: string;
  readonly message: string;
}

export interface EmailRecipientResult {
  readonly recipient: string;
  readonly status: 'accepted' | 'rejected';
  /** Accepted recipients: the sandbox's id of that email. */
  readonly messageId?: string | undefined;
  /** Rejected recipients: a stable code (INVALID_RECIPIENT, …) and a readable reason. */
  readonly code?: string | undefined;
  readonly reason?: string | undefined;
}

/** The 202 body: the sandbox's choice of types and values (the service names only the fields). */
export interface EmailDeliverAnswer {
  readonly overallStatus: EmailOverallStatus;
  readonly errors: readonly EmailError[];
  readonly recipients: readonly EmailRecipientResult[];
}

export interface EmailLedgerEntry {
  readonly account: string;
  readonly recipient: string;
  /** Acceptances of this (account, recipient); above 1 is a duplicate send. */
  count: number;
  /** One per acceptance, oldest first. */
  readonly messageIds: string[];
  from: string;
  templateId: string | null;
  subject: string | null;
  fields: Record<string, unknown> | null;
  /** Attachments the latest acceptance carried (root or its own). */
  attachments: number;
  at: number;
}

/**
 * Every accepted email recipient, keyed by (account, recipient address as sent). The email body
 * carries no client id per recipient (unlike the SMS messageId), so the address is the key; a
 * request holds at most 50, so entries are kept directly, not as raw bodies.
 */
export class EmailLedger {
  readonly #entries = new Map<string, EmailLedgerEntry>();
  #accepted = 0;
  #duplicates = 0;

  record(
    account: string,
    recipient: string,
    messageId: string,
    sent: {
      from: string;
      templateId: string | null;
      subject: string | null;
      fields: Record<string, unknown> | null;
      attachments: number;
    },
    at: number,
  ): void {
    this.#accepted++;
    const key = `${account}\u0000${recipient}`;
    const found = this.#entries.get(key);
    if (found) {
      if (found.count === 1) this.#duplicates++;
      found.count++;
      found.messageIds.push(messageId);
      Object.assign(found, sent, { at });
      return;
    }
    this.#entries.set(key, { account, recipient, count: 1, messageIds: [messageId], ...sent, at });
  }

  /** Distinct (account, recipient) pairs. */
  get size(): number {
    return this.#entries.size;
  }

  /** Acceptances, duplicates included. */
  get accepted(): number {
    return this.#accepted;
  }

  /** Entries with a count above 1. */
  get duplicates(): number {
    return this.#duplicates;
  }

  *entries(filter?: {
    account?: string | undefined;
    recipient?: string | undefined;
  }): Generator<EmailLedgerEntry> {
    for (const e of this.#entries.values()) {
      if (filter?.account !== undefined && filter.account !== e.account) continue;
      if (filter?.recipient !== undefined && filter.recipient !== e.recipient) continue;
      yield e;
    }
  }

  clear(): void {
    this.#entries.clear();
    this.#accepted = 0;
    this.#duplicates = 0;
  }
}

// A simple syntax check: one @, no spaces, a dotted domain, RFC 5321 lengths.
const ADDRESS = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
export function isEmailAddress(s: string): boolean {
  const at = s.lastIndexOf('@');
  return s.length <= 254 && at > 0 && at <= 64 && ADDRESS.test(s);
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

interface Attachment {
  readonly name: string;
  readonly content: string;
}

interface CheckedRecipient {
  readonly recipient: string;
  readonly fields: Record<string, unknown> | null;
  readonly attachments: readonly Attachment[] | null;
}

export type EmailCheck =
  | { readonly ok: false; readonly reason: string }
  | {
      readonly ok: true;
      readonly from: string;
      readonly subject: string | null;
      readonly templateId: string | null;
      readonly rootAttachments: number;
      /** Request-level rule failures: every recipient is rejected. */
      readonly errors: EmailError[];
      readonly recipients: readonly CheckedRecipient[];
    };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** undefined when the attachments array is well formed; else the 400 reason. */
function attachmentsStructure(v: unknown, path: string): string | undefined {
  if (!Array.isArray(v)) return `${path} must be an array`;
  for (let i = 0; i < v.length; i++) {
    const a: unknown = v[i];
    if (!isObject(a)) return `${path}[${i}] must be an object`;
    if (typeof a.name !== 'string' || a.name === '') return `${path}[${i}].name must be non-empty text`;
    if (typeof a.content !== 'string') return `${path}[${i}].content must be base64 text`;
    if (a.contentType !== undefined && typeof a.contentType !== 'string')
      return `${path}[${i}].contentType must be text`;
  }
  return undefined;
}

/** The 8.x attachment rules for one list: at most 10, 8,000,000 decoded bytes, valid base64. */
function attachmentRules(list: readonly Attachment[], path: string): EmailError | undefined {
  if (list.length > EMAIL_MAX_ATTACHMENTS)
    return {
      code: 'TOO_MANY_ATTACHMENTS',
      message: `${path} has ${list.length} files; at most ${EMAIL_MAX_ATTACHMENTS}`,
    };
  let total = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i]!.content;
    if (c.length % 4 !== 0 || !BASE64.test(c))
      return { code: 'INVALID_ATTACHMENT', message: `${path}[${i}].content is not base64` };
    total += Buffer.byteLength(c, 'base64');
  }
  if (total > EMAIL_MAX_ATTACHMENT_BYTES)
    return {
      code: 'ATTACHMENTS_TOO_LARGE',
      message: `${path} total ${total} bytes; at most ${EMAIL_MAX_ATTACHMENT_BYTES}`,
    };
  return undefined;
}

/**
 * Structure (types) breaks answer 400; the rules of docs/sandbox.md "Email" are reported in the 202
 * answer: request-level ones in `errors` (every recipient then rejected), recipient ones per
 * recipient.
 */
export function checkEmail(body: unknown, access: EmailAccess): EmailCheck {
  if (!isObject(body)) return { ok: false, reason: 'the body must be a JSON object' };
  for (const f of ['from', 'fromName', 'subject', 'templateId', 'html', 'attachmentId', 'attachmentName']) {
    if (body[f] !== undefined && body[f] !== null && typeof body[f] !== 'string')
      return { ok: false, reason: `${f} must be text` };
  }
  if (!Array.isArray(body.payload)) return { ok: false, reason: 'payload must be an array of recipients' };
  if (body.attachments !== undefined) {
    const why = attachmentsStructure(body.attachments, 'attachments');
    if (why) return { ok: false, reason: why };
  }
  const payload = body.payload as unknown[];
  for (let i = 0; i < payload.length; i++) {
    const p = payload[i];
    if (!isObject(p)) return { ok: false, reason: `payload[${i}] must be an object` };
    if (typeof p.recipient !== 'string') return { ok: false, reason: `payload[${i}].recipient must be text` };
    if (p.fields !== undefined && p.fields !== null && !isObject(p.fields))
      return { ok: false, reason: `payload[${i}].fields must be an object` };
    if (p.attachments !== undefined) {
      const why = attachmentsStructure(p.attachments, `payload[${i}].attachments`);
      if (why) return { ok: false, reason: why };
    }
    for (const f of ['attachmentId', 'attachmentName']) {
      if (p[f] !== undefined && p[f] !== null && typeof p[f] !== 'string')
        return { ok: false, reason: `payload[${i}].${f} must be text` };
    }
  }

  const text = (f: string): string | null => (typeof body[f] === 'string' && body[f] !== '' ? body[f] : null);
  const from = text('from');
  const subject = text('subject');
  const templateId = text('templateId');
  const html = text('html');
  const rootAttachments = (body.attachments as Attachment[] | undefined) ?? [];
  const errors: EmailError[] = [];

  if (from === null) errors.push({ code: 'FROM_REQUIRED', message: 'from is required' });
  else if (!isEmailAddress(from))
    errors.push({ code: 'INVALID_FROM', message: 'from is not an email address' });
  else if (
    access.senderDomains &&
    !access.senderDomains.includes(from.slice(from.lastIndexOf('@') + 1).toLowerCase())
  )
    errors.push({
      code: 'FROM_NOT_VERIFIED',
      message: "from's domain is not a verified sender domain of the account",
    });

  if (templateId !== null && html !== null)
    errors.push({ code: 'TEMPLATE_AND_HTML', message: 'templateId and html are mutually exclusive' });
  else if (templateId === null && html === null)
    errors.push({ code: 'CONTENT_REQUIRED', message: 'one of templateId or html is required' });
  else if (html !== null && subject === null)
    errors.push({ code: 'SUBJECT_REQUIRED', message: 'html requires subject' });
  else if (templateId !== null && !access.templates.includes(templateId))
    errors.push({
      code: 'UNKNOWN_TEMPLATE',
      message: `templateId "${templateId}" is not a template of the account`,
    });

  if (payload.length === 0)
    errors.push({ code: 'NO_RECIPIENTS', message: 'payload must have at least 1 recipient' });
  else if (payload.length > EMAIL_MAX_RECIPIENTS)
    errors.push({
      code: 'TOO_MANY_RECIPIENTS',
      message: `payload has ${payload.length} recipients; at most ${EMAIL_MAX_RECIPIENTS}`,
    });

  const hasPerRecipient = payload.some((p) => Array.isArray((p as { attachments?: unknown }).attachments));
  if (body.attachments !== undefined && hasPerRecipient)
    errors.push({
      code: 'ATTACHMENTS_EXCLUSIVE',
      message: 'root attachments are exclusive with per-recipient attachments',
    });
  const rootRule = attachmentRules(rootAttachments, 'attachments');
  if (rootRule) errors.push(rootRule);
  if (text('attachmentId') !== null && text('attachmentName') === null)
    errors.push({ code: 'ATTACHMENT_NAME_REQUIRED', message: 'attachmentId requires attachmentName' });

  const recipients = payload.map((p) => {
    const o = p as { recipient: string; fields?: Record<string, unknown> | null; attachments?: Attachment[] };
    return { recipient: o.recipient, fields: o.fields ?? null, attachments: o.attachments ?? null };
  });
  return {
    ok: true,
    from: from ?? '',
    subject: templateId !== null ? null : subject,
    templateId,
    rootAttachments: rootAttachments.length,
    errors,
    recipients,
  };
}

/** Per recipient: undefined when it can be accepted, else why not. */
function recipientRule(r: CheckedRecipient, i: number): EmailError | undefined {
  if (!isEmailAddress(r.recipient))
    return { code: 'INVALID_RECIPIENT', message: `payload[${i}].recipient is not an email address` };
  if (r.attachments) return attachmentRules(r.attachments, `payload[${i}].attachments`);
  return undefined;
}

export interface EmailServiceDeps {
  readonly accounts: Accounts;
  readonly faults: Faults;
  readonly ledger: EmailLedger;
  readonly random: () => number;
  readonly now: () => number;
  readonly log: (r: RequestRecord) => void;
}

/** Handles a request under /email/v1/; the body is read here, not by the server's reader. */
export function createEmailHandler(deps: EmailServiceDeps) {
  return (req: IncomingMessage, res: ServerResponse, url: URL): boolean => {
    if (req.method === 'POST' && url.pathname === DELIVER_PATH) {
      deliver(deps, req, res);
      return true;
    }
    if (req.method === 'GET' && url.pathname === TEMPLATES_PATH) {
      templates(deps, req, res);
      return true;
    }
    return false;
  };
}

/** 401 / 403 from the x-api-key header; the access when the key may send email. */
function authenticate(
  accounts: Accounts,
  req: IncomingMessage,
  done: (status: number, body: unknown) => void,
): EmailAccess | null {
  const header = req.headers['x-api-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (!key) {
    done(401, { message: 'the x-api-key header is required' });
    return null;
  }
  const access = accounts.byApiKey(key);
  if (!access) {
    done(401, { message: 'the API key is invalid' });
    return null;
  }
  if (!access.email) {
    done(403, { message: 'the API key has no permission to send email' });
    return null;
  }
  return access;
}

/** GET /email/v1/templates: the account's stored templates. */
function templates(deps: EmailServiceDeps, req: IncomingMessage, res: ServerResponse) {
  const { accounts, faults, random, log } = deps;
  req.resume();
  let account: string | undefined;
  const done = (status: number, body: unknown, fault?: string) => {
    log({ endpoint: TEMPLATES_PATH, status, account, fault, at: Date.now() });
    sendJson(res, status, body);
  };
  const keyed = accounts.byApiKey(String(req.headers['x-api-key'] ?? ''));
  const fired = faults.pickIfAny('emailtemplates', random, keyed?.username);
  if (fired && applyStatusFault(fired, res, (s, b) => done(s, b, fired.kind))) return;
  const access = authenticate(accounts, req, done);
  if (!access) return;
  account = access.username;
  if (fired?.kind === 'revoke') return done(401, { message: 'the API key is invalid' }, 'revoke');
  if (fired?.kind === 'timeout')
    return log({ endpoint: TEMPLATES_PATH, status: 0, account, fault: 'timeout', at: Date.now() });
  if (fired?.kind === 'reset') {
    log({ endpoint: TEMPLATES_PATH, status: 0, account, fault: 'reset', at: Date.now() });
    req.socket.destroy();
    return;
  }
  done(200, { templates: access.templates.map((templateId) => ({ templateId })) });
}

/**
 * POST /email/v1/deliver: authenticated and size-checked before the body is read (an answer
 * given early discards the rest), then checked and each recipient accepted or rejected.
 */
function deliver(deps: EmailServiceDeps, req: IncomingMessage, res: ServerResponse) {
  const { accounts, faults, random, log } = deps;
  let account: string | undefined;
  let recipients = 0;
  let answered = false;
  const done = (status: number, body: unknown, fault?: string) => {
    answered = true;
    log({ endpoint: DELIVER_PATH, status, account, recipients, fault, at: Date.now() });
    sendJson(res, status, body);
  };
  // An answer given before the body was read: the rest is discarded as it arrives (Node's
  // server drains it so the connection stays usable), never kept.
  const answerEarly = (status: number, body: unknown, fault?: string) => {
    done(status, body, fault);
    drain(req);
  };

  const keyed = accounts.byApiKey(String(req.headers['x-api-key'] ?? ''));
  const fired = faults.pickIfAny('email', random, keyed?.username);
  if (fired?.rule.account !== undefined) account = fired.rule.account;
  if (fired && applyStatusFault(fired, res, (s, b) => answerEarly(s, b, fired.kind))) return;
  const access = authenticate(accounts, req, answerEarly);
  if (!access) return;
  account = access.username;
  if (fired?.kind === 'revoke') return answerEarly(401, { message: 'the API key is invalid' }, 'revoke');

  const limit = faults.state.emailMaxBodyBytes ?? EMAIL_MAX_BODY_BYTES;
  const tooLarge = () => ({
    message: `the body is larger than ${limit} bytes; send fewer recipients or attachments per request`,
  });
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return answerEarly(413, tooLarge());

  const chunks: Buffer[] = [];
  let bytes = 0;
  const onData = (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > limit) {
      req.off('data', onData);
      req.off('end', onEnd);
      chunks.length = 0;
      answerEarly(413, tooLarge());
      return;
    }
    chunks.push(chunk);
  };
  const onEnd = () => {
    if (answered) return;
    const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      return done(400, { message: 'the body is not valid JSON' });
    }
    const payload = (parsed as { payload?: unknown } | null)?.payload;
    recipients = Array.isArray(payload) ? payload.length : 0;
    const checked = checkEmail(parsed, access);
    if (!checked.ok) return done(400, { message: checked.reason });
    const answer = acceptRecipients(deps, checked, access.username);
    // As for SMS: timeout and reset accept first, then the answer is lost.
    if (fired?.kind === 'timeout' || fired?.kind === 'reset') {
      log({ endpoint: DELIVER_PATH, status: 0, account, recipients, fault: fired.kind, at: Date.now() });
      if (fired.kind === 'reset') req.socket.destroy();
      return;
    }
    done(202, answer);
  };
  req.on('data', onData);
  req.on('end', onEnd);
}

/**
 * Each recipient of a checked request accepted (recorded in the ledger with a new messageId) or
 * rejected, its own rule's code, or REQUEST_REJECTED for all when the request has errors.
 */
function acceptRecipients(
  deps: EmailServiceDeps,
  checked: Extract<EmailCheck, { ok: true }>,
  username: string,
): EmailDeliverAnswer {
  const at = deps.now();
  const results: EmailRecipientResult[] = checked.recipients.map((r, i) => {
    const request = checked.errors.length > 0;
    const why = request ? undefined : recipientRule(r, i);
    if (request)
      return {
        recipient: r.recipient,
        status: 'rejected',
        code: 'REQUEST_REJECTED',
        reason: 'the request failed validation: see errors',
      };
    if (why) return { recipient: r.recipient, status: 'rejected', code: why.code, reason: why.message };
    const messageId = randomBytes(12).toString('hex');
    deps.ledger.record(
      username,
      r.recipient,
      messageId,
      {
        from: checked.from,
        templateId: checked.templateId,
        subject: checked.subject,
        fields: r.fields,
        attachments: r.attachments?.length ?? checked.rootAttachments,
      },
      at,
    );
    return { recipient: r.recipient, status: 'accepted', messageId };
  });
  const accepted = results.filter((r) => r.status === 'accepted').length;
  const overallStatus: EmailOverallStatus =
    accepted === results.length && accepted > 0 ? 'accepted' : accepted === 0 ? 'rejected' : 'partial';
  return { overallStatus, errors: checked.errors, recipients: results };
}

/** Discards the rest of a body answered early; past MAX_DRAIN_BYTES the connection is closed. */
function drain(req: IncomingMessage): void {
  let drained = 0;
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > MAX_DRAIN_BYTES) req.socket.destroy();
  });
  req.resume();
}
