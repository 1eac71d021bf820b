// `dropline validate` without a configuration answers for the embedded default (issue 32
// item 6): what `dropline run` (`npm start`) does with no configuration file, so that each
// sample gets the verdict and rejection code the embedded-default pipeline gives it.
// validate runs as the command; the pipeline is the one `dropline send` drives (claim, then
// read, validate and decide), opened in this process on the embedded default as `send`
// loads it, in a folder without a configuration (its store and sandbox there).
import { copyFile, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openRuntime, type Runtime } from '../../src/app/runtime.ts';
import { loadConfig } from '../../src/config/load.ts';
import { silentLogger } from '../../src/log.ts';
import { manifestOf } from '../../src/pipeline/reports.ts';
import { REPO, runCli } from '../helpers/cli.ts';

const cwd = process.cwd();
let dir = '';
let rt: Runtime;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-embedded-default-'));
  // The embedded default's paths (./drop, ./.dropline) are the folder's.
  process.chdir(dir);
  const loaded = loadConfig({ env: {} });
  expect(loaded.path).toBeNull();
  rt = await openRuntime(loaded, { logger: silentLogger, sandbox: 'share' });
});
afterAll(async () => {
  await rt?.close();
  process.chdir(cwd);
  await rm(dir, { recursive: true, force: true });
});

interface Verdict {
  accepted: boolean;
  code: string | null;
}

/** What the embedded-default pipeline decides of a file (as `dropline send <file>` would). */
async function pipelineVerdict(path: string, name: string): Promise<Verdict> {
  const cfg = rt.loaded.config.sources[0]!;
  const source = rt.pipeline.source(cfg.name);
  await copyFile(path, join(resolve(dir, (cfg as { path: string }).path), 'processing', name));
  const info = await stat(path);
  const file = await rt.pipeline.claim(
    source,
    { name, path: `processing/${name}`, size: info.size, mtimeMs: info.mtimeMs },
    { force: false },
  );
  if (!file) throw new Error(`${name}: not claimed`);
  if (file.state === 'validating') await rt.pipeline.drive(file.fileId);
  const m = (await manifestOf(rt.store, file.fileId))!;
  return { accepted: m.state !== 'rejected', code: m.rejection?.code ?? null };
}

it('validate without a configuration agrees with the embedded-default pipeline on every sample', async () => {
  const samples = (await readdir(join(REPO, 'samples'))).filter((n) => n.endsWith('.txt')).sort();
  expect(samples.length).toBeGreaterThan(5);
  // The commands first, side by side (two at a time: the machine's cores bound them).
  const validated: Record<string, Verdict> = {};
  const queue = [...samples];
  const lane = async () => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      const run = await runCli(['validate', '--json', join(REPO, 'samples', name)], {
        cwd: dir,
        env: { DROPLINE_CONFIG: '' },
      });
      const s = JSON.parse(run.stdout);
      validated[name] = { accepted: s.accepted, code: s.rejection?.code ?? null };
    }
  };
  await Promise.all([lane(), lane()]);
  for (const name of samples) {
    const pipeline = await pipelineVerdict(join(REPO, 'samples', name), name);
    expect(validated[name], `${name}: validate says what the pipeline decides`).toEqual(pipeline);
  }
  // The case: an email file on the embedded default's SMS source.
  expect(validated['email.txt']).toEqual({ accepted: false, code: 'BAD_DIRECTIVE' });
});
