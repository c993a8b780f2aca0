import { AsyncLocalStorage } from 'node:async_hooks';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { taskIdOfKey } from './dynamodb/keys.ts';

/**
 * One trace per task across the hops (rpc → run queue → executor → projector → pusher →
 * deliverer; docs/operations.md, "Follow one task through the logs"). The task id is the
 * correlation id; the caller's W3C `traceparent`, when it sent one, travels with it. Both are in
 * every log line written while a record (or request) of that task is handled, and go out with
 * every queue message sent meanwhile. The records of one batch run concurrently, so the context
 * is per async flow (AsyncLocalStorage), not Powertools' per-logger persistent keys.
 */
export interface TraceContext {
  readonly correlation_id?: string;
  readonly traceparent?: string;
}

const current = new AsyncLocalStorage<TraceContext>();

/** Runs `work` in `trace` (merged over the one it is called in). */
export const withTrace = <T>(trace: TraceContext, work: () => Promise<T>): Promise<T> =>
  current.run({ ...current.getStore(), ...trace }, work);

export const currentTrace = (): TraceContext | undefined => current.getStore();

/**
 * `version-traceid-parentid-flags` (W3C Trace Context §3.2); version `ff` and all-zero trace or
 * parent ids are invalid (§3.2.2). Anything else is not carried: never trusted as more than a
 * string to log.
 */
const traceparentPattern = /^(?!ff)[\da-f]{2}-(?!0{32})[\da-f]{32}-(?!0{16})[\da-f]{16}-[\da-f]{2}$/;

export const validTraceparent = (value: string | undefined): string | undefined => {
  const trimmed = value?.trim().toLowerCase();
  return trimmed !== undefined && traceparentPattern.test(trimmed) ? trimmed : undefined;
};

/** The trace of a task as SQS message attributes: its id, and the traceparent in hand, if any. */
export const traceMessageAttributes = (taskId: string): Record<string, MessageAttributeValue> => {
  const traceparent = currentTrace()?.traceparent;
  return {
    correlation_id: { DataType: 'String', StringValue: taskId },
    ...(traceparent !== undefined && { traceparent: { DataType: 'String', StringValue: traceparent } }),
  };
};

export const traceOfSqsRecord = (record: Pick<SQSRecord, 'messageAttributes'>): TraceContext => {
  const correlationId = record.messageAttributes?.correlation_id?.stringValue;
  const traceparent = validTraceparent(record.messageAttributes?.traceparent?.stringValue);
  return {
    ...(correlationId !== undefined && { correlation_id: correlationId }),
    ...(traceparent !== undefined && { traceparent }),
  };
};

/**
 * The trace of a stream record of a task's partition (`TASK#<id>`): the task id, and the
 * `traceparent` attribute of the image when the item has one — the task row and its journal
 * events carry the traceparent of the request that created the task, so the projector, the
 * pusher and (through the delivery messages) the deliverer log it.
 */
export const traceOfStreamRecord = (record: Pick<DynamoDBRecord, 'dynamodb'>): TraceContext => {
  const pk = record.dynamodb?.Keys?.pk?.S;
  const taskId = taskIdOfKey(pk);
  const image = record.dynamodb?.NewImage ?? record.dynamodb?.OldImage;
  const traceparent = validTraceparent(image?.traceparent?.S);
  return {
    ...(taskId !== undefined && { correlation_id: taskId }),
    ...(traceparent !== undefined && { traceparent }),
  };
};

/**
 * Runs `work` in a task's trace: its id as the correlation id and the
 * traceparent of the request that created it (stored on the task row), checked like every
 * traceparent read back. For work that starts from a task rather than a message (the reaper).
 */
export const inTaskTrace = <T>(
  task: { readonly taskId: string; readonly traceparent?: string },
  work: () => Promise<T>,
): Promise<T> => {
  const traceparent = validTraceparent(task.traceparent);
  return withTrace({ correlation_id: task.taskId, ...(traceparent !== undefined && { traceparent }) }, work);
};
