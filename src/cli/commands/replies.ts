// `dropline replies [--since <ISO-8601>] [--review]`: users' replies received over SMPP (docs/opt-outs.md)
// as CSV, oldest first, read from the store in pages (flat memory however many there are).
import { once } from 'node:events';
import type { Command } from 'commander';
import { DroplineError } from '../../errors.ts';
import { csvCell } from '../../pipeline/reports.ts';
import { withStore } from './context.ts';
import type { SetExit } from './options.ts';

const PAGE = 5000;
export const REPLIES_HEADER = 'receivedAt,from,to,text,optOut';

export function registerReplies(program: Command, setExit: SetExit): void {
  program
    .command('replies')
    .description('users’ replies (opt-outs and others) as CSV, oldest first')
    .option('--since <time>', 'only replies received at or after this ISO-8601 time (e.g. 2026-11-01)')
    .option('--review', 'only replies flagged for review: they look like an opt-out, are no keyword')
    .action(async (opts: { since?: string; review?: boolean }, cmd: Command) => {
      let since: string | undefined;
      if (opts.since !== undefined) {
        const t = Date.parse(opts.since);
        if (Number.isNaN(t))
          throw new DroplineError('DROPLINE_ERR_USAGE', `--since ${opts.since}: not an ISO-8601 time`);
        since = new Date(t).toISOString();
      }
      await withStore(cmd, async (store) => {
        const out = process.stdout;
        out.write(`${REPLIES_HEADER}\n`);
        for (let afterId = 0; ; ) {
          const page = opts.review
            ? await store.repliesToReview({ afterId, limit: PAGE })
            : await store.replies({ since, afterId, limit: PAGE });
          if (page.length === 0) break;
          let buf = '';
          for (const r of page)
            if (!opts.review || since === undefined || Date.parse(r.receivedAt) >= Date.parse(since))
              buf += `${r.receivedAt},${csvCell(r.from)},${csvCell(r.to)},${csvCell(r.text)},${r.optOut}\n`;
          if (!out.write(buf)) await once(out, 'drain');
          afterId = page.at(-1)!.id;
        }
      });
      setExit(0);
    });
}
