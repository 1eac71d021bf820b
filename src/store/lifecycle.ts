// The file lifecycle rules a store decides with: which states count as "this content is being
// or was just sent" when the same bytes are dropped again (DUPLICATE_FILE, docs/errors.md).

import type { TextParams } from '../errors.ts';
import type { FileRecord, FileState } from './store.ts';

/** A file with the same content in one of these states makes a new drop a duplicate. */
export const DUPLICATE_ACTIVE_STATES: readonly FileState[] = [
  'validating',
  'scheduled',
  'sending',
  'paused',
  'partial',
];
/** …and in one of these, when it got there within duplicateWindow (ClaimOptions.duplicateSince). */
export const DUPLICATE_RECENT_STATES: readonly FileState[] = ['submitted', 'completed'];

/** The state and rejection a newly claimed file starts with, given the file it duplicates. */
export function claimVerdict(duplicateOf: FileRecord | null): {
  state: FileState;
  rejectionCode: string | null;
  message: string | null;
  /** The message's parameters as JSON (the file's reason's, with its code): null without one. */
  params: string | null;
} {
  if (!duplicateOf) return { state: 'validating', rejectionCode: null, message: null, params: null };
  const { fileId, name, state } = duplicateOf;
  const params: TextParams = { fileId, name, state };
  return {
    state: 'duplicate',
    rejectionCode: 'DUPLICATE_FILE',
    message: `the same content was already sent from this source as ${fileId} (${name}, ${state})`,
    params: JSON.stringify(params),
  };
}
