// Fault injection (POST /_sandbox/faults). Per endpoint, a probability per fault; a rule may fire
// only `times` times, which makes a test deterministic ("the next two requests answer 503").
// One random draw per request walks the cumulative probabilities in FAULT_KINDS order, so at most
// one fault fires; probabilities may add up to more than 1, the later rules then act only once the
// earlier ones are used up (`{"500":{"probability":1,"times":1},"503":1}`: one 500, then 503s).
// A rule with an `account` applies to that account's requests only (`{"403":{"probability":1,
// "account":"beta"}}`: beta is forbidden, every other account sends as usual).

export const ENDPOINTS = [
  'token',
  'massive',
  'platformmonitory',
  'effectivitybyclient',
  'msgmtclient',
] as const;
/**
 * The email host's endpoints (POST /email/v1/deliver, GET /email/v1/templates). Optional in the
 * state: they appear in `GET /_sandbox/faults` only once rules were set for them.
 */
export const EMAIL_ENDPOINTS = ['email', 'emailtemplates'] as const;
/** POST /mtmessage, WhatsApp and POST /momessage: optional in the state as the email ones. */
export const LATER_ENDPOINTS = [...EMAIL_ENDPOINTS, 'mtmessage', 'whatsapp', 'momessage'] as const;
export type SmsEndpoint = (typeof ENDPOINTS)[number];
export type EmailEndpoint = (typeof EMAIL_ENDPOINTS)[number];
export type LaterEndpoint = (typeof LATER_ENDPOINTS)[number];
export type Endpoint = SmsEndpoint | LaterEndpoint;

/**
 * HTTP statuses answer at once without accepting anything. `timeout` and `reset` accept the
 * request first (ledger and notifications, as a service that processed it would), then never
 * answer, or destroy the connection. `revoke` expires the account's token, then answers 401.
 * On the monitoring endpoints (GET, nothing to accept) `timeout` never answers and `reset`
 * destroys the connection.
 */
export const FAULT_KINDS = [
  '400',
  '403',
  '413',
  '429',
  '500',
  '502',
  '503',
  '504',
  'timeout',
  'reset',
  'revoke',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRule {
  readonly probability: number;
  /** Fire at most this many times, then the rule is gone. */
  times?: number | undefined;
  /** For 429: the Retry-After header value, verbatim (default "1"). */
  readonly retryAfter?: string | undefined;
  /** Only requests of this account (username): its valid token's, or the login's. */
  readonly account?: string | undefined;
}

type Rules = Partial<Record<FaultKind, FaultRule>>;

export type FaultsState = Record<SmsEndpoint, Rules> &
  Partial<Record<LaterEndpoint, Rules>> & {
    /** Bodies above this many bytes answer 413 (null: the sandbox's start-up limit). */
    maxBodyBytes: number | null;
    /** POST /email/v1/deliver bodies above this many bytes answer 413 (absent: 20,000,000). */
    emailMaxBodyBytes?: number | undefined;
  };

function noFaults(): FaultsState {
  return {
    token: {},
    massive: {},
    platformmonitory: {},
    effectivitybyclient: {},
    msgmtclient: {},
    maxBodyBytes: null,
  };
}

export interface Fired {
  readonly kind: FaultKind;
  readonly rule: FaultRule;
}

export class FaultConfigError extends Error {}

export class Faults {
  #state: FaultsState = noFaults();

  get state(): FaultsState {
    return this.#state;
  }

  /** Replaces every rule with those of `input` (an empty object clears them). */
  set(input: unknown): FaultsState {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      throw new FaultConfigError('the body must be a JSON object such as {"massive":{"503":0.5}}');
    }
    const o = input as Record<string, unknown>;
    const next = noFaults();
    for (const key of Object.keys(o)) {
      if (key === 'maxBodyBytes') {
        const v = o[key];
        if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) {
          throw new FaultConfigError('maxBodyBytes must be a positive integer or null');
        }
        next.maxBodyBytes = v as number | null;
        continue;
      }
      if (key === 'emailMaxBodyBytes') {
        const v = o[key];
        if (v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) {
          throw new FaultConfigError('emailMaxBodyBytes must be a positive integer or null');
        }
        if (v !== null) next.emailMaxBodyBytes = v as number;
        continue;
      }
      if (
        !(ENDPOINTS as readonly string[]).includes(key) &&
        !(LATER_ENDPOINTS as readonly string[]).includes(key)
      ) {
        const all = [...ENDPOINTS, ...LATER_ENDPOINTS].join(', ');
        throw new FaultConfigError(
          `unknown endpoint "${key}": use ${all}, maxBodyBytes or emailMaxBodyBytes`,
        );
      }
      next[key as Endpoint] = parseRules(key, o[key]);
    }
    this.#state = next;
    return next;
  }

  clear(): void {
    this.#state = noFaults();
  }

  /**
   * Draws once; returns the fault to apply to this request, if any. `account`: whose request
   * it is, when known (rules of another account, or of an account when it is not known, are
   * skipped).
   */
  /**
   * pick, drawing from `random` only when the endpoint has rules: an endpoint nobody set
   * faults for (the monitoring, email, /mtmessage and WhatsApp ones) leaves the sequence of
   * draws the sends and deliveries use as it was.
   */
  pickIfAny(endpoint: Endpoint, random: () => number, account?: string): Fired | null {
    const rules = this.#state[endpoint];
    return rules && Object.keys(rules).length > 0 ? this.pick(endpoint, random(), account) : null;
  }

  pick(endpoint: Endpoint, random: number, account?: string): Fired | null {
    const rules = this.#state[endpoint];
    if (rules === undefined) return null;
    let acc = 0;
    for (const kind of FAULT_KINDS) {
      const rule = rules[kind];
      if (!rule || (rule.account !== undefined && rule.account !== account)) continue;
      acc += rule.probability;
      if (random < acc) {
        if (rule.times !== undefined && --rule.times <= 0) delete rules[kind];
        return { kind, rule };
      }
    }
    return null;
  }
}

function parseRules(endpoint: string, value: unknown): Partial<Record<FaultKind, FaultRule>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FaultConfigError(`${endpoint} must be an object of fault → probability`);
  }
  const rules: Partial<Record<FaultKind, FaultRule>> = {};
  for (const [kind, raw] of Object.entries(value as Record<string, unknown>)) {
    if (!(FAULT_KINDS as readonly string[]).includes(kind)) {
      throw new FaultConfigError(`${endpoint}.${kind}: unknown fault; use ${FAULT_KINDS.join(', ')}`);
    }
    const r: Record<string, unknown> =
      typeof raw === 'number'
        ? { probability: raw }
        : typeof raw === 'object' && raw !== null
          ? (raw as Record<string, unknown>)
          : {};
    const p = r.probability;
    if (typeof p !== 'number' || !(p >= 0 && p <= 1)) {
      throw new FaultConfigError(`${endpoint}.${kind}: probability must be a number from 0 to 1`);
    }
    if (r.times !== undefined && (typeof r.times !== 'number' || !Number.isInteger(r.times) || r.times < 1)) {
      throw new FaultConfigError(`${endpoint}.${kind}: times must be a positive integer`);
    }
    if (r.retryAfter !== undefined && typeof r.retryAfter !== 'string') {
      throw new FaultConfigError(`${endpoint}.${kind}: retryAfter must be a string (the header value)`);
    }
    if (r.account !== undefined && (typeof r.account !== 'string' || r.account === '')) {
      throw new FaultConfigError(`${endpoint}.${kind}: account must be a username`);
    }
    rules[kind as FaultKind] = {
      probability: p,
      times: r.times as number | undefined,
      retryAfter: r.retryAfter as string | undefined,
      account: r.account as string | undefined,
    };
  }
  return rules;
}
