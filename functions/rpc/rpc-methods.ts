import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import type { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbPushDeliveryLog } from '../../shared/adapters/dynamodb/dynamodb-push-delivery-log.ts';
import { DynamoDbStreamSlots } from '../../shared/adapters/dynamodb/dynamodb-stream-slots.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { keepAliveAfterAnswer } from '../../shared/adapters/middy-presets.ts';
import { SqsRunQueue } from '../../shared/adapters/sqs-run-queue.ts';
import { systemClock, uuidGenerator } from '../../shared/adapters/system.ts';
import { currentTrace } from '../../shared/adapters/trace-context.ts';
import type { WriteThrough } from '../../shared/app/journal/write-through.ts';
import { requiredExtensionsOf } from '../../shared/app/profiles/agent-card.ts';
import type { ProfileCatalog } from '../../shared/app/profiles/served-profiles.ts';
import { PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { createA2aMethods, createExtensionMethods } from '../../shared/app/rpc/a2a-methods.ts';
import { createDispatcher } from '../../shared/app/rpc/dispatcher.ts';
import { createV03Methods } from '../../shared/app/rpc/v03-methods.ts';
import { executeClaimedRun } from '../../shared/app/runs/execute-run.ts';
import { WaitHistory } from '../../shared/app/tasks/read-task.ts';
import type { RunsHere } from '../../shared/app/tasks/send-message.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import type { RuntimeEnv } from '../../shared/config/runtime-env.ts';
import type { Logger } from '../../shared/domain/logger.ts';
import type { Metrics } from '../../shared/domain/metrics.ts';
import type { Sealer, TaskRepository } from '../../shared/domain/ports.ts';
import { webhookPolicyOf } from '../compose.ts';
import { createProviderFor } from '../providers.ts';
import { createA2aAgentSource, createRunDeps } from '../run-deps.ts';
import { mayAnswerWithMessage } from './message-answers.ts';

/** The adapters the rpc's composition root builds once per cold start. */
export interface RpcAdapters {
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly sealer: Sealer;
  readonly tasks: TaskRepository;
  readonly journal: DynamoDbJournalRepository;
  readonly writeThrough: WriteThrough;
  readonly pushConfigs: DynamoDbPushConfigRepository;
  readonly profiles: ProfileCatalog;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * A blocking send's run runs here, not in the executor (docs/how-a-task-flows.md), unless the
 * deployment keeps every run in the executor (`deployment.blockingRunsInRpc: false`). A run's
 * metrics are the executor's (metricCatalog's `emittedBy`), so dashboards count them wherever the
 * run ran; rare (a tightening), each is written at once: the answer, and its flush, may be long gone.
 */
const runsHereOf = (env: RuntimeEnv, adapters: RpcAdapters): RunsHere => {
  const executorMetrics = createFunctionMetrics(env, 'executor');
  const runMetrics: Metrics = {
    add: (name, value) => {
      executorMetrics.add(name, value);
      executorMetrics.flush();
    },
  };
  const runDeps = createRunDeps(env, {
    ...adapters,
    metrics: runMetrics,
    providerFor: createProviderFor(env),
    requeue: new SqsRunQueue(adapters.sqs, env.runQueueUrl),
  });
  return {
    // Bedrock's client stays out of this bundle (≤ 512 KiB, infra/bundling.ts): its profiles' runs are queued.
    canRun: (providerIds) => providerIds.every((id) => env.config.providers[id]?.type !== 'bedrock'),
    run: (image, onJournaled) => executeClaimedRun(runDeps, image, onJournaled),
    keepAlive: keepAliveAfterAnswer,
  };
};

/** The JSON-RPC dispatcher of the rpc function: the A2A methods, the extensions and v0.3's names. */
export const createRpcDispatcher = (env: RuntimeEnv, adapters: RpcAdapters) => {
  const { documents, tasks, logger } = adapters;
  const methods = createA2aMethods({
    ...(env.runsBlockingSends && { runsHere: runsHereOf(env, adapters) }),
    tasks,
    writeThrough: adapters.writeThrough,
    journal: adapters.journal,
    queue: new SqsRunQueue(adapters.sqs, env.runQueueUrl),
    codec: new TaskContentCodec(adapters.sealer),
    clock: systemClock,
    // Defers the journal wait's first poll by what recent waits took (a timing hint, per instance).
    waitHistory: new WaitHistory(),
    ids: uuidGenerator,
    config: env.config,
    logger,
    metrics: adapters.metrics,
    pushConfigs: adapters.pushConfigs,
    pushCodec: new PushConfigCodec(adapters.sealer),
    webhookPolicy: webhookPolicyOf(env),
    profileCatalog: adapters.profiles,
    // A stream whose agent may answer with a Message waits to know which it is (docs/protocol.md).
    mayAnswerWithMessage,
    // Open streams per caller, counted across instances in the state table.
    streamSlots: new DynamoDbStreamSlots(documents, env.stateTableName, systemClock),
    // Blocking sends waiting per caller, counted alike (one caller cannot take every instance).
    blockingSlots: new DynamoDbStreamSlots(documents, env.stateTableName, systemClock, 'BLOCKING'),
    ...(env.runStartDeadlineMs ? { runStartDeadlineMs: env.runStartDeadlineMs } : {}),
    ...(env.runLeaseMs ? { runLeaseMs: env.runLeaseMs } : {}),
    // The request's traceparent (validated by the preset) goes on a new task's row.
    callerTraceparent: () => currentTrace()?.traceparent,
    // A cancel of a run that waits for a delegated task cancels that task too (CancelTask).
    ...(Object.keys(env.config.a2aAgents).length > 0 && { remoteTasks: createA2aAgentSource(env) }),
  });
  const deliveryLog = new DynamoDbPushDeliveryLog(documents, env.stateTableName);
  return createDispatcher(
    { ...methods, ...createExtensionMethods({ tasks, clock: systemClock, deliveryLog }) },
    {
      errorDomain: env.config.errorDomain,
      logger,
      v03Methods: createV03Methods(methods),
      // The extensions a profile declares required, saved profiles included (docs/protocol.md §9).
      requiredExtensions: async (profileId) =>
        requiredExtensionsOf((await adapters.profiles.current()).config, profileId),
    },
  );
};
