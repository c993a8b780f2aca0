import { randomUUID } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { VersionConflictError } from '../../domain/errors.ts';
import type { TaskRepository, WritePlan } from '../../domain/ports.ts';
import type { StoredTask } from '../../domain/projection.ts';
import type { RunRecord } from '../../domain/task.ts';
import { fromRunItem, fromTaskItem, keys, runItemSchema, taskItemSchema } from './entities.ts';
import { toTransactWriteInput } from './write-plan.ts';

/** Tasks and runs in the state table. Every change is one transaction of conditional puts. */
export class DynamoDbTaskRepository implements TaskRepository {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async commit(plan: WritePlan): Promise<void> {
    try {
      await this.client.send(
        new TransactWriteCommand(toTransactWriteInput(plan, this.tableName, randomUUID())),
      );
    } catch (error) {
      if (error instanceof TransactionCanceledException && isConditionFailure(error)) {
        throw new VersionConflictError('A concurrent write changed the task or run', {}, { cause: error });
      }
      throw error;
    }
  }

  async getTask(taskId: string): Promise<StoredTask | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.task(taskId), ConsistentRead: true }),
    );
    return Item ? fromTaskItem(taskItemSchema.parse(Item)) : undefined;
  }

  async getRun(taskId: string, runId: string): Promise<RunRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.run(taskId, runId), ConsistentRead: true }),
    );
    return Item ? fromRunItem(runItemSchema.parse(Item)) : undefined;
  }
}

const isConditionFailure = (error: TransactionCanceledException): boolean =>
  (error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed');
