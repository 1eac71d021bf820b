// Database rows → the store's records, for every backend. Columns are snake_case and named
// alike on SQLite and PostgreSQL; values come as each driver gives them (a count may be a
// bigint or a numeric string, a time a Date or an ISO string, a flag 0/1 or a boolean, JSON a
// string or an object), and are read here in one place.

import type { BudgetState } from '../core/budget.ts';
import type { CodedText, TextParams } from '../errors.ts';
import { messageIdFor } from '../plan/ids.ts';
import { readMessageId } from './message-ids.ts';
import type {
  ChunkDestination,
  ChunkRecord,
  ChunkState,
  DeliveryEvent,
  DeliveryMinute,
  FileEvent,
  FilePatch,
  FileRecord,
  FileReply,
  FileState,
  ListedIssue,
  RecipientOutcome,
  RecipientRecord,
  ReplyIntent,
  ReplyRecord,
  ReportRow,
  SharedToken,
  StandingChange,
  StandingChangeKind,
  StandingSource,
  WorkerInfo,
  WorkerRecord,
} from './store.ts';

export type Row = Record<string, unknown>;

export function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v instanceof Date) return v.toISOString();
  return String(v);
}
export function strOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : str(v);
}
export function num(v: unknown): number {
  return typeof v === 'number' ? v : Number(v);
}
export function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : num(v);
}
export function bool(v: unknown): boolean {
  return v === true || v === 1 || v === 1n || v === '1';
}
/** A JSON column: text (SQLite) or already parsed (PostgreSQL jsonb). */
export function json<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

/** A coded reason from its columns (null: none kept). */
export function codedOf(code: unknown, params: unknown): CodedText | null {
  const c = strOrNull(code);
  return c === null ? null : { code: c, params: json<TextParams | null>(params ?? null) ?? {} };
}

export function toFile(r: Row): FileRecord {
  const rejectionCode = strOrNull(r.rejection_code);
  return {
    fileId: str(r.file_id),
    source: str(r.source),
    name: str(r.name),
    path: str(r.path),
    sha256: str(r.sha256),
    bytes: num(r.bytes),
    state: str(r.state) as FileState,
    layout: strOrNull(r.layout) as FileRecord['layout'],
    encoding: strOrNull(r.encoding),
    separator: strOrNull(r.separator),
    header: bool(r.header),
    priority: strOrNull(r.priority) as FileRecord['priority'],
    counts: {
      records: num(r.records),
      valid: num(r.valid),
      invalid: num(r.invalid),
      duplicates: num(r.duplicates),
      suppressed: num(r.suppressed),
      segments: num(r.segments),
    },
    rejection:
      rejectionCode === null ? null : { code: rejectionCode, message: str(r.rejection_message ?? '') },
    reason: strOrNull(r.reason),
    reasonCode: codedOf(r.reason_code, r.reason_params),
    forced: bool(r.forced),
    possibleDuplicates: num(r.possible_duplicates),
    errors: json<ListedIssue[]>(r.errors),
    errorCounts: json<Record<string, number> | null>(r.error_counts ?? null) ?? {},
    createdAt: str(r.created_at),
    updatedAt: str(r.updated_at),
    timestamps: json<FileRecord['timestamps']>(r.timestamps),
    deliveryDeadline: strOrNull(r.delivery_deadline),
    sendAt: strOrNull(r.send_at),
    scheduledUntil: strOrNull(r.scheduled_until),
    cost: json<FileRecord['cost']>(r.cost ?? null),
    content: json<FileRecord['content']>(r.content ?? null),
    bulkText: strOrNull(r.bulk_text),
    detail: json<FileRecord['detail']>(r.detail ?? null),
    shortCode: strOrNull(r.short_code),
    leaseOwner: strOrNull(r.lease_owner),
    leaseUntil: strOrNull(r.lease_until),
    takenOverFrom: strOrNull(r.taken_over_from),
    prunedAt: strOrNull(r.pruned_at),
    reportPending:
      r.report_owed_at == null
        ? null
        : {
            since: str(r.report_owed_at),
            failures: num(r.report_failures),
            retryAt: str(r.report_retry_at),
          },
  };
}

/** A replies row. */
export function toReply(r: Row): ReplyRecord {
  return {
    id: num(r.id),
    receivedAt: str(r.received_at),
    from: str(r.from_number),
    to: str(r.to_number),
    text: str(r.text),
    optOut: bool(r.opt_out),
    messageId: strOrNull(r.message_id),
    intent: strOrNull(r.intent) as ReplyIntent | null,
    keyword: strOrNull(r.keyword),
    fileId: strOrNull(r.file_id),
  };
}

/** A replies row joined to its recipient (line, k). */
export function toFileReply(r: Row): FileReply {
  return { ...toReply(r), fileId: str(r.file_id), line: num(r.line), k: num(r.k) };
}

/** A standing_changes row. */
export function toStandingChange(r: Row): StandingChange {
  return {
    id: num(r.id),
    number: str(r.number),
    at: str(r.at),
    change: str(r.change) as StandingChangeKind,
    source: str(r.source) as StandingSource,
    reply: numOrNull(r.reply),
    keyword: strOrNull(r.keyword),
    detail: strOrNull(r.detail),
  };
}

/** A file_events row (at, state, reason, and the reason's code when it has one). */
export function toFileEvent(r: Row): FileEvent {
  const event: FileEvent = { at: str(r.at), state: str(r.state) as FileState, reason: strOrNull(r.reason) };
  const coded = codedOf(r.reason_code, r.reason_params);
  if (coded) event.reasonCode = coded;
  return event;
}

/** A delivery_minutes row (minute, delivered, undelivered, unknown). */
export function toDeliveryMinute(r: Row): DeliveryMinute {
  return {
    minute: str(r.minute),
    delivered: num(r.delivered),
    undelivered: num(r.undelivered),
    unknown: num(r.unknown),
    accepted: num(r.accepted),
  };
}

/** fileEvents' default limit. */
export const FILE_EVENTS_LIMIT = 200;

/**
 * A file name as listFiles' search compares it, and the text searched: lowercased the Unicode
 * way (SQLite's lower() folds ASCII only, PostgreSQL's depends on the database's locale), in one
 * normal form. SQLite calls it as the function dropline_fold; PostgreSQL keeps its result in
 * files.name_folded.
 */
export function foldName(text: string): string {
  return text.normalize('NFC').toLowerCase();
}

export function toSharedToken(r: Row): SharedToken {
  return {
    accessToken: str(r.access_token),
    refreshToken: strOrNull(r.refresh_token),
    renewAt: str(r.renew_at),
    generation: num(r.generation),
  };
}

/** Workers rows with the files each holds (rows of file_id, name, state, lease_owner, taken_over_from). */
export function toWorkers(
  rows: readonly Row[],
  held: readonly Row[],
  ageOf: (r: Row) => number,
): WorkerRecord[] {
  const files = Map.groupBy(held, (f) => str(f.lease_owner));
  return rows.map((r) => ({
    workerId: str(r.worker_id),
    host: str(r.host),
    pid: num(r.pid),
    version: str(r.version),
    startedAt: str(r.started_at),
    heartbeatAt: str(r.heartbeat_at),
    heartbeatAgeMs: Math.max(0, Math.round(ageOf(r))),
    stoppedAt: strOrNull(r.stopped_at),
    files: (files.get(str(r.worker_id)) ?? []).map((f) => ({
      fileId: str(f.file_id),
      name: str(f.name),
      state: str(f.state) as FileState,
      takenOverFrom: strOrNull(f.taken_over_from),
    })),
  }));
}

/** A heartbeat's parameters. */
export function workerColumns(w: WorkerInfo): Record<string, unknown> {
  return { worker_id: w.workerId, host: w.host, pid: w.pid, version: w.version };
}

/** How long the workers list looks back, and when a worker's row is dropped. */
export const WORKERS_SHOWN_MS = 24 * 3600_000;
export const WORKERS_KEPT_MS = 7 * 24 * 3600_000;

/** A send_budgets row as the budget rules take it. */
export function toBudget(r: Row): BudgetState {
  return {
    nextAt: num(r.next_at),
    pace: num(r.pace),
    pacedAt: num(r.paced_at),
    blockedUntil: num(r.blocked_until),
    reason: strOrNull(r.reason),
  };
}

/** A budget's columns as the update statements take them. */
export function budgetColumns(state: BudgetState): Record<string, unknown> {
  return {
    next_at: state.nextAt,
    pace: state.pace,
    paced_at: state.pacedAt,
    blocked_until: state.blockedUntil,
    reason: state.reason,
  };
}

/** storeToken's statement parameters. */
export function tokenColumns(
  key: string,
  owner: string,
  token: { accessToken: string; refreshToken: string | null; renewAt: string },
): Record<string, string | null> {
  return { key, owner, access: token.accessToken, refresh: token.refreshToken, renew_at: token.renewAt };
}

export function toChunk(r: Row): ChunkRecord {
  return {
    fileId: str(r.file_id),
    seq: num(r.seq),
    size: num(r.size),
    state: str(r.state) as ChunkState,
    attempts: num(r.attempts),
    transactionNumber: strOrNull(r.transaction_number),
    errorCode: strOrNull(r.error_code),
    errorMessage: strOrNull(r.error_message),
    updatedAt: str(r.updated_at),
  };
}

/** A recipient row (its chunk's result applied: outcome, code, detail…); `base` is the file's first id. */
export function toRecipient(r: Row, fileId: string, base: number): RecipientRecord {
  const line = num(r.line);
  const k = num(r.k);
  const chunkSeq = numOrNull(r.chunk_seq);
  return {
    fileId,
    idx: num(r.id) - base,
    line,
    k,
    number: strOrNull(r.number),
    value: strOrNull(r.value),
    messageId: readMessageId(strOrNull(r.message_id), fileId, line, k, chunkSeq),
    text: strOrNull(r.text),
    chunkSeq,
    outcome: str(r.outcome) as RecipientOutcome,
    code: strOrNull(r.code),
    detail: strOrNull(r.detail),
    smsCount: numOrNull(r.sms_count),
    status: str(r.status),
    transactionNumber: strOrNull(r.transaction_number),
    updatedAt: str(r.updated_at),
  };
}

/**
 * A FilePatch → the parameters of a backend's one patch statement: each field a value and a
 * `set_` flag (set or kept), so one prepared statement serves every patch. `bool` is how the
 * backend's driver takes a boolean (SQLite: 0/1).
 */
export function patchColumns<B>(patch: FilePatch | undefined, bool: (b: boolean) => B) {
  const p = patch ?? {};
  const flag = (v: unknown): B => bool(v !== undefined);
  return {
    set_path: flag(p.path),
    path: p.path ?? null,
    set_layout: flag(p.layout),
    layout: p.layout ?? null,
    set_encoding: flag(p.encoding),
    encoding: p.encoding ?? null,
    set_separator: flag(p.separator),
    separator: p.separator ?? null,
    set_header: flag(p.header),
    header: bool(p.header === true),
    set_priority: flag(p.priority),
    priority: p.priority ?? null,
    set_counts: flag(p.counts),
    records: p.counts?.records ?? 0,
    valid: p.counts?.valid ?? 0,
    invalid: p.counts?.invalid ?? 0,
    duplicates: p.counts?.duplicates ?? 0,
    suppressed: p.counts?.suppressed ?? 0,
    segments: p.counts?.segments ?? 0,
    set_rejection: flag(p.rejection),
    rejection_code: p.rejection?.code ?? null,
    rejection_message: p.rejection?.message ?? null,
    set_reason: flag(p.reason),
    reason: p.reason ?? null,
    // A reason and its code are written together: a reason patched without one keeps none.
    reason_code: p.reasonCode?.code ?? null,
    reason_params: p.reasonCode ? JSON.stringify(p.reasonCode.params) : null,
    set_errors: flag(p.errors),
    errors: JSON.stringify(p.errors ?? []),
    set_error_counts: flag(p.errorCounts),
    error_counts: JSON.stringify(p.errorCounts ?? {}),
    set_deadline: flag(p.deliveryDeadline),
    deadline: p.deliveryDeadline ?? null,
    set_send_at: flag(p.sendAt),
    send_at: p.sendAt ?? null,
    set_scheduled_until: flag(p.scheduledUntil),
    scheduled_until: p.scheduledUntil ?? null,
    set_cost: flag(p.cost),
    cost: p.cost ? JSON.stringify(p.cost) : null,
    set_content: flag(p.content),
    content: p.content ? JSON.stringify(p.content) : null,
    set_bulk_text: flag(p.bulkText),
    bulk_text: p.bulkText ?? null,
    set_detail: flag(p.detail),
    detail: p.detail ? JSON.stringify(p.detail) : null,
    set_short_code: flag(p.shortCode),
    short_code: p.shortCode ?? null,
  };
}

/**
 * A report row from the report page's columns, as an array (no object of 14 keys per row):
 * id, line, k, number, value, message_id, message_no, sms_count, status, outcome, code,
 * transaction_number, updated_at, detail.
 */
export function toReportRow(r: readonly unknown[], fileId: string): ReportRow {
  const line = num(r[1]);
  return {
    line,
    number: strOrNull(r[3]),
    value: strOrNull(r[4]),
    messageId: readMessageId(strOrNull(r[5]), fileId, line, num(r[2]), numOrNull(r[6])),
    outcome: str(r[9]) as RecipientOutcome,
    code: strOrNull(r[10]),
    status: str(r[8]),
    transactionNumber: strOrNull(r[11]),
    smsCount: numOrNull(r[7]),
    updatedAt: str(r[12]),
    detail: strOrNull(r[13]),
  };
}

/** A chunk destination from [number, message_id, text, line, k]. */
export function toDestination(r: readonly unknown[], fileId: string): ChunkDestination {
  const stored = r[1];
  // '' (a valid recipient recorded without a messageId) reads back as before: a string.
  const messageId = stored === null ? messageIdFor(fileId, num(r[3]), num(r[4])) : str(stored);
  return { number: str(r[0]), messageId, text: strOrNull(r[2]) };
}

/** Delivery events by their bulkId (the fileId they name), in order. */
export function byBulk(events: readonly DeliveryEvent[]): Map<string, DeliveryEvent[]> {
  const byFile = new Map<string, DeliveryEvent[]>();
  for (const e of events) {
    const list = byFile.get(e.bulkId);
    if (list) list.push(e);
    else byFile.set(e.bulkId, [e]);
  }
  return byFile;
}

/**
 * The first target of each key, and the rest for a later round: one UPDATE applies one
 * report per row, so two reports for one recipient in a batch go in two rounds, in order.
 */
export function firstOfEach<T extends { readonly key: string }>(targets: readonly T[]): [T[], T[]] {
  const keys = new Set<string>();
  const current: T[] = [];
  const later: T[] = [];
  for (const t of targets) {
    if (keys.has(t.key)) later.push(t);
    else {
      keys.add(t.key);
      current.push(t);
    }
  }
  return [current, later];
}
