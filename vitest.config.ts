import { defineConfig } from 'vitest/config';

/**
 * The pipeline end-to-end files run twice: on SQLite with everything else, and on PostgreSQL
 * (DROPLINE_TEST_STORE=postgres: test/helpers/test-store.ts gives each test a schema of its
 * own), so both backends prove the same behaviour.
 */
const ON_BOTH_STORES = [
  'test/e2e/pipeline-*.test.ts',
  'test/e2e/progress.test.ts',
  'test/e2e/ops-file-list.test.ts',
  'test/e2e/fairness.test.ts',
  'test/e2e/send-window.test.ts',
  'test/e2e/contact-limit.test.ts',
  'test/e2e/consent-list.test.ts',
  'test/e2e/replies-optout.test.ts',
  'test/e2e/replies-joined.test.ts',
  'test/e2e/replies-outage.test.ts',
  'test/e2e/replies-keywords.test.ts',
  'test/e2e/replies-redelivery.test.ts',
  'test/e2e/replies-indoubt.test.ts',
  'test/e2e/replies-answer-crash.test.ts',
  'test/e2e/email-send.test.ts',
  'test/e2e/email-crash.test.ts',
  'test/e2e/email-limits.test.ts',
  'test/e2e/whatsapp-send.test.ts',
  'test/e2e/email-attachments.test.ts',
  'test/e2e/mixed-day.test.ts',
  'test/e2e/rcs-send.test.ts',
  'test/e2e/twoway-send.test.ts',
  'test/e2e/twoway-crash.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at once, whatever the core count (vitest's default is cores - 1: one on
    // CI's two cores). Most of a file's time is waiting on child processes, the sandbox's
    // delivery delays and leases, not CPU; the tests wait for states, never for the clock, so
    // a busier machine slows them without failing them.
    maxWorkers: 2,
    // expect.poll waits for a state (a page that shows it): 1 s, vitest's default, is a guess at
    // the machine's speed that a busy one misses. The assertion is the same, only the wait longer.
    expect: { poll: { timeout: 10_000 } },
    // One PostgreSQL cluster for the run (test/helpers/postgres.ts); each test its own schema.
    globalSetup: ['test/helpers/postgres-global-setup.ts'],
    setupFiles: ['test/helpers/byte-check.ts'],
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: { name: 'postgres', include: ON_BOTH_STORES, env: { DROPLINE_TEST_STORE: 'postgres' } },
      },
    ],
  },
});
