// `dropline replies [--since <ISO-8601>] [--file <fileId>] [--review]`: users' replies received
// over SMPP (docs/opt-outs.md, docs/replies.md) as CSV, oldest first, read from the store in
// pages (flat memory however many there are); with --file, every reply joined to that campaign;
// with --review, only those flagged for review.
import { once } from 'node:events';
import type { Command } from 'commander';
import { DroplineError } from '../../errors.ts';
import { csvCell } from '../../pipeline/reports.ts';
import type { ReplyRecord, Store } from '../../store/store.ts';
import { withStore } from './context.ts';
import type { SetExit } from './options.ts';

const PAGE = 5000;
export const REPLIES_HEADER = 'receivedAt,from,to,text,optOut';
/** `--file`: the same columns, then the report.csv line of the recipient the reply answers. */
export const FILE_REPLIES_HEADER = `${REPLIES_HEADER},line`;

export function registerReplies(program: Command, setExit: SetExit): void {
  program
    .command('replies')
    .description('users’ replies (opt-outs and others) as CSV, oldest first')
    .option('--since <time>', 'only replies received at or after this ISO-8601 time (e.g. 2026-11-01)')
    .option('--file <fileId>', 'only the replies joined to this campaign, with the line each answers')
    .option('--review', 'only replies flagged for review: they look like an opt-out, are no keyword')
    .action(async (opts: { since?: string; file?: string; review?: boolean }, cmd: Command) => {
      let since: string | undefined;
      if (opts.since !== undefined) {
        const t = Date.parse(opts.since);
        if (Number.isNaN(t))
          throw new DroplineError('DROPLINE_ERR_USAGE', `--since ${opts.since}: not an ISO-8601 time`);
        since = new Date(t).toISOString();
      }
      await withStore(cmd, async (store) => {
        const review = opts.review === true;
        if (opts.file !== undefined) await writeFileReplies(store, opts.file, { since, review });
        else await writeReplies(store, { since, review });
      });
      setExit(0);
    });
}

function replyLine(r: ReplyRecord): string {
  return `${r.receivedAt},${csvCell(r.from)},${csvCell(r.to)},${csvCell(r.text)},${r.optOut}`;
}

interface Filter {
  since: string | undefined;
  /** Only replies flagged for review (intent `review`). */
  review: boolean;
}

/** Received at or after `since`: the review list is read by id, so its time is checked here. */
const after = (r: ReplyRecord, since: string | undefined) =>
  since === undefined || Date.parse(r.receivedAt) >= Date.parse(since);

async function writeReplies(store: Store, { since, review }: Filter): Promise<void> {
  const out = process.stdout;
  out.write(`${REPLIES_HEADER}\n`);
  for (let afterId = 0; ; ) {
    const page = review
      ? await store.repliesToReview({ afterId, limit: PAGE })
      : await store.replies({ since, afterId, limit: PAGE });
    if (page.length === 0) break;
    let buf = '';
    for (const r of page) if (after(r, since)) buf += `${replyLine(r)}\n`;
    if (!out.write(buf)) await once(out, 'drain');
    afterId = page.at(-1)!.id;
  }
}

/** A campaign's replies: as many as its recipients sent, read at once. */
async function writeFileReplies(store: Store, fileId: string, { since, review }: Filter): Promise<void> {
  if (!(await store.getFile(fileId))) throw new DroplineError('DROPLINE_ERR_UNKNOWN_FILE', fileId);
  const out = process.stdout;
  let buf = `${FILE_REPLIES_HEADER}\n`;
  for (const r of await store.fileReplies(fileId))
    if (after(r, since) && (!review || r.intent === 'review')) buf += `${replyLine(r)},${r.line}\n`;
  if (!out.write(buf)) await once(out, 'drain');
}
