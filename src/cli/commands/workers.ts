// `dropline workers [--json]`: the workers on this store, their heartbeats and files, and each
// account's send budget (docs/scaling.md).
import type { Command } from 'commander';
import { withStore } from './context.ts';
import type { SetExit } from './options.ts';
import { jsonHelp } from './options.ts';

export function registerWorkers(program: Command, setExit: SetExit): void {
  program
    .command('workers')
    .description(
      'the workers heard from in the last day: heartbeats, the files each drives, the accounts’ pace',
    )
    .option('--json', jsonHelp('the workers and accounts'))
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      await withStore(cmd, async (store) => {
        const { workersText, workersView } = await import('../../pipeline/workers.ts');
        const view = await workersView(store);
        process.stdout.write(opts.json ? `${JSON.stringify(view, null, 2)}\n` : workersText(view));
      });
      setExit(0);
    });
}
