import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { RunCatalog } from '../../domain/operations.ts';
import type { RunRecord } from '../../domain/task.ts';
import { fromRunItem, keys, runItemSchema } from './entities.ts';

/** The run rows of a task, by one query on its partition (admin inspection; no content on run rows). */
export class DynamoDbRunCatalog implements RunCatalog {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async listRuns(taskId: string): Promise<RunRecord[]> {
    const runs: RunRecord[] = [];
    let exclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': keys.task(taskId).pk, ':prefix': 'RUN#' },
          ConsistentRead: true,
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) runs.push(fromRunItem(runItemSchema.parse(item)));
      exclusiveStartKey = page.LastEvaluatedKey;
    } while (exclusiveStartKey);
    return runs.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }
}
