// The conformance suite every Store implementation passes (src/store/store.ts is the spec).
// An implementation's test file calls storeContract() with a factory that returns a fresh,
// migrated store on an empty database and a clock the store reads its time from. The suite is
// split by concern under ./store/; this file assembles it.

import { afterEach, beforeEach, describe } from 'vitest';
import type { Store } from '../../src/store/store.ts';
import { campaignRules } from './store/campaign-rules.ts';
import { countsAndReports } from './store/counts-and-reports.ts';
import { dashboard } from './store/dashboard.ts';
import { deliveryReports } from './store/delivery-reports.ts';
import { filesAndLeases } from './store/files-and-leases.ts';
import {
  type ContractContext,
  chunksFor,
  INGEST,
  newFile,
  type StoreHarness,
  T0,
  validRows,
} from './store/helpers.ts';
import { ingest } from './store/ingest.ts';
import { repliesJoined } from './store/replies-joined.ts';
import { sendingAndResults } from './store/sending-and-results.ts';
import { standing } from './store/standing.ts';
import { workersAndBudgets } from './store/workers-and-budgets.ts';

export {
  type ContractContext,
  event,
  generatedReport,
  generatedRows,
  ley2300,
  newFile,
  numberOf,
  type StoreHarness,
  T0,
  type TestClock,
  testClock,
  validRows,
} from './store/helpers.ts';

export function storeContract(name: string, factory: () => Promise<StoreHarness>): void {
  describe(`Store contract: ${name}`, () => {
    let h: StoreHarness;
    let store: Store;

    beforeEach(async () => {
      h = await factory();
      store = h.store;
      h.clock.set(T0);
    });
    afterEach(async () => {
      await h.cleanup();
    });

    const t: ContractContext = {
      get h() {
        return h;
      },
      get store() {
        return store;
      },
      at: (ms: number) => new Date(T0.getTime() + ms).toISOString(),
      async sendingFile(fileId, n, chunkSize, rows = validRows(n, chunkSize)) {
        await store.registerFile(newFile({ fileId }));
        await store.transition(fileId, 'sending', {
          patch: { counts: { ...INGEST, records: n, valid: n, segments: n } },
        });
        await store.insertRecipients(fileId, rows);
        await store.insertChunks(fileId, chunksFor(n, chunkSize));
      },
      async submittedFile(fileId, n, chunkSize, rows) {
        await t.sendingFile(fileId, n, chunkSize, rows);
        for (let seq = 1; (seq - 1) * chunkSize < n; seq++) {
          await store.setChunkState(fileId, seq, 'inflight', ['pending']);
          const transactionNumber = `${fileId}-T${seq}`;
          await store.recordChunkResult(fileId, seq, {
            state: 'accepted',
            attempts: 1,
            transactionNumber,
            parts: [{ messageIds: [], wholeChunk: true, outcome: 'sent', transactionNumber }],
          });
        }
      },
    };

    filesAndLeases(t);
    ingest(t);
    sendingAndResults(t);
    deliveryReports(t);
    countsAndReports(t);
    workersAndBudgets(t);
    dashboard(t);
    describe('campaign rules', () => campaignRules(t));
    describe('replies joined', () => repliesJoined(t));
    describe('a number’s standing', () => standing(t));
  });
}
