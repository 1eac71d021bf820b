// Alerts to the people who care (issue 13): a JSON POST (or a Slack incoming-webhook body) to
// each configured URL when a file this worker drives is rejected, paused, partial or
// completed, or a source stays unreachable. Signed with HMAC-SHA256 when a secret is set.
// Delivered in the background, retried with back-off: a receiver that is down never slows
// sending. Not kept across a restart (a queue of at most QUEUE_MAX per URL, in memory).
// Hand-written: a POST, a signature and a retry loop; no webhook library does less.
import { createHmac } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config/schema.ts';
import { querySecrets, redactSecrets, secretsOf } from '../core/redact.ts';
import type { Logger } from '../log.ts';
import { FILE_STATE_CHANNEL, type FileStateEvent } from '../pipeline/pipeline.ts';
import { type Manifest, manifestOf } from '../pipeline/reports.ts';
import { SUPPRESSION_LIST_CHANNEL, type SuppressionListEvent } from '../pipeline/suppression-lists.ts';
import type { Store } from '../store/store.ts';

export type AlertEvent = Config['alerts'][number]['events'][number];

/** diagnostics_channel: each alert's end (/metrics counts them). */
export const ALERT_CHANNEL = 'dropline:alerts:delivery';
const alertChannel = diagnosticsChannel.channel(ALERT_CHANNEL);
export interface AlertDelivery {
  readonly event: AlertEvent;
  readonly result: 'delivered' | 'failed' | 'dropped';
}

export interface AlertOptions {
  alerts: Config['alerts'];
  /** alerts[i]'s signing key (null: unsigned). */
  secrets: readonly (string | null)[];
  store: Store;
  logger: Logger;
  /** Back-off of the retries (default 1 s doubling to 60 s, 6 tries). */
  retry?: { baseMs: number; maxMs: number; tries: number };
}

export interface Alerts {
  /** A source's listing failed (with its error) or succeeded (null): its outages are timed here. */
  sourceListed(source: string, error: string | null): void;
  /**
   * The messaging service unreachable since `outage.since` (`upAt` null: it starts) or
   * answering again (`upAt`: when): `service-down`, once at each end of an outage.
   */
  serviceOutage(outage: { since: string; error: string }, upAt: string | null): void;
  /** Stops taking alerts; what is being delivered ends within one request's time-out. */
  close(): Promise<void>;
}

const FILE_EVENTS: ReadonlySet<string> = new Set<AlertEvent>(['rejected', 'paused', 'partial', 'completed']);
const QUEUE_MAX = 100;
const TIMEOUT_MS = 10_000;

interface Payload {
  event: AlertEvent;
  at: string;
  file?: Manifest;
  source?: { name: string; downSince: string; error: string };
  /** `kind`: an opt-out list (`suppression`) or the consent list (`consent`). */
  list?: {
    kind: 'suppression' | 'consent';
    names: readonly string[];
    location: string;
    reason: string;
    message: string;
  };
  /** `service-down`: `upAt` null when it starts, the instant it answered again when it ends. */
  service?: { downSince: string; error: string; upAt: string | null };
}

/** `sha256=<hex>`: HMAC-SHA256 of the exact body with the alert's secret (docs/alerts.md). */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * Text as Slack shows it literally: `&`, `<` and `>` escaped, as Slack asks of any text it did
 * not write, so a file's name or its rejection (from whoever dropped the file) can never be
 * `<!channel>`, a mention or a link of theirs.
 */
function slackEscaped(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function slackText(p: Payload): string {
  return slackEscaped(plainText(p));
}

function plainText(p: Payload): string {
  if (p.list)
    return `dropline: ${p.list.kind === 'consent' ? 'consent' : 'opt-out'} list ${p.list.names.join(', ')} (${p.list.location}) refused (${p.list.reason}): ${p.list.message}; its files wait`;
  if (p.service)
    return p.service.upAt
      ? `dropline: messaging service reachable again at ${p.service.upAt} (unreachable since ${p.service.downSince})`
      : `dropline: messaging service unreachable since ${p.service.downSince}: ${p.service.error}; sends are retried`;
  if (p.source)
    return `dropline: source ${p.source.name} unreachable since ${p.source.downSince}: ${p.source.error}`;
  const f = p.file!;
  const c = f.counts;
  const why = f.rejection
    ? ` (${f.rejection.code}: ${f.rejection.message})`
    : f.reason
      ? ` (${f.reason})`
      : '';
  return `dropline: ${f.name} ${f.state}${why}: ${c.records} records, ${c.valid} valid, ${c.submitted} submitted, ${c.delivered} delivered`;
}

/**
 * Where alerts[i] is posted: `https://user:pass@hook/…` is sent as Basic authentication
 * (fetch refuses a URL holding credentials), and `secrets` are what no log line may show (the
 * password, the query string's values).
 */
function endpointOf(raw: string): { url: string; authorization: string | null; secrets: string[] } {
  const u = new URL(raw);
  const password = decoded(u.password);
  const secrets = secretsOf([password, u.password, ...querySecrets(raw)]);
  if (u.username === '' && u.password === '') return { url: raw, authorization: null, secrets };
  const credentials = Buffer.from(`${decoded(u.username)}:${password}`).toString('base64');
  u.username = '';
  u.password = '';
  return { url: u.toString(), authorization: `Basic ${credentials}`, secrets: [...secrets, credentials] };
}

/** A percent-encoded part of a URL as meant; as written when it is not valid encoding (`%zz`). */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function startAlerts(options: AlertOptions): Alerts {
  const log = options.logger;
  const endpoints = options.alerts.map((a) => endpointOf(a.url));
  const retry = options.retry ?? { baseMs: 1000, maxMs: 60_000, tries: 6 };
  const stopping = new AbortController();
  const queues = options.alerts.map(() => ({ size: 0, chain: Promise.resolve() }));
  /** Per source failing now: since when, and the URLs already told of this outage. */
  const outages = new Map<string, { since: number; said: Set<number> }>();

  const end = (event: AlertEvent, result: AlertDelivery['result']): void => {
    if (alertChannel.hasSubscribers) alertChannel.publish({ event, result } satisfies AlertDelivery);
  };

  /** One POST, tried until it is answered 2xx, refused for good (4xx) or out of tries. */
  const deliver = async (i: number, payload: Payload): Promise<void> => {
    const target = options.alerts[i]!;
    const body = JSON.stringify(target.format === 'slack' ? { text: slackText(payload) } : payload);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'dropline-alerts',
      'x-dropline-event': payload.event,
    };
    const secret = options.secrets[i] ?? null;
    if (secret) headers['x-dropline-signature'] = signature(secret, body);
    const endpoint = endpoints[i]!;
    if (endpoint.authorization) headers.authorization = endpoint.authorization;
    const where = new URL(endpoint.url).host;
    let last = '';
    for (let attempt = 1; attempt <= retry.tries && !stopping.signal.aborted; attempt++) {
      try {
        const res = await fetch(endpoint.url, {
          method: 'POST',
          headers,
          body,
          signal: AbortSignal.any([AbortSignal.timeout(TIMEOUT_MS), stopping.signal]),
        });
        await res.body?.cancel();
        if (res.ok) {
          log.info({ event: payload.event, to: where, attempt }, 'alert delivered');
          end(payload.event, 'delivered');
          return;
        }
        last = `HTTP ${res.status}`;
        // Refused for good (a wrong URL, a bad signature): trying again changes nothing.
        if (res.status < 500 && res.status !== 408 && res.status !== 429) break;
      } catch (err) {
        // Node's own message may quote the URL.
        last = redactSecrets((err as Error).message, endpoint.secrets);
      }
      await sleep(Math.min(retry.baseMs * 2 ** (attempt - 1), retry.maxMs), undefined, {
        signal: stopping.signal,
      }).catch(() => {});
    }
    if (stopping.signal.aborted) {
      log.warn({ event: payload.event, to: where }, 'alert not delivered: dropline is stopping');
      end(payload.event, 'dropped');
      return;
    }
    log.error({ event: payload.event, to: where, err: last }, 'alert not delivered');
    end(payload.event, 'failed');
  };

  /** Queued for URL i, behind its earlier alerts (in order, one at a time). */
  const enqueue = (i: number, event: AlertEvent, make: () => Promise<Payload | null>): void => {
    const target = options.alerts[i]!;
    const q = queues[i]!;
    if (q.size >= QUEUE_MAX) {
      log.warn({ event, to: new URL(target.url).host }, `alert dropped: ${QUEUE_MAX} wait already`);
      end(event, 'dropped');
      return;
    }
    q.size++;
    q.chain = q.chain
      .then(async () => {
        const payload = await make();
        if (payload) await deliver(i, payload);
      })
      .catch((err: unknown) => log.error({ event, err: (err as Error).message }, 'alert failed'))
      .finally(() => {
        q.size--;
      });
  };

  const send = (event: AlertEvent, make: () => Promise<Payload | null>): void => {
    options.alerts.forEach((target, i) => {
      if (target.events.includes(event) && !stopping.signal.aborted) enqueue(i, event, make);
    });
  };

  const onState = (message: unknown): void => {
    const { file } = message as FileStateEvent;
    if (!FILE_EVENTS.has(file.state)) return;
    const event = file.state as AlertEvent;
    // The manifest when the first alert of it leaves (counts of that moment; numbers masked,
    // as everywhere), read once for every URL told.
    let payload: Promise<Payload | null> | null = null;
    send(event, () => {
      payload ??= manifestOf(options.store, file.fileId).then((manifest) =>
        manifest ? { event, at: new Date().toISOString(), file: manifest } : null,
      );
      return payload;
    });
  };
  diagnosticsChannel.subscribe(FILE_STATE_CHANNEL, onState);

  // An opt-out list or the consent list refused (docs/opt-outs.md, "Refused lists"): said once
  // a refusal.
  const onList = (message: unknown): void => {
    const e = message as SuppressionListEvent;
    if (!e.refused || e.reason === null) return;
    const list = { kind: e.kind, names: e.names, location: e.location, reason: e.reason, message: e.message };
    send('suppression-list-refused', async () => ({ event: 'suppression-list-refused', at: e.at, list }));
  };
  diagnosticsChannel.subscribe(SUPPRESSION_LIST_CHANNEL, onList);

  return {
    sourceListed(source, error) {
      if (error === null) {
        outages.delete(source);
        return;
      }
      const outage = outages.get(source) ?? { since: Date.now(), said: new Set<number>() };
      outages.set(source, outage);
      // Each URL's own patience: told once an outage, when it has lasted sourceDownAfterMs.
      const down = Date.now() - outage.since;
      options.alerts.forEach((target, i) => {
        if (!target.events.includes('source-down') || down < target.sourceDownAfterMs) return;
        if (outage.said.has(i) || stopping.signal.aborted) return;
        outage.said.add(i);
        const downSince = new Date(outage.since).toISOString();
        enqueue(i, 'source-down', async () => ({
          event: 'source-down',
          at: new Date().toISOString(),
          source: { name: source, downSince, error },
        }));
      });
    },
    serviceOutage(outage, upAt) {
      const service = { downSince: outage.since, error: outage.error, upAt };
      send('service-down', async () => ({ event: 'service-down', at: new Date().toISOString(), service }));
    },
    async close() {
      diagnosticsChannel.unsubscribe(FILE_STATE_CHANNEL, onState);
      diagnosticsChannel.unsubscribe(SUPPRESSION_LIST_CHANNEL, onList);
      stopping.abort();
      await Promise.all(queues.map((q) => q.chain));
    },
  };
}
