// status, report, retry, pause, resume, cancel: acting on files the store knows.

import { once } from 'node:events';
import { type FileHandle, open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { errnoInWords } from '../../errno.ts';
import { DroplineError } from '../../errors.ts';
import { changeFileState, STATE_ACTIONS, type StateAction } from '../../pipeline/actions.ts';
import { buildManifest, type Manifest, manifestOf, reportCsv } from '../../pipeline/reports.ts';
import type { Runtime } from '../../pipeline/runtime.ts';
import { paceLine } from '../../pipeline/workers.ts';
import { withRuntime } from './context.ts';
import type { SetExit } from './index.ts';

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
  for (const e of m.errors.slice(0, 10)) lines.push(`  line ${e.line}: ${e.code} ${e.message}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function mustManifest(rt: Runtime, fileId: string): Promise<Manifest> {
  const m = await manifestOf(rt.store, fileId);
  if (!m) throw new DroplineError('DROPLINE_ERR_UNKNOWN_FILE', fileId);
  return m;
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
    .description('files and their progress')
    .argument('[fileId]')
    .option('--json', 'manifests as JSON')
    .option('--limit <n>', 'newest files shown', '50')
    .action(async (fileId: string | undefined, opts: { json?: boolean; limit: string }, cmd: Command) => {
      await withRuntime(cmd, {}, async (rt) => {
        if (fileId) {
          printManifest(await mustManifest(rt, fileId), opts.json ?? false);
          return;
        }
        const files = await rt.store.listFiles({ limit: Number(opts.limit) || 50 });
        const counts = await rt.store.countsOf(files.map((f) => f.fileId));
        const manifests: Manifest[] = files.flatMap((f) => {
          const c = counts.get(f.fileId);
          return c ? [buildManifest(f, c)] : [];
        });
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(manifests, null, 2)}\n`);
          return;
        }
        if (manifests.length === 0) process.stdout.write('no files yet\n');
        // An account slowed down by 429s or 5xx says so (it recovers by itself).
        for (const a of await rt.store.sendBudgets())
          if (a.pace < 1 || a.blockedUntil) process.stdout.write(`${paceLine(a)}\n`);
        for (const m of manifests) {
          const c = m.counts;
          process.stdout.write(
            `${m.fileId}  ${m.state.padEnd(10)} ${m.name}  records ${fmt(c.records)}  valid ${fmt(c.valid)}  submitted ${fmt(c.submitted)}  delivered ${fmt(c.delivered)}  undelivered ${fmt(c.undelivered)}  pending ${fmt(c.pendingDelivery)}${m.prunedAt ? `  (rows pruned ${m.prunedAt})` : ''}${m.rejection ? `  ${m.rejection.code}` : m.reason && m.state !== 'completed' ? `  (${m.reason})` : ''}${m.worker ? `  worker ${m.worker}` : ''}${m.takenOverFrom ? ` (took over from ${m.takenOverFrom})` : ''}${m.reportPending ? '  report pending' : ''}\n`,
          );
        }
      });
      setExit(0);
    });

  program
    .command('report')
    .description('per-recipient CSV report')
    .argument('<fileId>')
    .option('--out <path>', 'write to a file instead of stdout')
    .action(async (fileId: string, opts: { out?: string }, cmd: Command) => {
      await withRuntime(cmd, {}, async (rt) => {
        const m = await mustManifest(rt, fileId);
        if (m.prunedAt)
          throw new DroplineError(
            'DROPLINE_ERR_PRUNED',
            `${fileId}: its recipients were removed by retention on ${m.prunedAt}; dropline status ${fileId} shows its counts`,
          );
        const rows = reportCsv(rt.store, fileId, { includeText: rt.loaded.config.report.includeText });
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
    .option('--json')
    .action(async (fileId: string, opts: { json?: boolean }, cmd: Command) => {
      await withRuntime(cmd, {}, async (rt) => {
        await mustManifest(rt, fileId);
        // Under the file's lease: a daemon checking it now lets go within moments.
        const requeued = await rt.pipeline.retry(fileId, { waitMs: rt.loaded.config.leaseMs });
        if (requeued === null)
          throw new DroplineError(
            'DROPLINE_ERR_FILE_STATE',
            `${fileId} is being driven by another dropline process; run retry again once it has stopped`,
          );
        if (requeued === 0) process.stderr.write(`${fileId}: no failed or in-doubt chunk to resend\n`);
        const m = await mustManifest(rt, fileId);
        printManifest(m, opts.json ?? false);
        setExit(successState(m.state) ? 0 : 1);
      });
    });

  for (const verb of Object.keys(STATE_ACTIONS) as StateAction[]) {
    program
      .command(verb)
      .description(`${verb} a file between chunks`)
      .argument('<fileId>')
      .option('--json')
      .action(async (fileId: string, opts: { json?: boolean }, cmd: Command) => {
        await withRuntime(cmd, {}, async (rt) => {
          // The state change is the user's (no lease: it stops a send between chunks); what
          // follows is the lease holder's. When another process drives the file, it drives
          // the resumed file or writes the paused or cancelled one's reports itself.
          await changeFileState(rt.store, rt.logger, fileId, verb, 'by a user');
          let m = await mustManifest(rt, fileId);
          if (verb === 'resume') {
            await rt.pipeline.drive(fileId);
            m = await mustManifest(rt, fileId);
          } else
            await rt.pipeline.rewriteReports(fileId, { waitMs: Math.min(rt.loaded.config.leaseMs, 5000) });
          printManifest(m, opts.json ?? false);
        });
        setExit(0);
      });
  }
}
