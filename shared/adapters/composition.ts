import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TaskContentCodec } from '../app/task-content.ts';
import type { RuntimeEnv } from '../config/runtime-env.ts';
import type { AgentProvider, Clock, IdGenerator } from '../domain/ports.ts';
import { DynamoDbJournalRepository } from './dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbTaskRepository } from './dynamodb/dynamodb-task-repository.ts';
import { KmsSealer } from './kms-sealer.ts';
import { ScriptedProvider } from './providers/scripted-provider.ts';
import { SqsRunQueue } from './sqs-run-queue.ts';

/**
 * Builds the adapters a function needs from its validated environment, once per cold start.
 * Clients find their endpoints through the SDK's own AWS_ENDPOINT_URL_* variables, so the same
 * code runs against AWS, LocalStack and the embedded emulators.
 */

export const systemClock: Clock = { now: () => new Date() };
export const uuidGenerator: IdGenerator = { newId: () => randomUUID() };

export const createDocumentClient = (): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } });

export const createTaskRepository = (env: RuntimeEnv, client = createDocumentClient()) =>
  new DynamoDbTaskRepository(client, env.stateTableName);

export const createJournalRepository = (env: RuntimeEnv, client = createDocumentClient()) =>
  new DynamoDbJournalRepository(client, env.journalTableName);

export const createRunQueue = (env: RuntimeEnv) => new SqsRunQueue(new SQSClient({}), env.runQueueUrl);

export const createContentCodec = (env: RuntimeEnv) =>
  new TaskContentCodec(
    new KmsSealer({ kms: new KMSClient({}), keyId: env.kmsKeyId, installation: env.installation }),
  );

/** The provider of each configured id. Bedrock and OpenAI-compatible providers come with their own adapters. */
export const createProviderFor = (env: RuntimeEnv): ((providerId: string) => AgentProvider) => {
  const providers = new Map<string, AgentProvider>();
  for (const [providerId, provider] of Object.entries(env.config.providers)) {
    if (provider.type === 'scripted')
      providers.set(providerId, new ScriptedProvider(providerId, provider.behavior));
  }
  return (providerId) => {
    const provider = providers.get(providerId);
    if (provider === undefined) throw new Error(`Provider ${providerId} has no adapter in this build`);
    return provider;
  };
};
