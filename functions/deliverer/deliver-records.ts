import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { inSqsTrace } from '../../shared/adapters/middy-presets.ts';
import { deliveryMessageSchema, processFifoBatch } from '../../shared/adapters/sqs-delivery-queue.ts';
import { type DeliverDeps, deliverPush } from '../../shared/app/push/deliver-push.ts';
import type { Logger } from '../../shared/domain/logger.ts';
import type { Metrics } from '../../shared/domain/metrics.ts';
import { type AttemptContext, deliveryBackoffSeconds } from '../../shared/domain/push.ts';

export interface DelivererOptions {
  readonly deps: DeliverDeps;
  readonly queue: { retryLater(receiptHandle: string, seconds: number): Promise<void> };
  readonly metrics: Metrics;
  readonly logger: Pick<Logger, 'info' | 'warn'>;
  readonly retryBaseSeconds: number;
  /** The delivery queue's maxReceiveCount: a failure at this attempt sends the message to the DLQ. */
  readonly maxAttempts: number;
}

const attemptOf = (record: SQSRecord): number => Number(record.attributes.ApproximateReceiveCount) || 1;

/**
 * The deliverer's SQS handler, apart from its module so tests can run it on their own resources:
 * one message = one (revision, config), its StreamResponses POSTed in order (with the older
 * revisions it owes first and the newer ones the journal holds after it: `deliverPush`). A failed delivery
 * waits 2^n × base seconds (bounded) before its group moves again; maxReceiveCount → DLQ.
 */
export const createDeliverRecords = (options: DelivererOptions) => {
  const { deps, metrics, logger } = options;

  const deliverRecord = async (record: SQSRecord): Promise<void> => {
    metrics.add('PushAttempts');
    const delivery = deliveryMessageSchema.parse(JSON.parse(record.body));
    const attempt = attemptOf(record);
    const context: AttemptContext = {
      attempt,
      maxAttempts: options.maxAttempts,
      retryBaseSeconds: options.retryBaseSeconds,
      attemptId: `${record.messageId}#${attempt}`,
    };
    const outcome = await deliverPush({ ...deps, logger }, delivery, context);
    if (outcome.kind === 'delivered') metrics.add('PushDelivered');
    if (outcome.kind === 'refused') metrics.add('PushRefused');
    logger.info('delivery done', {
      ...delivery,
      outcome: outcome.kind,
      ...(outcome.kind === 'delivered' && outcome.earlier ? { earlier: outcome.earlier } : {}),
      ...(outcome.kind === 'delivered' && outcome.ahead ? { ahead: outcome.ahead } : {}),
    });
  };

  const backOff = async (record: SQSRecord, error: unknown): Promise<void> => {
    metrics.add('PushFailures');
    const attempt = attemptOf(record);
    const seconds = deliveryBackoffSeconds(attempt, options.retryBaseSeconds);
    logger.warn('delivery failed; retrying later', {
      messageId: record.messageId,
      attempt,
      retryInSeconds: seconds,
      reason: error instanceof Error && 'reason' in error ? String(error.reason) : 'error',
    });
    await options.queue.retryLater(record.receiptHandle, seconds);
  };

  return async (event: SQSEvent): Promise<SQSBatchResponse> =>
    processFifoBatch(event.Records, { handle: inSqsTrace(deliverRecord), onFailure: inSqsTrace(backOff) });
};
