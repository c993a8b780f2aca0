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

export type TaskImages = ReturnType<typeof taskImagesOf>;

/**
 * A stream batch's images, each record parsed once (the batch-wide read and each record's own
 * handler both need them): `all` holds the images of the records that parse; `of(record)` gives a
 * record's own, or throws its parse error, so that record's handler reports it and the rest of the
 * batch goes on.
 */
export const batchImagesOf = (
  records: readonly DynamoDBRecord[],
): { readonly all: readonly TaskImages[]; readonly of: (record: DynamoDBRecord) => TaskImages } => {
  const parsed = new Map<DynamoDBRecord, TaskImages | { readonly failed: unknown }>();
  for (const record of records) {
    try {
      parsed.set(record, taskImagesOf(record));
    } catch (failed) {
      parsed.set(record, { failed });
    }
  }
  return {
    all: [...parsed.values()].filter((images): images is TaskImages => !('failed' in images)),
    of: (record) => {
      const images = parsed.get(record) ?? taskImagesOf(record);
      if ('failed' in images) throw images.failed;
      return images;
    },
  };
};
