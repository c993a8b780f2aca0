import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import type { PushConfigRepository } from '../../domain/ports.ts';
import type { StoredPushConfig } from '../../domain/push.ts';
import { fromPushConfigItem, pushConfigItemSchema, toPushConfigItem } from './entities.ts';
import { keys } from './keys.ts';

/** Push configs in the state table: `TASK#<taskId>` / `PUSH#<configId>`, read with one query per page. */
export class DynamoDbPushConfigRepository implements PushConfigRepository {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(taskId: string, configId: string): Promise<StoredPushConfig | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.push(taskId, configId), ConsistentRead: true }),
    );
    return Item ? fromPushConfigItem(pushConfigItemSchema.parse(Item)) : undefined;
  }

  async list(
    taskId: string,
    page: { readonly limit: number; readonly afterConfigId?: string },
  ): Promise<{ configs: StoredPushConfig[]; more: boolean }> {
    const configs: StoredPushConfig[] = [];
    let exclusiveStartKey: Record<string, unknown> | undefined = page.afterConfigId
      ? keys.push(taskId, page.afterConfigId)
      : undefined;
    // One more than asked tells whether another page exists without an empty last page.
    while (configs.length <= page.limit) {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': keys.task(taskId).pk, ':prefix': keys.pushPrefix },
          ConsistentRead: true,
          Limit: page.limit + 1 - configs.length,
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      for (const item of result.Items ?? [])
        configs.push(fromPushConfigItem(pushConfigItemSchema.parse(item)));
      exclusiveStartKey = result.LastEvaluatedKey;
      if (!exclusiveStartKey) break;
    }
    return { configs: configs.slice(0, page.limit), more: configs.length > page.limit };
  }

  async put(config: StoredPushConfig): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: toPushConfigItem(config) }));
  }

  async delete(taskId: string, configId: string): Promise<void> {
    await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: keys.push(taskId, configId) }),
    );
  }
}
