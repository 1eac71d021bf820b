// The SQLite store's leases area: which file a worker works on next (acquisition), its lease,
// and the workers' heartbeats.

import { str, toFile, toWorkers, WORKERS_KEPT_MS, WORKERS_SHOWN_MS, workerColumns } from '../mapping.ts';
import type { FileRecord, FileState, WorkerInfo, WorkerRecord } from '../store.ts';
import { changes, type SqliteDb } from './connection.ts';
import { ACQUIRE_FILE } from './sql.ts';

export async function heartbeat(db: SqliteDb, worker: WorkerInfo): Promise<void> {
  const now = db.now();
  db.stmt(
    `INSERT INTO workers (worker_id, host, pid, version, started_at, heartbeat_at)
     VALUES (:worker_id, :host, :pid, :version, :now, :now)
     ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = :now, stopped_at = NULL`,
  ).run({ ...workerColumns(worker), now });
  const old = new Date(Date.parse(now) - WORKERS_KEPT_MS).toISOString();
  db.stmt('DELETE FROM workers WHERE heartbeat_at < ?').run(old);
}

export async function workerStopped(db: SqliteDb, workerId: string): Promise<void> {
  db.stmt('UPDATE workers SET stopped_at = ? WHERE worker_id = ?').run(db.now(), workerId);
}

export async function listWorkers(db: SqliteDb): Promise<WorkerRecord[]> {
  const now = db.now();
  const since = new Date(Date.parse(now) - WORKERS_SHOWN_MS).toISOString();
  const rows = db
    .stmt('SELECT * FROM workers WHERE heartbeat_at >= ? ORDER BY started_at DESC, worker_id')
    .all(since);
  const held = db
    .stmt(
      `SELECT file_id, name, state, lease_owner, taken_over_from FROM files
     WHERE lease_owner IS NOT NULL AND lease_until > ? ORDER BY file_no`,
    )
    .all(now);
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
  const r = db.stmt(ACQUIRE_FILE).all({
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
  const r = db
    .stmt(
      `UPDATE files SET lease_owner = :owner, lease_until = :until
     WHERE file_id = :file_id AND (lease_owner IS NULL OR lease_until <= :now OR lease_owner = :owner)`,
    )
    .run({
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
  const r = db
    .stmt('UPDATE files SET lease_until = ? WHERE file_id = ? AND lease_owner = ?')
    .run(until, fileId, owner);
  return changes(r) === 1;
}

export async function releaseLease(db: SqliteDb, fileId: string, owner: string): Promise<void> {
  db.stmt(
    'UPDATE files SET lease_owner = NULL, lease_until = NULL WHERE file_id = ? AND lease_owner = ?',
  ).run(fileId, owner);
}
