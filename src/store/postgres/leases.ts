// The PostgreSQL store's leases area: which file a worker works on next (acquisition, SKIP
// LOCKED), its lease, and the workers' heartbeats.

import { num, toFile, toWorkers, WORKERS_KEPT_MS, WORKERS_SHOWN_MS, workerColumns } from '../mapping.ts';
import type { FileRecord, FileState, WorkerInfo, WorkerRecord } from '../store.ts';
import type { PgDb } from './connection.ts';
import * as S from './sql.ts';

export async function heartbeat(db: PgDb, worker: WorkerInfo): Promise<void> {
  const now = db.now();
  await db.count('recording a heartbeat', S.HEARTBEAT, { ...workerColumns(worker), now });
  await db.count('dropping old workers', S.DROP_OLD_WORKERS, { kept_ms: WORKERS_KEPT_MS, now });
}

export async function workerStopped(db: PgDb, workerId: string): Promise<void> {
  await db.count('recording a stop', S.WORKER_STOPPED, { worker_id: workerId, now: db.now() });
}

export async function listWorkers(db: PgDb): Promise<WorkerRecord[]> {
  const now = db.now();
  const rows = await db.rows('listing workers', S.LIST_WORKERS, { shown_ms: WORKERS_SHOWN_MS, now });
  const held = await db.rows('listing held files', S.HELD_FILES, { now });
  return toWorkers(rows, held, (r) => num(r.age_ms));
}

export async function acquireFile(
  db: PgDb,
  owner: string,
  states: readonly FileState[],
  leaseMs: number,
): Promise<FileRecord | null> {
  if (states.length === 0) return null;
  const [r] = await db.rows('acquiring a file', S.ACQUIRE_FILE, {
    owner,
    states,
    lease_ms: leaseMs,
    now: db.now(),
  });
  return r ? toFile(r) : null;
}

export async function takeLease(db: PgDb, fileId: string, owner: string, leaseMs: number): Promise<boolean> {
  return (
    (await db.count(`taking the lease of ${fileId}`, S.TAKE_LEASE, {
      owner,
      file_id: fileId,
      lease_ms: leaseMs,
      now: db.now(),
    })) === 1
  );
}

export async function renewLease(db: PgDb, fileId: string, owner: string, leaseMs: number): Promise<boolean> {
  const what = `renewing the lease of ${fileId}`;
  const params = { owner, file_id: fileId, lease_ms: leaseMs, now: db.now() };
  const [r] = await db.rows(what, S.RENEW_LEASE, params);
  if (r?.held === true) return true;
  // Taken over, or renewed meanwhile by a concurrent call (see RENEW_LEASE): the row as it is.
  return (await db.count(what, S.RENEW_LEASE_NOW, params)) === 1;
}

export async function releaseLease(db: PgDb, fileId: string, owner: string): Promise<void> {
  await db.count(`releasing the lease of ${fileId}`, S.RELEASE_LEASE, { owner, file_id: fileId });
}
