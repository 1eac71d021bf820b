// `dropline workers [--json]`: the workers on this store, their heartbeats and files, and each
// account's send budget (docs/scaling.md).
import type { Command } from 'commander';
import { withRuntime } from './context.ts';
import type { SetExit } from './index.ts';

export function registerWorkers(program: Command, setExit: SetExit): void {
  program
    .command('workers')
    .description(
      'the workers heard from in the last day: heartbeats, the files each drives, the accounts’ pace',
    )
    .option('--json', 'as JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      await withRuntime(cmd, {}, async (rt) => {
        const { workersText, workersView } = await import('../../pipeline/workers.ts');
        const view = await workersView(rt.store);
        process.stdout.write(opts.json ? `${JSON.stringify(view, null, 2)}\n` : workersText(view));
      });
      setExit(0);
    });
}
