import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { VersionConflictError } from '../../domain/errors.ts';
import type { PlannedWrite, TaskRepository, WritePlan } from '../../domain/ports.ts';
import type { StoredTask } from '../../domain/projection.ts';
import type { RunRecord } from '../../domain/task.ts';
import { fromRunItem, fromTaskItem, keys, runItemSchema, taskItemSchema } from './entities.ts';
import { queryAll } from './query-all.ts';
import { toPutInput, toTransactWriteInput } from './write-plan.ts';

/**
 * Tasks and runs in the state table. A plan of several writes is one transaction of conditional
 * puts; a plan of one write is one conditional put (decision 0027: the same atomicity at half the
 * units).
 */
export class DynamoDbTaskRepository implements TaskRepository {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async commit(plan: WritePlan): Promise<void> {
    const [only, ...more] = plan.writes;
    if (only !== undefined && more.length === 0) return this.put(only);
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

  private async put(write: PlannedWrite): Promise<void> {
    const input = toPutInput(write, this.tableName);
    try {
      await this.client.send(new PutCommand(input));
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The SDK retried a put whose first answer was lost: if the stored item is the one this put
      // wrote, the write happened (what a transaction's ClientRequestToken gives the other path).
      if (retried(error) && sameItem(error.Item, input.Item)) return;
      throw new VersionConflictError('A concurrent write changed the task or run', {}, { cause: error });
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

  /**
   * One strongly consistent query over the task's partition from `RUN#<runId>` to `TASK`
   * (decision 0036): a query bills the items it reads together, 1 RRU per started 4 KB, where
   * two GetItems bill 1 RRU each. The range holds the run, the task row and any other run of the
   * task whose id sorts between them; approvals and push configs sort before it.
   */
  async getRunWithTask(
    taskId: string,
    runId: string,
  ): Promise<{ run: RunRecord | undefined; task: StoredTask | undefined }> {
    const run = keys.run(taskId, runId);
    const task = keys.task(taskId);
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :run AND :task',
      ExpressionAttributeValues: { ':pk': task.pk, ':run': run.sk, ':task': task.sk },
      ConsistentRead: true,
    });
    const runItem = items.find((item) => item.sk === run.sk);
    const taskItem = items.find((item) => item.sk === task.sk);
    return {
      run: runItem && fromRunItem(runItemSchema.parse(runItem)),
      task: taskItem && fromTaskItem(taskItemSchema.parse(taskItem)),
    };
  }
}

const isConditionFailure = (error: TransactionCanceledException): boolean =>
  (error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed');

const retried = (error: ConditionalCheckFailedException): boolean => (error.$metadata?.attempts ?? 1) > 1;

/** An item as canonical JSON: attributes sorted, binary as base64, so two copies of one item compare equal. */
const canonical = (item: unknown): string =>
  JSON.stringify(item, function (this: Record<string, unknown>, key: string, value: unknown) {
    const raw = this[key];
    if (raw instanceof Uint8Array) return Buffer.from(raw).toString('base64');
    return value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1)))
      : value;
  });

/** The stored item (as DynamoDB returned it on the failed condition) equals the item this put sent. */
const sameItem = (
  stored: ConditionalCheckFailedException['Item'],
  sent: Record<string, unknown> | undefined,
): boolean => stored !== undefined && canonical(unmarshall(stored)) === canonical(sent);
