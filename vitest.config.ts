import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One PostgreSQL cluster for the run (test/helpers/postgres.ts); each test its own schema.
    globalSetup: ['test/helpers/postgres-global-setup.ts'],
  },
});
