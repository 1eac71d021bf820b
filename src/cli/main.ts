#!/usr/bin/env node
// dropline's command line. Exit codes (docs/contract.md "Commands"): 0 success, 1 the work failed or was
// rejected, 2 usage or configuration error.
import { Command, CommanderError } from 'commander';
import { DroplineError } from '../errors.ts';
import { VERSION } from '../version.ts';
import { registerCommands } from './commands/index.ts';

/** Errors that mean the command could not be used as given: exit 2. */
const USAGE_CODES = new Set<string>([
  'DROPLINE_ERR_USAGE',
  'DROPLINE_ERR_CONFIG',
  'DROPLINE_ERR_FILE_UNREADABLE',
  'DROPLINE_ERR_SUPPRESSION_LIST',
  'DROPLINE_ERR_CONSENT_LIST',
  'DROPLINE_ERR_UNKNOWN_FILE',
]);

function printError(err: DroplineError): void {
  process.stderr.write(`dropline: ${err.code}: ${err.message}\n  hint: ${err.hint}\n`);
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command('dropline')
    .description('Drop-folder SMS campaigns for the messaging service')
    .version(`dropline ${VERSION}`, '-V, --version', 'the version of dropline')
    .option(
      '--config <path>',
      'configuration file (default $DROPLINE_CONFIG, else ./dropline.config.json when present)',
    )
    .exitOverride()
    .configureOutput({
      writeErr: (s) => process.stderr.write(s),
      // Commander's own parse errors (unknown command or option, missing or extra argument,
      // an option value its parser refused) said like every other usage error: code and
      // hint. Its "Did you mean …?" goes on the same line. Help and --version are not errors.
      outputError: (s) =>
        printError(
          new DroplineError(
            'DROPLINE_ERR_USAGE',
            s
              .replace(/^error: /, '')
              .trim()
              .replace(/\s*\n\s*/g, ' '),
          ),
        ),
    });
  let exitCode = 0;
  registerCommands(program, (code) => {
    exitCode = code;
  });
  // `dropline status | head`: once the reader is gone, nothing more can be said; end quietly
  // with the code the command has so far. The servers (run, sandbox) go on: their output is
  // a banner, their work is elsewhere.
  let serves = false;
  program.hook('preAction', (_program, action) => {
    serves = action.name() === 'run' || action.name() === 'sandbox';
  });
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (serves) return;
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') process.exit(exitCode);
    throw err;
  });
  process.stderr.on('error', () => {
    // Nobody reads the diagnostics any more: the work goes on without them.
  });
  try {
    await program.parseAsync(argv, { from: 'node' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit through here with code 0
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof DroplineError) {
      printError(err);
      return USAGE_CODES.has(err.code) ? 2 : 1;
    }
    process.stderr.write(`dropline: unexpected error: ${err instanceof Error ? err.stack : String(err)}\n`);
    return 1;
  }
}

const code = await main(process.argv);
process.exitCode = code;
// A failed command has closed what it opened; should anything still hold the event loop
// (a socket, a watcher, a worker), a supervisor must still see the exit within seconds.
if (code !== 0) setTimeout(() => process.exit(code), 2000).unref();
