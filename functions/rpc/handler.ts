import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbSavedProfiles } from '../../shared/adapters/dynamodb/dynamodb-saved-profiles.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { streamingHttpFunction } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createDocumentClient, createSqsClient } from '../../shared/adapters/sdk-clients.ts';
import { SqsRunQueue } from '../../shared/adapters/sqs-run-queue.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import { createProfileCatalog } from '../../shared/app/profiles/served-profiles.ts';
import { type WakeInput, wakeDelegatedRun } from '../../shared/app/runs/wake-delegated-run.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import { createSealer } from '../compose.ts';
import { directFanOutOf } from '../direct-fan-out.ts';
import { serveOnResponseStream } from './api-gateway.ts';
import { createHttpApp } from './http-app.ts';
import { createRpcDispatcher } from './rpc-methods.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-rpc');
const metrics = createFunctionMetrics(env, 'rpc');
const documents = createDocumentClient();
const sqs = createSqsClient();
const sealer = createSealer(env, documents);
const tasks = new DynamoDbTaskRepository(documents, env.stateTableName);
const journal = new DynamoDbJournalRepository(documents, env.journalTableName);
const pushConfigs = new DynamoDbPushConfigRepository(documents, env.stateTableName);
// Revisions committed here are projected into the journal here, and their webhook deliveries
// queued without the journal stream's pusher (docs/architecture.md "The journal write").
const writeThrough = new WriteThrough(tasks, journal, {
  logger,
  ...directFanOutOf(env, { pushConfigs, sqs, logger }),
});
// Saved profiles overlay the deployment's, read at most once per 30 s.
const profiles = createProfileCatalog({
  config: env.config,
  saved: new DynamoDbSavedProfiles(documents, env.stateTableName),
  clock: systemClock,
  logger,
  ...(env.profileCacheMs ? { ttlMs: env.profileCacheMs } : {}),
});
const adapters = { documents, sqs, sealer, tasks, journal, writeThrough, pushConfigs, profiles };
const dispatcher = createRpcDispatcher(env, { ...adapters, logger, metrics });
const runQueue = new SqsRunQueue(sqs, env.runQueueUrl);
const app = createHttpApp({
  config: env.config,
  profiles,
  dispatcher,
  ...(env.config.publicUrl !== undefined && {
    wakeDelegated: (input: WakeInput) =>
      wakeDelegatedRun(
        { tasks, queue: runQueue, clock: systemClock, runStartDeadlineMs: env.runStartDeadlineMs },
        input,
      ),
  }),
});

/** A streaming Lambda: one endpoint answers plain JSON-RPC and SSE alike. */
export const handler = streamingHttpFunction({ logger, metrics }, (event) =>
  serveOnResponseStream(app, event, env.localMode),
);
