import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { localCredentials } from '../../infra/local/local-stack.ts';
import { type SqsEmulator, startSqsEmulator } from '../../infra/local/sqs-emulator.ts';

/**
 * The FIFO semantics infra/local/sqs-emulator.ts adds to local-aws-sqs 2.0.2, through the real
 * SQS client against the emulator: message groups, ChangeMessageVisibility not counted as a
 * receive, deduplication that outlives the message.
 */
let emulator: SqsEmulator;
let sqs: SQSClient;
let queue = 0;

beforeAll(async () => {
  emulator = await startSqsEmulator();
  sqs = new SQSClient({ region: 'us-east-1', endpoint: emulator.endpoint, credentials: localCredentials });
});

afterEach(() => {
  vi.useRealTimers();
});

afterAll(async () => {
  sqs?.destroy();
  await emulator?.stop();
});

const fifoQueue = async (): Promise<string> => {
  queue += 1;
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: `fifo-${queue}.fifo`,
      Attributes: { FifoQueue: 'true', VisibilityTimeout: '30' },
    }),
  );
  return QueueUrl as string;
};

const send = (QueueUrl: string, group: string, body: string, dedup = body) =>
  sqs.send(
    new SendMessageCommand({
      QueueUrl,
      MessageBody: body,
      MessageGroupId: group,
      MessageDeduplicationId: dedup,
    }),
  );

const receive = async (QueueUrl: string, max = 10) =>
  (
    await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl,
        MaxNumberOfMessages: max,
        WaitTimeSeconds: 0,
        AttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    )
  ).Messages ?? [];

describe('the SQS emulator on a FIFO queue', () => {
  it('hands out no message of a group while an earlier one of it is in flight; other groups go on', async () => {
    const QueueUrl = await fifoQueue();
    await send(QueueUrl, 'a', 'a1');
    await send(QueueUrl, 'a', 'a2');
    await send(QueueUrl, 'b', 'b1');
    const first = await receive(QueueUrl);
    expect(first.map((message) => message.Body).sort()).toEqual(['a1', 'b1']);
    // a2 stays back while a1 is in flight.
    expect(await receive(QueueUrl)).toEqual([]);
    const a1 = first.find((message) => message.Body === 'a1');
    await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: a1?.ReceiptHandle }));
    const next = await receive(QueueUrl);
    expect(next.map((message) => message.Body)).toEqual(['a2']);
  });

  it('does not count a ChangeMessageVisibility as a receive', async () => {
    const QueueUrl = await fifoQueue();
    await send(QueueUrl, 'g', 'm1');
    const [message] = await receive(QueueUrl);
    expect(message?.Attributes?.ApproximateReceiveCount).toBe('1');
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl,
        ReceiptHandle: message?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const [again] = await receive(QueueUrl);
    expect(again?.Body).toBe('m1');
    expect(again?.Attributes?.ApproximateReceiveCount).toBe('2');
  });

  it('deduplicates a send within five minutes, also after the first message was deleted', async () => {
    const QueueUrl = await fifoQueue();
    const sent = await send(QueueUrl, 'g', 'once', 'same-id');
    const [message] = await receive(QueueUrl);
    await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: message?.ReceiptHandle }));
    const duplicate = await send(QueueUrl, 'g', 'once again', 'same-id');
    // SQS answers a deduplicated send like the first one and queues nothing.
    expect(duplicate.MessageId).toBe(sent.MessageId);
    expect(await receive(QueueUrl)).toEqual([]);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    expect(Attributes?.ApproximateNumberOfMessages).toBe('0');
  });

  it('forgets a deduplication id five minutes after its send, and only that one', async () => {
    // Only Date is faked: the emulator's window is read from Date.now(); its timers stay real.
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.now();
    const QueueUrl = await fifoQueue();
    const early = await send(QueueUrl, 'early', 'early', 'early-id');
    vi.setSystemTime(start + 4 * 60_000);
    const late = await send(QueueUrl, 'late', 'late', 'late-id');
    vi.setSystemTime(start + 5 * 60_000 + 1_000);
    // The early id's window is over: a new message. The late one's is not: the same message.
    expect((await send(QueueUrl, 'early', 'early again', 'early-id')).MessageId).not.toBe(early.MessageId);
    expect((await send(QueueUrl, 'late', 'late again', 'late-id')).MessageId).toBe(late.MessageId);
  });
});
