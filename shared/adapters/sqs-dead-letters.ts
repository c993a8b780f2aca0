import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DeadLetter, DeadLetterQueue, StreamBatchRange } from '../domain/operations.ts';
import * as z from '../zod.ts';

/**
 * A stream consumer's on-failure destination on SQS, read by the replay (docs/operations.md, "Replaying the
 * projector's and the pusher's DLQs"). Each message is the record Lambda writes when it gives up on a
 * DynamoDB stream batch: the batch's coordinates under `DDBStreamBatchInfo`, never its records.
 */

const sequenceNumber = z.string().check(z.regex(/^\d{1,64}$/));

/** The part of Lambda's on-failure record the replay needs (the rest is ignored). */
const streamBatchInfoSchema = z.object({
  DDBStreamBatchInfo: z.object({
    streamArn: z.string().check(z.startsWith('arn:')),
    shardId: z.string().check(z.minLength(1), z.maxLength(256)),
    startSequenceNumber: sequenceNumber,
    endSequenceNumber: sequenceNumber,
    batchSize: z.optional(z.number().check(z.int(), z.nonnegative())),
  }),
});

/** The batch an on-failure record names, or undefined for any other message. */
export const parseOnFailureRecord = (body: string | undefined): StreamBatchRange | undefined => {
  let json: unknown;
  try {
    json = JSON.parse(body ?? '');
  } catch {
    return undefined;
  }
  const parsed = streamBatchInfoSchema.safeParse(json);
  if (!parsed.success) return undefined;
  const info = parsed.data.DDBStreamBatchInfo;
  if (BigInt(info.startSequenceNumber) > BigInt(info.endSequenceNumber)) return undefined;
  return {
    streamArn: info.streamArn,
    shardId: info.shardId,
    startSequenceNumber: info.startSequenceNumber,
    endSequenceNumber: info.endSequenceNumber,
    ...(info.batchSize !== undefined ? { batchSize: info.batchSize } : {}),
  };
};

/** How long a received message stays hidden while a replay holds it (released at its end). */
const HOLD_SECONDS = 15 * 60;

export class SqsDeadLetters implements DeadLetterQueue {
  /** The receipt handle of each message this reader holds. */
  private readonly held = new Map<string, string>();

  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async receive(): Promise<DeadLetter[]> {
    const { Messages = [] } = await this.client.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: HOLD_SECONDS,
        WaitTimeSeconds: 0,
      }),
    );
    return Messages.flatMap((message): DeadLetter[] => {
      if (!message.MessageId || !message.ReceiptHandle) return [];
      this.held.set(message.MessageId, message.ReceiptHandle);
      const range = parseOnFailureRecord(message.Body);
      return [{ messageId: message.MessageId, ...(range !== undefined ? { range } : {}) }];
    });
  }

  async delete(letter: DeadLetter): Promise<void> {
    await this.client.send(
      new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: this.receiptOf(letter) }),
    );
    this.held.delete(letter.messageId);
  }

  async release(letter: DeadLetter): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: this.receiptOf(letter),
        VisibilityTimeout: 0,
      }),
    );
    this.held.delete(letter.messageId);
  }

  private receiptOf(letter: DeadLetter): string {
    const handle = this.held.get(letter.messageId);
    if (handle === undefined) throw new Error(`Message ${letter.messageId} is not held by this reader`);
    return handle;
  }
}
