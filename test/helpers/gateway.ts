// A gateway (test/helpers/gateway-main.ts) in front of a service: a child process, as a real
// load balancer is a process of its own.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export interface GatewayHandle {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Forwards everything to `target`; the first `times` requests to `path` are answered `status`
 * after the target answered them.
 */
export async function startGateway(options: {
  target: string;
  path: string;
  status: number;
  times: number;
}): Promise<GatewayHandle> {
  const child = spawn(
    process.execPath,
    [
      join(import.meta.dirname, 'gateway-main.ts'),
      options.target,
      options.path,
      String(options.status),
      String(options.times),
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const nl = out.indexOf('\n');
      if (nl !== -1) resolve((JSON.parse(out.slice(0, nl)) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`the gateway exited ${code}: ${stderr}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
