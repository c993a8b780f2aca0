import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbPushDeliveryLog } from '../../shared/adapters/dynamodb/dynamodb-push-delivery-log.ts';
import { DynamoDbSavedProfiles } from '../../shared/adapters/dynamodb/dynamodb-saved-profiles.ts';
import { DynamoDbStreamSlots } from '../../shared/adapters/dynamodb/dynamodb-stream-slots.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { keepAliveAfterAnswer, streamingHttpFunction } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createDocumentClient, createSqsClient } from '../../shared/adapters/sdk-clients.ts';
import { SqsRunQueue } from '../../shared/adapters/sqs-run-queue.ts';
import { systemClock, uuidGenerator } from '../../shared/adapters/system.ts';
import { currentTrace } from '../../shared/adapters/trace-context.ts';
import { WriteThroughTaskRepository } from '../../shared/app/journal/write-through.ts';
import { createProfileCatalog } from '../../shared/app/profiles/served-profiles.ts';
import { PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { createA2aMethods, createExtensionMethods } from '../../shared/app/rpc/a2a-methods.ts';
import { createDispatcher } from '../../shared/app/rpc/dispatcher.ts';
import { createV03Methods } from '../../shared/app/rpc/v03-methods.ts';
import { executeClaimedRun } from '../../shared/app/runs/execute-run.ts';
import { WaitHistory } from '../../shared/app/tasks/read-task.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import type { Metrics } from '../../shared/domain/metrics.ts';
import { createSealer, webhookPolicyOf } from '../compose.ts';
import { directFanOutOf } from '../direct-fan-out.ts';
import { createProviderFor } from '../providers.ts';
import { createRunDeps } from '../run-deps.ts';
import { toHttpRequest, toStreamingResponse } from './api-gateway.ts';
import { createHttpApp } from './http-app.ts';
import { mayAnswerWithMessage } from './message-answers.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-rpc');
const metrics = createFunctionMetrics(env, 'rpc');
const documents = createDocumentClient();
const sealer = createSealer(env, documents);
const journal = new DynamoDbJournalRepository(documents, env.journalTableName);
const sqs = createSqsClient();
const pushConfigs = new DynamoDbPushConfigRepository(documents, env.stateTableName);
// Commits project their revision into the journal themselves (decision 0043), and queue its
// webhook deliveries without waiting for the journal stream's pusher (decision 0045).
const tasks = new WriteThroughTaskRepository(
  new DynamoDbTaskRepository(documents, env.stateTableName),
  journal,
  { logger, ...directFanOutOf(env, { pushConfigs, sqs, logger }) },
);
// Saved profiles overlay the deployment's, read at most once per 30 s (decision 0024).
const profiles = createProfileCatalog({
  config: env.config,
  saved: new DynamoDbSavedProfiles(documents, env.stateTableName),
  clock: systemClock,
  logger,
  ...(env.profileCacheMs ? { ttlMs: env.profileCacheMs } : {}),
});
/**
 * A blocking send's run runs here, not in the executor (decision 0091), unless the deployment
 * keeps every run in the executor (`deployment.blockingRunsInRpc: false`). A run's metrics are the
 * executor's (metricCatalog's `emittedBy`), so dashboards count them wherever the run ran; rare
 * (a tightening), each is written at once: the answer, and its flush, may be long gone.
 */
const runDepsHere = () => {
  const executorMetrics = createFunctionMetrics(env, 'executor');
  const runMetrics: Metrics = {
    add: (name, value) => {
      executorMetrics.add(name, value);
      executorMetrics.flush();
    },
  };
  return createRunDeps(env, {
    documents,
    sealer,
    tasks,
    logger,
    metrics: runMetrics,
    providerFor: createProviderFor(env),
  });
};
const runDeps = env.runsBlockingSends ? runDepsHere() : undefined;
const methods = createA2aMethods({
  ...(runDeps && {
    runsHere: {
      // Bedrock's client stays out of this bundle (≤ 512,000 bytes): its profiles' runs are queued.
      canRun: (providerIds) => providerIds.every((id) => env.config.providers[id]?.type !== 'bedrock'),
      run: (image) => executeClaimedRun(runDeps, image),
      watch: (taskId) => tasks.watch(taskId),
      unwatch: (taskId) => tasks.unwatch(taskId),
      keepAlive: keepAliveAfterAnswer,
    },
  }),
  tasks,
  journal,
  // Run messages say which revision this write-through projected (decision 0071).
  queue: tasks.announcing(new SqsRunQueue(sqs, env.runQueueUrl)),
  codec: new TaskContentCodec(sealer),
  clock: systemClock,
  // Defers the journal wait's first poll by what recent waits took (decision 0077).
  waitHistory: new WaitHistory(),
  ids: uuidGenerator,
  config: env.config,
  logger,
  metrics,
  pushConfigs,
  pushCodec: new PushConfigCodec(sealer),
  webhookPolicy: webhookPolicyOf(env),
  profileCatalog: profiles,
  // A stream whose agent may answer with a Message waits to know which it is (decision 0067).
  mayAnswerWithMessage,
  // Open streams per caller, counted across instances in the state table (decision 0052).
  streamSlots: new DynamoDbStreamSlots(documents, env.stateTableName, systemClock),
  ...(env.runStartDeadlineMs ? { runStartDeadlineMs: env.runStartDeadlineMs } : {}),
  ...(env.runLeaseMs ? { runLeaseMs: env.runLeaseMs } : {}),
  // The request's traceparent (validated by the preset) goes on a new task's row (decision 0059).
  callerTraceparent: () => currentTrace()?.traceparent,
});
const app = createHttpApp({
  config: env.config,
  profiles,
  dispatcher: createDispatcher(
    {
      ...methods,
      ...createExtensionMethods({
        tasks,
        clock: systemClock,
        deliveryLog: new DynamoDbPushDeliveryLog(documents, env.stateTableName),
      }),
    },
    {
      errorDomain: env.config.errorDomain,
      logger,
      v03Methods: createV03Methods(methods),
    },
  ),
});

/** A streaming Lambda: one endpoint answers plain JSON-RPC and SSE alike. */
export const handler = streamingHttpFunction({ logger, metrics }, async (event) =>
  toStreamingResponse(await app(toHttpRequest(event, env.localMode))),
);
