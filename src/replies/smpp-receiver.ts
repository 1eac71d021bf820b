// Users' replies over SMPP (Receiver mode, System ID and password). Binds as a receiver, keeps
// the bind alive with enquire_link, reconnects with capped exponential back-off and jitter,
// and acknowledges each deliver_sm only once `onReply` has recorded it: an error answer (or
// none) leaves the message with the SMSC, which delivers it again. docs/opt-outs.md,
// "Replies over SMPP".

import { connect as netConnect, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';
import smpp, { type PDU, type Session } from 'smpp';
import { maskNumber } from '../core/redact.ts';

/** One user's reply, as the SMSC delivered it. */
export interface SmppReply {
  /** The user's number (source_addr, a leading `+` removed). */
  readonly from: string;
  /** The short code or number replied to (destination_addr). */
  readonly to: string;
  readonly text: string;
  /** ISO-8601: when this delivery of it reached the receiver. */
  readonly receivedAt: string;
  /**
   * The SMSC's id of the message (the receipted_message_id TLV), when it sends one. The same on
   * every delivery of the message, so a store can tell a redelivery from a new reply.
   */
  readonly messageId?: string;
}

/** pino-like. */
export interface ReceiverLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface SmppReplyReceiverOptions {
  readonly host: string;
  /**
   * The service's MO port is 6900 (docs/service.md "Monitoring, SMPP replies, and what is not used
   * yet").
   */
  readonly port: number;
  /**
   * SMPP over TLS: true checks the server's certificate against the system's CAs; an object
   * is passed to `tls.connect` (`ca`, `servername`, `rejectUnauthorized`…).
   */
  readonly tls?: boolean | ConnectionOptions | undefined;
  readonly systemId: string;
  /** The password, or a function giving it, asked again before every bind (a rotated secret file). */
  readonly password: string | (() => string | Promise<string>);
  /** system_type of the bind (default empty). */
  readonly systemType?: string | undefined;
  /**
   * Records one reply. The deliver_sm is acknowledged once it resolves; if it throws, it is
   * answered ESME_RX_T_APPN and the SMSC delivers it again. It may see a reply more than once
   * (a redelivery after a lost acknowledgement): it should be idempotent, on messageId when
   * given, else on from, to and text within a short window (docs/opt-outs.md "A reply
   * delivered again").
   */
  readonly onReply: (reply: SmppReply) => Promise<void>;
  readonly logger: ReceiverLogger;
  /** Between reconnection attempts: doubling from baseMs (default 1000) to maxMs (default 60000). */
  readonly backoff?: { readonly baseMs?: number; readonly maxMs?: number } | undefined;
  /** An enquire_link this often while bound (default 30000). */
  readonly enquireLinkMs?: number | undefined;
  /**
   * How long to wait for a connection and its bind answer, an enquire_link answer, an unbind
   * answer, and for onReply calls in progress when stopping (default 10000).
   */
  readonly responseTimeoutMs?: number | undefined;
  /**
   * Replies received and not yet recorded (onReply takes them one at a time, in the order they
   * came); a deliver_sm beyond is answered ESME_RTHROTTLED (default 64).
   */
  readonly maxInProgress?: number | undefined;
  /** In [0, 1), for the back-off jitter. */
  readonly random?: (() => number) | undefined;
  /**
   * The largest PDU read (default SMPP_MAX_PDU_BYTES, what SMPP 3.4 lets a deliver_sm be). A
   * larger one is skipped unread and answered with an error status, never a dropped connection.
   */
  readonly maxPduBytes?: number | undefined;
}

/**
 * The largest deliver_sm SMPP 3.4 allows, rounded up: its header (16 octets), every mandatory
 * field at its longest (348, short_message 254 of them), a message_payload TLV at its 65,535
 * octets (5.3.2.32) with its 4, and 7.8 KB for other TLVs: 72 KiB. The smpp package reads
 * 16 KiB at most by default (an 8,200-character UCS-2 reply is 16.4 KB).
 */
export const SMPP_MAX_PDU_BYTES = 72 * 1024;

/**
 * idle: not started; connecting: TCP (and TLS) connecting, or the bind asked; bound: receiving;
 * waiting: between attempts (back-off); stopping / stopped: stop() called / done.
 */
export type ReceiverState = 'idle' | 'connecting' | 'bound' | 'waiting' | 'stopping' | 'stopped';

export interface ReceiverStats {
  /** Connections attempted. */
  connections: number;
  /** Binds accepted. */
  binds: number;
  /** Binds the server refused (a non-zero bind_receiver_resp status). */
  bindsRefused: number;
  /** Connections lost or closed other than by stop(). */
  disconnects: number;
  /** Replies recorded by onReply (and acknowledged). */
  replies: number;
  /** Delivery receipts and other non-reply deliveries, acknowledged without onReply. */
  receipts: number;
  /** onReply failures (answered ESME_RX_T_APPN). */
  failures: number;
  /** Deliveries answered ESME_RTHROTTLED for want of room. */
  throttled: number;
  /** PDUs over maxPduBytes, skipped and answered with an error status. */
  oversize: number;
}

const S = smpp.errors;
const STATUS_NAMES = new Map(Object.entries(smpp.errors).map(([name, value]) => [value, name]));

/** `ESME_RINVPASWD` for 0x0E; `0x…` for a status without a name. */
export function commandStatusName(status: number): string {
  return STATUS_NAMES.get(status) ?? `0x${status.toString(16).padStart(8, '0')}`;
}

/**
 * The wait before attempt `attempt` (1 for the first retry): the ceiling doubles from baseMs
 * up to maxMs, and the wait is drawn from its upper half ("equal jitter"), so waits never
 * shrink before the cap and receivers that lost the same server do not return in step.
 */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** esm_class bits 2 to 5, the message type: 0 a normal message; receipts and acknowledgements otherwise. */
const ESM_MESSAGE_TYPE = 0x3c;
const SMPP_3_4 = 0x34;

type CloseReason =
  | { kind: 'refused'; status: number }
  | { kind: 'unbound' }
  | { kind: 'timeout'; what: string }
  | { kind: 'error'; error: string };

interface Connection {
  readonly session: Session;
  bound: boolean;
  reason: CloseReason | null;
  /** Connected at the TCP (and TLS) level. */
  open: boolean;
  timers: Set<NodeJS.Timeout>;
  /** The enquire_link without an answer yet. */
  probing: boolean;
  /**
   * Something went both ways once bound (a delivery acknowledged, an enquire_link answered):
   * only the end of such a connection starts the back-off again from baseMs. A bind that dies
   * at once (a server that drops every bind) keeps it growing.
   */
  healthy: boolean;
}

/** deliver_sm and data_sm: answered with their own response; other requests with generic_nack. */
const DELIVER_SM = 0x00000005;
const DATA_SM = 0x00000103;
const HEADER = 16;

/** A PDU's header: its length, command_id and sequence_number. */
interface PduHeader {
  length: number;
  commandId: number;
  sequence: number;
}

/**
 * Between the socket and the smpp package, which refuses a PDU over PDU.maxLength by throwing
 * and reading no more (a dropped connection, and the SMSC delivering the same PDU first again
 * on every bind). A PDU over `max` is skipped here as it streams, never held, and its header
 * handed to `oversize` to be answered; every other byte passes as it came.
 */
class PduGate extends Duplex {
  readonly #socket: Socket;
  readonly #max: number;
  readonly #oversize: (header: PduHeader) => void;
  /** The header of the next PDU, as far as it came. */
  #head: Buffer = Buffer.alloc(0);
  /** Bytes of the current PDU still to pass, or (skipping) to drop. */
  #left = 0;
  #skipping = false;

  constructor(socket: Socket, max: number, oversize: (header: PduHeader) => void) {
    super({ allowHalfOpen: false });
    this.#socket = socket;
    this.#max = max;
    this.#oversize = oversize;
    socket.on('data', (chunk: Buffer) => this.#take(chunk));
    socket.on('end', () => this.push(null));
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
  }

  #take(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.#left > 0) {
        const n = Math.min(this.#left, chunk.length - i);
        if (!this.#skipping && !this.push(chunk.subarray(i, i + n))) this.#socket.pause();
        this.#left -= n;
        i += n;
        continue;
      }
      const part = chunk.subarray(i, i + HEADER - this.#head.length);
      this.#head = Buffer.concat([this.#head, part]);
      i += part.length;
      if (this.#head.length < HEADER) return;
      const head = this.#head;
      this.#head = Buffer.alloc(0);
      const length = head.readUInt32BE(0);
      this.#skipping = length > this.#max;
      // A length under the header's own is the package's to refuse.
      this.#left = Math.max(0, length - HEADER);
      if (this.#skipping)
        this.#oversize({ length, commandId: head.readUInt32BE(4), sequence: head.readUInt32BE(12) });
      else if (!this.push(head)) this.#socket.pause();
    }
  }

  override _read(): void {
    this.#socket.resume();
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.#socket.write(chunk, done);
  }
  override _final(done: () => void): void {
    this.#socket.end();
    done();
  }
  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    this.#socket.destroy();
    done(err);
  }
}

export class SmppReplyReceiver {
  readonly #o: SmppReplyReceiverOptions;
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #enquireLinkMs: number;
  readonly #timeoutMs: number;
  readonly #maxInProgress: number;
  readonly #random: () => number;
  readonly #maxPduBytes: number;
  #state: ReceiverState = 'idle';
  #conn: Connection | null = null;
  /** Consecutive attempts that did not end in a bind. */
  #failures = 0;
  #retry: NodeJS.Timeout | null = null;
  #stopping: Promise<void> | null = null;
  #closed: (() => void) | null = null;
  readonly #inProgress = new Set<Promise<void>>();
  /** The last reply handed to onReply: the next waits for it (replies are recorded in order). */
  #recorded: Promise<void> = Promise.resolve();
  #lastError: string | null = null;
  #since = new Date().toISOString();
  readonly stats: ReceiverStats = {
    connections: 0,
    binds: 0,
    bindsRefused: 0,
    disconnects: 0,
    replies: 0,
    receipts: 0,
    failures: 0,
    throttled: 0,
    oversize: 0,
  };

  constructor(options: SmppReplyReceiverOptions) {
    if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65_535)
      throw new RangeError(`SMPP port ${options.port}: expected 1 to 65535`);
    this.#o = options;
    this.#baseMs = Math.max(1, options.backoff?.baseMs ?? 1000);
    this.#maxMs = Math.max(this.#baseMs, options.backoff?.maxMs ?? 60_000);
    this.#enquireLinkMs = Math.max(1, options.enquireLinkMs ?? 30_000);
    this.#timeoutMs = Math.max(1, options.responseTimeoutMs ?? 10_000);
    this.#maxInProgress = Math.max(1, options.maxInProgress ?? 64);
    this.#random = options.random ?? Math.random;
    this.#maxPduBytes = Math.max(HEADER, options.maxPduBytes ?? SMPP_MAX_PDU_BYTES);
    // The package's own limit (one for the process) lets through what the gate does.
    smpp.PDU.maxLength = Math.max(smpp.PDU.maxLength, this.#maxPduBytes);
  }

  get state(): ReceiverState {
    return this.#state;
  }

  /** Bound: replies can arrive. */
  get connected(): boolean {
    return this.#state === 'bound';
  }

  /** For /readyz-like reporting: the state, since when, and the last reason a connection ended. */
  get status(): { state: ReceiverState; connected: boolean; since: string; lastError: string | null } {
    return { state: this.#state, connected: this.connected, since: this.#since, lastError: this.#lastError };
  }

  /** Connects and binds, then keeps bound until stop(). Returns at once; failures are retried. */
  start(): void {
    if (this.#state !== 'idle' && this.#state !== 'stopped') return;
    this.#stopping = null;
    this.#failures = 0;
    this.#connect();
  }

  /**
   * Lets the onReply calls in progress finish and answers them, unbinds and closes the
   * connection; resolves once it is closed. Deliveries arriving meanwhile are answered
   * ESME_RX_T_APPN (the SMSC keeps them for the next bind).
   */
  stop(): Promise<void> {
    if (this.#stopping) return this.#stopping;
    this.#stopping = this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = null;
    const conn = this.#conn;
    this.#setState('stopping');
    if (conn) {
      await this.#within(Promise.allSettled([...this.#inProgress]), this.#timeoutMs);
      const closed = new Promise<void>((resolve) => {
        this.#closed = resolve;
      });
      if (conn.bound && conn.open && this.#conn === conn) {
        const answered = new Promise<void>((resolve) => {
          if (!conn.session.send(new smpp.PDU('unbind'), () => resolve())) resolve();
        });
        await this.#within(answered, this.#timeoutMs);
      }
      if (this.#conn === conn) {
        // Not bound (still connecting, or the bind unanswered): nothing to say goodbye to.
        if (conn.bound && conn.open) conn.session.close();
        else conn.session.destroy();
        const force = setTimeout(() => conn.session.destroy(), this.#timeoutMs);
        await closed;
        clearTimeout(force);
      }
    }
    this.#closed = null;
    this.#setState('stopped');
    this.#o.logger.info({ host: this.#o.host, port: this.#o.port }, 'SMPP receiver stopped');
  }

  #setState(state: ReceiverState): void {
    if (this.#state !== state) this.#since = new Date().toISOString();
    this.#state = state;
  }

  async #within(p: Promise<unknown>, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([p, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  #connect(): void {
    this.#retry = null;
    this.#setState('connecting');
    this.stats.connections++;
    const tls = this.#o.tls;
    const where = { host: this.#o.host, port: this.#o.port };
    const socket = tls
      ? tlsConnect({ ...(typeof tls === 'object' ? tls : {}), ...where })
      : netConnect(where);
    const gate = new PduGate(socket, this.#maxPduBytes, (h) => this.#onOversize(conn, h));
    const session = new smpp.Session({ socket: gate });
    const conn: Connection = {
      session,
      bound: false,
      reason: null,
      open: false,
      timers: new Set(),
      probing: false,
      healthy: false,
    };
    this.#conn = conn;
    const fail = (reason: CloseReason): void => {
      conn.reason ??= reason;
      session.destroy();
    };
    // The connection and its bind answer, within the response timeout.
    this.#timer(conn, this.#timeoutMs, () => {
      if (!conn.bound) fail({ kind: 'timeout', what: conn.open ? 'bind_receiver_resp' : 'connection' });
    });
    session.on('error', (err: NodeJS.ErrnoException) =>
      fail({ kind: 'error', error: err.code ?? err.message }),
    );
    session.on('close', () => this.#onClose(conn));
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      conn.open = true;
      void this.#bind(conn).catch((err: unknown) =>
        fail({ kind: 'error', error: err instanceof Error ? err.message : String(err) }),
      );
    });
    session.on('pdu', (pdu: PDU) => {
      try {
        this.#onPdu(conn, pdu);
      } catch (err) {
        fail({ kind: 'error', error: err instanceof Error ? err.message : String(err) });
      }
    });
  }

  #timer(conn: Connection, ms: number, fn: () => void, repeat = false): void {
    const t = repeat ? setInterval(fn, ms) : setTimeout(fn, ms);
    conn.timers.add(t);
  }

  async #bind(conn: Connection): Promise<void> {
    const p = this.#o.password;
    const password = typeof p === 'function' ? await p() : p;
    if (this.#conn !== conn) return;
    const pdu = new smpp.PDU('bind_receiver', {
      system_id: this.#o.systemId,
      password,
      system_type: this.#o.systemType ?? '',
      interface_version: SMPP_3_4,
    });
    conn.session.send(pdu, (resp: PDU) => {
      if (resp.command_status !== 0) {
        conn.reason ??= { kind: 'refused', status: resp.command_status };
        conn.session.destroy();
        return;
      }
      if (this.#stopping) {
        // Bound while stopping: stop() unbinds it.
        conn.bound = true;
        return;
      }
      conn.bound = true;
      this.#lastError = null;
      this.stats.binds++;
      this.#setState('bound');
      this.#o.logger.info(
        { host: this.#o.host, port: this.#o.port, systemId: this.#o.systemId, tls: Boolean(this.#o.tls) },
        'SMPP receiver bound',
      );
      this.#timer(conn, this.#enquireLinkMs, () => this.#probe(conn), true);
    });
  }

  /** enquire_link; no answer within the response timeout: the link is dead. */
  #probe(conn: Connection): void {
    if (conn.probing || this.#stopping) return;
    conn.probing = true;
    const sent = conn.session.send(new smpp.PDU('enquire_link'), () => {
      conn.probing = false;
      conn.healthy = true;
    });
    if (!sent) return;
    this.#timer(conn, this.#timeoutMs, () => {
      if (!conn.probing) return;
      conn.reason ??= { kind: 'timeout', what: 'enquire_link_resp' };
      conn.session.destroy();
    });
  }

  #onPdu(conn: Connection, pdu: PDU): void {
    const { session } = conn;
    switch (pdu.command) {
      case 'deliver_sm':
      case 'data_sm':
        this.#onDeliver(conn, pdu);
        break;
      case 'enquire_link':
        session.send(pdu.response());
        if (conn.bound) conn.healthy = true;
        break;
      case 'unbind':
        conn.reason ??= { kind: 'unbound' };
        conn.bound = false;
        session.send(pdu.response(), () => session.close());
        break;
      case 'unknown':
        session.send(pdu.response()); // generic_nack, ESME_RINVCMDID
        break;
      default:
        // Responses are taken by their callbacks; alert_notification takes no answer; any
        // other request has no place on a receiver's connection.
        if (!pdu.isResponse() && pdu.command !== 'alert_notification')
          session.send(pdu.response({ command_status: S.ESME_RINVCMDID }));
    }
  }

  #onDeliver(conn: Connection, pdu: PDU): void {
    const receivedAt = new Date().toISOString();
    const answer = (status: number): void => {
      // Closed meanwhile: no answer, the SMSC delivers it again on a later bind.
      if (conn.session.send(pdu.response(status === 0 ? {} : { command_status: status })) && status === 0)
        conn.healthy = true;
    };
    if (!conn.bound || this.#stopping) {
      answer(S.ESME_RX_T_APPN);
      return;
    }
    const esmClass = Number(pdu.esm_class ?? 0);
    if ((esmClass & ESM_MESSAGE_TYPE) !== 0) {
      // A delivery receipt (or an acknowledgement): not a reply. Taken, so not sent again.
      this.stats.receipts++;
      answer(0);
      return;
    }
    if (this.#inProgress.size >= this.#maxInProgress) {
      this.stats.throttled++;
      answer(S.ESME_RTHROTTLED);
      return;
    }
    const messageId =
      typeof pdu.receipted_message_id === 'string' && pdu.receipted_message_id !== ''
        ? pdu.receipted_message_id
        : undefined;
    const reply: SmppReply = {
      from: String(pdu.source_addr ?? '').replace(/^\+/, ''),
      to: String(pdu.destination_addr ?? ''),
      text: messageText(pdu),
      receivedAt,
      ...(messageId === undefined ? {} : { messageId }),
    };
    // Recorded one after the other, in the order they arrived: the store numbers replies in the
    // order it records them (`dropline replies` lists them so), which must be the order received.
    const work = this.#recorded.then(async () => {
      try {
        await this.#o.onReply(reply);
      } catch (err) {
        this.stats.failures++;
        this.#o.logger.warn(
          {
            from: maskNumber(reply.from),
            messageId,
            err: err instanceof Error ? err.message : String(err),
          },
          'reply not recorded: answered ESME_RX_T_APPN, the SMSC will deliver it again',
        );
        answer(S.ESME_RX_T_APPN);
        return;
      }
      this.stats.replies++;
      this.#o.logger.info(
        { from: maskNumber(reply.from), to: reply.to, messageId, chars: reply.text.length },
        'reply received',
      );
      answer(0);
    });
    // A reply that failed (it answered ESME_RX_T_APPN) never stops the ones after it.
    this.#recorded = work.catch(() => {});
    this.#inProgress.add(work);
    void work.finally(() => this.#inProgress.delete(work));
  }

  /**
   * A PDU over maxPduBytes, skipped unread: a deliver_sm or data_sm is answered
   * ESME_RX_P_APPN (a permanent error: the SMSC gives it up rather than delivering it first
   * again on every bind), any other request generic_nack ESME_RINVCMDLEN; a response is dropped.
   */
  #onOversize(conn: Connection, h: PduHeader): void {
    this.stats.oversize++;
    const response = (h.commandId & 0x80000000) !== 0;
    const deliver = h.commandId === DELIVER_SM || h.commandId === DATA_SM;
    const status: number | null = response ? null : deliver ? S.ESME_RX_P_APPN! : S.ESME_RINVCMDLEN!;
    if (status !== null) {
      const command =
        h.commandId === DELIVER_SM ? 'deliver_sm_resp' : deliver ? 'data_sm_resp' : 'generic_nack';
      conn.session.send(new smpp.PDU(command, { sequence_number: h.sequence, command_status: status }));
    }
    this.#o.logger.error(
      {
        host: this.#o.host,
        port: this.#o.port,
        bytes: h.length,
        maxPduBytes: this.#maxPduBytes,
        commandId: `0x${h.commandId.toString(16).padStart(8, '0')}`,
        sequence: h.sequence,
        ...(status === null ? {} : { status: commandStatusName(status), commandStatus: status }),
      },
      status === null
        ? 'SMPP PDU too large: skipped unread'
        : deliver
          ? 'SMPP PDU too large: skipped unread and refused for good; the SMSC gives the message up'
          : 'SMPP PDU too large: skipped unread and answered generic_nack',
    );
  }

  #onClose(conn: Connection): void {
    for (const t of conn.timers) clearTimeout(t);
    conn.timers.clear();
    if (this.#conn !== conn) return;
    this.#conn = null;
    const reason = conn.reason;
    if (this.#stopping) {
      this.#closed?.();
      return;
    }
    this.stats.disconnects++;
    const wasBound = conn.bound || this.#state === 'bound';
    if (reason?.kind === 'refused') this.stats.bindsRefused++;
    if (conn.healthy) this.#failures = 0;
    const retryInMs = backoffDelay(++this.#failures, this.#baseMs, this.#maxMs, this.#random);
    const where = { host: this.#o.host, port: this.#o.port, systemId: this.#o.systemId, retryInMs };
    if (reason?.kind === 'refused') {
      const status = commandStatusName(reason.status);
      this.#lastError = `bind refused: ${status}`;
      this.#o.logger.error({ ...where, status, commandStatus: reason.status }, 'SMPP bind refused');
    } else {
      const why =
        reason === null
          ? 'closed by the server'
          : reason.kind === 'unbound'
            ? 'unbound by the server'
            : reason.kind === 'timeout'
              ? `no ${reason.what} within ${this.#timeoutMs} ms`
              : reason.error;
      this.#lastError = why;
      this.#o.logger.warn(
        { ...where, reason: why },
        wasBound ? 'SMPP connection lost: reconnecting' : 'SMPP connection failed: retrying',
      );
    }
    this.#setState('waiting');
    this.#retry = setTimeout(() => this.#connect(), retryInMs);
  }
}

/**
 * The text of a deliver_sm or data_sm: short_message, or the message_payload TLV when
 * short_message is empty, as the smpp library decoded it from data_coding (0 and 1: GSM 03.38,
 * one septet per octet; 3: Latin-1; 8: UCS-2 big-endian). A coding the library does not read
 * (binary and others) is read as Latin-1. A user data header (concatenated parts) is left out:
 * each part is its own reply.
 */
export function messageText(pdu: PDU): string {
  const part = (v: unknown): string | Buffer => {
    if (typeof v === 'string' || Buffer.isBuffer(v)) return v;
    const m = (v as { message?: unknown } | null | undefined)?.message;
    return typeof m === 'string' || Buffer.isBuffer(m) ? m : '';
  };
  let message = part(pdu.short_message);
  if (message.length === 0) message = part(pdu.message_payload);
  return typeof message === 'string' ? message : message.toString('latin1');
}
