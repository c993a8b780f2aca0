import { defineConfig } from 'vitest/config';

/**
 * Five projects, one runner. Integration, e2e and conformance share a global setup that starts the
 * local emulators (DynamoDB Local, the SQS emulator, the KMS endpoint) once and stops them at the
 * end, and a setup file that keeps the embedded stack's log below A2A_TEST_LOG (default WARN) for
 * a failing test instead of printing it (test/support/stack-log.ts).
 */
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/emulators-setup.ts'],
          setupFiles: ['test/support/stack-log.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/emulators-setup.ts'],
          setupFiles: ['test/support/stack-log.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'conformance',
          include: ['test/conformance/**/*.test.ts'],
          globalSetup: ['test/support/emulators-setup.ts'],
          setupFiles: ['test/support/stack-log.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
