import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import {
  createContentCodec,
  createDocumentClient,
  createJournalRepository,
  createPushConfigCodec,
  createPushConfigRepository,
  createRunQueue,
  createTaskRepository,
  systemClock,
  uuidGenerator,
  webhookPolicyOf,
} from '../../shared/adapters/composition.ts';
import { DynamoDbPushDeliveryLog } from '../../shared/adapters/dynamodb/dynamodb-push-delivery-log.ts';
import { createFunctionMetrics, withMetrics } from '../../shared/adapters/metrics.ts';
import { createA2aMethods, createExtensionMethods } from '../../shared/app/a2a-methods.ts';
import { createDispatcher } from '../../shared/app/rpc/dispatcher.ts';
import { createV03Methods } from '../../shared/app/rpc/v03-methods.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import { toHttpRequest, writeResponse } from './api-gateway.ts';
import { createHttpApp } from './http-app.ts';

const env = readRuntimeEnv();
const logger = new Logger({ serviceName: 'a2a-rpc' });
const metrics = createFunctionMetrics(env, 'rpc');
const documents = createDocumentClient();
const tasks = createTaskRepository(env, documents);
const methods = createA2aMethods({
  tasks,
  journal: createJournalRepository(env, documents),
  queue: createRunQueue(env),
  codec: createContentCodec(env),
  clock: systemClock,
  ids: uuidGenerator,
  config: env.config,
  logger,
  metrics,
  pushConfigs: createPushConfigRepository(env, documents),
  pushCodec: createPushConfigCodec(env),
  webhookPolicy: webhookPolicyOf(env),
  ...(env.runStartDeadlineMs ? { runStartDeadlineMs: env.runStartDeadlineMs } : {}),
});
const app = createHttpApp({
  config: env.config,
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
export const handler = awslambda.streamifyResponse(
  withMetrics(metrics, async (event: APIGatewayProxyEvent, responseStream: awslambda.HttpResponseStream) => {
    await writeResponse(responseStream, await app(toHttpRequest(event, env.localMode)));
  }),
);
