import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import type { JournalEvent } from '../../domain/projection.ts';
import { handleInGroups, oneAtATime } from '../grouped-batch.ts';
import { eventItemSchema, pushMark } from './entities.ts';
import { isEventKey, isTaskRowKey } from './keys.ts';

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

/**
 * The pusher's event-source filter: journal event items as they are inserted (never views, updates
 * or TTL removals) that carry the push mark: the events of a task no config was ever stored for
 * are wanted by none, so they do not invoke the pusher at all.
 */
export const isJournalEventInsert = (record: DynamoDBRecord): boolean =>
  record.eventName === 'INSERT' &&
  isEventKey(record.dynamodb?.Keys?.sk?.S) &&
  record.dynamodb?.NewImage?.[pushMark]?.BOOL === true;

/**
 * How the pusher reads the journal stream, declared once for the CDK app and the local stack
 * (docs/architecture.md, "Push notifications"). The pusher is the webhook path's backstop: the
 * writer fans out what it projected itself. Gathering up to a second of records lets one invocation take a
 * task's revisions together — one read of its configs and one send for them, not one each per revision.
 */
export const pusherStreamBatching = { batchSize: 100, maximumBatchingWindowMs: 1_000 } as const;

/**
 * How the projector reads the state stream, declared once for the CDK app and the local stack
 * (docs/how-a-task-flows.md §3). The projector is the journal's backstop: every writer projects
 * its own commits (I-COMMITTED). Gathering up to a second of records means fewer reads and
 * invocations, one journal read per batch for more revisions, and records whose write-through has
 * long landed, so a slow write-through under load is not written a second time.
 */
export const projectorStreamBatching = { batchSize: 100, maximumBatchingWindowMs: 1_000 } as const;

/** The projector's event-source filter: task items only (`sk = TASK`). */
export const isTaskItemRecord = (record: DynamoDBRecord): boolean =>
  isTaskRowKey(record.dynamodb?.Keys?.sk?.S);

const taskOf = (record: DynamoDBRecord): string => record.dynamodb?.Keys?.pk?.S ?? '';

/**
 * Stream records grouped by task, each task's records in stream order, different tasks
 * concurrently (grouped-batch.ts). The batch reports every record from the earliest failure on,
 * since Lambda retries a stream from one position: the failed task's revisions go out again in
 * order, and other tasks' records already sent are absorbed by the FIFO queue's deduplication
 * (same (task, config, revision) id within 5 minutes) or the journal's idempotent writes.
 */
export const processStreamTaskGroups = async (
  records: readonly DynamoDBRecord[],
  handleTask: (taskRecords: readonly DynamoDBRecord[]) => Promise<void>,
): Promise<DynamoDBBatchResponse> => {
  const [firstFailed = records.length] = await handleInGroups(records, taskOf, handleTask);
  return {
    batchItemFailures: records
      .slice(firstFailed)
      .map((record) => ({ itemIdentifier: record.dynamodb?.SequenceNumber ?? '' })),
  };
};

/**
 * One record at a time per task (the projector), a task stopping at its first failed record; each
 * task's records go through a handler of their own (`perTask()`), which may keep what it learnt
 * about the task for its later records.
 */
export const processStreamByTask = (
  records: readonly DynamoDBRecord[],
  perTask: () => (record: DynamoDBRecord) => Promise<void>,
): Promise<DynamoDBBatchResponse> =>
  processStreamTaskGroups(records, (taskRecords) => oneAtATime(perTask())(taskRecords));
