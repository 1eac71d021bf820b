// What `dropline workers` and /api/workers show: every worker heard from in the last day, with
// its heartbeat and the files it holds, and each account's send budget (its pace after 429s
// and 5xx, its requests in flight across all workers).
import type { BudgetView } from '../core/budget.ts';
import { type Store, WORKER_SILENT_MS, type WorkerRecord } from '../store/store.ts';

/** How often a `dropline run` says it is alive. */
export const HEARTBEAT_MS = 5000;

export type WorkerStatus = 'alive' | 'dead' | 'stopped';

export interface WorkersView {
  readonly workers: readonly (WorkerRecord & { readonly status: WorkerStatus })[];
  readonly accounts: readonly BudgetView[];
}

export async function workersView(store: Store): Promise<WorkersView> {
  const [workers, accounts] = await Promise.all([store.listWorkers(), store.sendBudgets()]);
  return {
    workers: workers.map((w) => ({
      ...w,
      status: w.stoppedAt ? 'stopped' : w.heartbeatAgeMs > WORKER_SILENT_MS ? 'dead' : 'alive',
    })),
    accounts,
  };
}

export function workersText(view: WorkersView): string {
  const lines: string[] = [];
  if (view.workers.length === 0) lines.push('no worker heard from in the last 24 h');
  for (const w of view.workers) {
    const age = Math.round(w.heartbeatAgeMs / 1000);
    lines.push(
      `${w.workerId}  ${w.status.padEnd(7)} heartbeat ${age} s ago  started ${w.startedAt}  dropline ${w.version}  files ${w.files.length}`,
    );
    for (const f of w.files)
      lines.push(
        `  ${f.fileId}  ${f.state.padEnd(10)} ${f.name}${f.takenOverFrom ? `  (taken over from ${f.takenOverFrom})` : ''}`,
      );
  }
  for (const a of view.accounts) lines.push(paceLine(a));
  return `${lines.join('\n')}\n`;
}

/** An account's budget in one line: its pace (and why it was lowered), its requests in flight. */
export function paceLine(a: BudgetView): string {
  const pace =
    a.pace < 1
      ? `sending at ${Math.round(a.pace * 100)}% of its rate and concurrency since ${a.slowedAt} (${a.reason})`
      : 'full pace';
  return `account ${a.account}: ${pace}, ${a.inFlight} request(s) in flight${a.blockedUntil ? `, held until ${a.blockedUntil}` : ''}`;
}
