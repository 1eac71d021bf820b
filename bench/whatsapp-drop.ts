// What the WhatsApp rate bench (bench/whatsapp.bench.ts) runs: a headed WhatsApp drop file of
// distinct Colombian mobiles for the sandbox's `factura` template (2 parameters, docs/sandbox.md
// "WhatsApp"), a working directory whose WhatsApp account has the given rate and concurrency,
// and how the achieved rate is read from the sandbox's own request timestamps.
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The sandbox's demo account sends WhatsApp from this number, with this 2-parameter template. */
export const SOURCE = '573001112233';
export const TEMPLATE = 'factura';
/** src/channels/whatsapp/account.ts WHATSAPP_CHUNK_RECIPIENTS: recipients sent together. */
export const CHUNK = 10;

/** A headed WhatsApp file of `lines` distinct recipients (kept between runs). */
export async function generateWhatsApp(path: string, lines: number): Promise<void> {
  if (existsSync(path)) return;
  if (lines > 10_000_000) throw new Error('at most 10,000,000 distinct numbers');
  const ws = createWriteStream(path);
  let buf = `#! channel: whatsapp\n#! templateId: ${TEMPLATE}\nnumero;1;2\n`;
  for (let i = 0; i < lines; i++) {
    buf += `300${String(i).padStart(7, '0')};Cliente ${i};$${(i % 900) + 100}.000\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
}

/** A fresh working directory (`dir`, emptied) whose source sends with a WhatsApp account `wa`. */
export function whatsappWorkdir(
  dir: string,
  options: { sandboxUrl: string; ratePerSecond: number; concurrency: number },
): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'dropline.config.json'),
    JSON.stringify({
      api: { baseUrl: options.sandboxUrl, username: 'demo', password: 'demo' },
      notify: { listen: '127.0.0.1:0', token: 'bench' },
      store: 'sqlite:./state.db',
      accounts: {
        wa: {
          channel: 'whatsapp',
          baseUrl: options.sandboxUrl,
          username: 'demo',
          password: 'demo',
          source: SOURCE,
          concurrency: options.concurrency,
          ratePerSecond: options.ratePerSecond,
        },
      },
      sources: [{ name: 'local', type: 'local', path: './drop', channel: 'whatsapp', account: 'wa' }],
    }),
  );
  return dir;
}

export interface Achieved {
  /** Messages a second over the middle 80% of the accepted requests, chunk-aligned. */
  steady: number;
  /** Messages a second from the first request to the first request of the last chunk. */
  whole: number;
  /** Seconds from the first accepted request to the last. */
  span: number;
}

/**
 * The achieved rate from the sandbox's timestamps of the accepted requests (ms, any order).
 *
 * - steady: the requests sorted by time, the rate between the request at 10% and the one at
 *   90% of them: start-up (the first chunk goes at once) and the tail (a last partial chunk,
 *   the last answers) are left out. Both ends are rounded to a multiple of the chunk, so each
 *   falls on the first request of a chunk: a paced account sends its 10 requests together
 *   every 10/rate seconds, and an unaligned end would count part of a burst (up to 9 messages
 *   of the 600 of a 750-message run: 1.5%) without its interval.
 * - whole: (N − 10) messages over the time from the first request to the first request of the
 *   last chunk: the same alignment, over the whole run.
 */
export function achievedRate(at: readonly number[]): Achieved {
  const t = [...at].sort((a, b) => a - b);
  const n = t.length;
  const aligned = (x: number) => Math.min(n - 1, Math.round(x / CHUNK) * CHUNK);
  const i = aligned(0.1 * n);
  const j = aligned(0.9 * n);
  const last = Math.max(0, Math.ceil(n / CHUNK) * CHUNK - CHUNK);
  return {
    steady: ((j - i) * 1000) / (t[j]! - t[i]!),
    whole: (last * 1000) / (t[last]! - t[0]!),
    span: (t[n - 1]! - t[0]!) / 1000,
  };
}
