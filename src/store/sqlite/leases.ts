// The SQLite store's leases area: which file a worker works on next (acquisition), its lease,
// and the workers' heartbeats.

import { str, toFile, toWorkers, WORKERS_KEPT_MS, WORKERS_SHOWN_MS, workerColumns } from '../mapping.ts';
import type { FileRecord, FileState, WorkerInfo, WorkerRecord } from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';
import * as S from './sql.ts';

export async function heartbeat(db: SqliteDb, worker: WorkerInfo): Promise<void> {
  const now = db.now();
  db.stmt(S.HEARTBEAT).run({ ...workerColumns(worker), now });
  const old = new Date(Date.parse(now) - WORKERS_KEPT_MS).toISOString();
  db.stmt(S.DROP_OLD_WORKERS).run(old);
}

export async function workerStopped(db: SqliteDb, workerId: string): Promise<void> {
  db.stmt(S.WORKER_STOPPED).run(db.now(), workerId);
}

export async function listWorkers(db: SqliteDb): Promise<WorkerRecord[]> {
  const now = db.now();
  const since = new Date(Date.parse(now) - WORKERS_SHOWN_MS).toISOString();
  const rows = db.stmt(S.LIST_WORKERS).all(since);
  const held = db.stmt(S.HELD_FILES).all(now);
  return toWorkers(rows, held, (r) => Date.parse(now) - Date.parse(str(r.heartbeat_at)));
}

export async function acquireFile(
  db: SqliteDb,
  owner: string,
  states: readonly FileState[],
  leaseMs: number,
): Promise<FileRecord | null> {
  const now = db.clock();
  // One statement: the pick and the take cannot be split by another writer (SQLite
  // serialises writers; the repeated lease condition states the rule all the same).
  const r = db.stmt(S.ACQUIRE_FILE).all({
    owner,
    until: new Date(now.getTime() + leaseMs).toISOString(),
    states: JSON.stringify(states),
    now: now.toISOString(),
  })[0];
  return r ? toFile(r) : null;
}

export async function takeLease(
  db: SqliteDb,
  fileId: string,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  const now = db.clock();
  const r = db.stmt(S.TAKE_LEASE).run({
    owner,
    until: new Date(now.getTime() + leaseMs).toISOString(),
    file_id: fileId,
    now: now.toISOString(),
  });
  return changes(r) === 1;
}

export async function renewLease(
  db: SqliteDb,
  fileId: string,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  const until = new Date(db.clock().getTime() + leaseMs).toISOString();
  const r = db.stmt(S.RENEW_LEASE).run(until, fileId, owner);
  return changes(r) === 1;
}

export async function releaseLease(db: SqliteDb, fileId: string, owner: string): Promise<void> {
  db.stmt(S.RELEASE_LEASE).run(fileId, owner);
}
