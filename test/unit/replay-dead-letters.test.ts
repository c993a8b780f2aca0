import { describe, expect, it } from 'vitest';
import { parseOnFailureRecord } from '../../shared/adapters/sqs-dead-letters.ts';
import { type ConsumedRange, replayDeadLetters } from '../../shared/app/operations/replay-dead-letters.ts';
import type { DeadLetter, DeadLetterQueue, StreamBatchRange } from '../../shared/domain/operations.ts';

/**
 * The replay of a stream consumer's dead letters (decision 0068) over in-memory ports: what is
 * deleted, what is kept and made visible again, the order ranges are replayed in, and the
 * on-failure record as Lambda writes it.
 */

const range = (start: number, end: number, shardId = 'shard-1'): StreamBatchRange => ({
  streamArn: 'arn:aws:dynamodb:us-east-1:1:table/t/stream/x',
  shardId,
  startSequenceNumber: String(start),
  endSequenceNumber: String(end),
});

const memoryQueue = (letters: DeadLetter[]) => {
  const visible = [...letters];
  const deleted: string[] = [];
  const released: string[] = [];
  const queue: DeadLetterQueue = {
    receive: async () => visible.splice(0, 10),
    delete: async (letter) => void deleted.push(letter.messageId),
    release: async (letter) => void released.push(letter.messageId),
  };
  return { queue, deleted, released };
};

/** A stream of records numbered 1…100 (their sequence numbers); 40 and below are trimmed. */
const stream = {
  read: async (r: StreamBatchRange) =>
    Number(r.startSequenceNumber) <= 40
      ? ('trimmed' as const)
      : Array.from(
          { length: Number(r.endSequenceNumber) - Number(r.startSequenceNumber) + 1 },
          (_, i) => Number(r.startSequenceNumber) + i,
        ),
};

describe('replayDeadLetters', () => {
  it('deletes what was replayed; keeps, and makes visible again, what failed, is trimmed or unreadable', async () => {
    const { queue, deleted, released } = memoryQueue([
      { messageId: 'late', range: range(90, 92) },
      { messageId: 'poison', range: range(60, 61) },
      { messageId: 'old', range: range(10, 12) },
      { messageId: 'junk' },
      { messageId: 'early', range: range(50, 51) },
    ]);
    const consumed: number[][] = [];
    const report = await replayDeadLetters(
      {
        deadLetters: queue,
        stream,
        consume: async (records): Promise<ConsumedRange> => {
          consumed.push([...records]);
          return { handled: records.length, failed: records.includes(61) ? 1 : 0 };
        },
      },
      { dryRun: false },
    );
    // In stream order, whatever order the queue gave them in.
    expect(consumed).toEqual([
      [50, 51],
      [60, 61],
      [90, 91, 92],
    ]);
    expect(deleted).toEqual(['early', 'late']);
    expect(released.sort()).toEqual(['junk', 'old', 'poison']);
    expect(report).toMatchObject({
      dryRun: false,
      messages: 5,
      kept: 3,
      outcomes: { replayed: 2, replayable: 0, failed: 1, trimmed: 1, unreadable: 1 },
      records: { read: 7, handled: 6 },
    });
  });

  it('a dry run reads every range, consumes nothing, deletes nothing and releases everything', async () => {
    const { queue, deleted, released } = memoryQueue([
      { messageId: 'a', range: range(50, 52) },
      { messageId: 'b', range: range(70, 70) },
    ]);
    const report = await replayDeadLetters(
      {
        deadLetters: queue,
        stream,
        consume: async () => {
          throw new Error('a dry run must not consume');
        },
      },
      { dryRun: true },
    );
    expect(deleted).toEqual([]);
    expect(released.sort()).toEqual(['a', 'b']);
    expect(report).toMatchObject({ messages: 2, kept: 2, outcomes: { replayable: 2 }, records: { read: 4 } });
  });

  it('a consumer or stream that throws keeps the message, named by the error', async () => {
    const { queue, deleted, released } = memoryQueue([
      { messageId: 'a', range: range(50, 52) },
      { messageId: 'b', range: range(70, 70, 'gone') },
    ]);
    const report = await replayDeadLetters(
      {
        deadLetters: queue,
        stream: {
          read: async (r) => {
            if (r.shardId === 'gone') throw Object.assign(new Error('x'), { name: 'ThrottlingException' });
            return stream.read(r);
          },
        },
        consume: async () => {
          throw Object.assign(new Error('y'), { name: 'ProvisionedThroughputExceededException' });
        },
      },
      { dryRun: false },
    );
    expect(deleted).toEqual([]);
    expect(released.sort()).toEqual(['a', 'b']);
    expect(report.letters.map((letter) => [letter.messageId, letter.outcome, letter.error])).toEqual([
      ['b', 'failed', 'ThrottlingException'],
      ['a', 'failed', 'ProvisionedThroughputExceededException'],
    ]);
  });
});

describe('parseOnFailureRecord', () => {
  it("reads the batch of Lambda's on-failure record for a DynamoDB stream", () => {
    // The shape AWS documents for an SQS/SNS on-failure destination of a DynamoDB event source.
    const body = JSON.stringify({
      requestContext: {
        requestId: '316aa6d0-8154-xmpl-9af7-85d5f4a6bc81',
        functionArn: 'arn:aws:lambda:us-east-2:123456789012:function:myfunction',
        condition: 'RetryAttemptsExhausted',
        approximateInvokeCount: 1,
      },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
      version: '1.0',
      timestamp: '2019-11-14T00:38:06.021Z',
      DDBStreamBatchInfo: {
        shardId: 'shardId-00000001573689847184-864758bb',
        startSequenceNumber: '800000000003126276362',
        endSequenceNumber: '800000000003126276362',
        approximateArrivalOfFirstRecord: '2019-11-14T00:38:04Z',
        approximateArrivalOfLastRecord: '2019-11-14T00:38:05Z',
        batchSize: 1,
        streamArn: 'arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388',
      },
    });
    expect(parseOnFailureRecord(body)).toEqual({
      streamArn: 'arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388',
      shardId: 'shardId-00000001573689847184-864758bb',
      startSequenceNumber: '800000000003126276362',
      endSequenceNumber: '800000000003126276362',
      batchSize: 1,
    });
  });

  it('is undefined for anything else', () => {
    for (const body of [
      undefined,
      'not json',
      '{}',
      JSON.stringify({ taskId: 't', runId: 'r' }),
      JSON.stringify({
        DDBStreamBatchInfo: {
          streamArn: 'arn:x',
          shardId: 's',
          startSequenceNumber: '9',
          endSequenceNumber: '1',
        },
      }),
      JSON.stringify({
        DDBStreamBatchInfo: {
          streamArn: 'arn:x',
          shardId: 's',
          startSequenceNumber: '1e3',
          endSequenceNumber: '9',
        },
      }),
    ]) {
      expect(parseOnFailureRecord(body)).toBeUndefined();
    }
  });
});
