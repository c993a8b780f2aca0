import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import {
  consoleLog,
  createLambdaContext,
  errorName,
  errorSummary,
  failedIndexes,
  type LocalLog,
  observed,
  type Poller,
  Sleeper,
  type SqsLambdaHandler,
} from './lambda-invocation.ts';

/** The SQS event-source mapping emulation (see lambda-invocation.ts). */

export interface SqsPollerOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  /** Read from the queue at start when omitted. */
  readonly queueArn?: string;
  readonly handler: SqsLambdaHandler;
  readonly functionName: string;
  /** Messages per invocation, 1–10 (default 10). */
  readonly batchSize?: number;
  /** Long-poll wait, 1–20 s (default 1: it also bounds how long `stop()` waits). */
  readonly waitTimeSeconds?: number;
  /** Concurrent pollers, each with its own invocation in flight (default 4). */
  readonly concurrency?: number;
  /**
   * Scale-out ceiling (default `concurrency`). Lambda adds SQS pollers while messages keep coming
   * (for a FIFO queue, up to one invocation per active message group): every receive that finds
   * messages starts one more poller while fewer than this many run, and such an extra poller stops
   * at its first empty receive. Group order is the queue's to keep (the emulator holds a group's
   * next message until the previous one is deleted), not the pollers'.
   */
  readonly maxConcurrency?: number;
  readonly timeoutMs?: number;
  readonly region?: string;
  readonly log?: LocalLog;
}

export interface SqsPollerStats {
  readonly invocations: number;
  readonly received: number;
  readonly deleted: number;
  /** Messages left on the queue after a reported failure or an error. */
  readonly failed: number;
  readonly errors: number;
}

export interface SqsPoller extends Poller {
  stats(): SqsPollerStats;
}

export const createSqsPoller = (options: SqsPollerOptions): SqsPoller => {
  const { sqs, queueUrl, functionName } = options;
  const handler = observed(functionName, options.handler);
  const batchSize = Math.min(10, Math.max(1, options.batchSize ?? 10));
  const waitTimeSeconds = Math.min(20, Math.max(0, options.waitTimeSeconds ?? 1));
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const maxConcurrency = Math.max(concurrency, options.maxConcurrency ?? concurrency);
  const region = options.region ?? 'us-east-1';
  const log = options.log ?? consoleLog;
  const sleeper = new Sleeper();
  const stats = { invocations: 0, received: 0, deleted: 0, failed: 0, errors: 0 };
  let queueArn = options.queueArn;
  let running = false;
  /** The pollers running, each removed when it ends. */
  const loops = new Set<Promise<void>>();

  const toRecord = (message: Message): SQSRecord => {
    const attributes = message.Attributes ?? {};
    const messageAttributes: SQSMessageAttributes = {};
    for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
      messageAttributes[name] = {
        dataType: value.DataType ?? 'String',
        ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
        ...(value.BinaryValue !== undefined
          ? { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }
          : {}),
        stringListValues: value.StringListValues ?? [],
        binaryListValues: (value.BinaryListValues ?? []).map((entry) =>
          Buffer.from(entry).toString('base64'),
        ),
      };
    }
    const now = String(Date.now());
    return {
      messageId: message.MessageId ?? '',
      receiptHandle: message.ReceiptHandle ?? '',
      body: message.Body ?? '',
      attributes: {
        ...attributes,
        ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
        SentTimestamp: attributes.SentTimestamp ?? now,
        SenderId: attributes.SenderId ?? '000000000000',
        ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? now,
      },
      messageAttributes,
      md5OfBody: message.MD5OfBody ?? '',
      ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
      eventSource: 'aws:sqs',
      eventSourceARN: queueArn ?? '',
      awsRegion: region,
    };
  };

  const processBatch = async (messages: Message[]): Promise<void> => {
    const records = messages.map(toRecord);
    const ids = records.map((record) => record.messageId);
    stats.invocations += 1;
    stats.received += records.length;
    let failed: number[] | 'all';
    try {
      const context = createLambdaContext({
        functionName,
        region,
        ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      });
      failed = failedIndexes(await handler({ Records: records }, context), ids);
    } catch (error) {
      stats.errors += 1;
      log('error', `${functionName} failed; the batch stays on the queue`, {
        error: errorName(error),
        messageIds: ids,
      });
      failed = 'all';
    }
    const failedSet = new Set(failed === 'all' ? records.keys() : failed);
    stats.failed += failedSet.size;
    if (failedSet.size > 0 && failed !== 'all') {
      log('warn', `${functionName} reported failed messages`, {
        messageIds: [...failedSet].map((index) => ids[index]),
      });
    }
    const done = records.filter((_, index) => !failedSet.has(index));
    if (done.length === 0) return;
    const { Failed } = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: done.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
      }),
    );
    stats.deleted += done.length - (Failed?.length ?? 0);
    if (Failed && Failed.length > 0) {
      log('warn', `${functionName}: some processed messages could not be deleted`, { failed: Failed.length });
    }
  };

  /** `extra`: started by a busy receive; it stops at its first empty one (Lambda scaling in). */
  const startPoller = (extra: boolean): void => {
    const loop: Promise<void> = pollLoop(extra).finally(() => loops.delete(loop));
    loops.add(loop);
  };

  const pollLoop = async (extra: boolean): Promise<void> => {
    while (running) {
      let messages: Message[] | undefined;
      try {
        ({ Messages: messages } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: batchSize,
            WaitTimeSeconds: waitTimeSeconds,
            // Some emulators only honour the older parameter; Lambda asks for both.
            AttributeNames: ['All'],
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        ));
      } catch (error) {
        if (!running) break;
        log('warn', `${functionName}: ReceiveMessage failed`, { error: errorSummary(error) });
        await sleeper.sleep(500);
        continue;
      }
      // Messages already received are processed even when stopping: they would otherwise stay
      // invisible for the whole visibility timeout.
      if (!messages || messages.length === 0) {
        if (extra) return;
        continue;
      }
      if (running && loops.size < maxConcurrency) startPoller(true);
      try {
        await processBatch(messages);
      } catch (error) {
        log('error', `${functionName}: could not finish a batch`, { error: errorSummary(error) });
      }
    }
  };

  return {
    async start() {
      if (running) return;
      if (!queueArn) {
        const { Attributes } = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
        );
        queueArn = Attributes?.QueueArn ?? '';
      }
      running = true;
      for (let i = 0; i < concurrency; i++) startPoller(false);
    },
    async stop() {
      running = false;
      sleeper.wakeAll();
      // Extra pollers may still be added while the first ones finish their batches.
      while (loops.size > 0) await Promise.all([...loops]);
    },
    stats: () => ({ ...stats }),
  };
};
