// The sandbox's state, shared by its endpoints: the accounts and their tokens, what was accepted
// (the ledgers), the notifications, the faults armed, the monitoring traffic, the request log and
// the SMPP server for replies once started; and the settings the endpoints answer by.
import { randomInt } from 'node:crypto';
import { Accounts, DEMO_WHATSAPP } from './accounts.ts';
import { EmailLedger } from './email.ts';
import { Faults } from './faults.ts';
import type { RequestRecord } from './http.ts';
import { Ledger } from './ledger.ts';
import { Meter } from './meter.ts';
import { MoLedger } from './mo-ledger.ts';
import { Notifier } from './notifier.ts';
import type { SandboxOptions } from './options.ts';
import type { SmppServer } from './smpp.ts';
import { Traffic } from './traffic.ts';
import { WhatsAppLedger } from './whatsapp.ts';

const MAX_REQUEST_LOG = 100_000;
/** Numbers whose last short code is remembered (the oldest forgotten first). */
const MAX_SENT_FROM = 1_000_000;

/** The short code (and its account) that last sent a number a message: where its replies go. */
export interface SentFrom {
  readonly shortCode: string;
  readonly account: string;
}

export class SandboxState {
  readonly timeScale: number;
  readonly deliveryDelayMs: number;
  readonly failureRatio: number;
  readonly tokenLifetimeS: number;
  readonly notifyEnabled: boolean;
  readonly defaultMaxBody: number;
  readonly now: () => number;
  readonly random: () => number;

  readonly accounts: Accounts;
  readonly ledger = new Ledger();
  readonly emailLedger = new EmailLedger();
  readonly whatsappLedger = new WhatsAppLedger();
  readonly moLedger = new MoLedger();
  /** By number (digits): the short code that last sent it a message (POST /momessage, massive `shortCode`). */
  readonly #sentFrom = new Map<string, SentFrom>();
  readonly faults = new Faults();
  readonly meter = new Meter();
  readonly traffic: Traffic;
  readonly notifier: Notifier;
  /** Requests to the service endpoints (not /_sandbox/), oldest first. */
  requests: RequestRecord[] = [];
  /** The SMPP server for replies, once started (none without the `smpp` option). */
  smpp: SmppServer | null = null;

  // 28 digits: 13 of the start time, then a counter, so numbers are unique within a sandbox run
  // and do not repeat across restarts.
  readonly #txnPrefix = String(Date.now()).padStart(13, '0') + String(randomInt(100)).padStart(2, '0');
  #txnCounter = 0;

  constructor(options: SandboxOptions) {
    this.timeScale = options.timeScale ?? 1;
    this.deliveryDelayMs = (options.deliveryDelayMs ?? 1000) * this.timeScale;
    this.failureRatio = options.failureRatio ?? 0;
    this.tokenLifetimeS = options.tokenLifetimeS ?? 14_400;
    this.notifyEnabled = options.notify ?? true;
    this.defaultMaxBody = options.maxBodyBytes ?? 64 * 2 ** 20;
    const now = (this.now = options.now ?? Date.now);
    this.random = options.random ?? Math.random;
    this.accounts = new Accounts(
      options.accounts ?? [
        { username: 'demo', password: 'demo', apiKey: 'demo-email-key', whatsapp: DEMO_WHATSAPP },
      ],
      () => this.tokenLifetimeS * 1000,
      now,
    );
    const traffic = (this.traffic = new Traffic(now, this.deliveryDelayMs));
    this.notifier = new Notifier({
      timeScale: this.timeScale,
      concurrency: options.notifyConcurrency,
      timeoutMs: options.notifyTimeoutMs,
      onReport: (job) => {
        if (job.account !== undefined && job.acceptedAt !== undefined)
          traffic.reported(job.account, job.to, job.statusName, job.acceptedAt, now());
      },
    });
  }

  readonly log = (r: RequestRecord): void => {
    const requests = this.requests;
    if (requests.length >= MAX_REQUEST_LOG) requests.splice(0, requests.length - MAX_REQUEST_LOG + 1);
    requests.push(r);
  };

  /** `number` was sent a message from `shortCode` of `account`: its replies go there. */
  readonly sentFrom = (number: string, shortCode: string, account: string): void => {
    const sent = this.#sentFrom;
    // Re-inserted, so the map's order is the order numbers were last messaged in.
    sent.delete(number);
    sent.set(number, { shortCode, account });
    if (sent.size > MAX_SENT_FROM) sent.delete(sent.keys().next().value!);
  };

  /** The short code that last sent `number` (digits, a leading + ignored) a message, if any. */
  readonly lastSentFrom = (number: string): SentFrom | null =>
    this.#sentFrom.get(number.replace(/^\+/, '')) ?? null;

  readonly nextTransactionNumber = (): string =>
    this.#txnPrefix + String(++this.#txnCounter).padStart(13, '0');

  /** Clears what /_sandbox/reset clears (docs/sandbox.md "Test surface"). */
  readonly reset = (): void => {
    this.ledger.clear();
    this.emailLedger.clear();
    this.whatsappLedger.clear();
    this.moLedger.clear();
    this.#sentFrom.clear();
    this.notifier.reset();
    this.faults.clear();
    this.accounts.revokeAll();
    this.requests = [];
    this.meter.clear();
    this.traffic.clear();
    this.smpp?.clear();
  };
}
