// A reverse proxy in a process of its own, as a load balancer stands in front of the service
// (started by test/helpers/gateway.ts). Every request is forwarded to the target; the first
// `times` requests to `path` are answered `status` (502, 504) once the target has answered
// them in full: the backend accepted the request, then the gateway lost its answer. Prints
// one JSON line `{"port":N}` when listening; exits when its stdin closes.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

const [target, path, status, times] = process.argv.slice(2);
if (!target || !path || !status || !times) {
  process.stderr.write('usage: gateway-main.ts <target origin> <path> <status> <times>\n');
  process.exit(2);
}
const origin = new URL(target);
let left = Number(times);

const server = createServer((req, res) => {
  const upstream = request(
    {
      host: origin.hostname,
      port: origin.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: origin.host },
    },
    (answer) => {
      if (req.url?.split('?')[0] === path && left > 0) {
        left--;
        // Read to its end: the backend's answer is complete, and lost here.
        answer.resume();
        answer.on('end', () => {
          res.writeHead(Number(status), { 'content-type': 'text/html', connection: 'close' });
          res.end(`<html><head><title>${status}</title></head><body>gateway error</body></html>\n`);
        });
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/html' });
    res.end('<html><body>bad gateway</body></html>\n');
  });
  req.pipe(upstream);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.stdin.resume();
process.stdin.on('end', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
