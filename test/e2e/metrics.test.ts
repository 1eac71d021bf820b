// Issue 13, /metrics: a file sent through faults (503s the client retries, one 429), then the
// ops server's metrics read with a Prometheus text-format parser. The counters agree with the
// manifest and with what the sandbox saw; labels never carry a fileId or a number; the
// endpoint asks for the ops token like the API.
import parse from 'parse-prometheus-text-format';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Manifest } from '../../src/pipeline/reports.ts';
import { PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

const TOKEN = 'metrics-test-ops-token';
let h: PipelineHarness;
const gen = personalizedFile(3000, 61);
let m: Manifest;
let text = '';

beforeAll(async () => {
  h = await PipelineHarness.create({
    api: { chunkSize: 100, concurrency: 2 },
    ops: { token: TOKEN },
    sandbox: { deliveryDelayMs: 50 },
  });
  await h.start();
  await h.faults({ massive: { '503': { probability: 1, times: 3 }, '429': { probability: 1, times: 1 } } });
  await h.dropFile('metricas.txt', gen.content);
  m = await h.waitForState('metricas.txt', 'completed', { timeoutMs: 50_000 });
  const res = await fetch(`${h.opsUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  text = await res.text();
}, 60_000);

afterAll(async () => {
  await h?.close();
});

/** A sample's value; a histogram's count (its +Inf bucket: the parser gives no labels or count for histograms). */
const sampleValue = (s: { value?: string; buckets?: Record<string, string> }) =>
  Number(s.value ?? s.buckets?.['+Inf']);

/** The value of one sample of a family (0 when the family or the labels are absent). */
function value(name: string, labels: Record<string, string> = {}): number {
  const family = parse(text).find((f) => f.name === name);
  const sample = family?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  return sample ? sampleValue(sample) : 0;
}
const sum = (name: string, labels: Record<string, string> = {}) =>
  (parse(text).find((f) => f.name === name)?.metrics ?? [])
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v))
    .reduce((n, s) => n + sampleValue(s), 0);

it('the service counters agree with the manifest and with what the sandbox answered', () => {
  const massive = h.sandbox.requests.filter((r) => r.endpoint === '/mtmessage/massive');
  const answered = (status: number) => massive.filter((r) => r.status === status).length;
  expect(answered(503)).toBe(3);
  expect(answered(429)).toBe(1);
  expect(value('dropline_service_destinations_total', { result: 'accepted' })).toBe(m.counts.submitted);
  expect(m.counts.submitted).toBe(gen.valid.length);
  expect(value('dropline_service_requests_total', { status: '503' })).toBe(3);
  expect(value('dropline_service_requests_total', { status: '429', result: 'rate_limited' })).toBe(1);
  expect(value('dropline_service_requests_total', { result: 'accepted', status: '200' })).toBe(answered(200));
  // Every attempt timed, by result. (The parser keeps one label set of a histogram: its
  // `_count` lines are read from the text.)
  const timed = [
    ...text.matchAll(/^dropline_service_request_duration_seconds_count\{result="(\w+)"\} (\d+)$/gm),
  ];
  expect(Object.fromEntries(timed.map((t) => [t[1], Number(t[2])]))).toEqual({
    accepted: answered(200),
    retry: 3,
    rate_limited: 1,
  });
  expect(value('dropline_token_requests_total', { grant: 'password', status: '200' })).toBe(1);
});

it('delivery reports and files: the store and the receiver agree with the manifest', () => {
  expect(value('dropline_files', { state: 'completed' })).toBe(1);
  expect(value('dropline_chunks_in_doubt')).toBe(0);
  expect(sum('dropline_delivery_reports_total')).toBe(m.counts.delivered + m.counts.undelivered);
  expect(value('dropline_delivery_report_events_total', { kind: 'recorded' })).toBe(
    m.counts.delivered + m.counts.undelivered,
  );
  expect(value('dropline_delivery_report_events_total', { kind: 'orphan' })).toBe(0);
  // Recipients by the outcome of their reading.
  expect(value('dropline_recipients_read_total', { outcome: 'valid' })).toBe(m.counts.valid);
  expect(value('dropline_recipients_read_total', { outcome: 'invalid' })).toBe(m.counts.invalid);
  expect(value('dropline_recipients_read_total', { outcome: 'duplicate' })).toBe(m.counts.duplicates);
  expect(m.counts.invalid * m.counts.duplicates).toBeGreaterThan(0);
  expect(value('dropline_delivery_report_requests_total', { status: '200' })).toBeGreaterThan(0);
  expect(sum('dropline_delivery_report_ingest_seconds')).toBe(
    value('dropline_delivery_report_requests_total', { status: '200' }),
  );
  expect(value('dropline_source_scans_total', { source: 'local', result: 'ok' })).toBeGreaterThan(0);
  expect(value('dropline_send_window_open')).toBe(1);
  // The work's store calls, timed by method; none failed.
  const timedCalls = [
    ...text.matchAll(/^dropline_store_operation_duration_seconds_count\{operation="(\w+)"\} (\d+)$/gm),
  ];
  expect(timedCalls.map((t) => t[1])).toEqual(
    expect.arrayContaining(['insertRecipients', 'recordChunkResult']),
  );
  expect(sum('dropline_store_errors_total')).toBe(0);
  // The process's own: event-loop lag, memory.
  expect(parse(text).some((f) => f.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
  expect(value('process_resident_memory_bytes')).toBeGreaterThan(0);
});

it('labels are bounded: no fileId, file name or number in any label', () => {
  const labels = parse(text).flatMap((f) => f.metrics.flatMap((s) => Object.values(s.labels ?? {})));
  expect(labels.length).toBeGreaterThan(20);
  for (const v of labels) {
    expect(v).not.toContain(m.fileId);
    expect(v).not.toContain('metricas');
    expect(v).not.toMatch(/\d{7}/);
  }
  expect(text).not.toContain(m.fileId);
});

it('asks for the ops token like the API', async () => {
  expect((await fetch(`${h.opsUrl}/metrics`)).status).toBe(401);
  const wrong = await fetch(`${h.opsUrl}/metrics`, { headers: { authorization: 'Bearer nope' } });
  expect(wrong.status).toBe(401);
});
