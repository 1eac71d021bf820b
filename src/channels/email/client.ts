// The email host's client (docs/service.md "Email"): POST /email/v1/deliver with the account's
// x-api-key, GET /email/v1/templates. Transport only: what it answers for each recipient, in
// order; the pipeline records it.
//
// - At most 50 recipients a request, `concurrency` requests at once.
// - The 20 MB body limit: a request whose body would pass it is split in halves before it is
//   sent (root attachments repeat in every request), and so is one the service answers 413.
//   A single recipient too large alone fails (DROPLINE_ERR_SERVICE_TOO_LARGE), never sent.
// - 202 (also when recipients fail): each recipient's status, matched by position, or by
//   address when the answer lists them otherwise; one it does not list is in doubt.
// - 401 (key missing or invalid) and 403 (no permission; an address not allowed): every
//   recipient of that request, and the requests not yet sent are not sent (failed, retryable,
//   to send after the account is fixed).
// - 400 (the structure): each recipient of the request rejected with the service's message.
// - 5xx, 429 and requests that never left are sent again with back-off; a request written
//   without an answer is in doubt, never sent again here.
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { redactSecrets, secretsOf } from '../../core/redact.ts';
import { DroplineError, type ErrorCode } from '../../errors.ts';
import type { RecipientOutcome } from '../../service/channel-account.ts';
import { answerDecision, describeError, headerOf, postOnce, serviceHost } from '../../service/http.ts';
import { backoffDelay, parseBody, parseRetryAfter, reasonOf } from '../../service/wire.ts';

/** Recipients a request (docs/service.md "Email"). */
export const EMAIL_MAX_RECIPIENTS = 50;
/** 413 above 20 MB (read as 20,000,000 bytes, as the sandbox does). */
export const EMAIL_MAX_BODY_BYTES = 20_000_000;

export interface EmailClientOptions {
  /** `{email_url}`. */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Per request, headers and body (default 30 s). */
  readonly timeoutMs?: number | undefined;
  readonly retry?: { baseMs?: number; maxMs?: number; maxAttempts?: number } | undefined;
  /** Default 20,000,000. */
  readonly maxBodyBytes?: number | undefined;
  /** Requests at once (default 4). */
  readonly concurrency?: number | undefined;
  readonly random?: (() => number) | undefined;
}

export interface EmailAttachment {
  readonly name: string;
  /** base64 */
  readonly content: string;
  readonly contentType?: string | undefined;
}

/** What every recipient is sent: a stored template, or a subject and an HTML body. */
export interface EmailContent {
  readonly from: string;
  readonly fromName?: string | undefined;
  readonly subject?: string | undefined;
  readonly html?: string | undefined;
  readonly templateId?: string | undefined;
  readonly attachments?: readonly EmailAttachment[] | undefined;
}

export interface EmailRecipient {
  readonly recipient: string;
  readonly fields?: Readonly<Record<string, string>> | undefined;
}

/** What one recipient's request answered (the shape every per-recipient channel shares). */
export type EmailOutcome = RecipientOutcome;

export interface EmailAnswer {
  readonly overallStatus: string | null;
  readonly errors: readonly { readonly code: string; readonly message: string }[];
}

export interface EmailBatchResult {
  /** One a recipient, in the order given. */
  readonly outcomes: EmailOutcome[];
  /** Requests made (retries and splits included). */
  readonly requests: number;
  /** Each 2xx answer's overallStatus and errors, in the order they came. */
  readonly answers: EmailAnswer[];
}

const REASON_MAX = 200;

export class EmailClient {
  readonly #pool: Pool;
  readonly #basePath: string;
  readonly #apiKey: string;
  readonly #timeout: number;
  readonly #retry: { baseMs: number; maxMs: number; maxAttempts: number };
  readonly #maxBody: number;
  readonly #concurrency: number;
  readonly #random: () => number;
  /** The key, which no reason may show. */
  readonly #secrets: readonly string[];

  constructor(opts: EmailClientOptions) {
    const host = serviceHost(opts.baseUrl, 'the email baseUrl');
    this.#concurrency = opts.concurrency ?? 4;
    this.#timeout = opts.timeoutMs ?? 30_000;
    this.#pool = new Pool(host.origin, {
      connections: this.#concurrency + 1,
      pipelining: 1,
      headersTimeout: this.#timeout,
      bodyTimeout: this.#timeout,
      keepAliveTimeout: 4_000,
    });
    this.#basePath = host.basePath;
    this.#apiKey = opts.apiKey;
    this.#secrets = secretsOf([opts.apiKey]);
    this.#retry = {
      baseMs: opts.retry?.baseMs ?? 5_000,
      maxMs: opts.retry?.maxMs ?? 60_000,
      maxAttempts: opts.retry?.maxAttempts ?? 5,
    };
    this.#maxBody = opts.maxBodyBytes ?? EMAIL_MAX_BODY_BYTES;
    this.#random = opts.random ?? Math.random;
  }

  /** Sends `content` to every recipient; one outcome each, in order. */
  async send(
    content: EmailContent,
    recipients: readonly EmailRecipient[],
    signal: AbortSignal = new AbortController().signal,
  ): Promise<EmailBatchResult> {
    const outcomes: EmailOutcome[] = new Array(recipients.length);
    const answers: EmailAnswer[] = [];
    const send: Send = { content, recipients, signal, answers, requests: 0, refused: null };
    const groups: number[][] = [];
    for (let i = 0; i < recipients.length; i += EMAIL_MAX_RECIPIENTS)
      groups.push(
        Array.from({ length: Math.min(EMAIL_MAX_RECIPIENTS, recipients.length - i) }, (_, k) => i + k),
      );
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let g = next++; g < groups.length; g = next++) {
        const group = groups[g]!;
        if (signal.aborted) {
          for (const i of group)
            outcomes[i] = failed(
              'DROPLINE_ERR_SERVICE_UNAVAILABLE',
              'not sent: stopped before it was sent',
              true,
            );
          continue;
        }
        const got = await this.#sendFitting(send, group);
        group.forEach((i, k) => {
          outcomes[i] = got[k]!;
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, groups.length) }, worker));
    return { outcomes, requests: send.requests, answers };
  }

  /** The stored templates' ids (GET /email/v1/templates). */
  async templates(signal?: AbortSignal): Promise<string[]> {
    let res: Awaited<ReturnType<Pool['request']>>;
    try {
      res = await this.#pool.request({
        method: 'GET',
        path: `${this.#basePath}/email/v1/templates`,
        headers: { 'x-api-key': this.#apiKey, accept: 'application/json' },
        signal,
      });
    } catch (err) {
      throw new DroplineError(
        'DROPLINE_ERR_SERVICE_UNAVAILABLE',
        `GET /email/v1/templates: ${describeError(err as Error)}`,
      );
    }
    const text = await res.body.text();
    const body = parseBody(text, headerOf(res.headers, 'content-type'));
    if (res.statusCode === 401)
      throw new DroplineError(
        'DROPLINE_ERR_SERVICE_AUTH',
        `GET /email/v1/templates: 401 ${reason(body, 401, this.#secrets)}`,
      );
    if (res.statusCode === 403)
      throw new DroplineError(
        'DROPLINE_ERR_SERVICE_FORBIDDEN',
        `GET /email/v1/templates: 403 ${reason(body, 403, this.#secrets)}`,
      );
    if (res.statusCode < 200 || res.statusCode > 299)
      throw new DroplineError(
        'DROPLINE_ERR_SERVICE_FAILED',
        `GET /email/v1/templates: HTTP ${res.statusCode} ${reason(body, res.statusCode, this.#secrets)}`,
      );
    return templateIds(body);
  }

  close(): Promise<void> {
    return this.#pool.close();
  }

  /** A group sent as requests whose bodies fit: split in halves until each does. */
  async #sendFitting(send: Send, group: readonly number[]): Promise<EmailOutcome[]> {
    const { content, recipients, signal, answers } = send;
    const body = Buffer.from(
      JSON.stringify(
        requestBody(
          content,
          group.map((i) => recipients[i]!),
        ),
      ),
    );
    if (body.length > this.#maxBody) {
      if (group.length === 1)
        return [
          failed(
            'DROPLINE_ERR_SERVICE_TOO_LARGE',
            `the request for this recipient alone is ${body.length} bytes, above the ${this.#maxBody}-byte limit: fewer or smaller attachments`,
            false,
          ),
        ];
      return this.#halves(send, group);
    }
    for (let tries = 1; ; tries++) {
      const refused = send.refused;
      if (refused !== null) return group.map(() => failed(refused.code, `not sent: ${refused.why}`, true));
      send.requests++;
      const answer = await postOnce(this.#pool, {
        path: `${this.#basePath}/email/v1/deliver`,
        body,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'x-api-key': this.#apiKey,
        },
        headersTimeout: this.#timeout,
        bodyTimeout: this.#timeout,
      });
      let retryAfterMs: number | null = null;
      let why: string;
      if (!answer.ok) {
        why = describeError(answer.error);
        if (answer.written) return group.map(() => inDoubt(`${why} after the request was sent`));
      } else {
        const { status } = answer;
        const decision = answerDecision(status, answer.written);
        const parsed = answer.bodyError
          ? null
          : parseBody(answer.text, headerOf(answer.headers, 'content-type'));
        if (decision === 'accepted') {
          if (answer.bodyError) return group.map(() => inDoubt(`HTTP ${status} whose body broke off`));
          return outcomesOf(
            parsed,
            group.map((i) => recipients[i]!.recipient),
            answers,
            this.#secrets,
          );
        }
        why = `HTTP ${status}: ${reason(parsed, status, this.#secrets)}`;
        switch (decision) {
          case 'unauthorized':
          case 'forbidden': {
            send.refused = {
              code: status === 401 ? 'DROPLINE_ERR_SERVICE_AUTH' : 'DROPLINE_ERR_SERVICE_FORBIDDEN',
              why: `the account was refused (${why})`,
            };
            const kind = decision;
            return group.map(() => ({ kind, reason: why }));
          }
          // The structure was refused (the same for halves: no bisection).
          case 'bad_request':
            return group.map(() => ({
              kind: 'rejected',
              code: 'DROPLINE_ERR_SERVICE_REJECTED',
              reason: why,
            }));
          case 'too_large':
            if (group.length > 1) return this.#halves(send, group);
            return [failed('DROPLINE_ERR_SERVICE_TOO_LARGE', why, false)];
          case 'rate_limited': {
            // At most retry.maxMs: the chunk holds the account's permit meanwhile.
            const hinted = parseRetryAfter(headerOf(answer.headers, 'retry-after'), Date.now());
            retryAfterMs = hinted === null ? null : Math.min(hinted, this.#retry.maxMs);
            break;
          }
          case 'in_doubt':
            return group.map(() => inDoubt(`${why}, a gateway's answer after the request was sent`));
          case 'failed':
            return group.map(() => failed('DROPLINE_ERR_SERVICE_FAILED', why, false));
        }
      }
      if (tries >= this.#retry.maxAttempts)
        return group.map(() => failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `${why} (${tries} tries)`, true));
      const delay = retryAfterMs ?? backoffDelay(tries, this.#retry, this.#random());
      try {
        await sleep(delay, undefined, { signal });
      } catch {
        return group.map(() =>
          failed('DROPLINE_ERR_SERVICE_UNAVAILABLE', `${why}; stopped before retrying`, true),
        );
      }
    }
  }

  async #halves(send: Send, group: readonly number[]): Promise<EmailOutcome[]> {
    const mid = Math.ceil(group.length / 2);
    const left = await this.#sendFitting(send, group.slice(0, mid));
    const right = await this.#sendFitting(send, group.slice(mid));
    return [...left, ...right];
  }
}

/**
 * One send: what it sends, its requests and answers, and the refusal (401/403) that stops the
 * requests not yet sent.
 */
interface Send {
  readonly content: EmailContent;
  readonly recipients: readonly EmailRecipient[];
  readonly signal: AbortSignal;
  readonly answers: EmailAnswer[];
  requests: number;
  refused: { code: ErrorCode; why: string } | null;
}

function failed(code: ErrorCode, why: string, retryable: boolean): EmailOutcome {
  return { kind: 'failed', code, reason: why, retryable };
}

function inDoubt(why: string): EmailOutcome {
  return { kind: 'in_doubt', reason: why };
}

/** `secrets`: the key (a service may echo the request's headers back). */
function reason(body: unknown, status: number, secrets: readonly string[]): string {
  return reasonOf(body, status, secrets).slice(0, REASON_MAX);
}

function requestBody(content: EmailContent, recipients: readonly EmailRecipient[]): Record<string, unknown> {
  const body: Record<string, unknown> = { from: content.from };
  if (content.fromName !== undefined) body.fromName = content.fromName;
  if (content.templateId !== undefined) body.templateId = content.templateId;
  else {
    if (content.subject !== undefined) body.subject = content.subject;
    if (content.html !== undefined) body.html = content.html;
  }
  if (content.attachments && content.attachments.length > 0) body.attachments = content.attachments;
  body.payload = recipients.map((r) =>
    r.fields && Object.keys(r.fields).length > 0
      ? { recipient: r.recipient, fields: r.fields }
      : { recipient: r.recipient },
  );
  return body;
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The 202's statuses, one per recipient of the request (`sent`, in payload order). */
function outcomesOf(
  parsed: unknown,
  sent: readonly string[],
  answers: EmailAnswer[],
  /** The key, kept out of every reason (a service may echo the request's headers). */
  secrets: readonly string[],
): EmailOutcome[] {
  const body = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const errors = Array.isArray(body.errors)
    ? body.errors.map((e) => {
        const o = (typeof e === 'object' && e !== null ? e : {}) as Record<string, unknown>;
        return {
          code: text(o.code) ?? 'ERROR',
          message: redactSecrets(text(o.message) ?? '', secrets, REASON_MAX),
        };
      })
    : [];
  const overallStatus = text(body.overallStatus);
  answers.push({ overallStatus, errors });
  const request = requestNote(overallStatus, errors);
  const listed = Array.isArray(body.recipients)
    ? body.recipients.map((r) => (typeof r === 'object' && r !== null ? r : {}) as Record<string, unknown>)
    : [];
  const byPosition = listed.length === sent.length && listed.every((r, i) => r.recipient === sent[i]);
  const used = new Set<number>();
  return sent.map((address, i) => {
    let entry: Record<string, unknown> | undefined;
    if (byPosition) entry = listed[i];
    else {
      const lower = address.toLowerCase();
      const j = listed.findIndex(
        (r, k) => !used.has(k) && typeof r.recipient === 'string' && r.recipient.toLowerCase() === lower,
      );
      if (j >= 0) {
        used.add(j);
        entry = listed[j];
      }
    }
    const first = errors[0];
    if (entry === undefined) {
      // A request the service refused as a whole may list nobody: each is rejected with its error.
      if (overallStatus === 'rejected' && first)
        return { kind: 'rejected', code: first.code, reason: first.message, request };
      return inDoubt("the service's answer did not list this recipient");
    }
    const status = text(entry.status);
    if (status === 'accepted') return { kind: 'accepted', messageId: text(entry.messageId), request };
    if (status === 'rejected') {
      // A recipient rejected because its request was (the sandbox's REQUEST_REJECTED, or no
      // code): the request's own error says why.
      const own = text(entry.code);
      const fromRequest = (own === null || own === 'REQUEST_REJECTED') && first !== undefined;
      return {
        kind: 'rejected',
        code: fromRequest ? first.code : (own ?? 'REJECTED'),
        reason: fromRequest
          ? first.message
          : redactSecrets(text(entry.reason) ?? first?.message ?? '', secrets, REASON_MAX),
        request,
      };
    }
    return inDoubt(`the service answered status ${String(status).slice(0, 40)} for this recipient`);
  });
}

/**
 * A 202's own answer, for the report of each of its recipients, when it says more than
 * "accepted": its overallStatus and its errors (`request partial: INVALID_RECIPIENT …`).
 * Undefined when the request was plainly accepted.
 */
function requestNote(
  overallStatus: string | null,
  errors: readonly { code: string; message: string }[],
): string | undefined {
  if ((overallStatus === 'accepted' || overallStatus === null) && errors.length === 0) return undefined;
  const listed = errors
    .slice(0, 3)
    .map((e) => (e.message === '' ? e.code : `${e.code} ${e.message}`))
    .join('; ');
  const more = errors.length > 3 ? `; and ${errors.length - 3} more` : '';
  return `request ${overallStatus ?? 'without overallStatus'}${listed ? `: ${listed}${more}` : ''}`.slice(
    0,
    REASON_MAX,
  );
}

/**
 * GET /email/v1/templates: an array of ids (text or numbers), or of objects with an `id` or
 * `templateId`, bare or under `templates`. Any other shape throws: the list is then unknown
 * (the file goes on), never taken for an empty one (which would reject every file).
 */
function templateIds(body: unknown): string[] {
  const list = Array.isArray(body)
    ? body
    : typeof body === 'object' && body !== null && Array.isArray((body as { templates?: unknown }).templates)
      ? (body as { templates: unknown[] }).templates
      : null;
  if (list === null)
    throw new DroplineError(
      'DROPLINE_ERR_SERVICE_FAILED',
      'GET /email/v1/templates: an answer of a shape dropline does not know (not a list of templates)',
    );
  const ids: string[] = [];
  const idOf = (v: unknown): string | null =>
    typeof v === 'string' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : null;
  for (const t of list) {
    const id =
      typeof t === 'object' && t !== null
        ? idOf((t as { id?: unknown }).id ?? (t as { templateId?: unknown }).templateId)
        : idOf(t);
    if (id !== null) ids.push(id);
  }
  return ids;
}
