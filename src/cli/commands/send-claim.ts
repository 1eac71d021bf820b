// `dropline send`'s claim of the copy it placed in processing/ (docs/runbook.md "Sending from
// cron"): the copy is either tracked by the record the claim made for it, or removed. The
// claim gives back another record when the store knows the same content under the same name
// and it is not finished (a file partial, paused or being sent), and nothing when the copy
// could not be read: left in processing/, such a copy would be no file's, for ever.

import type { Runtime } from '../../app/runtime.ts';
import { DroplineError } from '../../errors.ts';
import type { Source, SourceEntry } from '../../sources/source.ts';
import type { FileRecord } from '../../store/store.ts';

/** States send goes on driving when the claim finds the file recorded before (a crashed send). */
const CARRIED_ON = new Set(['validating', 'sending']);

/**
 * Claims `entry` (the copy, in processing/) and drives it when it is to be sent now. The
 * record to follow; throws DROPLINE_ERR_FILE_STATE when another dropline process drives it,
 * or when the same content is already known under this name in a state send does not drive.
 */
export async function claimCopy(
  rt: Runtime,
  source: Source,
  entry: SourceEntry,
  options: { force: boolean; say: (line: string) => void },
): Promise<FileRecord> {
  const file = await rt.pipeline.claim(source, entry, { force: options.force });
  // Another record, or none: the copy is still where send put it and no record has it.
  const untracked = file === null || (file.path !== entry.path && (await source.exists(entry.path)));
  if (untracked) await removeCopy(rt, source, entry.path);
  if (file === null)
    throw new DroplineError(
      'DROPLINE_ERR_FILE_UNREADABLE',
      `${entry.name}: its copy in ${entry.path} could not be read (see the warning above); nothing was sent`,
    );
  const busy = () =>
    new DroplineError(
      'DROPLINE_ERR_FILE_STATE',
      `${entry.name} is already being sent as ${file.fileId} by another dropline process; nothing was sent again`,
    );
  if (untracked && !CARRIED_ON.has(file.state))
    throw new DroplineError(
      'DROPLINE_ERR_FILE_STATE',
      `${entry.name} is already known as ${file.fileId}, which is ${file.state}: the same content under the same name; nothing was sent again (dropline status ${file.fileId})`,
    );
  if (untracked)
    options.say(`${entry.name} is already known as ${file.fileId} (${file.state}): sending that one`);
  if ((file.state === 'validating' || file.state === 'sending') && !(await rt.pipeline.drive(file.fileId)))
    throw busy();
  return file;
}

/** The copy send placed: removed, or said to be left (the user removes it). */
async function removeCopy(rt: Runtime, source: Source, path: string): Promise<void> {
  try {
    await source.remove(path);
  } catch (err) {
    rt.logger.warn(
      { source: source.name, path, err: (err as Error).message },
      `could not remove the copy send placed in ${path}: remove it by hand`,
    );
  }
}
