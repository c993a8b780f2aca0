import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { SealingFailedError } from '../../domain/errors.ts';
import { historyExpiryOf, historyWriteOf } from '../../domain/history.ts';
import type { HistorySegment, StoredTask } from '../../domain/projection.ts';
import { isConditionalCheckFailed } from './condition-failures.ts';
import { type HistorySegmentItem, historySegmentItemSchema } from './entities.ts';
import { keys } from './keys.ts';
import { queryAll } from './query-all.ts';

/**
 * A task's history segments in its partition of the state table (docs/data-model.md, "History"):
 * `HIST#<revision>#<part>` items, each a part of one revision's sealed entries. A segment is put
 * before the row write that lets the entries go from the row: its content is committed already (the
 * row held it), so a put repeated by a writer that then loses its row write puts the same bytes,
 * and no reader ever meets a segment whose revision was not committed.
 */

/** Bytes of a sealed segment per item (with keys and attributes, well under 400 KB). */
export const historyPartBytes = 350_000;
/** Concurrent single writes of one segment operation. */
const concurrency = 16;

type Key = { pk: string; sk: string };

/** The items of a segment: its sealed blob cut into parts. Pure. */
export const segmentItems = (
  taskId: string,
  segment: HistorySegment,
  expiresAt: number,
): HistorySegmentItem[] => {
  const parts = Math.max(1, Math.ceil(segment.sealed.length / historyPartBytes));
  return Array.from({ length: parts }, (_, part) => ({
    ...keys.historySegment(taskId, segment.revision, part),
    revision: segment.revision,
    part,
    parts,
    messages: segment.messages,
    data: segment.sealed.subarray(part * historyPartBytes, (part + 1) * historyPartBytes),
    expiresAt,
  }));
};

const inBatches = async <T>(items: readonly T[], size: number, each: (batch: T[]) => Promise<void>) => {
  for (let start = 0; start < items.length; start += size) await each(items.slice(start, start + size));
};

export class DynamoDbHistorySegments {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * The segment writes of a task write, done before its row write (docs/data-model.md, "History"):
   * drop, extend the stored segments' expiry, put new or redacted ones. The task as its row must store
   * it: with the segments' expiry.
   */
  async beforeRowWrite(task: StoredTask, before: StoredTask | undefined): Promise<StoredTask> {
    const write = historyWriteOf(task, before);
    if (write?.drop) {
      await this.deleteAll(task.taskId);
      return { ...task, historyFrom: undefined, historyExpiresAt: undefined };
    }
    const expiry = historyExpiryOf(task, before);
    if (expiry.extendStored && expiry.expiresAt !== undefined)
      await this.extend(task.taskId, expiry.expiresAt);
    if (write?.put !== undefined && write.put.length > 0) {
      const expiresAt = expiry.expiresAt ?? task.expiresAt;
      await inBatches(write.put, concurrency, (segments) =>
        Promise.all(
          // A segment put again (redacted) replaces one the row had let go already.
          segments.map((segment) =>
            this.put(task.taskId, segment, expiresAt, segment.revision < (before?.historyFrom ?? 0)),
          ),
        ).then(() => undefined),
      );
    }
    return expiry.expiresAt === undefined ? task : { ...task, historyExpiresAt: expiry.expiresAt };
  }

  /**
   * The segments of revisions before `below`, in revision order; with `last`, only the newest ones that
   * hold at least `last` messages (read newest first, a page at a time). Strongly consistent: a segment
   * is put before the row write that lets its entries go. A segment missing a part (a concurrent drop)
   * fails closed.
   */
  async read(taskId: string, below: number, last?: number): Promise<HistorySegment[]> {
    const parts = new Map<number, HistorySegmentItem[]>();
    let messages = 0;
    let exclusiveStartKey: Record<string, unknown> | undefined;
    let limit = last === undefined ? undefined : Math.max(2, last + 1);
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :below',
          ExpressionAttributeValues: {
            ':pk': keys.task(taskId).pk,
            ':from': keys.historyPrefix,
            ':below': keys.historySegment(taskId, below, 0).sk.slice(0, -4),
          },
          ScanIndexForward: last === undefined,
          ConsistentRead: true,
          ExclusiveStartKey: exclusiveStartKey,
          ...(limit !== undefined && { Limit: limit }),
        }),
      );
      for (const raw of page.Items ?? []) {
        const item = historySegmentItemSchema.parse(raw);
        const known = parts.get(item.revision) ?? [];
        known.push(item);
        parts.set(item.revision, known);
        if (item.part === 0) messages += item.messages;
      }
      exclusiveStartKey = page.LastEvaluatedKey;
      limit = limit === undefined ? undefined : limit * 2;
      // Newest first: a segment is whole once its part 0 is read (parts come last to first).
    } while (
      exclusiveStartKey !== undefined &&
      (last === undefined || messages < last || !wholeLowest(parts))
    );
    return [...parts.entries()]
      .sort(([a], [b]) => a - b)
      .map(([revision, items]) => assemble(revision, items));
  }

  private async put(
    taskId: string,
    segment: HistorySegment,
    expiresAt: number,
    replaces: boolean,
  ): Promise<void> {
    const items = segmentItems(taskId, segment, expiresAt);
    await Promise.all(
      items.map((Item) => this.client.send(new PutCommand({ TableName: this.tableName, Item }))),
    );
    if (!replaces) return;
    // A segment put in place of a longer one (redacted text is shorter): its surplus parts go.
    const stored = await this.keysOf(
      taskId,
      keys.historySegment(taskId, segment.revision, 0).sk.slice(0, -3),
    );
    const surplus = stored.filter((key) => Number(key.sk.slice(-3)) >= items.length);
    await this.deleteKeys(surplus);
  }

  private async extend(taskId: string, expiresAt: number): Promise<void> {
    const stored = await this.keysOf(taskId, keys.historyPrefix);
    await inBatches(stored, concurrency, async (batch) => {
      await Promise.all(
        batch.map(async (Key) => {
          try {
            await this.client.send(
              new UpdateCommand({
                TableName: this.tableName,
                Key,
                UpdateExpression: 'SET #expiresAt = :expiresAt',
                // Never creates an item a concurrent drop deleted.
                ConditionExpression: 'attribute_exists(pk)',
                ExpressionAttributeNames: { '#expiresAt': 'expiresAt' },
                ExpressionAttributeValues: { ':expiresAt': expiresAt },
              }),
            );
          } catch (error) {
            if (!isConditionalCheckFailed(error)) throw error;
          }
        }),
      );
    });
  }

  private async deleteAll(taskId: string): Promise<void> {
    await this.deleteKeys(await this.keysOf(taskId, keys.historyPrefix));
  }

  /** One DeleteItem each: every function that writes history has DeleteItem, not BatchWriteItem. */
  private async deleteKeys(stored: readonly Key[]): Promise<void> {
    await inBatches(stored, concurrency, async (batch) => {
      await Promise.all(
        batch.map((Key) => this.client.send(new DeleteCommand({ TableName: this.tableName, Key }))),
      );
    });
  }

  private async keysOf(taskId: string, prefix: string): Promise<Key[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.task(taskId).pk, ':prefix': prefix },
      ProjectionExpression: 'pk, sk',
      ConsistentRead: true,
    });
    return items.map((item) => ({ pk: String(item.pk), sk: String(item.sk) }));
  }
}

const wholeLowest = (parts: ReadonlyMap<number, readonly HistorySegmentItem[]>): boolean => {
  const lowest = Math.min(...parts.keys());
  return parts.get(lowest)?.some((item) => item.part === 0) ?? true;
};

const assemble = (revision: number, items: readonly HistorySegmentItem[]): HistorySegment => {
  const ordered = [...items].sort((a, b) => a.part - b.part);
  const first = ordered[0];
  if (first === undefined || first.part !== 0 || ordered.length !== first.parts)
    throw new SealingFailedError('A history segment is incomplete', { revision: String(revision) });
  return {
    revision,
    messages: first.messages,
    sealed: ordered.length === 1 ? first.data : Buffer.concat(ordered.map((item) => item.data)),
  };
};
