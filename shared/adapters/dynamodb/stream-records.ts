import {
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type AttributeValue as StreamAttributeValue,
  type _Record as StreamSdkRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, AttributeValue as LambdaAttributeValue } from 'aws-lambda';
import type { StreamBatchRange, StreamRangeReader } from '../../domain/operations.ts';

/**
 * DynamoDB stream records as Lambda hands them to a stream consumer, read with the DynamoDB
 * Streams API: by the local stack's stream pollers (infra/local/stream-poller.ts) and by the
 * admin command's replay of a dead-letter queue (docs/operations.md, "Replaying the projector's and the
 * pusher's DLQs").
 */

const toLambdaValue = (value: StreamAttributeValue): LambdaAttributeValue => {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: value.N };
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.SS !== undefined) return { SS: value.SS };
  if (value.NS !== undefined) return { NS: value.NS };
  if (value.BS !== undefined) return { BS: value.BS.map((entry) => Buffer.from(entry).toString('base64')) };
  if (value.M !== undefined) return { M: toLambdaImage(value.M) };
  if (value.L !== undefined) return { L: value.L.map(toLambdaValue) };
  if (value.NULL !== undefined) return { NULL: value.NULL };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  throw new Error('Unknown attribute value type in a stream record');
};

const toLambdaImage = (image: Record<string, StreamAttributeValue>): Record<string, LambdaAttributeValue> =>
  Object.fromEntries(Object.entries(image).map(([name, value]) => [name, toLambdaValue(value)]));

/** The record as Lambda delivers it: JSON attribute values, epoch seconds, the table's region. */
export const toLambdaStreamRecord = (
  record: StreamSdkRecord,
  streamArn: string,
  region: string,
): DynamoDBRecord => {
  const data = record.dynamodb ?? {};
  const created = data.ApproximateCreationDateTime;
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: region,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(created ? { ApproximateCreationDateTime: Math.floor(created.getTime() / 1000) } : {}),
      ...(data.Keys ? { Keys: toLambdaImage(data.Keys) } : {}),
      ...(data.NewImage ? { NewImage: toLambdaImage(data.NewImage) } : {}),
      ...(data.OldImage ? { OldImage: toLambdaImage(data.OldImage) } : {}),
      SequenceNumber: data.SequenceNumber,
      SizeBytes: data.SizeBytes,
      StreamViewType: data.StreamViewType,
    },
    // TTL deletions carry { type: 'Service', principalId: 'dynamodb.amazonaws.com' }.
    ...(record.userIdentity
      ? { userIdentity: { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId } }
      : {}),
  };
};

/** Reads on an open shard that may come back empty before the range's end (DynamoDB Streams may answer empty pages). */
const MAX_EMPTY_READS = 20;

const errorName = (error: unknown): string => (error instanceof Error ? error.name : '');

/** The stream range of an on-failure record, read back while the stream holds it (24 hours). */
export class DynamoDbStreamRangeReader implements StreamRangeReader<DynamoDBRecord> {
  constructor(
    private readonly streams: DynamoDBStreamsClient,
    private readonly region: string,
  ) {}

  async read(range: StreamBatchRange): Promise<readonly DynamoDBRecord[] | 'trimmed'> {
    const end = BigInt(range.endSequenceNumber);
    let iterator: string | undefined;
    try {
      ({ ShardIterator: iterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: range.streamArn,
          ShardId: range.shardId,
          ShardIteratorType: 'AT_SEQUENCE_NUMBER',
          SequenceNumber: range.startSequenceNumber,
        }),
      ));
    } catch (error) {
      // Older than the stream's retention, or the shard (or the stream) is gone with it.
      if (['TrimmedDataAccessException', 'ResourceNotFoundException'].includes(errorName(error))) {
        return 'trimmed';
      }
      throw error;
    }
    const records: DynamoDBRecord[] = [];
    let empty = 0;
    while (iterator) {
      const out = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      const page = out.Records ?? [];
      for (const record of page) {
        const sequence = record.dynamodb?.SequenceNumber;
        if (sequence === undefined) continue;
        if (BigInt(sequence) > end) return records;
        records.push(toLambdaStreamRecord(record, range.streamArn, this.region));
        if (BigInt(sequence) === end) return records;
      }
      empty = page.length === 0 ? empty + 1 : 0;
      if (empty > MAX_EMPTY_READS) break;
      iterator = out.NextShardIterator;
    }
    // A closed shard ended, or an open one kept answering empty, before the range's last record.
    throw new StreamRangeIncompleteError(range.shardId);
  }
}

export class StreamRangeIncompleteError extends Error {
  override readonly name = 'StreamRangeIncompleteError';
  constructor(shardId: string) {
    super(`The stream ended before the range's last record (shard ${shardId})`);
  }
}
