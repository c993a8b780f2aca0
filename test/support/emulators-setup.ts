import type { TestProject } from 'vitest/node';
import { ensureDynamoDbLocalJar } from '../../infra/local/dynamodb-local.ts';
import { type Emulators, externalEndpoints, startEmulators } from '../../infra/local/local-stack.ts';

/**
 * Global setup of the `integration`, `e2e` and `conformance` projects: DynamoDB Local, the SQS
 * emulator and the KMS endpoint start once per test run (or LocalStack is adopted when
 * AWS_ENDPOINT_URL is set) and their endpoints are provided to the tests
 * (`inject('dynamodbEndpoint')` …). The projects share one set: Vitest loads this module once per
 * project, so the set lives on `globalThis` of the runner's process, counted by the projects that
 * use it, and stops with the last one. One Java start instead of three, and one warm JIT.
 * Each test file creates its own resources under its own prefix (test/support/local-guard.ts).
 */

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
    kmsEndpoint: string;
  }
}

interface Shared {
  readonly emulators: Promise<Emulators>;
  users: number;
}

const key = Symbol.for('a2a-serverless.test.emulators');
const holder = globalThis as typeof globalThis & { [key]?: Shared };

const start = async (): Promise<Emulators> => {
  const began = performance.now();
  if (!externalEndpoints()) await ensureDynamoDbLocalJar();
  const emulators = await startEmulators();
  if (process.env.A2A_LOG_EMULATOR_TIMINGS) {
    console.log(`emulators ready in ${Math.round(performance.now() - began)} ms`, emulators.timings);
  }
  return emulators;
};

export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const shared = holder[key] ?? { emulators: start(), users: 0 };
  holder[key] = shared;
  shared.users += 1;
  const emulators = await shared.emulators;
  project.provide('dynamodbEndpoint', emulators.endpoints.dynamodb);
  project.provide('sqsEndpoint', emulators.endpoints.sqs);
  project.provide('kmsEndpoint', emulators.endpoints.kms);
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    if (holder[key] === shared) delete holder[key];
    await emulators.stop();
  };
}
