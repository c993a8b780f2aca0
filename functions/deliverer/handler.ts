import { Logger } from '@aws-lambda-powertools/logger';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import {
  createContentCodec,
  createDeliveryQueue,
  createJournalRepository,
  createPushConfigCodec,
  createPushConfigRepository,
  createWebhookSender,
  systemClock,
} from '../../shared/adapters/composition.ts';
import { createFunctionMetrics, withMetrics } from '../../shared/adapters/metrics.ts';
import { deliveryMessageSchema, processFifoBatch } from '../../shared/adapters/sqs-delivery-queue.ts';
import { deliverPush } from '../../shared/app/deliver-push.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import { deliveryBackoffSeconds } from '../../shared/domain/push.ts';

const env = readRuntimeEnv();
const logger = new Logger({ serviceName: 'a2a-deliverer' });
const metrics = createFunctionMetrics(env, 'deliverer');
const deps = {
  pushConfigs: createPushConfigRepository(env),
  journal: createJournalRepository(env),
  codec: createContentCodec(env),
  pushCodec: createPushConfigCodec(env),
  sender: createWebhookSender(env),
  clock: systemClock,
};
const queue = createDeliveryQueue(env);

/** One message = one (revision, config): its StreamResponses POSTed in order. */
const deliverRecord = async (record: SQSRecord): Promise<void> => {
  metrics.add('PushAttempts');
  const delivery = deliveryMessageSchema.parse(JSON.parse(record.body));
  const outcome = await deliverPush(deps, delivery);
  if (outcome.kind === 'delivered') metrics.add('PushDelivered');
  if (outcome.kind === 'refused') metrics.add('PushRefused');
  logger.info('delivery settled', { ...delivery, outcome: outcome.kind });
};

/** A failed delivery waits 2^n × base seconds (bounded) before its group moves again; maxReceiveCount → DLQ. */
const backOff = async (record: SQSRecord, error: unknown): Promise<void> => {
  metrics.add('PushFailures');
  const attempt = Number(record.attributes.ApproximateReceiveCount) || 1;
  const seconds = deliveryBackoffSeconds(attempt, env.config.webhooks.retryBaseSeconds);
  logger.warn('delivery failed; retrying later', {
    messageId: record.messageId,
    attempt,
    retryInSeconds: seconds,
    reason: error instanceof Error && 'reason' in error ? String(error.reason) : 'error',
  });
  await queue.retryLater(record.receiptHandle, seconds);
};

export const handler = withMetrics(
  metrics,
  async (event: SQSEvent): Promise<SQSBatchResponse> =>
    processFifoBatch(event.Records, { handle: deliverRecord, onFailure: backOff }),
);
