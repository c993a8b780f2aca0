import type { TestProject } from 'vitest/node';
import { ensureDynamoDbLocalJar } from '../../infra/local/dynamodb-local.ts';
import { type Emulators, externalEndpoints, startEmulators } from '../../infra/local/local-stack.ts';

/**
 * Global setup of the `integration` and `e2e` projects: DynamoDB Local, the SQS emulator and
 * the KMS endpoint start once per project run (or LocalStack is adopted when AWS_ENDPOINT_URL
 * is set) and their endpoints are provided to the tests (`inject('dynamodbEndpoint')` …).
 * Each test file creates its own resources under its own prefix (test/support/local-guard.ts).
 */

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
    kmsEndpoint: string;
  }
}

let emulators: Emulators | undefined;

export async function setup(project: TestProject): Promise<void> {
  const began = performance.now();
  if (!externalEndpoints()) await ensureDynamoDbLocalJar();
  emulators = await startEmulators();
  project.provide('dynamodbEndpoint', emulators.endpoints.dynamodb);
  project.provide('sqsEndpoint', emulators.endpoints.sqs);
  project.provide('kmsEndpoint', emulators.endpoints.kms);
  if (process.env.A2A_LOG_EMULATOR_TIMINGS) {
    console.log(`emulators ready in ${Math.round(performance.now() - began)} ms`, emulators.timings);
  }
}

export async function teardown(): Promise<void> {
  await emulators?.stop();
  emulators = undefined;
}
