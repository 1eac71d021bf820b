// `dropline prune [--days N] [--json]`: retention on demand (docs/store.md "Retention").
import type { Command } from 'commander';
import { DroplineError } from '../../errors.ts';
import { commandLogger, withRuntime } from './context.ts';
import type { SetExit } from './index.ts';

export function registerPrune(program: Command, setExit: SetExit): void {
  program
    .command('prune')
    .description(
      'remove the recipients and delivery reports of files finished more than retentionDays ago (their manifests stay)',
    )
    .option('--days <n>', 'this retention instead of retentionDays')
    .option('--json', 'print what was removed as JSON')
    .action(async (opts: { days?: string; json?: boolean }, cmd: Command) => {
      const logger = await commandLogger();
      await withRuntime(cmd, { logger }, async (rt) => {
        const days = opts.days === undefined ? rt.loaded.config.retentionDays : Number(opts.days);
        if (!(Number.isFinite(days) && days >= 0))
          throw new DroplineError('DROPLINE_ERR_USAGE', `--days ${opts.days}: a number of days, 0 or more`);
        if (days === 0 && opts.days === undefined) {
          process.stdout.write('retentionDays is 0: everything is kept (give --days to prune anyway)\n');
          return;
        }
        const { pruneOld } = await import('../../store/retention.ts');
        const totals = await pruneOld(rt.store, { retentionDays: days });
        if (opts.json) process.stdout.write(`${JSON.stringify(totals)}\n`);
        else
          process.stdout.write(
            `pruned ${totals.files} file(s) finished before ${totals.finishedBefore}: ` +
              `${totals.recipients.toLocaleString('en-US')} recipients, ${totals.events.toLocaleString('en-US')} delivery reports removed\n`,
          );
      });
      setExit(0);
    });
}
