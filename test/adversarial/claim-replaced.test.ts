// A file in inbox/ replaced (same name, new content: a partner's rename) after the claim
// hashed it and before its move to processing/ (docs/sources.md "What happens to a file"):
// the new bytes are never moved under the old claim, whose sha256 and size are the old
// content's. The old claim fails FILE_CHANGED; the new version stays in the inbox and is
// claimed as a new file once ready: on a marker source, with a marker of its own, the old
// one (taken by the old claim) never standing for it. The race is made deterministic: a
// wrapped link(2) puts the new version in place right before the move's first step.
import { createHash } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Pipeline } from '../../src/pipeline/pipeline.ts';
import type { LocalSource } from '../../src/sources/local-source.ts';
import { type LocalPipeline, localPipeline } from '../helpers/local-pipeline.ts';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Runs once, right before the first link(2) whose source is `path`. */
const fsHook: { path: string | null; run: (() => Promise<void>) | null } = { path: null, run: null };

vi.mock('node:fs/promises', async (importOriginal) => {
  const orig = await importOriginal<typeof import('node:fs/promises')>();
  const link = async (from: string, to: string): Promise<void> => {
    if (fsHook.run && from === fsHook.path) {
      const run = fsHook.run;
      fsHook.run = null;
      await run();
    }
    return orig.link(from, to);
  };
  return { ...orig, link };
});

const OLD = '3001234567;primera version\n';
const NEW = '3001234567;segunda version\n3001234568;segunda version\n';

for (const readiness of ['stable', 'marker'] as const) {
  describe(`a ${readiness} source: inbox/x.txt replaced between the claim's hash and its move`, () => {
    let dir: string;
    let inbox: string;
    let source: LocalSource;
    let pipeline: Pipeline;
    let local: LocalPipeline;

    beforeEach(async () => {
      local = await localPipeline('claim-replaced', { source: { readiness } });
      ({ dir, inbox, source, pipeline } = local);
    });

    afterEach(async () => {
      fsHook.run = null;
      await local.close();
    });

    it('the old claim fails FILE_CHANGED; the new version is claimed as a new file', async () => {
      const x = join(inbox, 'x.txt');
      await writeFile(x, OLD);
      if (readiness === 'marker') await writeFile(`${x}.done`, `sha256=${sha256(OLD)}\n`);
      await writeFile(join(inbox, '.x.txt.part'), NEW);
      fsHook.path = x;
      fsHook.run = () => fsp.rename(join(inbox, '.x.txt.part'), x);

      const [old] = await pipeline.claimReady(source, await source.list());
      expect(fsHook.run).toBeNull();
      expect(old).toMatchObject({ state: 'rejected', sha256: sha256(OLD), bytes: OLD.length });
      expect(old?.rejection?.code).toBe('FILE_CHANGED');
      // The new version is where its partner put it, and nothing of it went anywhere else.
      expect(await readFile(x, 'utf8')).toBe(NEW);
      expect(await readdir(join(dir, 'drop', 'processing'))).toEqual([]);
      expect((await readdir(join(dir, 'drop', 'failed'))).filter((n) => n.endsWith('.txt'))).toEqual([]);

      if (readiness === 'marker') {
        // The old marker went with the old claim: the new version waits for its own.
        expect(await readdir(inbox)).toEqual(['x.txt']);
        expect(await pipeline.claimReady(source, await source.list())).toEqual([]);
        await writeFile(`${x}.done`, `sha256=${sha256(NEW)}\n`);
      }
      const [next] = await pipeline.claimReady(source, await source.list());
      expect(next).toMatchObject({ state: 'validating', sha256: sha256(NEW), path: 'processing/x.txt' });
      expect(next?.fileId).not.toBe(old?.fileId);
      expect(await readFile(join(dir, 'drop', 'processing', 'x.txt'), 'utf8')).toBe(NEW);
      expect(await readdir(inbox)).toEqual([]);
    });
  });
}
