import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import type { JournalEvent } from '../../domain/projection.ts';
import { eventItemSchema } from './entities.ts';

/** The journal event a stream record inserted (the pusher's input); its sealed content is not opened. */
export const parseEventRecord = (
  record: DynamoDBRecord,
): Pick<JournalEvent, 'taskId' | 'revision' | 'expiresAt' | 'pushConfigured'> => {
  const item = eventItemSchema.parse(
    unmarshall((record.dynamodb?.NewImage ?? {}) as Record<string, AttributeValue>),
  );
  return {
    taskId: item.taskId,
    revision: item.revision,
    expiresAt: item.expiresAt,
    ...(item.pushConfigured === true && { pushConfigured: true }),
  };
};

/** The pusher's event-source filter: journal event items as they are inserted (never views, updates or TTL removals). */
export const isJournalEventInsert = (record: DynamoDBRecord): boolean =>
  record.eventName === 'INSERT' && (record.dynamodb?.Keys?.sk?.S ?? '').startsWith('EVT#');

/** Thrown by a task's handler: its records failed from this position (in the task's records) on. */
class TaskStopped extends Error {
  constructor(readonly position: number) {
    super('task stopped');
  }
}

/**
 * Stream records grouped by task, each task's records in stream order, different tasks concurrently
 * (one shard carries many tasks; one at a time would make the pusher the bottleneck). A task's
 * handler that throws failed its records from the first on (or from `TaskStopped.position`); the
 * batch reports every record from the earliest failure on, so Lambda retries from there: that
 * task's revisions go out again in order, and other tasks' records already sent are absorbed by
 * the FIFO queue's deduplication (same (task, config, revision) id within 5 minutes).
 */
export const processStreamTaskGroups = async (
  records: readonly DynamoDBRecord[],
  handleTask: (taskRecords: readonly DynamoDBRecord[]) => Promise<void>,
): Promise<DynamoDBBatchResponse> => {
  const byTask = new Map<string, number[]>();
  records.forEach((record, index) => {
    const task = record.dynamodb?.Keys?.pk?.S ?? '';
    byTask.set(task, [...(byTask.get(task) ?? []), index]);
  });
  let firstFailed = records.length;
  await Promise.all(
    [...byTask.values()].map(async (indexes) => {
      try {
        await handleTask(indexes.map((index) => records[index]!));
      } catch (error) {
        const position = error instanceof TaskStopped ? error.position : 0;
        firstFailed = Math.min(firstFailed, indexes[position]!);
      }
    }),
  );
  return {
    batchItemFailures: records
      .slice(firstFailed)
      .map((record) => ({ itemIdentifier: record.dynamodb?.SequenceNumber ?? '' })),
  };
};

/** One record at a time per task (the projector): a task stops at its first failed record. */
export const processStreamByTask = (
  records: readonly DynamoDBRecord[],
  handle: (record: DynamoDBRecord) => Promise<void>,
): Promise<DynamoDBBatchResponse> =>
  processStreamTaskGroups(records, async (taskRecords) => {
    for (const [position, record] of taskRecords.entries()) {
      try {
        await handle(record);
      } catch {
        throw new TaskStopped(position);
      }
    }
  });
