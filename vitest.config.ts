import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Five projects, one runner, one pool. Integration, e2e and conformance share a global setup that
 * starts the local emulators (DynamoDB Local, the SQS emulator, the KMS endpoint) once for the run
 * and stops them at the end, and a setup file that keeps the embedded stack's log below
 * A2A_TEST_LOG (default WARN) for a failing test instead of printing it (test/support/stack-log.ts).
 *
 * Files run two at a time at least (Vitest's default is one fewer than the cores: one on a 2-core
 * machine). A stack file waits on its emulators and its own timers much of the time, so a second
 * file uses the core the first leaves idle. Every file has its own stack, resource prefix and
 * ports, so any two can run side by side. Files are queued by project name — conformance, e2e,
 * infra, integration, unit — so the stack's long files start first and the short CPU-bound ones
 * fill in at the end; within a project the slowest file goes first once Vitest has its timings.
 *
 * Unit and infra files share their worker's modules (`isolate: false`): they hold no state between
 * files, so each worker imports the application (and the CDK) once instead of once per file. The
 * stack projects stay isolated: a local stack's handlers read their environment when imported.
 */
const maxWorkers = Math.max(2, availableParallelism() - 1);

const stackProject = {
  globalSetup: ['test/support/emulators-setup.ts'],
  setupFiles: ['test/support/stack-log.ts'],
};

export default defineConfig({
  test: {
    maxWorkers,
    projects: [
      {
        // Unit files share a worker's modules (no per-file re-import of the application): they
        // keep no state between files (failpoints are disarmed after each test that arms them).
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false },
      },
      {
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          // One load of the CDK per worker, and CDK's bundling cache shared by the files it runs.
          isolate: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          ...stackProject,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          ...stackProject,
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'conformance',
          include: ['test/conformance/**/*.test.ts'],
          ...stackProject,
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
