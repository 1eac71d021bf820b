// `dropline run` workers as child processes on one store (issue 12), and a small balancer in
// front of their delivery-report receivers, as a deployment's load balancer would be: a
// report reaches whichever worker is up, whoever sent the chunk. Used by the multi-process
// tests (test/e2e/workers*.test.ts); pipeline-workers.ts has in-process workers instead.
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { BIN, freePort, type PipelineHarness, waitFor } from './pipeline-harness.ts';

export interface RunWorker {
  readonly name: string;
  readonly notifyPort: number;
  child: ChildProcess;
  /** stdout and stderr since the last start. */
  output: string;
  kill(signal: 'SIGKILL' | 'SIGTERM'): Promise<void>;
  start(): Promise<void>;
}

/** One address for every receiver: each report goes to a worker that is up (next one on refusal). */
export async function balancer(ports: () => number[]): Promise<{ server: Server; port: number }> {
  let next = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const live = ports();
      const attempt = (tries: number): void => {
        if (tries >= live.length) {
          res.writeHead(503).end();
          return;
        }
        const port = live[next++ % live.length]!;
        const out = request(
          { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        out.on('error', () => attempt(tries + 1));
        out.end(body);
      };
      attempt(0);
    });
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { server, port };
}

/**
 * Starts `dropline run` named `name` with `config` (default: the harness's), its receiver on a
 * port of its own behind `frontPort` (notify.publicUrl), its ops server on another; resolves
 * once it logged "dropline is running". `token: null` leaves notify.token out (generated);
 * `cwd`: the folder it runs in (default the harness's), as a worker on its own machine would.
 */
export async function runWorker(
  harness: PipelineHarness,
  name: string,
  frontPort: number,
  config: Record<string, unknown> = harness.config,
  options: { token?: string | null; cwd?: string } = {},
): Promise<RunWorker> {
  const token = options.token === undefined ? harness.notifyToken : options.token;
  const notifyPort = await freePort();
  const path = join(harness.dir, `${name}.config.json`);
  await writeFile(
    path,
    JSON.stringify({
      ...config,
      notify: {
        listen: `127.0.0.1:${notifyPort}`,
        publicUrl: `http://127.0.0.1:${frontPort}/notify`,
        ...(token === null ? {} : { token }),
      },
      ops: { listen: `127.0.0.1:${await freePort()}` },
    }),
  );
  const w: RunWorker = {
    name,
    notifyPort,
    child: null as unknown as ChildProcess,
    output: '',
    async start() {
      w.output = '';
      w.child = spawn(process.execPath, [BIN, '--config', path, 'run'], {
        cwd: options.cwd ?? harness.dir,
        env: { ...process.env, DROPLINE_LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      w.child.stdout!.on('data', (b: Buffer) => {
        w.output += b;
      });
      w.child.stderr!.on('data', (b: Buffer) => {
        w.output += b;
      });
      await waitFor(`${name} running`, () => {
        if (w.child.exitCode !== null) throw new Error(`${name} exited: ${w.output.slice(-2000)}`);
        return w.output.includes('dropline is running');
      });
    },
    async kill(signal) {
      const c = w.child;
      if (c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill(signal);
      await exited;
    },
  };
  await w.start();
  return w;
}

export const isUp = (w: RunWorker): boolean => w.child.exitCode === null && w.child.signalCode === null;

/** The fileIds whose chunks this worker's log says were accepted (it sent them). */
export function filesSentBy(w: RunWorker): Set<string> {
  const sent = new Set<string>();
  for (const line of w.output.split('\n')) {
    if (!line.includes('"msg":"chunk ') || !line.includes(' accepted"')) continue;
    try {
      const fileId = (JSON.parse(line) as { fileId?: unknown }).fileId;
      if (typeof fileId === 'string') sent.add(fileId);
    } catch {
      // a line cut by the pipe
    }
  }
  return sent;
}
