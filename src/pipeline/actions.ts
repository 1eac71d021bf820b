// What a user may do to a file (the CLI's pause, resume, cancel and the dashboard's buttons):
// one table of which state each action leads to and from which states it applies.

import {
  ACTION_SOURCES,
  type ActionReasonCode,
  type ActionSource,
  DroplineError,
  stateReason,
} from '../errors.ts';
import type { Logger } from '../log.ts';
import type { FileRecord, FileState, Store } from '../store/store.ts';

export const STATE_ACTIONS = {
  pause: { to: 'paused', from: ['scheduled', 'sending'], past: 'paused' },
  resume: { to: 'sending', from: ['paused'], past: 'resumed' },
  cancel: {
    to: 'cancelled',
    from: ['waiting', 'validating', 'scheduled', 'sending', 'paused', 'partial'],
    past: 'cancelled',
  },
} as const satisfies Record<string, { to: FileState; from: readonly FileState[]; past: string }>;

export type StateAction = keyof typeof STATE_ACTIONS;

/** `retry` (Pipeline.retry): failed and in-doubt chunks sent again, from these states. */
export const RETRY_FROM: readonly FileState[] = ['partial', 'sending'];

/**
 * The user's state change (no lease: a send stops between chunks when it finds its file no
 * longer `sending`). `by` says where it came from in the file's reason (PAUSED_BY_USER, "paused
 * by a user"). Throws DROPLINE_ERR_UNKNOWN_FILE or DROPLINE_ERR_FILE_STATE.
 */
export async function changeFileState(
  store: Store,
  logger: Logger,
  fileId: string,
  action: StateAction,
  by: ActionSource,
): Promise<FileRecord> {
  const { to, from, past } = STATE_ACTIONS[action];
  const reason = stateReason(`${past.toUpperCase()}_BY_${by}` as ActionReasonCode);
  const file = await store.transition(fileId, to, { from, patch: reason });
  if (file) {
    logger.info({ fileId, to, by: ACTION_SOURCES[by] }, `file ${past}`);
    // Closing a cancel (its unsent chunks, the original to done/, the reports) is the lease
    // holder's: owed in the store, so a worker does it even if none can now (Pipeline).
    if (action === 'cancel') await store.oweReports(fileId);
    return (await store.getFile(fileId)) ?? file;
  }
  const before = await store.getFile(fileId);
  if (!before) throw new DroplineError('DROPLINE_ERR_UNKNOWN_FILE', fileId);
  throw new DroplineError(
    'DROPLINE_ERR_FILE_STATE',
    `${fileId} is ${before.state}; ${action} applies to a file that is ${from.join(' or ')}`,
  );
}
