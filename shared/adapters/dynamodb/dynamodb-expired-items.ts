import { DeleteCommand, type DynamoDBDocumentClient, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { ExpiredItemStore, ItemKey } from '../../domain/operations.ts';
import { epochSeconds } from '../../domain/task.ts';
import { isConditionalCheckFailed } from './condition-failures.ts';
import { isTaskRowKey, keys, taskIdOfKey, taskPrefix } from './keys.ts';

/**
 * One table's items by their TTL attribute `expiresAt`, for the operator's purge. Finding expired
 * items is a filtered, key-only scan: acceptable in an admin command, never on a request path.
 * Deletes of expired items are conditional on the item still being expired, so an item extended
 * meanwhile (a follow-up turn extends its task) survives.
 */

const toKey = (item: Record<string, unknown>): ItemKey => {
  const partition = String(item.pk);
  const sort = String(item.sk);
  const taskId = taskIdOfKey(partition);
  return {
    partition,
    sort,
    ...(taskId !== undefined ? { taskId } : {}),
    isTaskRow: taskId !== undefined && isTaskRowKey(sort),
  };
};

export class DynamoDbExpiredItems implements ExpiredItemStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    readonly name: string,
  ) {}

  async *findExpired(now: Date): AsyncIterable<ItemKey> {
    let exclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          ProjectionExpression: 'pk, sk',
          // Task data only: items outside a task's partition (indexes, counters) are not ours to purge.
          FilterExpression: 'begins_with(pk, :task) AND #expiresAt <= :now',
          ExpressionAttributeNames: { '#expiresAt': 'expiresAt' },
          ExpressionAttributeValues: { ':now': epochSeconds(now), ':task': taskPrefix },
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) yield toKey(item);
      exclusiveStartKey = page.LastEvaluatedKey;
    } while (exclusiveStartKey);
  }

  async deleteIfExpired(key: ItemKey, now: Date): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: key.partition, sk: key.sort },
          ConditionExpression: '#expiresAt <= :now',
          ExpressionAttributeNames: { '#expiresAt': 'expiresAt' },
          ExpressionAttributeValues: { ':now': epochSeconds(now) },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  async *listTaskItems(taskId: string): AsyncIterable<ItemKey> {
    let exclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ProjectionExpression: 'pk, sk',
          ExpressionAttributeValues: { ':pk': keys.task(taskId).pk },
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) yield toKey(item);
      exclusiveStartKey = page.LastEvaluatedKey;
    } while (exclusiveStartKey);
  }

  async delete(key: ItemKey): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: key.partition, sk: key.sort },
          ConditionExpression: 'attribute_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }
}
