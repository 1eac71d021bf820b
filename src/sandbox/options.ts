// What `startSandbox` takes: the service's behaviour (delays, failures, token lifetime), its
// limits, the clock and the random source tests pin, and the SMPP server for replies.
import type { Account } from './accounts.ts';

export interface SandboxOptions {
  /** Default 0: a free port. */
  readonly port?: number | undefined;
  /** Default 127.0.0.1. */
  readonly host?: string | undefined;
  /** Default `demo` / `demo`. */
  readonly accounts?: readonly Account[] | undefined;
  /** Multiplies every sandbox delay and the notification retry schedule (default 1). */
  readonly timeScale?: number | undefined;
  /** Time from acceptance to the status notification, before timeScale (default 1000). */
  readonly deliveryDelayMs?: number | undefined;
  /** Share of NO_SUCCESS reports, 0 to 1 (default 0). */
  readonly failureRatio?: number | undefined;
  /** Token lifetime in seconds, reported as expires_in (default 14400). Not scaled. */
  readonly tokenLifetimeS?: number | undefined;
  /** false: accept and record, but send no status notification (benchmarks of the send path). */
  readonly notify?: boolean | undefined;
  /** Notification requests in flight at once (default 256). */
  readonly notifyConcurrency?: number | undefined;
  /** Per notification attempt, not scaled (default 10000). */
  readonly notifyTimeoutMs?: number | undefined;
  /** Bodies above this answer 413 (default 64 MiB). */
  readonly maxBodyBytes?: number | undefined;
  /** Clock for token expiry and the monitoring endpoints' windows (tests move it). */
  readonly now?: (() => number) | undefined;
  /** Source of fault draws and delivery outcomes, in [0, 1). */
  readonly random?: (() => number) | undefined;
  /** The SMPP server for users' replies (docs/sandbox.md); none without. */
  readonly smpp?: SandboxSmppOptions | undefined;
  /**
   * The client addresses the service answers (docs/sandbox.md "IP allowlist"): IPs and CIDR ranges,
   * v4 or v6. Any other address gets 403 on every service path (the /_sandbox/ test surface stays
   * open). Default: every address.
   */
  readonly allowIps?: readonly string[] | undefined;
}

export interface SandboxSmppOptions {
  /** Default 0: a free port. */
  readonly port?: number | undefined;
  /** Default the sandbox's host. */
  readonly host?: string | undefined;
  /** PEM key and certificate: SMPP over TLS (`ssmpp://`). */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer } | undefined;
  /** An unacknowledged deliver_sm is sent again after this, before timeScale (default 5000). */
  readonly redeliveryMs?: number | undefined;
  /** Unanswered deliver_sm per connection (default 10). */
  readonly window?: number | undefined;
  /** Where replies go when a posted one names no `to` (default 85000). */
  readonly shortCode?: string | undefined;
}
