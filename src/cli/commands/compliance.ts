// `dropline compliance --from D --to D [--entity E]` (docs/campaign-rules.md "Compliance"):
// one CSV row per contact the ledger holds, for an auditor (SIC, Ley 2300 de 2023): who was
// contacted, by which channel, account and file, when (the ledger's zone, Bogotá by
// default), under which send window, checked against which lists, in which slot. The store
// alone is opened, read in pages (flat memory however many contacts).
import { once } from 'node:events';
import type { Command } from 'commander';
import { DroplineError } from '../../errors.ts';
import { csvCell } from '../../pipeline/reports.ts';
import { localDateTime, localWeek } from '../../plan/send-window.ts';
import type { ContactCursor, ContactRecord } from '../../store/store.ts';
import { withStore } from './context.ts';
import type { SetExit } from './options.ts';

const PAGE = 5000;
export const COMPLIANCE_HEADER =
  'entity,number,channel,account,source,fileId,file,sentAt,window,lists,daySlot,weekSlot';
const DAY = /^\d{4}-\d{2}-\d{2}$/;

function day(option: string, value: string): string {
  const t = Date.parse(`${value}T00:00:00Z`);
  if (!DAY.test(value) || Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== value)
    throw new DroplineError('DROPLINE_ERR_USAGE', `${option} ${value}: not a date (YYYY-MM-DD)`);
  return value;
}

/** One contact as its CSV line; `timezone`: the ledger's (contactLimit.timezone). */
export function complianceLine(c: ContactRecord, timezone: string): string {
  const lists = (c.lists ?? []).map((l) => `${l.name}=${l.sha256}`).join(';');
  const week = c.weekSlot === null ? '' : `${localWeek(new Date(`${c.day}T12:00:00Z`), 'UTC')}/${c.weekSlot}`;
  return [
    csvCell(c.entity),
    csvCell(c.key),
    csvCell(c.channel),
    csvCell(c.account ?? ''),
    csvCell(c.source ?? ''),
    csvCell(c.fileId ?? ''),
    csvCell(c.fileName ?? ''),
    localDateTime(new Date(c.at), timezone),
    csvCell(c.window ?? ''),
    csvCell(lists),
    `${c.day}/${c.slot}`,
    week,
  ].join(',');
}

export function registerCompliance(program: Command, setExit: SetExit): void {
  program
    .command('compliance')
    .description('the contacts the ledger holds (contactLimit), one CSV row each, for an auditor')
    .requiredOption('--from <date>', 'the first local day (YYYY-MM-DD)')
    .requiredOption('--to <date>', 'the last local day (YYYY-MM-DD), included')
    .option('--entity <name>', "only this entity's contacts")
    .action(async (opts: { from: string; to: string; entity?: string }, cmd: Command) => {
      const from = day('--from', opts.from);
      const to = day('--to', opts.to);
      if (from > to) throw new DroplineError('DROPLINE_ERR_USAGE', `--from ${from} is after --to ${to}`);
      await withStore(cmd, async (store, loaded) => {
        const timezone = loaded.config.contactLimit?.timezone ?? 'America/Bogota';
        const out = process.stdout;
        out.write(`${COMPLIANCE_HEADER}\n`);
        for (let after: ContactCursor | null = null; ; ) {
          const page = await store.contacts({ from, to, entity: opts.entity ?? null, after, limit: PAGE });
          if (page.length === 0) break;
          let buf = '';
          for (const c of page) buf += `${complianceLine(c, timezone)}\n`;
          if (!out.write(buf)) await once(out, 'drain');
          after = page.at(-1)!;
        }
      });
      setExit(0);
    });
}
