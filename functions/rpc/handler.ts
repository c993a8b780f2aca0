import {
  createContentCodec,
  createDocumentClient,
  createJournalRepository,
  createPushConfigCodec,
  createPushConfigRepository,
  createRunQueue,
  createSavedProfiles,
  createTaskRepository,
  systemClock,
  uuidGenerator,
  webhookPolicyOf,
} from '../../shared/adapters/composition.ts';
import { DynamoDbPushDeliveryLog } from '../../shared/adapters/dynamodb/dynamodb-push-delivery-log.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { streamingHttpFunction } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createA2aMethods, createExtensionMethods } from '../../shared/app/a2a-methods.ts';
import { WaitHistory } from '../../shared/app/read-task.ts';
import { createDispatcher } from '../../shared/app/rpc/dispatcher.ts';
import { createV03Methods } from '../../shared/app/rpc/v03-methods.ts';
import { createProfileCatalog } from '../../shared/app/served-profiles.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import { toHttpRequest, toStreamingResponse } from './api-gateway.ts';
import { createHttpApp } from './http-app.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-rpc');
const metrics = createFunctionMetrics(env, 'rpc');
const documents = createDocumentClient();
const tasks = createTaskRepository(env, documents);
// Saved profiles overlay the deployment's, read at most once per 30 s (decision 0024).
const profiles = createProfileCatalog({
  config: env.config,
  saved: createSavedProfiles(env, documents),
  clock: systemClock,
  logger,
  ...(env.profileCacheMs ? { ttlMs: env.profileCacheMs } : {}),
});
const methods = createA2aMethods({
  tasks,
  journal: createJournalRepository(env, documents),
  queue: createRunQueue(env),
  codec: createContentCodec(env),
  clock: systemClock,
  // Defers the journal wait's first poll by what recent waits took (decision 0035).
  waitHistory: new WaitHistory(),
  ids: uuidGenerator,
  config: env.config,
  logger,
  metrics,
  pushConfigs: createPushConfigRepository(env, documents),
  pushCodec: createPushConfigCodec(env),
  webhookPolicy: webhookPolicyOf(env),
  profileCatalog: profiles,
  ...(env.runStartDeadlineMs ? { runStartDeadlineMs: env.runStartDeadlineMs } : {}),
  ...(env.runLeaseMs ? { runLeaseMs: env.runLeaseMs } : {}),
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
