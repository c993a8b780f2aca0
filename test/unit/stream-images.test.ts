import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { toTaskItem } from '../../shared/adapters/dynamodb/entities.ts';
import { batchImagesOf } from '../../shared/adapters/dynamodb/stream-images.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';

const task = (revision: number): StoredTask => ({
  taskId: 't-images',
  contextId: 'ctx-1',
  owner: { tenant: 'acme', principal: 'alice' },
  profileId: 'default',
  state: revision === 1 ? 'TASK_STATE_SUBMITTED' : 'TASK_STATE_WORKING',
  revision,
  currentRunId: 'run-1',
  statusTimestamp: `2026-12-01T12:00:0${revision}.000Z`,
  createdAt: '2026-12-01T12:00:01.000Z',
  expiresAt: 1_900_000_000,
});

const record = (image: Record<string, unknown>, old?: Record<string, unknown>): DynamoDBRecord =>
  ({
    eventName: old ? 'MODIFY' : 'INSERT',
    dynamodb: {
      Keys: { pk: { S: 'TASK#t-images' }, sk: { S: 'TASK' } },
      NewImage: image,
      ...(old && { OldImage: old }),
    },
  }) as DynamoDBRecord;

/** The projector parses a stream batch's images once, for its batch read and its records (decision 0076). */
describe('a stream batch’s images', () => {
  it('parses each record once: the batch read gets those that parse, a bad record throws to its own handler', () => {
    const first = marshall(toTaskItem(task(1)), { removeUndefinedValues: true });
    const second = marshall(toTaskItem(task(2)), { removeUndefinedValues: true });
    const good = [record(first), record(second, first)];
    const bad = record({ pk: { S: 'TASK#t-images' }, sk: { S: 'TASK' }, revision: { S: 'not a number' } });
    const images = batchImagesOf([good[0]!, bad, good[1]!]);
    expect(images.all.map((entry) => entry.newImage?.revision)).toEqual([1, 2]);
    expect(images.of(good[1]!).oldImage?.revision).toBe(1);
    // The same object, not a second parse.
    expect(images.of(good[0]!)).toBe(images.all[0]);
    expect(() => images.of(bad)).toThrow();
  });
});
