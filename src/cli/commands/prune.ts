// `dropline prune [--days N] [--json]`: retention on demand (docs/store.md "Retention").
import type { Command } from 'commander';
import { withStore } from './context.ts';
import type { SetExit } from './options.ts';
import { jsonHelp, numberOption } from './options.ts';

export function registerPrune(program: Command, setExit: SetExit): void {
  program
    .command('prune')
    .description(
      'remove the recipients and delivery reports of files finished more than retentionDays ago (their manifests stay), and replies received before then',
    )
    .option('--days <n>', 'this retention instead of retentionDays', numberOption(0, 100_000))
    .option('--json', jsonHelp('what was removed'))
    .action(async (opts: { days?: number; json?: boolean }, cmd: Command) => {
      await withStore(cmd, async (store, loaded) => {
        const days = opts.days ?? loaded.config.retentionDays;
        if (days === 0 && opts.days === undefined) {
          process.stdout.write('retentionDays is 0: everything is kept (give --days to prune anyway)\n');
          return;
        }
        const { pruneOld } = await import('../../store/retention.ts');
        const totals = await pruneOld(store, { retentionDays: days });
        if (opts.json) process.stdout.write(`${JSON.stringify(totals)}\n`);
        else
          process.stdout.write(
            `pruned ${totals.files} file(s) finished before ${totals.finishedBefore}: ` +
              `${totals.recipients.toLocaleString('en-US')} recipients, ${totals.events.toLocaleString('en-US')} delivery reports, ` +
              `${totals.replies.toLocaleString('en-US')} replies removed\n`,
          );
      });
      setExit(0);
    });
}
