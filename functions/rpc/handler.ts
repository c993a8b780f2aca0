import { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { createA2aMethods } from '../../shared/app/a2a-methods.ts';
import { createDispatcher } from '../../shared/app/rpc/dispatcher.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import {
  createContentCodec,
  createDocumentClient,
  createJournalRepository,
  createRunQueue,
  createTaskRepository,
  systemClock,
  uuidGenerator,
} from '../../shared/adapters/composition.ts';
import { toHttpRequest, toProxyResult } from './api-gateway.ts';
import { createHttpApp } from './http-app.ts';

const env = readRuntimeEnv();
const logger = new Logger({ serviceName: 'a2a-rpc' });
const documents = createDocumentClient();
const methods = createA2aMethods({
  tasks: createTaskRepository(env, documents),
  journal: createJournalRepository(env, documents),
  queue: createRunQueue(env),
  codec: createContentCodec(env),
  clock: systemClock,
  ids: uuidGenerator,
  config: env.config,
  logger,
});
const app = createHttpApp({
  config: env.config,
  dispatcher: createDispatcher(methods, { errorDomain: env.config.errorDomain, logger }),
});

export const handler = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> =>
  toProxyResult(await app(toHttpRequest(event, env.localMode)));
