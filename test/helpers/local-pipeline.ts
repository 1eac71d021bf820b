// A Pipeline on a local source and a SQLite store in a fresh folder, without a service client:
// for tests that drive the claim and the read directly (the moments only a direct call can place).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import { Pipeline } from '../../src/pipeline/pipeline.ts';
import type { ServiceClient } from '../../src/service/client.ts';
import { LocalSource } from '../../src/sources/local-source.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';

export interface LocalPipeline {
  dir: string;
  /** The source's inbox/ folder. */
  inbox: string;
  source: LocalSource;
  store: Store;
  pipeline: Pipeline;
  close(): Promise<void>;
}

/** `source`: the local source's settings beyond its name, type and path; `config`: top-level keys. */
export async function localPipeline(
  name: string,
  options: { source?: Record<string, unknown>; config?: Record<string, unknown> } = {},
): Promise<LocalPipeline> {
  const dir = await mkdtemp(join(tmpdir(), `dropline-${name}-`));
  const source = new LocalSource({ name: 'local', path: join(dir, 'drop') });
  await source.start();
  const store = await openStore(`sqlite:${join(dir, 'state.db')}`);
  await store.migrate();
  const config = parseConfig({
    store: `sqlite:${join(dir, 'state.db')}`,
    sources: [{ name: 'local', type: 'local', path: join(dir, 'drop'), ...options.source }],
    ...options.config,
  });
  const pipeline = new Pipeline({
    config,
    store,
    client: null as unknown as ServiceClient,
    sources: new Map([['local', source]]),
    logger: silentLogger,
    owner: 'test',
  });
  return {
    dir,
    inbox: join(dir, 'drop', 'inbox'),
    source,
    store,
    pipeline,
    async close() {
      await source.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
