// s3rver in a process of its own, started by test/helpers/s3rver.ts with
// --openssl-legacy-provider (s3rver encrypts ListObjectsV2 continuation tokens with DES:
// without the flag every paginated listing answers 500). Prints one JSON line
// `{"port":N}` when listening; exits when its stdin closes (the test process went away).
import { createRequire } from 'node:module';

// s3rver ships no type declarations: the little used here, typed by hand.
interface S3rverServer {
  run(): Promise<{ port: number }>;
  close(callback: () => void): void;
}
type S3rverCtor = new (options: Record<string, unknown>) => S3rverServer;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;

const [directory, port, ...buckets] = process.argv.slice(2);
if (!directory || port === undefined || !/^\d+$/.test(port)) {
  process.stderr.write('usage: s3rver-main.ts <directory> <port, 0: any> [bucket…]\n');
  process.exit(2);
}
const server = new S3rver({
  address: '127.0.0.1',
  port: Number(port),
  silent: true,
  directory,
  configureBuckets: buckets.map((name) => ({ name, configs: [] })),
});
const listening = await server.run();
process.stdout.write(`${JSON.stringify({ port: listening.port })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  server.close(() => process.exit(0));
});
