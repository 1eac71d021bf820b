// Accounts and their tokens (docs/sandbox.md "Tokens"): one active token per account, a new
// token (by password or by refresh) expires the previous one, and a token lapses after its lifetime.
// A refresh token stays good after its access token lapsed by time, but not once a newer token
// was issued: that is how a second login locks out the first process.
import { randomBytes } from 'node:crypto';

export interface Account {
  readonly username: string;
  readonly password: string;
  /**
   * The email host's `x-api-key` (docs/sandbox.md "Email"); without one the account cannot use
   * email.
   */
  readonly apiKey?: string | undefined;
  /** false: the key is valid but has no permission to send email (403). Default true. */
  readonly email?: boolean | undefined;
  /** Stored template ids for GET /email/v1/templates and `templateId` (default welcome, invoice). */
  readonly emailTemplates?: readonly string[] | undefined;
  /** Verified sender domains for `from`; absent: any domain is accepted. */
  readonly emailSenderDomains?: readonly string[] | undefined;
  /** false: RCS is not set up for the account (POST /mtmessage with Channel RCS: Status 1). Default true. */
  readonly rcs?: boolean | undefined;
  /**
   * The account webhook: where POST /mtmessage's notifications go (docs/sandbox.md "POST
   * /mtmessage"); none without.
   */
  readonly webhook?: AccountWebhook | undefined;
  /** WhatsApp set up for the account (docs/sandbox.md "WhatsApp"); none: 403. */
  readonly whatsapp?: WhatsAppSetup | undefined;
  /**
   * The short codes assigned to the account (docs/sandbox.md "POST /momessage"): a message's
   * `ShortCode` must be one. Default DEFAULT_SHORT_CODES.
   */
  readonly shortCodes?: readonly string[] | undefined;
}

/** Every account's short code unless it names its own: the SMPP server's default `to`. */
export const DEFAULT_SHORT_CODES: readonly string[] = ['85000'];

/** An account's WhatsApp: its sending numbers, and its approved templates with their parameter counts. */
export interface WhatsAppSetup {
  readonly numbers: readonly string[];
  readonly templates: Readonly<Record<string, number>>;
}

/** The default account's WhatsApp (docs/sandbox.md "WhatsApp"). */
export const DEMO_WHATSAPP: WhatsAppSetup = {
  numbers: ['573001112233'],
  templates: { bienvenida: 1, factura: 2 },
};

/**
 * The account webhook's two ways to authenticate: Basic (username and password given
 * to support), or a token in the registered URL, used exactly as registered.
 */
export interface AccountWebhook {
  readonly url: string;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
}

export const DEFAULT_EMAIL_TEMPLATES: readonly string[] = ['welcome', 'invoice'];

/** What an email API key gives (Accounts.byApiKey). */
export interface EmailAccess {
  readonly username: string;
  readonly email: boolean;
  readonly templates: readonly string[];
  readonly senderDomains: readonly string[] | null;
}

export interface IssuedToken {
  readonly accessToken: string;
  readonly refreshToken: string;
  readonly expiresAt: number;
}

export type TokenCheck =
  | { readonly ok: true; readonly username: string }
  | {
      readonly ok: false;
      readonly reason: string;
      /**
       * replaced: a newer token of the account (a login, a refresh, a revoke fault) expired it;
       * expired: past its lifetime; unknown: never issued here (or forgotten, see MAX_REPLACED).
       */
      readonly why: 'replaced' | 'expired' | 'unknown';
      /** The account the token was issued to (replaced or expired). */
      readonly username?: string | undefined;
    };

/** Replaced access tokens remembered, to tell a 401 for one from a 401 for a made-up token. */
const MAX_REPLACED = 100_000;

export class Accounts {
  readonly #passwords = new Map<string, string>();
  readonly #byApiKey = new Map<string, EmailAccess>();
  readonly #rcs = new Map<string, boolean>();
  readonly #webhooks = new Map<string, AccountWebhook>();
  readonly #whatsapp = new Map<string, WhatsAppSetup>();
  readonly #shortCodes = new Map<string, readonly string[]>();
  readonly #current = new Map<string, IssuedToken>();
  readonly #byAccess = new Map<string, string>();
  readonly #byRefresh = new Map<string, string>();
  /** Access tokens a newer token replaced, oldest first, and their accounts. */
  readonly #replaced = new Map<string, string>();
  readonly #lifetimeMs: () => number;
  readonly #now: () => number;

  constructor(accounts: readonly Account[], lifetimeMs: () => number, now: () => number) {
    for (const a of accounts) {
      this.#passwords.set(a.username, a.password);
      this.#rcs.set(a.username, a.rcs ?? true);
      if (a.webhook) this.#webhooks.set(a.username, a.webhook);
      if (a.whatsapp) this.#whatsapp.set(a.username, a.whatsapp);
      this.#shortCodes.set(a.username, a.shortCodes ?? DEFAULT_SHORT_CODES);
      if (a.apiKey !== undefined && a.apiKey !== '') {
        this.#byApiKey.set(a.apiKey, {
          username: a.username,
          email: a.email ?? true,
          templates: [...(a.emailTemplates ?? DEFAULT_EMAIL_TEMPLATES)],
          senderDomains: a.emailSenderDomains ? a.emailSenderDomains.map((d) => d.toLowerCase()) : null,
        });
      }
    }
    this.#lifetimeMs = lifetimeMs;
    this.#now = now;
  }

  usernames(): string[] {
    return [...this.#passwords.keys()];
  }

  /** The account of an email API key, or null for an unknown one. */
  byApiKey(apiKey: string): EmailAccess | null {
    return this.#byApiKey.get(apiKey) ?? null;
  }

  /** Whether RCS is set up for the account. */
  rcs(username: string): boolean {
    return this.#rcs.get(username) ?? false;
  }

  whatsapp(username: string): WhatsAppSetup | null {
    return this.#whatsapp.get(username) ?? null;
  }

  /** The short codes assigned to the account (none for an unknown one). */
  shortCodes(username: string): readonly string[] {
    return this.#shortCodes.get(username) ?? [];
  }

  webhook(username: string): AccountWebhook | null {
    return this.#webhooks.get(username) ?? null;
  }

  /** Registers (or, with null, removes) the account's webhook, as support would. */
  setWebhook(username: string, webhook: AccountWebhook | null): boolean {
    if (!this.#passwords.has(username)) return false;
    if (webhook) this.#webhooks.set(username, webhook);
    else this.#webhooks.delete(username);
    return true;
  }

  checkPassword(username: string, password: string): boolean {
    return this.#passwords.get(username) === password;
  }

  issue(username: string): IssuedToken {
    this.revoke(username);
    const token: IssuedToken = {
      accessToken: randomBytes(24).toString('base64url'),
      refreshToken: randomBytes(24).toString('base64url'),
      expiresAt: this.#now() + this.#lifetimeMs(),
    };
    this.#current.set(username, token);
    this.#byAccess.set(token.accessToken, username);
    this.#byRefresh.set(token.refreshToken, username);
    return token;
  }

  /** The account of a refresh token that belongs to the account's latest token, or null. */
  refreshOwner(refreshToken: string): string | null {
    return this.#byRefresh.get(refreshToken) ?? null;
  }

  check(accessToken: string): TokenCheck {
    const username = this.#byAccess.get(accessToken);
    if (username === undefined) {
      const replaced = this.#replaced.get(accessToken);
      return {
        ok: false,
        reason: 'the token is unknown or was replaced by a newer one',
        why: replaced === undefined ? 'unknown' : 'replaced',
        username: replaced,
      };
    }
    const token = this.#current.get(username);
    if (!token || token.expiresAt <= this.#now())
      return { ok: false, reason: 'the token has expired', why: 'expired', username };
    return { ok: true, username };
  }

  /** Expires the account's active token, as a login from elsewhere would. */
  revoke(username: string): void {
    const old = this.#current.get(username);
    if (!old) return;
    this.#byAccess.delete(old.accessToken);
    this.#byRefresh.delete(old.refreshToken);
    this.#current.delete(username);
    this.#replaced.set(old.accessToken, username);
    if (this.#replaced.size > MAX_REPLACED) this.#replaced.delete(this.#replaced.keys().next().value!);
  }

  /** Every token gone (POST /_sandbox/reset): a token of before answers 401 as unknown. */
  revokeAll(): void {
    for (const username of [...this.#current.keys()]) this.revoke(username);
    this.#replaced.clear();
  }
}
