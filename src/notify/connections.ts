// The receiver's connection budget (docs/notify.md): at most `maxConnections` kept; a
// connection that has not sent a request with the token is untrusted, must send one within
// `firstRequestMs`, and is the first evicted (the oldest, never while its request is in
// progress) when a new connection would pass the cap. When every connection is trusted or
// busy, the newcomer is accepted as overflow: its requests are answered 503 and it closes.
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

export interface Conn {
  readonly socket: Socket;
  /** Has sent a request with the right token: never evicted for a newcomer. */
  trusted: boolean;
  /** Requests received and not answered yet: never closed under them. */
  busy: number;
  /** Accepted beyond the cap: its requests get 503 and it closes. */
  overflow: boolean;
  timer: NodeJS.Timeout | null;
}

export class Connections {
  readonly #maxConnections: number;
  readonly #firstRequestMs: number;
  readonly #log: Logger;
  /** Open connections: when each has a request queued, no further one can arrive unanswered. */
  open = 0;
  /** Untrusted connections closed for newcomers. */
  evicted = 0;
  #overflowing = 0;
  /** Every open connection, oldest first (a Set keeps insertion order). */
  readonly #conns = new Set<Conn>();
  readonly #connOf = new WeakMap<Socket, Conn>();

  constructor(o: { maxConnections: number; firstRequestMs: number; log: Logger }) {
    this.#maxConnections = o.maxConnections;
    this.#firstRequestMs = o.firstRequestMs;
    this.#log = o.log;
  }

  of(socket: Socket): Conn | undefined {
    return this.#connOf.get(socket);
  }

  /** A new connection (the server's 'connection' event). */
  accept(socket: Socket): void {
    this.open++;
    const conn: Conn = { socket, trusted: false, busy: 0, overflow: false, timer: null };
    if (this.#conns.size >= this.#maxConnections && !this.#evictOne()) {
      conn.overflow = true;
      this.#overflowing++;
      if (this.#overflowing === 1)
        this.#log.warn(
          { maxConnections: this.#maxConnections },
          'notify: connection cap reached; answering 503',
        );
    }
    this.#conns.add(conn);
    this.#connOf.set(socket, conn);
    // Untrusted connections get a short life: a request with the token, or closed.
    conn.timer = setTimeout(() => {
      conn.timer = null;
      if (!conn.trusted && conn.busy === 0) socket.destroy();
    }, this.#firstRequestMs);
    conn.timer.unref();
    socket.once('close', () => {
      this.open--;
      if (conn.timer) clearTimeout(conn.timer);
      if (conn.overflow) this.#overflowing--;
      this.#conns.delete(conn);
    });
  }

  /** The oldest untrusted connection with no request in progress, closed for a newcomer. */
  #evictOne(): boolean {
    for (const c of this.#conns) {
      if (c.trusted || c.busy > 0 || c.overflow) continue;
      c.socket.destroy();
      this.#conns.delete(c);
      this.evicted++;
      return true;
    }
    return false;
  }
}
