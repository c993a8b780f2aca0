import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import { eventItemSchema } from './entities.ts';

/** The journal event a stream record inserted (the pusher's input); its sealed content is not opened. */
export const parseEventRecord = (
  record: DynamoDBRecord,
): { readonly taskId: string; readonly revision: number; readonly expiresAt: number } => {
  const item = eventItemSchema.parse(
    unmarshall((record.dynamodb?.NewImage ?? {}) as Record<string, AttributeValue>),
  );
  return { taskId: item.taskId, revision: item.revision, expiresAt: item.expiresAt };
};

/** The pusher's event-source filter: journal event items as they are inserted (never views, updates or TTL removals). */
export const isJournalEventInsert = (record: DynamoDBRecord): boolean =>
  record.eventName === 'INSERT' && (record.dynamodb?.Keys?.sk?.S ?? '').startsWith('EVT#');

/**
 * Stream records one at a time, in order; the first failure stops the batch and is reported with
 * everything after it, so Lambda retries from there and no later revision overtakes an earlier
 * one (order per (task, webhook) starts here).
 */
export const processStreamInOrder = async (
  records: readonly DynamoDBRecord[],
  handle: (record: DynamoDBRecord) => Promise<void>,
): Promise<DynamoDBBatchResponse> => {
  for (const [index, record] of records.entries()) {
    try {
      await handle(record);
    } catch {
      return {
        batchItemFailures: records
          .slice(index)
          .map((rest) => ({ itemIdentifier: rest.dynamodb?.SequenceNumber ?? '' })),
      };
    }
  }
  return { batchItemFailures: [] };
};
