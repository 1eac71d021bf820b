// s3rver for tests: a child process (see s3rver-main.ts for why), a temp directory, buckets
// made at start, and an S3 client configured the way s3rver needs (docs/architecture.md "Tests":
// path style, checksums only when required, its fixed test credentials).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';

/** s3rver's fixed credentials (any other key is refused). */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface S3rverHandle {
  endpoint: string;
  port: number;
  directory: string;
  /** What an S3 client (or S3Source's clientConfig) needs to talk to it. */
  clientConfig: S3ClientConfig;
  client: S3Client;
  /** Stops the server process (SIGSTOP): connections stay open, nothing answers. */
  freeze(): void;
  thaw(): void;
  /** Ends the server (connections refused), its objects kept. */
  stop(): Promise<void>;
  /** Starts it again on the same port and directory. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** s3rver-main.ts on `directory` (its port: `port`, or a free one) until it prints its port. */
async function spawnS3rver(
  directory: string,
  buckets: string[],
  port: number,
): Promise<{ child: ChildProcess; port: number }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--openssl-legacy-provider',
      join(import.meta.dirname, 's3rver-main.ts'),
      directory,
      String(port),
      ...buckets,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
  });
  const listening = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`s3rver did not start in 15 s: ${stderr}`)), 15_000);
    child.stdout?.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const nl = out.indexOf('\n');
      if (nl === -1) return;
      clearTimeout(timer);
      try {
        resolve((JSON.parse(out.slice(0, nl)) as { port: number }).port);
      } catch (err) {
        reject(err);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited ${code}: ${stderr}`));
    });
  });
  return { child, port: listening };
}

/** Ends the server process (its stdin closed, SIGKILL after 5 s). */
async function endS3rver(child: ChildProcess): Promise<void> {
  child.kill('SIGCONT');
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.stdin?.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

export async function startS3rver(buckets: string[]): Promise<S3rverHandle> {
  const directory = await mkdtemp(join(tmpdir(), 'dropline-s3rver-'));
  let { child, port } = await spawnS3rver(directory, buckets, 0);
  const endpoint = `http://127.0.0.1:${port}`;
  const clientConfig: S3ClientConfig = {
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
  const client = new S3Client(clientConfig);
  return {
    endpoint,
    port,
    directory,
    clientConfig,
    client,
    freeze: () => child.kill('SIGSTOP'),
    thaw: () => child.kill('SIGCONT'),
    async stop() {
      await endS3rver(child);
    },
    async start() {
      ({ child } = await spawnS3rver(directory, buckets, port));
    },
    async close() {
      client.destroy();
      await endS3rver(child);
      await rm(directory, { recursive: true, force: true });
    },
  };
}
