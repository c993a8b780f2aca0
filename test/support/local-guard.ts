import { randomBytes } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { KMSClient } from '@aws-sdk/client-kms';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { createLocalClients, type Endpoints } from '../../infra/local/local-stack.ts';
import { createResources, type LocalResources } from '../../infra/local/resources.ts';

/**
 * Integration tests run against local endpoints only: every endpoint passes this guard before a
 * client is built, so a test can never reach a real AWS account, whatever the environment says.
 */

const loopbackNames = new Set(['localhost', '127.0.0.1', '[::1]', '::1', 'localhost.localstack.cloud']);

export const isLocalEndpoint = (url: string): boolean => {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  return loopbackNames.has(host) || /^127(?:\.\d{1,3}){3}$/.test(host) || host.endsWith('.localhost');
};

export function assertLocalEndpoint(url: string | undefined): asserts url is string {
  if (url === undefined || !isLocalEndpoint(url)) {
    throw new Error(`Refusing to run against a non-local endpoint: ${url ?? '(none)'}`);
  }
}

/** The endpoints the global setup provides, each checked by the guard. */
export const providedEndpoints = (): Endpoints => {
  const dynamodb = inject('dynamodbEndpoint');
  const sqs = inject('sqsEndpoint');
  const kms = inject('kmsEndpoint');
  for (const url of [dynamodb, sqs, kms]) assertLocalEndpoint(url);
  return { dynamodb, dynamodbStreams: dynamodb, sqs, kms };
};

export interface TestResources {
  /** The prefix actually used: the one given plus a random suffix. */
  readonly prefix: string;
  readonly endpoints: Endpoints;
  readonly clients: {
    readonly dynamodb: DynamoDBClient;
    readonly doc: DynamoDBDocumentClient;
    readonly streams: DynamoDBStreamsClient;
    readonly sqs: SQSClient;
    readonly kms: KMSClient;
  };
  readonly resources: LocalResources;
  /** Environment variables a handler needs, as the local stack sets them. */
  readonly env: LocalResources['env'];
  destroy(): void;
}

/**
 * Tables, queues and a key under a prefix of their own (one per test file), in the emulators
 * the global setup started, with clients on dummy credentials. The random suffix keeps reruns
 * in watch mode (same emulators) and persistent LocalStack state apart.
 */
export const createTestResources = async (prefix: string): Promise<TestResources> => {
  const endpoints = providedEndpoints();
  const unique = `${prefix}-${randomBytes(3).toString('hex')}`;
  const local = createLocalClients(endpoints);
  const doc = DynamoDBDocumentClient.from(local.dynamodb, {
    marshallOptions: { removeUndefinedValues: true },
  });
  const resources = await createResources({ prefix: unique, clients: local });
  return {
    prefix: unique,
    endpoints,
    clients: { dynamodb: local.dynamodb, doc, streams: local.streams, sqs: local.sqs, kms: local.kms },
    resources,
    env: resources.env,
    destroy: () => local.destroy(),
  };
};
