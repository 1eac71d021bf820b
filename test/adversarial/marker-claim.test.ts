// A `marker` source's claim and its `.done` marker (docs/sources.md "Markers"), where only a
// direct call can place the marker exactly: taken by another worker between the listing
// and this claim; come just as the file timed out waiting for it.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Pipeline } from '../../src/pipeline/pipeline.ts';
import type { LocalSource } from '../../src/sources/local-source.ts';
import type { Store } from '../../src/store/store.ts';
import { type LocalPipeline, localPipeline } from '../helpers/local-pipeline.ts';

describe('a marker source: the claim and the marker', () => {
  let inbox: string;
  let source: LocalSource;
  let store: Store;
  let pipeline: Pipeline;
  let local: LocalPipeline;

  beforeEach(async () => {
    local = await localPipeline('marker-claim', { source: { readiness: 'marker' } });
    ({ inbox, source, store, pipeline } = local);
  });

  afterEach(() => local.close());

  it('a marker another worker took since the listing: the file is left to that claim', async () => {
    await writeFile(join(inbox, 'a.txt'), '3001234567;hola\n');
    await writeFile(join(inbox, 'a.txt.done'), '');
    await writeFile(join(inbox, 'b.txt'), '3001234568;hola\n');
    await writeFile(join(inbox, 'b.txt.done'), '');
    const listing = await source.list();
    expect(await source.takeMarker('inbox/a.txt.done')).toBe('');
    const files = await pipeline.claimReady(source, listing);
    expect(files.map((f) => [f.name, f.state])).toEqual([['b.txt', 'validating']]);
    expect(await readdir(inbox)).toEqual(['a.txt']);
    expect((await store.listFiles()).map((f) => f.name)).toEqual(['b.txt']);
  });

  it('a claim the store fails to record puts the markers back: the files are claimed on the next try', async () => {
    await writeFile(join(inbox, 'a.txt'), '3001234567;hola\n');
    await writeFile(join(inbox, 'a.txt.done'), '');
    await writeFile(join(inbox, 'b.txt'), '3001234568;hola\n');
    await writeFile(join(inbox, 'b.txt.done'), `sha256=${'0'.repeat(64)}\n`);
    // A PostgreSQL fail-over at the moment of the claim: the batch's transaction fails once.
    const claimFiles = store.claimFiles.bind(store);
    let failures = 1;
    store.claimFiles = (...args) =>
      failures-- > 0 ? Promise.reject(new Error('connection terminated')) : claimFiles(...args);
    await expect(pipeline.claimReady(source, await source.list())).rejects.toThrow('connection terminated');
    // Nothing was claimed: each file still has its marker, as the partner wrote it.
    expect((await readdir(inbox)).sort()).toEqual(['a.txt', 'a.txt.done', 'b.txt', 'b.txt.done']);
    expect(await readFile(join(inbox, 'b.txt.done'), 'utf8')).toBe(`sha256=${'0'.repeat(64)}\n`);
    const files = await pipeline.claimReady(source, await source.list());
    expect(files.map((f) => [f.name, f.state]).sort()).toEqual([
      ['a.txt', 'validating'],
      ['b.txt', 'rejected'],
    ]);
    expect(await readdir(inbox)).toEqual([]);
  });

  it('a marker that comes as its file times out: not rejected; the next claim takes both', async () => {
    await writeFile(join(inbox, 'late.txt'), '3001234567;hola\n');
    const [entry] = await source.list();
    await writeFile(join(inbox, 'late.txt.done'), '');
    expect(await pipeline.rejectIncomplete(source, entry!)).toBeNull();
    expect((await readdir(inbox)).sort()).toEqual(['late.txt', 'late.txt.done']);
    const [file] = await pipeline.claimReady(source, await source.list());
    expect(file?.state).toBe('validating');
    expect(await readdir(inbox)).toEqual([]);
  });
});
