// A messaging service that cannot be reached (issue 32; docs/runbook.md "The messaging service
// is unreachable"). Its sends are retried, and failed chunks used to be the only trace of it:
// the campaign page said `sending`, /readyz said nothing. This watches every request this
// process makes to the service (the client's diagnostics channels: POST /mtmessage[/massive]
// and /token): one that got no answer without its body having left (connection refused, no
// route, a connect time-out) starts an outage; any answer (whatever its status) ends it.
// While it lasts:
// - each file whose chunk met it carries the state detail SERVICE_UNREACHABLE with `since`
//   (FileRecord.detail: the manifest, status and the dashboard show it), cleared when the
//   service answers again, or when the file stops sending (partial, submitted, paused…:
//   nothing of it is retried any more, docs/runbook.md "The messaging service is unreachable");
// - /readyz shows the `service` check (server.ts; it does not fail readiness);
// - the `service-down` alert is said once when it starts and once when it ends (alerts.ts).
import diagnosticsChannel from 'node:diagnostics_channel';
import type { Logger } from '../log.ts';
import { FILE_STATE_CHANNEL, type FileStateEvent } from '../pipeline/context.ts';
import { ATTEMPT_CHANNEL, type AttemptEvent, TOKEN_CHANNEL, type TokenEvent } from '../service/client.ts';
import type { StateDetail, Store } from '../store/store.ts';
import type { Alerts } from './alerts.ts';

export interface ServiceOutage {
  /** ISO-8601: the first request that found no service. */
  readonly since: string;
  /** The last such request's error (redacted by the client). */
  readonly error: string;
}

export interface ServiceWatch {
  /** The outage now; null while the service answers (or nothing was asked yet). */
  current(): ServiceOutage | null;
  /** Files it keeps in memory (marked in this outage, or checked): for tests. */
  tracked(): number;
  /** Stops watching; the details written are left (the next start clears them, see below). */
  close(): Promise<void>;
}

export interface ServiceWatchOptions {
  store: Store;
  logger: Logger;
  alerts?: Pick<Alerts, 'serviceOutage'> | undefined;
  /**
   * The files this process drives now: a token request that finds no service is no file's
   * own, and holds back the sends of all of them.
   */
  driven?: (() => Iterable<string>) | undefined;
  now?: (() => Date) | undefined;
}

/**
 * Files checked at most: a daemon that runs for months follows files whose end it may never
 * see (a lease taken over by another worker); past this, the set starts again, costing one
 * read per file sent again.
 */
const CHECKED_MAX = 10_000;

/** The file of a chunk's id (`<fileId>/<seq>`, plan/chunks.ts chunkIdFor). */
function fileOf(chunkId: string): string {
  const slash = chunkId.lastIndexOf('/');
  return slash < 0 ? chunkId : chunkId.slice(0, slash);
}

export function watchService(options: ServiceWatchOptions): ServiceWatch {
  const { store, logger: log } = options;
  const now = options.now ?? (() => new Date());
  let outage: { since: string; error: string } | null = null;
  /** Files given the detail in this outage (cleared when it ends). */
  const marked = new Set<string>();
  /**
   * Files whose send found the service answering: checked once for a detail left by a process
   * that stopped during an outage.
   */
  const checked = new Set<string>();
  /** One write at a time, in order: a detail and its clearing never cross. */
  let writes: Promise<void> = Promise.resolve();
  const write = (fileId: string, detail: StateDetail | null, onlyIfSet = false): void => {
    writes = writes.then(async () => {
      try {
        if (onlyIfSet && !(await store.getFile(fileId))?.detail) return;
        await store.updateFile(fileId, { detail });
      } catch (err) {
        log.warn({ fileId, err: (err as Error).message }, 'state detail not written');
      }
    });
  };

  const unreachable = (fileId: string | null, error: string): void => {
    if (!outage) {
      outage = { since: now().toISOString(), error };
      log.warn({ since: outage.since, err: error }, 'messaging service unreachable; its sends are retried');
      options.alerts?.serviceOutage(outage, null);
    } else outage.error = error;
    const detail: StateDetail = { code: 'SERVICE_UNREACHABLE', since: outage.since, error };
    for (const f of fileId !== null ? [fileId] : (options.driven?.() ?? [])) {
      if (marked.has(f)) continue;
      marked.add(f);
      checked.add(f);
      write(f, detail);
    }
  };

  const answered = (fileId: string | null): void => {
    if (outage) {
      const ended = outage;
      outage = null;
      const upAt = now().toISOString();
      log.info({ since: ended.since, upAt }, 'messaging service reachable again');
      options.alerts?.serviceOutage(ended, upAt);
      for (const f of marked) write(f, null);
      marked.clear();
    }
    if (fileId !== null && !checked.has(fileId)) {
      if (checked.size >= CHECKED_MAX) checked.clear();
      checked.add(fileId);
      write(fileId, null, true);
    }
  };

  // A file that stops sending (its chunks failed for good, all accepted, paused…) is retried
  // no more: the detail would outlive the outage's meaning, and nothing would clear it when
  // no other send of this process asks the service again. Sent again, it is marked again.
  const onState = (message: unknown): void => {
    const { file } = message as FileStateEvent;
    if (file.state === 'sending') return;
    const wasMarked = marked.delete(file.fileId);
    const wasChecked = checked.delete(file.fileId);
    if (wasMarked || wasChecked) write(file.fileId, null, true);
  };

  const onAttempt = (message: unknown): void => {
    const e = message as AttemptEvent;
    if (e.status > 0) answered(fileOf(e.chunkId));
    // Sent and unanswered is in doubt (the service may have it), not proof of an outage.
    else if (!e.written) unreachable(fileOf(e.chunkId), e.error ?? 'no answer');
  };
  const onToken = (message: unknown): void => {
    const e = message as TokenEvent;
    if (e.status > 0) answered(null);
    else unreachable(null, e.error ?? 'no answer');
  };
  diagnosticsChannel.subscribe(ATTEMPT_CHANNEL, onAttempt);
  diagnosticsChannel.subscribe(TOKEN_CHANNEL, onToken);
  diagnosticsChannel.subscribe(FILE_STATE_CHANNEL, onState);

  return {
    current: () => (outage ? { ...outage } : null),
    tracked: () => new Set([...marked, ...checked]).size,
    async close() {
      diagnosticsChannel.unsubscribe(ATTEMPT_CHANNEL, onAttempt);
      diagnosticsChannel.unsubscribe(TOKEN_CHANNEL, onToken);
      diagnosticsChannel.unsubscribe(FILE_STATE_CHANNEL, onState);
      await writes;
    },
  };
}
