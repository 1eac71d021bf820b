// `dropline send <file> [--wait] [--force]`: one file through the whole pipeline now.
import type { Stats } from 'node:fs';
import { copyFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { errnoInWords } from '../../errno.ts';
import { DroplineError } from '../../errors.ts';
import { manifestOf } from '../../pipeline/reports.ts';
import { isDropFileName } from '../../sources/source.ts';
import { commandLogger, localSource, withRuntime } from './context.ts';
import { printManifest, successState } from './files.ts';
import type { SetExit } from './options.ts';
import { jsonHelp } from './options.ts';
import { ProgressMeter } from './progress.ts';
import { followFile, receiveReports } from './reports-wait.ts';
import { claimCopy } from './send-claim.ts';

interface SendOptions {
  wait?: boolean;
  force?: boolean;
  json?: boolean;
  source?: string;
}

/** What a path that is not a regular file is instead, for the message. */
function kindOf(info: Stats): string {
  if (info.isDirectory()) return 'a folder';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  return 'something else';
}

export function registerSend(program: Command, setExit: SetExit): void {
  program
    .command('send')
    .description('send one file through the whole pipeline now (for scheduled jobs)')
    .argument('<file>', 'the .txt drop file')
    .option(
      '--wait',
      'receive the delivery reports here until every accepted recipient has a final status (or deliveryTimeout), whatever the file ends as; a file outside the send window is sent when it opens',
    )
    .option('--force', 'send even when the same content was already sent (DUPLICATE_FILE)')
    .option(
      '--source <name>',
      'the local source whose folders and settings to use (default: the first local one)',
    )
    .option('--json', jsonHelp('the manifest'))
    .action(async (path: string, opts: SendOptions, cmd: Command) => {
      const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
        const why = err.code === 'ENOENT' ? 'no such file' : errnoInWords(err);
        throw new DroplineError('DROPLINE_ERR_FILE_UNREADABLE', `${path}: ${why}`);
      });
      if (!info.isFile())
        throw new DroplineError(
          'DROPLINE_ERR_FILE_UNREADABLE',
          `${path}: ${kindOf(info)}, not a regular file`,
        );
      const name = basename(path);
      if (!isDropFileName(name))
        throw new DroplineError('DROPLINE_ERR_USAGE', `${name}: a drop file name ends in .txt`);
      const logger = await commandLogger();
      await withRuntime(cmd, { logger, sandbox: 'share' }, async (rt) => {
        const source = localSource(rt, opts.source);
        const cfg = rt.pipeline.sourceConfig(source.name);
        if (cfg.type !== 'local')
          throw new DroplineError('DROPLINE_ERR_USAGE', 'send works with a local source');
        // Straight into processing/: a daemon watching inbox/ never sees it.
        let target = `processing/${name}`;
        if (await source.exists(target)) target = `processing/${Date.now()}-${name}`;
        await copyFile(path, join(resolve(cfg.path), target));

        const tty = process.stderr.isTTY && !opts.json;
        const meter = new ProgressMeter(process.stderr.columns);
        const show = (line: string) => {
          if (tty) process.stderr.write(`\r\x1b[2K${line}`);
        };
        const receiver = await receiveReports(rt, logger, {
          wait: opts.wait ?? false,
          what: 'this file',
        });
        try {
          let fileId = '';
          let drawing = false;
          const timer = tty
            ? setInterval(() => {
                if (!fileId) return;
                const read = rt.pipeline.reading.get(fileId);
                if (read !== undefined) {
                  show(meter.reading(name, read));
                  return;
                }
                if (drawing) return;
                drawing = true;
                void manifestOf(rt.store, fileId)
                  .then((m) => m && show(meter.line(m)))
                  .catch(() => {})
                  .finally(() => {
                    drawing = false;
                  });
              }, 200)
            : null;
          try {
            const say = (line: string) => process.stderr.write(`${tty ? '\r\x1b[2K' : ''}${line}\n`);
            const file = await claimCopy(
              rt,
              source,
              { name, path: target, size: info.size, mtimeMs: info.mtimeMs },
              { force: opts.force ?? false, say },
            );
            fileId = file.fileId;
            if (opts.wait) await followFile(rt, fileId, { say, meter: tty });
          } finally {
            if (timer) clearInterval(timer);
            if (tty) process.stderr.write('\r\x1b[2K');
          }
          const manifest = (await manifestOf(rt.store, fileId))!;
          if (manifest.state === 'scheduled')
            process.stderr.write(
              `${name} is scheduled (${manifest.reason}): a running \`dropline run\` sends it then, or use --wait.\n`,
            );
          printManifest(manifest, opts.json ?? false);
          setExit(successState(manifest.state) ? 0 : 1);
        } finally {
          await receiver?.close();
        }
      });
    });
}
