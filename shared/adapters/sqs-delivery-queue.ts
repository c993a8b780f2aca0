import { ChangeMessageVisibilityCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { DeliveryQueue } from '../domain/ports.ts';
import { deliveryDedupIdOf, deliveryGroupOf, type PushDelivery } from '../domain/push.ts';
import * as z from '../zod.ts';
import { handleInGroups, oneAtATime } from './grouped-batch.ts';
import { traceMessageAttributes } from './trace-context.ts';

/** The delivery queue message: ids only; the config and the journal event are the state. */
export const deliveryMessageSchema = z.object({
  taskId: z.string().check(z.minLength(1)),
  configId: z.string().check(z.minLength(1)),
  revision: z.number().check(z.int(), z.positive()),
});

/**
 * The SQS FIFO delivery queue. Group = (task, config): deliveries to one webhook go in order and
 * a webhook that fails or is slow holds back only its own group. Deduplication id = (task,
 * config, revision): a replayed stream record or a pusher retry within SQS's 5-minute window
 * sends nothing twice (and after it, the receiver's idempotency covers the duplicate).
 */
export class SqsDeliveryQueue implements DeliveryQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(deliveries: readonly PushDelivery[]): Promise<void> {
    // Batches of 10 (the SQS limit), sent one after another so each group's order is the call order.
    for (let start = 0; start < deliveries.length; start += 10) {
      const batch = deliveries.slice(start, start + 10);
      const { Failed } = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((delivery, index) => ({
            Id: String(index),
            MessageBody: JSON.stringify({
              taskId: delivery.taskId,
              configId: delivery.configId,
              revision: delivery.revision,
            }),
            MessageGroupId: deliveryGroupOf(delivery),
            MessageDeduplicationId: deliveryDedupIdOf(delivery),
            MessageAttributes: traceMessageAttributes(delivery.taskId),
          })),
        }),
      );
      if (Failed && Failed.length > 0) {
        throw new Error(`${Failed.length} deliveries could not be queued (${Failed[0]?.Code ?? 'unknown'})`);
      }
    }
  }

  /** Hides a failed message for `seconds`: the backoff before its next attempt. */
  async retryLater(receiptHandle: string, seconds: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  }
}

export interface FifoBatchHandlers {
  readonly handle: (record: SQSRecord) => Promise<void>;
  /** Called once for a record whose handling threw (before it is reported as failed). */
  readonly onFailure?: (record: SQSRecord, error: unknown) => Promise<void>;
}

/**
 * Partial batch processing for a FIFO queue: message groups run concurrently (a slow webhook
 * does not hold up another group of the same batch), each group in order; after a failure the
 * group's later messages are not tried and are reported failed too, so order holds
 * (grouped-batch.ts).
 */
export const processFifoBatch = async (
  records: readonly SQSRecord[],
  handlers: FifoBatchHandlers,
): Promise<SQSBatchResponse> => {
  const failed = await handleInGroups(
    records,
    (record) => record.attributes.MessageGroupId ?? record.messageId,
    oneAtATime(handlers.handle, handlers.onFailure),
  );
  return { batchItemFailures: failed.map((index) => ({ itemIdentifier: records[index]!.messageId })) };
};
