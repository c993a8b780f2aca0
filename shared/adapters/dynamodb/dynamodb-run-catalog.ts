import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RunCatalog } from '../../domain/operations.ts';
import type { RunRecord } from '../../domain/task.ts';
import { fromRunItem, keys, runItemSchema } from './entities.ts';
import { queryAll } from './query-all.ts';

/** The run rows of a task, by one query on its partition (admin inspection; no content on run rows). */
export class DynamoDbRunCatalog implements RunCatalog {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async listRuns(taskId: string): Promise<RunRecord[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.task(taskId).pk, ':prefix': 'RUN#' },
      ConsistentRead: true,
    });
    return items
      .map((item) => fromRunItem(runItemSchema.parse(item)))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }
}
