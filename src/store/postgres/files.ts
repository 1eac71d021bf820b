// The PostgreSQL store's files area: registering and claiming files (a batch at once, or file
// by file after a race), their paths, transitions and patches.

import type pg from 'pg';
import { DroplineError } from '../../errors.ts';
import { claimVerdict, DUPLICATE_ACTIVE_STATES, DUPLICATE_RECENT_STATES } from '../lifecycle.ts';
import { foldName, num, patchColumns, type Row, str, toFile } from '../mapping.ts';
import type {
  ClaimedFile,
  ClaimOptions,
  FilePatch,
  FileRecord,
  FileState,
  NewFile,
  ReadyFile,
} from '../store.ts';
import { intArray, textArray } from './arrays.ts';
import type { PgDb } from './connection.ts';
import * as S from './sql.ts';

function patchParams(patch: FilePatch | undefined): Record<string, unknown> {
  return patchColumns(patch, (b) => b);
}

/** claimBatch met a row it did not see in its lookup: the batch is decided again file by file. */
class ClaimRace extends Error {}

export async function registerFile(db: PgDb, file: NewFile): Promise<{ file: FileRecord; created: boolean }> {
  const what = `registering ${file.fileId}`;
  const key = { source: file.source, path: file.path, sha256: file.sha256, file_id: file.fileId };
  // Looked up first: an INSERT that conflicts still takes a number of the sequence.
  const [known] = await db.rows(what, S.REGISTERED, key);
  if (known) return { file: toFile(known), created: false };
  const [inserted] = await db.rows(what, S.INSERT_FILE, {
    ...key,
    name: file.name,
    name_folded: foldName(file.name),
    bytes: file.bytes,
    state: file.state,
    forced: file.forced === true,
    rejection_code: file.rejection?.code ?? null,
    rejection_message: file.rejection?.message ?? null,
    reason: file.rejection?.message ?? null,
    // A rejection with its parameters: its code is its reason's (FileRecord.reasonCode).
    reason_code: file.rejection?.params ? file.rejection.code : null,
    reason_params: file.rejection?.params ? JSON.stringify(file.rejection.params) : null,
    now: db.now(),
  });
  if (inserted) return { file: toFile(inserted), created: true };
  // Another writer recorded it meanwhile: its row (the INSERT waited for its commit).
  const [winner] = await db.rows(what, S.REGISTERED, key);
  if (!winner) throw new DroplineError('DROPLINE_ERR_STORE_CONFLICT', `${what}: conflict without a row`);
  return { file: toFile(winner), created: false };
}

export async function claimFiles(
  db: PgDb,
  source: string,
  files: readonly ReadyFile[],
  options: ClaimOptions,
): Promise<ClaimedFile[]> {
  if (files.length === 0) return [];
  const what = `claiming files of ${source}`;
  const places = new Set(files.map((f) => `${f.path}\n${f.sha256}`));
  // The batch as a whole (a few statements), unless one place comes twice in it; when an
  // insert meets a row recorded without the claim lock (registerFile), that transaction is
  // rolled back and the batch decided again file by file, each seeing the one before.
  if (places.size === files.length) {
    try {
      return await db.tx(what, (c) => claimBatch(db, c, source, files, options));
    } catch (err) {
      // (transaction() wraps what fn throws in the store's error: the race is its cause)
      if (!(err instanceof ClaimRace || (err as Error).cause instanceof ClaimRace)) throw err;
    }
  }
  return db.tx(what, (c) => claimEach(db, c, source, files, options));
}

/** The claim lock of every content of the batch (see CLAIM_LOCKS). */
async function claimLocks(
  db: PgDb,
  c: pg.PoolClient,
  source: string,
  files: readonly ReadyFile[],
): Promise<void> {
  await db.rows(
    `claiming files of ${source}`,
    S.CLAIM_LOCKS,
    { source, shas: files.map((f) => f.sha256) },
    c,
  );
}

/**
 * One lookup for the batch, the decisions made here in the batch's order as claimEach makes
 * them (a file claimed earlier in the batch counts for the generation of the next one of its
 * content, and is the file it duplicates), one insert. Throws ClaimRace when a row is missing.
 */
async function claimBatch(
  db: PgDb,
  c: pg.PoolClient,
  source: string,
  files: readonly ReadyFile[],
  options: ClaimOptions,
): Promise<ClaimedFile[]> {
  const what = `claiming files of ${source}`;
  const now = db.now();
  const force = options.force === true;
  await claimLocks(db, c, source, files);
  const found = await db.rows(
    what,
    S.CLAIM_BATCH_LOOKUP,
    {
      source,
      paths: textArray(files.map((f) => f.path)),
      shas: textArray(files.map((f) => f.sha256)),
      names: textArray(files.map((f) => f.name)),
      force,
      active: DUPLICATE_ACTIVE_STATES,
      recent: DUPLICATE_RECENT_STATES,
      since: options.duplicateSince,
      now,
    },
    c,
  );
  const same = new Map<string, Row>();
  const prior = new Map<string, number>();
  /** The file a new one of this content would duplicate: a row, or a file of this batch (its index). */
  const candidate = new Map<string, Row | number>();
  for (const r of found) {
    if (r.kind === 'same') same.set(`${str(r.key)}\n${str(r.sha256)}`, r);
    else {
      const sha = str(r.key);
      prior.set(sha, num(r.prior));
      if (r.file_id !== null) candidate.set(sha, r);
    }
  }
  const out: (ClaimedFile | null)[] = new Array(files.length).fill(null);
  /** Of each file inserted: its index in the batch, fileId, the candidate it duplicates. */
  const inserts: {
    i: number;
    fileId: string;
    state: string;
    dup: Row | number | null;
    code: string | null;
    message: string | null;
    params: string | null;
  }[] = [];
  const provisional = new Map<number, FileRecord>();
  for (let i = 0; i < files.length; i++) {
    const f = files[i]!;
    const known = same.get(`${f.path}\n${f.sha256}`);
    if (known) {
      out[i] = { file: toFile(known), created: false, duplicateOf: null };
      continue;
    }
    const n = prior.get(f.sha256) ?? 0;
    const cand = n > 0 ? (candidate.get(f.sha256) ?? null) : null;
    const dupRecord = cand === null ? null : typeof cand === 'number' ? provisional.get(cand)! : toFile(cand);
    const { state, rejectionCode, message, params } = claimVerdict(dupRecord);
    const fileId = options.idFor(f.sha256, n + 1);
    inserts.push({ i, fileId, state, dup: cand, code: rejectionCode, message, params });
    prior.set(f.sha256, n + 1);
    // The file just claimed is the newest of its content: the one the next would duplicate,
    // when its state is one that counts (never with force) and no row is newer (a test clock).
    const newest = cand === null || typeof cand === 'number' || cand.newer !== true;
    if (!force && DUPLICATE_ACTIVE_STATES.includes(state as FileState) && newest) {
      candidate.set(f.sha256, i);
      provisional.set(i, { fileId, name: f.name, state } as FileRecord);
    }
  }
  if (inserts.length === 0) return out as ClaimedFile[];
  const rows = await db.rows(
    what,
    S.INSERT_CLAIMED,
    {
      source,
      force,
      file_ids: textArray(inserts.map((x) => x.fileId)),
      names: textArray(inserts.map((x) => files[x.i]!.name)),
      folded_names: textArray(inserts.map((x) => foldName(files[x.i]!.name))),
      paths: textArray(inserts.map((x) => files[x.i]!.path)),
      shas: textArray(inserts.map((x) => files[x.i]!.sha256)),
      bytes: intArray(inserts.map((x) => files[x.i]!.bytes)),
      states: textArray(inserts.map((x) => x.state)),
      codes: textArray(inserts.map((x) => x.code)),
      messages: textArray(inserts.map((x) => x.message)),
      params: textArray(inserts.map((x) => x.params)),
      now,
    },
    c,
  );
  if (rows.length < inserts.length) throw new ClaimRace();
  const byId = new Map(rows.map((r) => [str(r.file_id), toFile(r)]));
  const record = new Map<number, FileRecord>();
  for (const x of inserts) {
    const file = byId.get(x.fileId);
    if (!file) throw new ClaimRace();
    record.set(x.i, file);
  }
  for (const x of inserts) {
    const duplicateOf =
      x.dup === null ? null : typeof x.dup === 'number' ? record.get(x.dup)! : toFile(x.dup);
    out[x.i] = { file: record.get(x.i)!, created: true, duplicateOf };
  }
  return out as ClaimedFile[];
}

/** The batch a file at a time: a lookup and an insert each, under the batch's claim locks. */
async function claimEach(
  db: PgDb,
  c: pg.PoolClient,
  source: string,
  files: readonly ReadyFile[],
  options: ClaimOptions,
): Promise<ClaimedFile[]> {
  const what = `claiming files of ${source}`;
  const now = db.now();
  await claimLocks(db, c, source, files);
  const out: ClaimedFile[] = [];
  for (const f of files) {
    const found = await db.rows(
      what,
      S.CLAIM_LOOKUP,
      {
        source,
        path: f.path,
        name: f.name,
        sha256: f.sha256,
        force: options.force === true,
        active: DUPLICATE_ACTIVE_STATES,
        recent: DUPLICATE_RECENT_STATES,
        since: options.duplicateSince,
      },
      c,
    );
    const same = found.find((r) => r.kind === 'same');
    if (same) {
      out.push({ file: toFile(same), created: false, duplicateOf: null });
      continue;
    }
    const counted = found.find((r) => r.kind === 'count')!;
    const prior = num(counted.prior);
    const duplicateOf = prior > 0 && counted.file_id !== null ? toFile(counted) : null;
    const { state, rejectionCode, message, params } = claimVerdict(duplicateOf);
    const fileId = options.idFor(f.sha256, prior + 1);
    const [row] = await db.rows(
      what,
      S.INSERT_FILE,
      {
        file_id: fileId,
        source,
        name: f.name,
        name_folded: foldName(f.name),
        path: f.path,
        sha256: f.sha256,
        bytes: f.bytes,
        state,
        forced: options.force === true,
        rejection_code: rejectionCode,
        rejection_message: message,
        reason: message,
        reason_code: rejectionCode,
        reason_params: params,
        now,
      },
      c,
    );
    if (row) {
      out.push({ file: toFile(row), created: true, duplicateOf });
      continue;
    }
    // Recorded meanwhile by a writer that takes no claim lock (registerFile): its row.
    const [again] = await db.rows(
      what,
      S.REGISTERED,
      { source, path: f.path, sha256: f.sha256, file_id: fileId },
      c,
    );
    if (
      again &&
      str(again.source) === source &&
      str(again.path) === f.path &&
      str(again.sha256) === f.sha256
    ) {
      out.push({ file: toFile(again), created: false, duplicateOf: null });
      continue;
    }
    throw new DroplineError(
      'DROPLINE_ERR_STORE_CONFLICT',
      `claiming ${f.path}: fileId ${fileId} already taken`,
    );
  }
  return out;
}

export async function setPaths(
  db: PgDb,
  paths: readonly { fileId: string; path: string; from?: string }[],
): Promise<void> {
  if (paths.length === 0) return;
  await db.rows('setting paths', S.SET_PATHS, {
    file_ids: paths.map((p) => p.fileId),
    paths: paths.map((p) => p.path),
    froms: paths.map((p) => p.from ?? null),
    now: db.now(),
  });
}

export async function countBySha(db: PgDb, source: string, sha256: string): Promise<number> {
  const [r] = await db.rows('counting files', S.COUNT_BY_SHA, { source, sha256 });
  return num(r?.n ?? 0);
}

export async function transition(
  db: PgDb,
  fileId: string,
  to: FileState,
  options: { from?: readonly FileState[]; owner?: string; patch?: FilePatch } = {},
): Promise<FileRecord | null> {
  const [r] = await db.rows(`moving ${fileId} to ${to}`, S.PATCH_FILE, {
    ...patchParams(options.patch),
    to,
    now: db.now(),
    file_id: fileId,
    from: options.from ?? null,
    owner: options.owner ?? null,
  });
  return r ? toFile(r) : null;
}

export async function updateFile(db: PgDb, fileId: string, patch: FilePatch): Promise<void> {
  await db.rows(`updating ${fileId}`, S.PATCH_FILE, {
    ...patchParams(patch),
    to: null,
    now: db.now(),
    file_id: fileId,
    from: null,
    owner: null,
  });
}
