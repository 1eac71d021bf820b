// status, report, retry, pause, resume, cancel: acting on files the store knows.

import { once } from 'node:events';
import { type FileHandle, open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { errnoInWords } from '../../errno.ts';
import { DroplineError } from '../../errors.ts';
import { changeFileState, STATE_ACTIONS, type StateAction } from '../../pipeline/actions.ts';
import { buildManifest, detailText, type Manifest, manifestOf, reportCsv } from '../../pipeline/reports.ts';
import { paceLine } from '../../pipeline/workers.ts';
import type { FileRecord, Store } from '../../store/store.ts';
import { withRuntime, withStore } from './context.ts';
import type { SetExit } from './options.ts';
import { jsonHelp, numberOption } from './options.ts';
import { followFile, receiveReports } from './reports-wait.ts';

const fmt = (n: number) => n.toLocaleString('en-US');

/** The states a command ends in successfully. */
export function successState(state: string): boolean {
  return state === 'submitted' || state === 'completed' || state === 'sending' || state === 'scheduled';
}

export function progressLine(m: Manifest): string {
  const c = m.counts;
  return `${m.name} ${m.state}: ${fmt(c.records)} records, ${fmt(c.valid)} valid · chunks ${fmt(c.chunksAccepted)}/${fmt(c.chunks)} accepted · ${fmt(c.submitted)} submitted · ${fmt(c.delivered)} delivered, ${c.accepted > 0 ? `${fmt(c.accepted)} accepted, ` : ''}${fmt(c.undelivered)} undelivered, ${fmt(c.pendingDelivery)} pending`;
}

export function printManifest(m: Manifest, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(m, null, 2)}\n`);
    return;
  }
  const lines = [`${progressLine(m)}`, `  fileId ${m.fileId} · source ${m.source} · ${m.path}`];
  if (m.worker || m.takenOverFrom)
    lines.push(
      `  ${m.worker ? `worker ${m.worker}` : 'no worker holds it now'}${m.takenOverFrom ? ` · taken over from ${m.takenOverFrom}` : ''}`,
    );
  const c = m.counts;
  if (c.invalid + c.duplicates + c.suppressed > 0) {
    lines.push(
      `  not sent: ${fmt(c.invalid)} invalid, ${fmt(c.duplicates)} duplicate, ${fmt(c.suppressed)} suppressed`,
    );
  }
  if (c.rejected + c.failed + c.inDoubt > 0) {
    lines.push(
      `  ${fmt(c.rejected)} rejected by the service, ${fmt(c.failed)} failed, ${fmt(c.inDoubt)} in doubt`,
    );
  }
  if (c.possibleDuplicates > 0)
    lines.push(`  ${fmt(c.possibleDuplicates)} resent after being in doubt (possible duplicates)`);
  if (c.cancelled > 0) lines.push(`  ${fmt(c.cancelled)} never sent: the file was cancelled`);
  if (m.reportPending)
    lines.push(
      `  report pending: the source refused ${fmt(m.reportPending.failures)} write(s) since ${m.reportPending.since}; next try ${m.reportPending.retryAt}`,
    );
  if (m.rejection) lines.push(`  ${m.rejection.code}: ${m.rejection.message}`);
  else if (m.reason) lines.push(`  ${m.reason}`);
  if (m.detail) lines.push(`  ${detailText(m.detail)}`);
  for (const e of m.errors.slice(0, 10)) lines.push(`  line ${e.line}: ${e.code} ${e.message}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function mustManifest(store: Store, fileId: string): Promise<Manifest> {
  const m = await manifestOf(store, fileId);
  if (!m) throw new DroplineError('DROPLINE_ERR_UNKNOWN_FILE', fileId);
  return m;
}

/**
 * The files `status <which>` names: the file of that fileId; else those whose fileId starts
 * with it, or whose name is it (a name reused day after day names several), newest first.
 */
async function filesNamed(store: Store, which: string, limit: number): Promise<FileRecord[]> {
  const exact = await store.getFile(which);
  if (exact) return [exact];
  const folded = which.toLowerCase();
  const found = await store.listFiles({ search: which, limit: Math.max(limit, 200) });
  return found.filter((f) => f.fileId.startsWith(which) || f.name.toLowerCase() === folded).slice(0, limit);
}

/** `status` without a fileId, or with a name or prefix several files share: one line each. */
async function printList(store: Store, files: readonly FileRecord[], json: boolean): Promise<void> {
  const counts = await store.countsOf(files.map((f) => f.fileId));
  const manifests: Manifest[] = files.flatMap((f) => {
    const c = counts.get(f.fileId);
    return c ? [buildManifest(f, c)] : [];
  });
  if (json) {
    process.stdout.write(`${JSON.stringify(manifests, null, 2)}\n`);
    return;
  }
  if (manifests.length === 0) process.stdout.write('no files yet\n');
  // An account slowed down by 429s or 5xx says so (it recovers by itself).
  for (const a of await store.sendBudgets())
    if (a.pace < 1 || a.blockedUntil) process.stdout.write(`${paceLine(a)}\n`);
  for (const m of manifests) {
    const c = m.counts;
    process.stdout.write(
      `${m.fileId}  ${m.state.padEnd(10)} ${m.name}  records ${fmt(c.records)}  valid ${fmt(c.valid)}  submitted ${fmt(c.submitted)}  delivered ${fmt(c.delivered)}  undelivered ${fmt(c.undelivered)}  pending ${fmt(c.pendingDelivery)}${m.prunedAt ? `  (rows pruned ${m.prunedAt})` : ''}${m.rejection ? `  ${m.rejection.code}` : m.reason && m.state !== 'completed' ? `  (${m.reason})` : ''}${m.worker ? `  worker ${m.worker}` : ''}${m.takenOverFrom ? ` (took over from ${m.takenOverFrom})` : ''}${m.detail ? `  (${detailText(m.detail)})` : ''}${m.reportPending ? '  report pending' : ''}\n`,
    );
  }
}

/** `report --out <path>` opened for writing, or a usage error saying why it cannot be. */
async function openOut(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'w');
  } catch (err) {
    throw outError(path, err);
  }
}

function outError(path: string, err: unknown): DroplineError {
  return new DroplineError('DROPLINE_ERR_USAGE', `--out ${path}: ${errnoInWords(err)}`, { cause: err });
}

export function registerFileCommands(program: Command, setExit: SetExit): void {
  program
    .command('status')
    .description(
      'files and their progress; with a fileId, a fileId prefix or a file name: that file (or the files of that name)',
    )
    .argument('[file]', 'a fileId, the start of one, or a file name such as campana.txt')
    .option('--json', jsonHelp('the manifest (several files: an array of them, newest first)'))
    .option('--limit <n>', 'newest files shown', numberOption(1, 10_000, true), 50)
    .action(async (which: string | undefined, opts: { json?: boolean; limit: number }, cmd: Command) => {
      await withStore(cmd, async (store) => {
        if (which === undefined) {
          await printList(store, await store.listFiles({ limit: opts.limit }), opts.json ?? false);
          return;
        }
        const files = await filesNamed(store, which, opts.limit);
        if (files.length === 0) throw new DroplineError('DROPLINE_ERR_UNKNOWN_FILE', which);
        if (files.length === 1)
          printManifest(await mustManifest(store, files[0]!.fileId), opts.json ?? false);
        else await printList(store, files, opts.json ?? false);
      });
      setExit(0);
    });

  program
    .command('report')
    .description('per-recipient CSV report')
    .argument('<fileId>')
    .option('--out <path>', 'write to a file instead of stdout')
    .action(async (fileId: string, opts: { out?: string }, cmd: Command) => {
      await withStore(cmd, async (store, loaded) => {
        const m = await mustManifest(store, fileId);
        if (m.prunedAt)
          throw new DroplineError(
            'DROPLINE_ERR_PRUNED',
            `${fileId}: its recipients were removed by retention on ${m.prunedAt}; dropline status ${fileId} shows its counts`,
          );
        const rows = reportCsv(store, fileId, { includeText: loaded.config.report.includeText });
        if (opts.out === undefined) {
          for await (const chunk of rows) {
            if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
          }
          return;
        }
        // --out is opened once the fileId is known to have a report: a mistyped fileId must
        // not empty a report.csv that is already there.
        const out = opts.out;
        const fh = await openOut(out);
        // Through pipeline: a write that fails (a full disk) ends the copy and closes the file
        // with its error, never an unhandled 'error' event. Only the file's own errors are
        // --out's: one of the store's while reading the rows stays the store's.
        const file = fh.createWriteStream();
        let failed: unknown = null;
        file.once('error', (err) => {
          failed = err;
        });
        await pipeline(rows, file).catch((err: unknown) => {
          throw err === failed ? outError(out, err) : err;
        });
      });
      setExit(0);
    });

  program
    .command('retry')
    .description('resend only the chunks that failed for good or are held in doubt')
    .argument('<fileId>')
    .option(
      '--wait',
      'receive the delivery reports here until every accepted recipient has a final status (or deliveryTimeout), whatever the file ends as',
    )
    .option('--json', jsonHelp('the manifest'))
    .action(async (fileId: string, opts: { json?: boolean; wait?: boolean }, cmd: Command) => {
      await withRuntime(cmd, {}, async (rt) => {
        await mustManifest(rt.store, fileId);
        const receiver = await receiveReports(rt, rt.logger, {
          wait: opts.wait ?? false,
          what: 'the chunks it resends',
        });
        try {
          // Under the file's lease: a daemon checking it now lets go within moments.
          const requeued = await rt.pipeline.retry(fileId, { waitMs: rt.loaded.config.leaseMs });
          if (requeued === null)
            throw new DroplineError(
              'DROPLINE_ERR_FILE_STATE',
              `${fileId} is being driven by another dropline process; run retry again once it has stopped`,
            );
          if (requeued === 0) process.stderr.write(`${fileId}: no failed or in-doubt chunk to resend\n`);
          if (opts.wait) await followFile(rt, fileId, { say: (line) => process.stderr.write(`${line}\n`) });
          const m = await mustManifest(rt.store, fileId);
          printManifest(m, opts.json ?? false);
          setExit(successState(m.state) ? 0 : 1);
        } finally {
          await receiver?.close();
        }
      });
    });

  for (const verb of Object.keys(STATE_ACTIONS) as StateAction[]) {
    program
      .command(verb)
      .description(`${verb} a file between chunks`)
      .argument('<fileId>')
      .option('--json', jsonHelp('the manifest'))
      .action(async (fileId: string, opts: { json?: boolean }, cmd: Command) => {
        await withRuntime(cmd, {}, async (rt) => {
          // The state change is the user's (no lease: it stops a send between chunks); what
          // follows is the lease holder's. When another process drives the file, it drives
          // the resumed file or writes the paused or cancelled one's reports itself.
          await changeFileState(rt.store, rt.logger, fileId, verb, 'USER');
          let m = await mustManifest(rt.store, fileId);
          if (verb === 'resume') {
            await rt.pipeline.drive(fileId);
            m = await mustManifest(rt.store, fileId);
          } else
            await rt.pipeline.rewriteReports(fileId, { waitMs: Math.min(rt.loaded.config.leaseMs, 5000) });
          printManifest(m, opts.json ?? false);
        });
        setExit(0);
      });
  }
}
