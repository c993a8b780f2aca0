import {
  createContentCodec,
  createDeliveryQueue,
  createDocumentClient,
  createJournalRepository,
  createPushConfigCodec,
  createPushConfigRepository,
  createWebhookSender,
  systemClock,
} from '../../shared/adapters/composition.ts';
import { DynamoDbPushDeliveryLog } from '../../shared/adapters/dynamodb/dynamodb-push-delivery-log.ts';
import { deliveryQueueMaxReceiveCount } from '../../shared/adapters/dynamodb/tables.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { sqsBatchFunction } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import { createDeliverRecords } from './deliver-records.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-deliverer');
const metrics = createFunctionMetrics(env, 'deliverer');
const documents = createDocumentClient();

export const handler = sqsBatchFunction(
  { logger, metrics },
  createDeliverRecords({
    deps: {
      pushConfigs: createPushConfigRepository(env, documents),
      journal: createJournalRepository(env, documents),
      codec: createContentCodec(env),
      pushCodec: createPushConfigCodec(env),
      sender: createWebhookSender(env),
      clock: systemClock,
      deliveryLog: new DynamoDbPushDeliveryLog(documents, env.stateTableName),
    },
    queue: createDeliveryQueue(env),
    metrics,
    logger,
    retryBaseSeconds: env.config.webhooks.retryBaseSeconds,
    maxAttempts: deliveryQueueMaxReceiveCount,
  }),
);
