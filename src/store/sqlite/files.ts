// The SQLite store's files area: registering and claiming files, their paths, transitions and
// patches (one statement each, the precondition inside).

import type { SQLInputValue } from 'node:sqlite';
import { DroplineError } from '../../errors.ts';
import { claimVerdict, DUPLICATE_ACTIVE_STATES, DUPLICATE_RECENT_STATES } from '../lifecycle.ts';
import { num, patchColumns, toFile } from '../mapping.ts';
import type {
  ClaimedFile,
  ClaimOptions,
  FilePatch,
  FileRecord,
  FileState,
  NewFile,
  ReadyFile,
} from '../store.ts';
import { list, type SqliteDb } from './connection.ts';
import * as S from './sql.ts';

/** A FilePatch as PATCH_SQL's parameters (flags 0/1: node:sqlite takes no booleans). */
function patchParams(patch: FilePatch | undefined): Record<string, SQLInputValue> {
  return patchColumns(patch, (b) => (b ? 1 : 0));
}

const ACTIVE = JSON.stringify(DUPLICATE_ACTIVE_STATES);
const RECENT = JSON.stringify(DUPLICATE_RECENT_STATES);

export async function registerFile(
  db: SqliteDb,
  file: NewFile,
): Promise<{ file: FileRecord; created: boolean }> {
  const now = db.now();
  const { rejection } = file;
  // A rejection with its parameters: its code is its reason's (FileRecord.reasonCode).
  const coded = rejection?.params ? [rejection.code, JSON.stringify(rejection.params)] : [];
  const inserted = db
    .stmt(coded.length > 0 ? S.INSERT_FILE_CODED : S.INSERT_FILE)
    .all(
      file.fileId,
      file.source,
      file.name,
      file.path,
      file.sha256,
      file.bytes,
      file.state,
      file.forced ? 1 : 0,
      rejection?.code ?? null,
      rejection?.message ?? null,
      rejection?.message ?? null,
      ...coded,
      now,
      now,
      file.state,
      now,
    )[0];
  if (inserted) return { file: toFile(inserted), created: true };
  // Same content at the same place, or the same fileId (the same bytes dropped again).
  const existing = db.stmt(S.REGISTERED).get(file.source, file.path, file.sha256, file.fileId, file.fileId);
  if (!existing)
    throw new DroplineError('DROPLINE_ERR_STORE', `registering ${file.fileId}: conflict without a row`);
  return { file: toFile(existing), created: false };
}

export async function claimFiles(
  db: SqliteDb,
  source: string,
  files: readonly ReadyFile[],
  options: ClaimOptions,
): Promise<ClaimedFile[]> {
  if (files.length === 0) return [];
  const now = db.now();
  const same = db.stmt(S.CLAIM_SAME);
  const count = db.stmt(S.COUNT_BY_SHA);
  const active = db.stmt(S.CLAIM_DUPLICATE_OF);
  const insert = db.stmt(S.INSERT_CLAIMED);
  return db.tx(() =>
    files.map((f): ClaimedFile => {
      const existing = same.get({ source, sha: f.sha256, path: f.path, name: f.name, active: ACTIVE });
      if (existing) return { file: toFile(existing), created: false, duplicateOf: null };
      const prior = num(count.get(source, f.sha256)?.n);
      const dup =
        prior > 0 && !options.force
          ? active.get({
              source,
              sha: f.sha256,
              since: options.duplicateSince,
              active: ACTIVE,
              recent: RECENT,
            })
          : undefined;
      const duplicateOf = dup ? toFile(dup) : null;
      const { state, rejectionCode, message, params } = claimVerdict(duplicateOf);
      const row = insert.get(
        options.idFor(f.sha256, prior + 1),
        source,
        f.name,
        f.path,
        f.sha256,
        f.bytes,
        state,
        options.force ? 1 : 0,
        rejectionCode,
        message,
        message,
        rejectionCode,
        params,
        now,
        now,
        state,
        now,
      );
      if (!row)
        throw new DroplineError('DROPLINE_ERR_STORE_CONFLICT', `claiming ${f.path}: fileId already taken`);
      return { file: toFile(row), created: true, duplicateOf };
    }),
  );
}

export async function setPaths(
  db: SqliteDb,
  paths: readonly { fileId: string; path: string; from?: string }[],
): Promise<void> {
  if (paths.length === 0) return;
  const now = db.now();
  const update = db.stmt(S.SET_PATH);
  db.tx(() => {
    for (const p of paths) update.run({ path: p.path, now, file_id: p.fileId, from: p.from ?? null });
  });
}

export async function countBySha(db: SqliteDb, source: string, sha256: string): Promise<number> {
  const r = db.stmt(S.COUNT_BY_SHA).get(source, sha256);
  return num(r?.n);
}

export async function transition(
  db: SqliteDb,
  fileId: string,
  to: FileState,
  options: { from?: readonly FileState[]; owner?: string; patch?: FilePatch } = {},
): Promise<FileRecord | null> {
  // all(), never get(), for a write outside a transaction: get() stops at the first row
  // and resets the statement, and node:sqlite drops the error of the commit that reset
  // does (a full disk). The row would come back for a write the database does not hold.
  const [r] = db.stmt(S.PATCH_SQL).all({
    ...patchParams(options.patch),
    to,
    now: db.now(),
    file_id: fileId,
    from: list(options.from),
    owner: options.owner ?? null,
  });
  return r ? toFile(r) : null;
}

export async function updateFile(db: SqliteDb, fileId: string, patch: FilePatch): Promise<void> {
  db.stmt(S.PATCH_SQL).all({
    ...patchParams(patch),
    to: null,
    now: db.now(),
    file_id: fileId,
    from: null,
    owner: null,
  });
}
