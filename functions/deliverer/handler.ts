import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbPushDeliveryLog } from '../../shared/adapters/dynamodb/dynamodb-push-delivery-log.ts';
import { deliveryQueueMaxReceiveCount } from '../../shared/adapters/dynamodb/tables.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { sqsBatchFunction } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createDocumentClient, createSqsClient } from '../../shared/adapters/sdk-clients.ts';
import { SqsDeliveryQueue } from '../../shared/adapters/sqs-delivery-queue.ts';
import { createGuardedWebhookSender } from '../../shared/adapters/ssrf-guard.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import { FinalHere } from '../../shared/app/push/deliver-push.ts';
import { PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { deliveryQueueUrlOf, readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import { createSealer, webhookPolicyOf } from '../compose.ts';
import { createDeliverRecords } from './deliver-records.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-deliverer');
const metrics = createFunctionMetrics(env, 'deliverer');
const documents = createDocumentClient();
const sealer = createSealer(env, documents);

export const handler = sqsBatchFunction(
  { logger, metrics },
  createDeliverRecords({
    deps: {
      pushConfigs: new DynamoDbPushConfigRepository(documents, env.stateTableName),
      journal: new DynamoDbJournalRepository(documents, env.journalTableName),
      codec: new TaskContentCodec(sealer),
      pushCodec: new PushConfigCodec(sealer),
      sender: createGuardedWebhookSender({ policy: webhookPolicyOf(env), timeoutMs: 10_000 }),
      clock: systemClock,
      deliveryLog: new DynamoDbPushDeliveryLog(documents, env.stateTableName),
      finalHere: new FinalHere(),
    },
    queue: new SqsDeliveryQueue(createSqsClient(), deliveryQueueUrlOf(env)),
    metrics,
    logger,
    retryBaseSeconds: env.config.webhooks.retryBaseSeconds,
    maxAttempts: deliveryQueueMaxReceiveCount,
  }),
);
