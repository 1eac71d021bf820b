// Issue 10 item 18: the store and the reports hold phone numbers and texts. Whatever umask
// the service manager gives dropline (000 here), state.db and its -wal/-shm are 0600 and
// report.csv, the manifest and errors.csv 0640: never readable by every local user.
import { statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineHarness, personalizedFile } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
});

function mode(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

describe('file modes under umask 000', () => {
  it('state.db (and -wal, -shm) 0600; reports and errors.csv 0640', async () => {
    h = await PipelineHarness.create();
    await h.start({ umask: 0o000 });
    const gen = personalizedFile(20, 81);
    await h.dropFile('modos.txt', gen.content);
    const ok = await h.waitForState('modos.txt', 'completed');
    await h.dropFile('malo.txt', 'nada que ver\n');
    const bad = await h.waitForReport('malo.txt', 'rejected');
    await h.waitForReport('modos.txt', 'completed');

    for (const f of ['state.db', 'state.db-wal', 'state.db-shm']) expect(mode(join(h.dir, f)), f).toBe('600');
    const reports = (await readdir(join(h.drop, 'reports'))).filter((n) => !n.startsWith('.'));
    expect(reports.length).toBe(4); // a manifest and a report.csv per file
    for (const f of reports) expect(mode(join(h.drop, 'reports', f)), f).toBe('640');
    const errors = (await readdir(join(h.drop, 'failed'))).filter((n) => n.endsWith('.errors.csv'));
    expect(errors).toHaveLength(1);
    expect(mode(join(h.drop, 'failed', errors[0]!))).toBe('640');
    expect([ok.fileId, bad.fileId].every((id) => reports.some((r) => r.includes(id)))).toBe(true);
  });
});
