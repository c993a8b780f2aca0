import { type DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { PushDeliveryLog, PushDeliveryPage } from '../../domain/ports.ts';
import {
  attemptOutcomes,
  type DeliveryAttemptEntry,
  deliveryStates,
  isFinalDelivery,
  type PushDeliveryRecord,
} from '../../domain/push.ts';
import * as z from '../../zod.ts';
import { isConditionalCheckFailed } from './condition-failures.ts';
import { withoutUndefined } from './entities.ts';
import { deliveryKeys, keys } from './keys.ts';

/**
 * Delivery records (docs/protocol.md §7) in the state table, in their task's partition — so the purge
 * of a task takes them along (I-PURGE) and the projector's stream filter (`sk = TASK`) passes
 * none of them (keys: `deliveryKeys` in keys.ts). The schema is declared here rather than in
 * entities.ts: every function bundle that imports entities.ts would carry its construction.
 */

const positiveInteger = z.number().check(z.int(), z.positive());
const deliveryState = z.enum(deliveryStates);

export const deliveryItemSchema = z.object({
  pk: z.string(),
  sk: z.string().check(z.startsWith(deliveryKeys.prefix)),
  taskId: z.string(),
  configId: z.string(),
  revision: positiveInteger,
  state: deliveryState,
  attempts: z.array(
    z.object({
      attempt: positiveInteger,
      at: z.string(),
      outcome: z.enum(attemptOutcomes),
      httpStatus: z.optional(z.number().check(z.int())),
      error: z.optional(z.string()),
      posts: z.optional(z.number().check(z.int())),
      nextAttemptAt: z.optional(z.string()),
    }),
  ),
  updatedAt: z.string(),
  /** The id of the last attempt appended: an append retried by the SDK is not appended twice. */
  lastAttemptId: z.string(),
  expiresAt: z.number(),
});
export type DeliveryItem = z.infer<typeof deliveryItemSchema>;

const finalItemSchema = z.object({ revision: positiveInteger, state: deliveryState });

export const fromDeliveryItem = (item: DeliveryItem): PushDeliveryRecord => ({
  taskId: item.taskId,
  configId: item.configId,
  revision: item.revision,
  state: item.state,
  attempts: item.attempts,
  updatedAt: item.updatedAt,
  expiresAt: item.expiresAt,
});

/**
 * One UpdateItem per attempt, no read first: the attempt is appended to the record's list (at
 * most the queue's maxReceiveCount of them per revision, so an item stays well under 1 KB — one
 * write unit) and the state, time and expiry are overwritten.
 */
export class DynamoDbPushDeliveryLog implements PushDeliveryLog {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async append(entry: DeliveryAttemptEntry): Promise<'recorded' | 'duplicate'> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: deliveryKeys.item(entry.taskId, entry.configId, entry.revision),
          UpdateExpression:
            'SET #taskId = :taskId, #configId = :configId, #revision = :revision, #state = :state, ' +
            '#updatedAt = :at, #expiresAt = :expiresAt, #lastAttemptId = :attemptId, ' +
            '#attempts = list_append(if_not_exists(#attempts, :none), :attempt)',
          ConditionExpression: 'attribute_not_exists(#lastAttemptId) OR #lastAttemptId <> :attemptId',
          ExpressionAttributeNames: {
            '#taskId': 'taskId',
            '#configId': 'configId',
            '#revision': 'revision',
            '#state': 'state',
            '#updatedAt': 'updatedAt',
            '#expiresAt': 'expiresAt',
            '#lastAttemptId': 'lastAttemptId',
            '#attempts': 'attempts',
          },
          ExpressionAttributeValues: {
            ':taskId': entry.taskId,
            ':configId': entry.configId,
            ':revision': entry.revision,
            ':state': entry.state,
            ':at': entry.attempt.at,
            ':expiresAt': entry.expiresAt,
            ':attemptId': entry.attemptId,
            ':none': [],
            ':attempt': [withoutUndefined({ ...entry.attempt })],
          },
        }),
      );
      return 'recorded';
    } catch (error) {
      if (isConditionalCheckFailed(error)) return 'duplicate';
      throw error;
    }
  }

  /**
   * Newest revision first, a few records a page, until a final one: usually the first record
   * read (the one before the message's revision), so one strongly consistent read unit (records
   * stay under 1 KB). Only `revision` and `state` are needed.
   */
  async finalThrough(taskId: string, configId: string): Promise<number | undefined> {
    let exclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeNames: { '#revision': 'revision', '#state': 'state' },
          ExpressionAttributeValues: {
            ':pk': keys.task(taskId).pk,
            ':prefix': deliveryKeys.configPrefix(configId),
          },
          ProjectionExpression: '#revision, #state',
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: 4,
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      const final = (result.Items ?? [])
        .map((item) => finalItemSchema.parse(item))
        .find((item) => isFinalDelivery(item.state));
      if (final !== undefined) return final.revision;
      exclusiveStartKey = result.LastEvaluatedKey;
    } while (exclusiveStartKey !== undefined);
    return undefined;
  }

  async list(
    taskId: string,
    page: PushDeliveryPage,
  ): Promise<{ records: PushDeliveryRecord[]; more: boolean }> {
    const records: PushDeliveryRecord[] = [];
    let exclusiveStartKey: Record<string, unknown> | undefined = page.after
      ? deliveryKeys.item(taskId, page.after.configId, page.after.revision)
      : undefined;
    // One more than asked tells whether another page exists without an empty last page.
    while (records.length <= page.limit) {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: {
            ':pk': keys.task(taskId).pk,
            ':prefix':
              page.configId === undefined ? deliveryKeys.prefix : deliveryKeys.configPrefix(page.configId),
          },
          Limit: page.limit + 1 - records.length,
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      for (const item of result.Items ?? []) records.push(fromDeliveryItem(deliveryItemSchema.parse(item)));
      exclusiveStartKey = result.LastEvaluatedKey;
      if (!exclusiveStartKey) break;
    }
    return { records: records.slice(0, page.limit), more: records.length > page.limit };
  }
}
