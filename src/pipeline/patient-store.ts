// The store as the pipeline uses it: a store that cannot be reached for a while (connection
// lost, PostgreSQL restarting, a SQLite file locked by another connection beyond busy_timeout)
// is waited for, with back-off, and the call goes on where it was. Nothing is marked failed or
// in doubt because the store was away: the worker simply does not move until it answers.
// The receiver and the ops server use the store directly: they answer 503 at once instead.
import diagnosticsChannel from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.ts';
import type { FileRecord, Store } from '../store/store.ts';

const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 5000;
/** Read in pages by the caller: a lost connection fails the read, which is started again whole. */
const ITERABLES: ReadonlySet<PropertyKey> = new Set(['reportPages', 'recipients', 'recipientPages']);

/** Whether a store error means "not reachable now, the same call may succeed later unchanged". */
export function storeUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown } | null;
  if (e?.code === 'DROPLINE_ERR_STORE_UNAVAILABLE') return true;
  // node:sqlite: SQLITE_BUSY (or one of its extended codes) once busy_timeout has passed:
  // another connection holds the database's lock. Nothing of the statement was written.
  return e?.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number' && (e.errcode & 0xff) === 5;
}

export interface Patience {
  logger: Logger;
  /** Aborted when the process stops: a call waiting for the store then gives up with its error. */
  signal: AbortSignal;
}

/** diagnostics_channel: every store call of the work, timed (/metrics). */
export const STORE_CALL_CHANNEL = 'dropline:store:call';
const callChannel = diagnosticsChannel.channel(STORE_CALL_CHANNEL);

export interface StoreCallEvent {
  /** The Store method: a bounded name. */
  readonly operation: string;
  readonly seconds: number;
  /** null: it answered; unavailable: it could not be reached (the call waits and tries again). */
  readonly error: 'unavailable' | 'error' | null;
}

export function patientStore(store: Store, patience: Patience): Store {
  const log = patience.logger;
  let away = false;
  const call = async (key: PropertyKey, fn: (...args: unknown[]) => Promise<unknown>, args: unknown[]) => {
    let delay = FIRST_DELAY_MS;
    // Said by a call that waited, when the store answers it (with a result or another error):
    // a call that did not wait proves nothing (a read succeeds while a SQLite write lock is
    // held by someone else, and the writes still wait).
    const back = (attempt: number): void => {
      if (!away || attempt === 0) return;
      away = false;
      log.info('the store answers again: going on where the work was');
    };
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      const observe = (error: StoreCallEvent['error']): void => {
        if (callChannel.hasSubscribers)
          callChannel.publish({
            operation: String(key),
            seconds: (performance.now() - started) / 1000,
            error,
          } satisfies StoreCallEvent);
      };
      try {
        const result = await fn(...args);
        observe(null);
        back(attempt);
        return attempt === 0 ? result : await afterRetry(store, key, args, result);
      } catch (err) {
        observe(storeUnavailable(err) ? 'unavailable' : 'error');
        if (!storeUnavailable(err) || patience.signal.aborted) {
          if (!patience.signal.aborted) back(attempt);
          throw err;
        }
        if (!away) {
          away = true;
          log.warn(
            { err: (err as Error).message },
            'the store is unavailable: waiting for it, nothing is marked failed or in doubt meanwhile',
          );
        }
        await sleep(delay, undefined, { signal: patience.signal }).catch(() => {});
        delay = Math.min(delay * 2, MAX_DELAY_MS);
      }
    }
  };
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      // Bound to the store itself: its own calls (private helpers, #fields) never pass here.
      const fn = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
      if (ITERABLES.has(key) || key === 'close') return fn;
      return (...args: unknown[]) => call(key, fn, args);
    },
  });
}

/**
 * A compare-and-set repeated after a failure whose write may have committed (the connection
 * was lost on the commit): it finds its own change and says "not applied". Under the file's
 * lease nobody else makes these two changes, so finding the target state means it was ours.
 */
async function afterRetry(
  store: Store,
  key: PropertyKey,
  args: unknown[],
  result: unknown,
): Promise<unknown> {
  if (key === 'setChunkState' && result === false) {
    const [fileId, seq, to] = args as [string, number, string];
    const chunk = (await store.listChunks(fileId)).find((c) => c.seq === seq);
    return chunk?.state === to;
  }
  if (key === 'transition' && result === null) {
    const [fileId, to, options] = args as [string, string, { owner?: string } | undefined];
    const file: FileRecord | null = await store.getFile(fileId);
    if (file?.state === to && (options?.owner === undefined || file.leaseOwner === options.owner))
      return file;
  }
  return result;
}
