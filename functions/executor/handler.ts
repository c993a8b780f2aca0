import type { SQSRecord } from 'aws-lambda';
import { DynamoDbJournalWriter } from '../../shared/adapters/dynamodb/dynamodb-journal-writer.ts';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { inSqsTrace, sqsBatchFunction } from '../../shared/adapters/middy-presets.ts';
import { processPartialBatch } from '../../shared/adapters/partial-batch.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createDocumentClient, createSqsClient } from '../../shared/adapters/sdk-clients.ts';
import { runMessageSchema } from '../../shared/adapters/sqs-run-queue.ts';
import { lazyRunQueue } from '../../shared/adapters/tools/lazy-tool-sources.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import { failpoint } from '../../shared/app/operations/failpoints.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import { createSealer } from '../compose.ts';
import { directFanOutOf } from '../direct-fan-out.ts';
import { createRunDeps } from '../run-deps.ts';
import { createProviderFor } from './providers.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-executor');
const metrics = createFunctionMetrics(env, 'executor');
const documents = createDocumentClient();
const sealer = createSealer(env, documents);
const tasks = new DynamoDbTaskRepository(documents, env.stateTableName);
const sqs = createSqsClient();
// A run projects the revisions it commits into the journal itself, and queues their webhook
// deliveries without waiting for the journal stream's pusher (docs/architecture.md "The journal write").
const writeThrough = new WriteThrough(tasks, new DynamoDbJournalWriter(documents, env.journalTableName), {
  logger,
  ...directFanOutOf(env, {
    pushConfigs: new DynamoDbPushConfigRepository(documents, env.stateTableName),
    sqs,
    logger,
  }),
});
const deps = createRunDeps(env, {
  documents,
  sealer,
  tasks,
  writeThrough,
  logger,
  metrics,
  providerFor: createProviderFor(env),
  // Loaded with the delegation steps: only a run that waited for a remote task queues a run.
  requeue: lazyRunQueue(sqs, env.runQueueUrl),
});

/** One queue message = one run; a thrown record is reported as a partial failure and redelivered. */
const runRecord = async (record: SQSRecord): Promise<void> => {
  const message = runMessageSchema.parse(JSON.parse(record.body));
  const result = await executeRun(deps, message);
  failpoint('executor.beforeDelete');
  logger.info('run handled', { taskId: message.taskId, runId: message.runId, result });
};

export const handler = sqsBatchFunction({ logger, metrics }, async (event) =>
  processPartialBatch(event.Records, inSqsTrace(runRecord), (record) => record.messageId),
);
