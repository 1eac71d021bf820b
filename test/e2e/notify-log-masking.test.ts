// The receiver's debug log of reports the store does not know (orphans) masks every number:
// the recipient's, and a messageId that is one (an operator's messageId column may hold
// numbers), as `57300****567` (src/service/redact.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver } from '../../src/notify/receiver.ts';
import { openStore } from '../../src/store/index.ts';
import type { Store } from '../../src/store/store.ts';

const TOKEN = 'r3ceiver-t0ken';
/** A phone-number-shaped run of digits (8 to 15, not part of a longer run). */
const NUMBER = /(?<!\d)\+?\d{8,15}(?!\d)/;

let dir: string;
let store: Store;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dropline-notify-log-'));
  store = await openStore(`sqlite:${join(dir, 'state.db')}`);
  await store.migrate();
});

afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('notify: the debug log of orphan reports', () => {
  it('writes no number unmasked, the messageId included', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'debug', timestamp: false },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    );
    const receiver = await startReceiver({
      listen: '127.0.0.1:0',
      path: '/notify',
      token: TOKEN,
      store,
      logger,
    });
    try {
      const url = new URL(receiver.url);
      url.searchParams.set('token', TOKEN);
      const res = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          results: [
            {
              bulkId: 'f-unknown',
              messageId: '573001234567',
              to: '573109876543',
              transactionNumber: '1000000000000000000000000001',
              callbackData: '',
              smsCount: 1,
              status: { name: 'DELIVERED_TO_HANDSET' },
            },
          ],
        }),
      });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
      expect(receiver.stats()).toMatchObject({ orphans: 1 });
    } finally {
      await receiver.close();
    }
    const reports = lines.filter((l) => l.msg === 'notify: report');
    expect(reports).toHaveLength(1);
    const said = JSON.stringify(reports);
    expect(said.match(NUMBER)?.[0]).toBeUndefined();
    expect(said).toContain('57300****567');
    expect(said).toContain('57310****543');
    // Nowhere else in the log either.
    const all = JSON.stringify(lines);
    expect(all).not.toContain('573001234567');
    expect(all).not.toContain('573109876543');
  });
});
