import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RunCatalog } from '../../domain/operations.ts';
import type { RunRecord } from '../../domain/task.ts';
import { fromRunItem, runItemSchema, runOfTaskItem, taskItemSchema } from './entities.ts';
import { keys, runIdOfKey, runPrefix } from './keys.ts';
import { queryAll } from './query-all.ts';

/**
 * The runs of a task, by one query on its partition (admin inspection; no content on runs): the
 * earlier runs' `RUN#` rows and the current run inside the task row (docs/data-model.md, "State table"),
 * which sort together from `RUN#` to `TASK`.
 */
export class DynamoDbRunCatalog implements RunCatalog {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async listRuns(taskId: string): Promise<RunRecord[]> {
    const task = keys.task(taskId);
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :runs AND :task',
      ExpressionAttributeValues: { ':pk': task.pk, ':runs': runPrefix, ':task': task.sk },
      ConsistentRead: true,
    });
    const runs = new Map<string, RunRecord>();
    for (const item of items) {
      if (runIdOfKey(String(item.sk)) !== undefined) {
        const run = fromRunItem(runItemSchema.parse(item));
        runs.set(run.runId, run);
      }
    }
    // The task row's copy is the current one: an archived copy of the same run may be older.
    const row = items.find((item) => item.sk === task.sk);
    const current = row && runOfTaskItem(taskItemSchema.parse(row));
    if (current) runs.set(current.runId, current);
    return [...runs.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }
}
