// What the pipeline commands share: the configuration (from --config or the embedded
// default), a logger on stderr, and the runtime. Loaded when a command runs, not at
// start-up: zod alone costs ~70 ms, and `validate` or `--help` need none of it.
import type { Command } from 'commander';
import type { OpenOptions, Runtime } from '../../app/runtime.ts';
import type { LoadedConfig } from '../../config/load.ts';
import { DroplineError } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import type { Source } from '../../sources/source.ts';
import type { Store } from '../../store/store.ts';

export async function configOf(cmd: Command): Promise<LoadedConfig> {
  const opts = cmd.optsWithGlobals() as { config?: string };
  const { loadConfig } = await import('../../config/load.ts');
  return loadConfig({ path: opts.config });
}

/** Commands print their results on stdout; logs go to stderr (warnings only unless DROPLINE_LOG_LEVEL says more). */
export async function commandLogger(level = 'warn'): Promise<Logger> {
  const { createLogger } = await import('../../log.ts');
  return createLogger({ level: process.env.DROPLINE_LOG_LEVEL ?? level });
}

export async function withRuntime<T>(
  cmd: Command,
  options: Partial<OpenOptions>,
  fn: (rt: Runtime) => Promise<T>,
): Promise<T> {
  const loaded = await configOf(cmd);
  const { openRuntime } = await import('../../app/runtime.ts');
  const rt = await openRuntime(loaded, {
    logger: options.logger ?? (await commandLogger()),
    sandbox: options.sandbox ?? 'share',
  });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

/**
 * The store alone, for the commands that only read it or act on its rows (status, workers,
 * report, replies, prune): no source is opened (no SSH login, no S3 call, no warning when a
 * partner's site is down), no sandbox started, no list read.
 */
export async function withStore<T>(
  cmd: Command,
  fn: (store: Store, loaded: LoadedConfig) => Promise<T>,
): Promise<T> {
  const loaded = await configOf(cmd);
  const { openStateStore } = await import('../../app/runtime.ts');
  const store = await openStateStore(loaded);
  try {
    return await fn(store, loaded);
  } finally {
    await store.close();
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
