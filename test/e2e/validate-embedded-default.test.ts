// `dropline validate` without a configuration answers for the embedded default (issue 32
// item 6): what `dropline run` (`npm start`) does with no configuration file, so that each
// sample gets the verdict and rejection code the embedded-default pipeline gives it. The
// pipeline is `dropline send --json`, which reads, validates and decides as the daemon does,
// on the same embedded default (its sandbox in the process, a store in the temp folder).
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type CliRun, REPO, runCli } from '../helpers/cli.ts';

let dir = '';
const env = { DROPLINE_CONFIG: '' };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-embedded-default-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Verdict {
  accepted: boolean;
  code: string | null;
}

const json = (run: CliRun) => {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`not JSON (exit ${run.code}): ${run.stdout}${run.stderr}`);
  }
};

it('validate without a configuration agrees with the embedded-default pipeline on every sample', async () => {
  const samples = (await readdir(join(REPO, 'samples'))).filter((n) => n.endsWith('.txt')).sort();
  expect(samples.length).toBeGreaterThan(5);
  const got: Record<string, { validate: Verdict; pipeline: Verdict }> = {};
  const judge = async (name: string) => {
    const path = join(REPO, 'samples', name);
    // Each send in a folder of its own (its own store): the samples are judged side by side.
    const cwd = await mkdtemp(join(dir, 'send-'));
    const [validated, sent] = await Promise.all([
      runCli(['validate', '--json', path], { cwd: dir, env }).then(json),
      runCli(['send', '--json', path], { cwd, env }).then(json),
    ]);
    got[name] = {
      validate: { accepted: validated.accepted, code: validated.rejection?.code ?? null },
      pipeline: { accepted: sent.state !== 'rejected', code: sent.rejection?.code ?? null },
    };
  };
  // Two samples at a time (four processes): the machine's cores, not the samples, bound it.
  const queue = [...samples];
  const lane = async () => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) await judge(name);
  };
  await Promise.all([lane(), lane()]);
  for (const [name, { validate, pipeline }] of Object.entries(got))
    expect(validate, `${name}: validate says what the pipeline decides`).toEqual(pipeline);
  // The case: an email file on the embedded default's SMS source.
  expect(got['email.txt']?.validate).toEqual({ accepted: false, code: 'BAD_DIRECTIVE' });
});
