// What the pipeline commands share: the configuration (from --config or the embedded
// default), a logger on stderr, and the runtime.
import type { Command } from 'commander';
import { type LoadedConfig, loadConfig } from '../../config/load.ts';
import { DroplineError } from '../../errors.ts';
import { createLogger, type Logger } from '../../log.ts';
import type { OpenOptions, Runtime } from '../../pipeline/runtime.ts';
import type { Source } from '../../sources/source.ts';

export function configOf(cmd: Command): LoadedConfig {
  const opts = cmd.optsWithGlobals() as { config?: string };
  return loadConfig({ path: opts.config });
}

/** Commands print their results on stdout; logs go to stderr (warnings only unless DROPLINE_LOG_LEVEL says more). */
export function commandLogger(level = 'warn'): Logger {
  return createLogger({ level: process.env.DROPLINE_LOG_LEVEL ?? level });
}

export async function withRuntime<T>(
  cmd: Command,
  options: Partial<OpenOptions>,
  fn: (rt: Runtime) => Promise<T>,
): Promise<T> {
  const loaded = configOf(cmd);
  // Loaded here, not at start-up: `validate` and `--help` need none of the pipeline.
  const { openRuntime } = await import('../../pipeline/runtime.ts');
  const rt = await openRuntime(loaded, {
    logger: options.logger ?? commandLogger(),
    sandbox: options.sandbox ?? 'share',
  });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

/** The local source a command works in: `--source <name>`, else the first local one. */
export function localSource(rt: Runtime, name?: string): Source {
  const cfg = rt.loaded.config.sources.find((s) => (name ? s.name === name : s.type === 'local'));
  if (!cfg) {
    throw new DroplineError(
      'DROPLINE_ERR_USAGE',
      name ? `no source named ${name}` : 'no local source is configured',
    );
  }
  return rt.pipeline.source(cfg.name);
}
