import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { StoredTask } from '../../domain/projection.ts';
import { fromTaskItem, taskItemSchema } from './entities.ts';

/**
 * Parses a stream image of a task row (untrusted input at the projector's edge). Lambda's
 * stream events carry binary attributes as base64 strings; the entity schema accepts both forms.
 */
export const parseTaskImage = (image: Record<string, unknown> | undefined): StoredTask | undefined => {
  if (image === undefined) return undefined;
  const item = unmarshall(image as Record<string, AttributeValue>);
  return fromTaskItem(taskItemSchema.parse(item));
};

/** A task-row stream record's images before and after its write (the projector's input). */
export const taskImagesOf = (
  record: DynamoDBRecord,
): { readonly oldImage: StoredTask | undefined; readonly newImage: StoredTask | undefined } => ({
  oldImage: parseTaskImage(record.dynamodb?.OldImage),
  newImage: parseTaskImage(record.dynamodb?.NewImage),
});

/**
 * A record's images for a batch-wide read, or none when the record does not parse: the
 * record's own handler meets (and reports) that failure, the rest of the batch goes on.
 */
export const committedImagesOf = (record: DynamoDBRecord): ReturnType<typeof taskImagesOf>[] => {
  try {
    return [taskImagesOf(record)];
  } catch {
    return [];
  }
};
