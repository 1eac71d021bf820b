// `dropline optouts <number> [--json] [--opt-out | --opt-in [--note <text>]]`: a number's
// standing and every change to it (who, what, when), read from the store (docs/opt-outs.md "A
// number's standing"); with a flag, an operator's change first. The number is printed whole,
// as `dropline replies` prints it: the operator asked for that number.
import type { Command } from 'commander';
import { DroplineError } from '../../errors.ts';
import type { Standing, StandingChange } from '../../store/store.ts';
import { withStore } from './context.ts';
import type { SetExit } from './options.ts';

export function registerOptouts(program: Command, setExit: SetExit): void {
  program
    .command('optouts')
    .description('a number’s opt-out standing and its history (any form: 3001234567, +57 300 123 4567)')
    .argument('<number>', 'the number, in any form a drop file may write it')
    .option('--json', 'print the standing as JSON')
    .option('--opt-out', 'put the number on the opt-out list by hand (kept in its history, source operator)')
    .option(
      '--opt-in',
      'take the number off the opt-out list by hand (never off a configured suppression list)',
    )
    .option('--note <text>', 'why, with --opt-out or --opt-in (a ticket, a call): kept in the history')
    .action(async (raw: string, opts: Flags, cmd: Command) => {
      const change = changeOf(opts);
      const number = await sentForm(raw);
      await withStore(cmd, async (store) => {
        if (change) {
          const changed = await store.changeStanding({ number, ...change });
          if (!changed)
            process.stderr.write(`${number}: ${change.optedOut ? 'opted out' : 'not opted out'} already\n`);
        }
        const s = await store.standing(number);
        process.stdout.write(opts.json ? `${JSON.stringify(s, null, 2)}\n` : describeStanding(s));
      });
      setExit(0);
    });
}

interface Flags {
  json?: boolean;
  optOut?: boolean;
  optIn?: boolean;
  note?: string;
}

/** The operator's change the flags ask for, or null (only reading). */
function changeOf(opts: Flags): { optedOut: boolean; note: string | null } | null {
  if (opts.optOut && opts.optIn)
    throw new DroplineError('DROPLINE_ERR_USAGE', 'give --opt-out or --opt-in, not both');
  if (opts.note !== undefined && !opts.optOut && !opts.optIn)
    throw new DroplineError('DROPLINE_ERR_USAGE', '--note goes with --opt-out or --opt-in');
  if (!opts.optOut && !opts.optIn) return null;
  return { optedOut: opts.optOut === true, note: opts.note?.trim() || null };
}

/** The number as campaigns send it (573001234567), the way replies' senders are kept. */
async function sentForm(raw: string): Promise<string> {
  const { makeNumberRules, normalizeNumber } = await import('../../format/numbers.ts');
  const n = normalizeNumber(raw.trim(), { ...makeNumberRules(), allowedCountries: null });
  if (!n.ok) throw new DroplineError('DROPLINE_ERR_USAGE', `${raw}: not a mobile number`);
  return n.number;
}

const CHANGE: Record<StandingChange['change'], string> = {
  opted_out: 'opted out',
  opted_in: 'opted in',
  kept_by_list: 'kept suppressed by a list',
};

function by(c: StandingChange): string {
  const reply = c.reply === null ? '' : ` ${c.reply}`;
  const keyword = c.keyword === null ? '' : ` "${c.keyword}"`;
  if (c.source === 'list') return `by ${c.detail ?? 'a list'} (after reply${reply}${keyword})`;
  return `by ${c.source}${reply}${keyword}${c.detail ? `: ${c.detail}` : ''}`;
}

/** The standing in a few lines: now, then each change oldest first. */
export function describeStanding(s: Standing): string {
  const now = s.optedOut
    ? `opted out since ${s.optedOut.at}${s.optedOut.reply === null ? '' : ` (reply ${s.optedOut.reply})`}`
    : 'not opted out by a reply';
  const lines = [`${s.number}: ${now}`];
  const lastList = s.history.findLast((c) => c.change === 'kept_by_list');
  if (lastList) lines.push(`  configured lists held it at its last opt-in: ${lastList.detail}`);
  lines.push(s.history.length === 0 ? 'history: none' : 'history:');
  for (const c of s.history) lines.push(`  ${c.at}  ${CHANGE[c.change]} ${by(c)}`);
  return `${lines.join('\n')}\n`;
}
