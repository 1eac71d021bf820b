// A Slack alert's text is read by Slack as mrkdwn: `<!channel>`, `<@U…>` and
// `<https://…|text>` in it ping the whole channel or draw a link. A drop file's name and its
// rejection message (which quotes the file's own text) come from whoever drops the file: they
// must reach Slack as the literal text they are, never as a mention or a link.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PipelineHarness, waitFor } from '../helpers/pipeline-harness.ts';

let h: PipelineHarness;
let server: Server;
const got: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      got.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack`;
  h = await PipelineHarness.create({
    ops: { token: 'ops-alerts-slack-token' },
    config: { alerts: [{ url, events: ['rejected'], format: 'slack' }] },
  });
  await h.start();
}, 60_000);

afterAll(async () => {
  await h?.close();
  await new Promise((r) => server?.close(r));
});

it('a hostile file name and rejection reach Slack as text: no @channel, no link of theirs', async () => {
  const name = '<!channel> <@U024BE7LH> urgente.txt';
  // BAD_DIRECTIVE quotes the directive's value: `not \`<https://evil.example|…>\``.
  await h.dropFile(name, '#! sendAt: <https://evil.example|entrar>\n573001234567;Hola\n');
  await h.waitForState(name, 'rejected');
  await waitFor('the Slack alert', () => got.length === 1);
  const { text } = JSON.parse(got[0]!) as { text: string };
  // What Slack turns into a mention or a link: none of the file's own.
  expect(text).not.toMatch(/<[!@#]/);
  expect(text).not.toContain('<https://evil.example');
  // The name and the reason are still there, as Slack shows escaped text.
  expect(text).toContain('&lt;!channel&gt; &lt;@U024BE7LH&gt; urgente.txt');
  expect(text).toContain('&lt;https://evil.example|entrar&gt;');
}, 60_000);
