// What one step of retention did (docs/store.md "Retention").

/** What one prune step (Store.prune) did. */
export interface PruneStep {
  /** The file whose rows were removed in this step, or null when only orphans were (or nothing). */
  fileId: string | null;
  /** The file was marked pruned in this step (its counts kept). */
  marked: boolean;
  /** The file has no rows left after this step. */
  fileDone: boolean;
  recipients: number;
  /** Delivery reports of the file (and orphan reports) removed. */
  events: number;
  /** Replies received before the cutoff removed, with their answers (once no file is left). */
  replies: number;
  /** Nothing is left to prune before this cutoff. */
  idle: boolean;
}
