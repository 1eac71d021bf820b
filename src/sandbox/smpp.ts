// The sandbox's SMPP server for users' replies (Receiver mode, port 6900; replies to two-way SMS
// return to the account's short code: docs/service.md "Monitoring, SMPP replies, and what is not
// used yet").
// Receiver binds only, authenticated with the sandbox's accounts (System ID = username). Replies
// posted to `POST /_sandbox/replies` are queued and delivered as deliver_sm to a bound receiver;
// one not acknowledged (no deliver_sm_resp, or one with a non-zero status) stays queued and is
// delivered again, as an SMSC keeps a mobile-originated message until an ESME takes it.
// Choices where the service says nothing are in docs/sandbox.md, "SMPP server for replies".

import { randomInt } from 'node:crypto';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import smpp, { type PDU, type Session } from 'smpp';

const S = smpp.errors;

export interface SmppServerOptions {
  /** Default 127.0.0.1. */
  readonly host?: string | undefined;
  /** Default 0: a free port. */
  readonly port?: number | undefined;
  /** A key and certificate (PEM): the server speaks SMPP over TLS (`ssmpp://`). */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer } | undefined;
  /**
   * A deliver_sm unanswered this long, or answered with an error this long ago, is sent again
   * (at least 10 ms).
   */
  readonly redeliveryMs: number;
  /** deliver_sm in flight at once per connection, unanswered (default 10). */
  readonly window?: number | undefined;
  /** The short code replies go to when a posted reply names none (default 85000). */
  readonly shortCode?: string | undefined;
  /**
   * A posted reply that names no short code goes to the one that last messaged its sender (and
   * only to that account's receivers, unless it names one); none: `shortCode`.
   */
  readonly sentFrom?: ((number: string) => { shortCode: string; account: string } | null) | undefined;
  /** Whether `systemId` is an account, and whether `password` is its password. */
  readonly credentials: (systemId: string, password: string) => 'ok' | 'unknown' | 'wrong';
  /** Whether `username` is an account (a reply posted for another answers 400). */
  readonly isAccount: (username: string) => boolean;
}

/** One reply as `POST /_sandbox/replies` takes it. */
export interface ReplyInput {
  /** The user's number: digits, country code first (a leading `+` is sent as given). */
  readonly from: string;
  /** The short code the reply was sent to (default the server's `shortCode`). */
  readonly to?: string | undefined;
  readonly text: string;
  /** Only a receiver bound with this System ID gets it; without: any bound receiver. */
  readonly account?: string | undefined;
  /** A delivery receipt (esm_class 0x04) rather than a reply; `text` is then the receipt's. */
  readonly receipt?: boolean | undefined;
}

/** rejected: answered ESME_RX_P_APPN (a permanent error): the SMSC gives it up, as a real one does. */
export type ReplyState = 'queued' | 'inflight' | 'acknowledged' | 'rejected';

export interface ReplyView {
  /** The sandbox's id of the message, sent as the receipted_message_id TLV, the same on every delivery. */
  readonly id: string;
  readonly account: string | null;
  readonly from: string;
  readonly to: string;
  readonly text: string;
  readonly receipt: boolean;
  readonly state: ReplyState;
  /** deliver_sm sent for it so far. */
  readonly attempts: number;
  /** deliver_sm_resp answered with a non-zero status. */
  readonly refusals: number;
  /** Deliveries given up for want of an answer (the connection closed or redeliveryMs passed). */
  readonly unanswered: number;
  readonly postedAt: string;
  readonly acknowledgedAt: string | null;
}

export interface SessionView {
  readonly account: string | null;
  readonly bound: boolean;
  readonly remote: string;
  readonly boundAt: string | null;
  readonly inflight: number;
}

export interface SmppServerView {
  readonly queued: number;
  readonly inflight: number;
  readonly acknowledged: number;
  /** Replies given up on a permanent error answer (ESME_RX_P_APPN). */
  readonly rejected: number;
  readonly binds: { readonly accepted: number; readonly refused: number };
  readonly enquireLinks: number;
  readonly sessions: readonly SessionView[];
  readonly replies: readonly ReplyView[];
}

export class ReplyInputError extends Error {}

/** What the drop hook does to every connection. */
export type DropHow = 'destroy' | 'unbind' | 'silence';

export interface SmppServer {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** `smpp://host:port`, or `ssmpp://` over TLS. */
  readonly url: string;
  /** Queues replies (validated first: a bad one throws ReplyInputError, nothing queued). */
  post(input: unknown): ReplyView[];
  view(): SmppServerView;
  /**
   * Every connection: `destroy` closes it at once; `unbind` sends unbind, then closes it;
   * `silence` leaves it open but never answers nor sends on it again (a dead link, as a
   * keep-alive must detect). Returns how many connections.
   */
  drop(how?: DropHow): number;
  /** Forgets every reply and count (connections stay). */
  clear(): void;
  close(): Promise<void>;
}

interface Reply {
  readonly id: string;
  readonly account: string | null;
  readonly from: string;
  readonly to: string;
  readonly text: string;
  readonly receipt: boolean;
  state: ReplyState;
  attempts: number;
  refusals: number;
  unanswered: number;
  readonly postedAt: number;
  acknowledgedAt: number | null;
  /** Not sent again before this time (after a refusal or an unanswered delivery). */
  notBefore: number;
  /** While inflight: where, with which sequence number, and since when. */
  inflight: { conn: Conn; sequence: number; sentAt: number } | null;
}

interface Conn {
  readonly session: Session;
  readonly remote: string;
  account: string | null;
  bound: boolean;
  boundAt: number | null;
  silenced: boolean;
  readonly inflight: Set<Reply>;
}

/**
 * The longest reply: what one message_payload TLV carries (SMPP 3.4 5.3.2.32, at most 65,535
 * octets), 32,767 UCS-2 characters. A real SMSC may send that much (a user's long reply).
 */
const MAX_TEXT = 32_767;
const MAX_REPLIES_PER_POST = 10_000;
/** Acknowledged replies kept for GET /_sandbox/replies. */
const MAX_HISTORY = 100_000;
/** short_message holds at most 254 octets; longer text goes in message_payload. */
const SHORT_MESSAGE_MAX = 254;
const ESM_CLASS_RECEIPT = 0x04;
/** A floor for redeliveryMs (a time scale near 0 would otherwise resend every sweep). */
const MIN_REDELIVERY_MS = 10;

export async function startSmppServer(options: SmppServerOptions): Promise<SmppServer> {
  const server = new ReplyServer(options);
  await server.listen();
  return server;
}

/**
 * The server's state as fields: the replies pending, acknowledged and rejected, the connections,
 * the counts; its steps as methods: a PDU read (bind, deliver_sm_resp, …), the pump that sends
 * what is due, the sweep that gives up on unanswered deliveries.
 */
class ReplyServer implements SmppServer {
  readonly host: string;
  port = 0;
  readonly tls: boolean;
  url = '';
  readonly #options: SmppServerOptions;
  readonly #redeliveryMs: number;
  readonly #window: number;
  readonly #shortCode: string;
  // Ids unique within a run and unlikely to repeat across runs (a store may dedupe on them).
  readonly #idPrefix = `MO${Date.now().toString(36)}${randomInt(36 ** 3)
    .toString(36)
    .padStart(3, '0')}`.toUpperCase();
  #idCounter = 0;

  /** Replies not yet acknowledged, in posting order. */
  readonly #pending = new Map<string, Reply>();
  #acknowledged: Reply[] = [];
  #rejected: Reply[] = [];
  readonly #conns = new Set<Conn>();
  #rotation = 0;
  #bindsAccepted = 0;
  #bindsRefused = 0;
  #enquireLinks = 0;
  #closed = false;
  readonly #sweeper: NodeJS.Timeout;
  readonly #server: Server;
  /** Every TCP connection, a TLS one before its handshake too: close() ends them all. */
  readonly #sockets = new Set<Socket>();

  constructor(options: SmppServerOptions) {
    this.#options = options;
    this.host = options.host ?? '127.0.0.1';
    this.tls = options.tls !== undefined;
    this.#redeliveryMs = Math.max(MIN_REDELIVERY_MS, options.redeliveryMs);
    this.#window = options.window ?? 10;
    this.#shortCode = options.shortCode ?? '85000';
    // Redelivery: an unanswered deliver_sm past redeliveryMs is given up and sent again; a
    // refused one is sent again once its notBefore passes.
    const sweepEvery = Math.max(5, Math.min(250, Math.floor(this.#redeliveryMs / 4)));
    this.#sweeper = setInterval(() => this.#sweep(), sweepEvery);
    this.#sweeper.unref();
    this.#server = options.tls
      ? createTlsServer({ key: options.tls.key, cert: options.tls.cert }, this.#onSocket)
      : createNetServer(this.#onSocket);
  }

  async listen(): Promise<void> {
    const server = this.#server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#options.port ?? 0, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // A client that fails its TLS handshake is its own problem, not the server's.
    server.on('tlsClientError', () => {});
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    const address = server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    const host = this.host;
    this.url = `${this.tls ? 'ssmpp' : 'smpp'}://${host.includes(':') ? `[${host}]` : host}:${this.port}`;
  }

  readonly #onSocket = (socket: Socket): void => {
    const session = new smpp.Session({ socket });
    const conn: Conn = {
      session,
      remote: `${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}`,
      account: null,
      bound: false,
      boundAt: null,
      silenced: false,
      inflight: new Set(),
    };
    this.#conns.add(conn);
    // An unreadable PDU stops the library's reading: the connection is useless then.
    session.on('error', () => session.destroy());
    session.on('close', () => {
      this.#conns.delete(conn);
      for (const r of conn.inflight) giveUp(r);
      conn.inflight.clear();
      this.#pump();
    });
    session.on('pdu', (pdu: PDU) => {
      if (conn.silenced) return;
      try {
        this.#onPdu(conn, pdu);
      } catch {
        session.destroy();
      }
    });
  };

  #onPdu(conn: Conn, pdu: PDU): void {
    const { session } = conn;
    const answer = (options?: Record<string, unknown>): void => {
      session.send(pdu.response(options));
    };
    switch (pdu.command) {
      case 'bind_receiver':
        this.#onBind(conn, pdu, answer);
        break;
      case 'bind_transmitter':
      case 'bind_transceiver':
        // The MO port takes Receiver binds only.
        this.#bindsRefused++;
        answer({ command_status: S.ESME_RINVBNDSTS });
        break;
      case 'enquire_link':
        this.#enquireLinks++;
        answer();
        break;
      case 'unbind':
        conn.bound = false;
        session.send(pdu.response(), () => session.close());
        break;
      case 'deliver_sm_resp':
        this.#onDeliverResp(conn, pdu);
        break;
      case 'unknown':
        answer(); // generic_nack, ESME_RINVCMDID
        break;
      default:
        // Responses to what the server sent (enquire_link_resp, unbind_resp) need nothing;
        // any other request is not for a receiver, or not before a bind.
        if (!pdu.isResponse()) answer({ command_status: S.ESME_RINVBNDSTS });
    }
  }

  #onBind(conn: Conn, pdu: PDU, answer: (options?: Record<string, unknown>) => void): void {
    if (conn.bound) {
      answer({ command_status: S.ESME_RALYBND });
      return;
    }
    const systemId = String(pdu.system_id ?? '');
    const check = this.#options.credentials(systemId, String(pdu.password ?? ''));
    if (check !== 'ok') {
      this.#bindsRefused++;
      answer({ command_status: check === 'unknown' ? S.ESME_RINVSYSID : S.ESME_RINVPASWD });
      return;
    }
    this.#bindsAccepted++;
    conn.bound = true;
    conn.account = systemId;
    conn.boundAt = Date.now();
    answer({ system_id: 'dropline-sandbox' });
    this.#pump();
  }

  #onDeliverResp(conn: Conn, pdu: PDU): void {
    let reply: Reply | undefined;
    for (const r of conn.inflight) {
      if (r.inflight?.sequence === pdu.sequence_number) {
        reply = r;
        break;
      }
    }
    // A late answer to a delivery already given up: the reply was queued again; its next
    // delivery decides.
    if (!reply) return;
    conn.inflight.delete(reply);
    reply.inflight = null;
    if (pdu.command_status === 0) {
      reply.state = 'acknowledged';
      reply.acknowledgedAt = Date.now();
      this.#pending.delete(reply.id);
      this.#acknowledged.push(reply);
      if (this.#acknowledged.length > MAX_HISTORY)
        this.#acknowledged = this.#acknowledged.slice(-MAX_HISTORY);
    } else if (pdu.command_status === S.ESME_RX_P_APPN) {
      // A permanent error: given up, never delivered again (a temporary one is retried below).
      reply.refusals++;
      reply.state = 'rejected';
      this.#pending.delete(reply.id);
      this.#rejected.push(reply);
      if (this.#rejected.length > MAX_HISTORY) this.#rejected = this.#rejected.slice(-MAX_HISTORY);
    } else {
      reply.refusals++;
      reply.state = 'queued';
      reply.notBefore = Date.now() + this.#redeliveryMs;
    }
    this.#pump();
  }

  #eligible(r: Reply): Conn[] {
    const out: Conn[] = [];
    for (const c of this.#conns) {
      if (!c.bound || c.silenced || c.inflight.size >= this.#window) continue;
      if (r.account !== null && c.account !== r.account) continue;
      out.push(c);
    }
    return out;
  }

  /** Sends every queued reply that is due to a bound receiver with room in its window. */
  #pump(): void {
    if (this.#closed) return;
    // Room left in the windows of every bound connection: none, nothing to walk.
    let room = 0;
    for (const c of this.#conns)
      if (c.bound && !c.silenced) room += Math.max(0, this.#window - c.inflight.size);
    const now = Date.now();
    for (const r of this.#pending.values()) {
      if (room <= 0) return;
      if (r.state !== 'queued' || r.notBefore > now) continue;
      const candidates = this.#eligible(r);
      if (candidates.length === 0) continue;
      const conn = candidates[this.#rotation++ % candidates.length]!;
      if (sendReply(conn, r)) room--;
    }
  }

  #sweep(): void {
    const now = Date.now();
    for (const r of this.#pending.values()) {
      if (r.inflight && now - r.inflight.sentAt >= this.#redeliveryMs) {
        r.inflight.conn.inflight.delete(r);
        giveUp(r);
      }
    }
    this.#pump();
  }

  /** A reply without `to`: to the short code that last messaged its sender, else the default. */
  #addressed(r: ReplyInput): ReplyInput {
    if (r.to !== undefined) return r;
    const sent = this.#options.sentFrom?.(r.from) ?? null;
    if (sent === null) return { ...r, to: this.#shortCode };
    return { ...r, to: sent.shortCode, account: r.account ?? sent.account };
  }

  post(input: unknown): ReplyView[] {
    const list = (Array.isArray(input) ? input : [input]).map((item, i) =>
      this.#addressed(checkReply(item, Array.isArray(input) ? `[${i}]` : '', this.#options.isAccount)),
    );
    if (list.length === 0) throw new ReplyInputError('expected a reply or a non-empty array of replies');
    if (list.length > MAX_REPLIES_PER_POST)
      throw new ReplyInputError(`at most ${MAX_REPLIES_PER_POST} replies per request`);
    const now = Date.now();
    const queued = list.map((r): Reply => {
      const reply: Reply = {
        id: `${this.#idPrefix}${String(++this.#idCounter).padStart(8, '0')}`,
        account: r.account ?? null,
        from: r.from,
        to: r.to ?? this.#shortCode,
        text: r.text,
        receipt: r.receipt ?? false,
        state: 'queued',
        attempts: 0,
        refusals: 0,
        unanswered: 0,
        postedAt: now,
        acknowledgedAt: null,
        notBefore: 0,
        inflight: null,
      };
      this.#pending.set(reply.id, reply);
      return reply;
    });
    this.#pump();
    return queued.map(replyView);
  }

  view(): SmppServerView {
    let queued = 0;
    let inflight = 0;
    for (const r of this.#pending.values()) {
      if (r.state === 'inflight') inflight++;
      else queued++;
    }
    return {
      queued,
      inflight,
      acknowledged: this.#acknowledged.length,
      rejected: this.#rejected.length,
      binds: { accepted: this.#bindsAccepted, refused: this.#bindsRefused },
      enquireLinks: this.#enquireLinks,
      sessions: [...this.#conns].map((c) => ({
        account: c.account,
        bound: c.bound,
        remote: c.remote,
        boundAt: c.boundAt === null ? null : new Date(c.boundAt).toISOString(),
        inflight: c.inflight.size,
      })),
      replies: [...this.#acknowledged, ...this.#rejected, ...this.#pending.values()].map(replyView),
    };
  }

  drop(how: DropHow = 'destroy'): number {
    const all = [...this.#conns];
    for (const c of all) {
      if (how === 'destroy') c.session.destroy();
      else if (how === 'silence') {
        c.silenced = true;
        // Its deliveries will never be answered: queued again for the other connections.
        for (const r of c.inflight) giveUp(r);
        c.inflight.clear();
      } else {
        c.bound = false;
        const done = setTimeout(() => c.session.destroy(), 1000);
        done.unref();
        const sent = c.session.send(new smpp.PDU('unbind'), () => {
          clearTimeout(done);
          c.session.destroy();
        });
        if (!sent) c.session.destroy();
      }
    }
    this.#pump();
    return all.length;
  }

  clear(): void {
    for (const c of this.#conns) c.inflight.clear();
    this.#pending.clear();
    this.#acknowledged = [];
    this.#rejected = [];
    this.#bindsAccepted = 0;
    this.#bindsRefused = 0;
    this.#enquireLinks = 0;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      for (const c of this.#conns) c.session.destroy();
      for (const socket of this.#sockets) socket.destroy();
    });
  }
}

/** The delivery of `r` goes unanswered: queued again, sent at once (to the next bind). */
function giveUp(r: Reply): void {
  r.unanswered++;
  r.state = 'queued';
  r.inflight = null;
  r.notBefore = 0;
}

/** Sends `r` as a deliver_sm on `conn`; false when the session would not take it. */
function sendReply(conn: Conn, r: Reply): boolean {
  const encoded = encodeText(r.text);
  const fields: Record<string, unknown> = {
    service_type: '',
    source_addr_ton: 1,
    source_addr_npi: 1,
    source_addr: r.from,
    dest_addr_ton: 0,
    dest_addr_npi: 0,
    destination_addr: r.to,
    esm_class: r.receipt ? ESM_CLASS_RECEIPT : 0,
    data_coding: encoded.dataCoding,
    receipted_message_id: r.id,
  };
  if (encoded.bytes.length <= SHORT_MESSAGE_MAX) fields.short_message = encoded.bytes;
  else {
    fields.short_message = Buffer.alloc(0);
    fields.message_payload = encoded.bytes;
  }
  if (r.receipt) fields.message_state = 2; // DELIVERED
  const pdu = new smpp.PDU('deliver_sm', fields);
  if (!conn.session.send(pdu)) return false;
  r.state = 'inflight';
  r.attempts++;
  r.inflight = { conn, sequence: pdu.sequence_number, sentAt: Date.now() };
  conn.inflight.add(r);
  return true;
}

function replyView(r: Reply): ReplyView {
  return {
    id: r.id,
    account: r.account,
    from: r.from,
    to: r.to,
    text: r.text,
    receipt: r.receipt,
    state: r.state,
    attempts: r.attempts,
    refusals: r.refusals,
    unanswered: r.unanswered,
    postedAt: new Date(r.postedAt).toISOString(),
    acknowledgedAt: r.acknowledgedAt === null ? null : new Date(r.acknowledgedAt).toISOString(),
  };
}

/** GSM 03.38 text as data_coding 0 (one septet per octet, as the smpp library reads it), else UCS-2 BE. */
export function encodeText(text: string): { dataCoding: number; bytes: Buffer } {
  if (smpp.encodings.ASCII.match(text)) return { dataCoding: 0, bytes: smpp.gsmCoder.encode(text, 0) };
  return { dataCoding: 8, bytes: Buffer.from(text, 'utf16le').swap16() };
}

function checkReply(item: unknown, at: string, isAccount: (username: string) => boolean): ReplyInput {
  const where = (field: string) => (at === '' ? field : `${at}.${field}`);
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    throw new ReplyInputError(`${at || 'the body'} is not an object`);
  const o = item as Record<string, unknown>;
  if (typeof o.from !== 'string' || !/^\+?\d{3,20}$/.test(o.from))
    throw new ReplyInputError(`${where('from')} is not a number of 3 to 20 digits (a leading + allowed)`);
  if (o.to !== undefined && (typeof o.to !== 'string' || !/^[0-9A-Za-z]{1,20}$/.test(o.to)))
    throw new ReplyInputError(`${where('to')} is not a short code of 1 to 20 letters or digits`);
  if (typeof o.text !== 'string' || o.text.length === 0 || o.text.length > MAX_TEXT)
    throw new ReplyInputError(`${where('text')} is not text of 1 to ${MAX_TEXT} characters`);
  if (o.account !== undefined && (typeof o.account !== 'string' || !isAccount(o.account)))
    throw new ReplyInputError(`${where('account')} is not an account of the sandbox`);
  if (o.receipt !== undefined && typeof o.receipt !== 'boolean')
    throw new ReplyInputError(`${where('receipt')} is not true or false`);
  return {
    from: o.from,
    to: o.to as string | undefined,
    text: o.text,
    account: o.account as string | undefined,
    receipt: o.receipt as boolean | undefined,
  };
}
