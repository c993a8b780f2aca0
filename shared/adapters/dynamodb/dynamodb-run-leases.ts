import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RunLeases, RunRef } from '../../domain/ports.ts';
import { isTaskRowKey, keys, leasePartition, leaseShards, runIdOfKey, taskIdOfKey } from './keys.ts';

export const leaseIndexName = 'byLease';

/**
 * Run leases in the state table (docs/data-model.md, "State table"). A running run is its task's current run,
 * so its lease is the task row's `leaseUntil`/`leaseShard`. `renew` updates only those, conditioned
 * on the row's run still being this one, RUNNING and not asked to cancel — never the version, so
 * the executor's completing write keeps its expected version (I-LOCK). `listExpired` reads the
 * sparse byLease index (KEYS_ONLY; only rows whose run holds a lease are in it), one query per shard.
 */
export class DynamoDbRunLeases implements RunLeases {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async renew(run: RunRef, leaseUntil: number): Promise<'renewed' | 'lost' | 'canceled'> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.task(run.taskId),
          UpdateExpression: 'SET #leaseUntil = :leaseUntil, #leaseShard = :leaseShard',
          // A cancel request also stops the renewal: that is how a run in a long call learns of it.
          ConditionExpression:
            '#run.#runId = :runId AND #run.#status = :running AND #run.#cancelRequested = :false',
          ExpressionAttributeNames: {
            '#leaseUntil': 'leaseUntil',
            '#leaseShard': 'leaseShard',
            '#run': 'run',
            '#runId': 'runId',
            '#status': 'status',
            '#cancelRequested': 'cancelRequested',
          },
          ExpressionAttributeValues: {
            ':leaseUntil': leaseUntil,
            ':leaseShard': keys.leaseShard(run.runId),
            ':runId': run.runId,
            ':running': 'RUNNING',
            ':false': false,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'renewed';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const old = error.Item?.run?.M;
        return old?.runId?.S === run.runId &&
          old.status?.S === 'RUNNING' &&
          old.cancelRequested?.BOOL === true
          ? 'canceled'
          : 'lost';
      }
      throw error;
    }
  }

  async watch(run: RunRef): Promise<'running' | 'lost' | 'canceled'> {
    // Eventually consistent (half the read cost): a cancel is seen one watch later at worst.
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.task(run.taskId),
        ProjectionExpression: '#run.#runId, #run.#status, #run.#cancelRequested',
        ExpressionAttributeNames: {
          '#run': 'run',
          '#runId': 'runId',
          '#status': 'status',
          '#cancelRequested': 'cancelRequested',
        },
      }),
    );
    const current = Item?.run;
    if (current?.runId !== run.runId || current.status !== 'RUNNING') return 'lost';
    return current.cancelRequested === true ? 'canceled' : 'running';
  }

  async listExpired(now: number, limit: number): Promise<RunRef[]> {
    const perShard = await Promise.all(
      Array.from({ length: leaseShards }, (_, shard) => this.queryShard(leasePartition(shard), now, limit)),
    );
    const refs = await Promise.all(
      perShard
        .flat()
        .slice(0, limit)
        .map((key) => this.runRefOf(key)),
    );
    return refs.flatMap((ref) => (ref ? [ref] : []));
  }

  private async queryShard(shard: string, now: number, limit: number): Promise<{ pk: string; sk: string }[]> {
    const { Items = [] } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: leaseIndexName,
        KeyConditionExpression: '#leaseShard = :shard AND #leaseUntil < :now',
        ExpressionAttributeNames: { '#leaseShard': 'leaseShard', '#leaseUntil': 'leaseUntil' },
        ExpressionAttributeValues: { ':shard': shard, ':now': now },
        Limit: limit,
      }),
    );
    return Items.map((item) => ({ pk: String(item.pk ?? ''), sk: String(item.sk ?? '') }));
  }

  /**
   * The run a lease index entry stands for: a task row's current run (its id read from the row:
   * the index holds keys only; expired leases are rare, so the extra read is too), or a run row.
   */
  private async runRefOf(key: { pk: string; sk: string }): Promise<RunRef | undefined> {
    const taskId = taskIdOfKey(key.pk);
    if (taskId === undefined) return undefined;
    const runId = runIdOfKey(key.sk);
    if (runId !== undefined) return { taskId, runId };
    if (!isTaskRowKey(key.sk)) return undefined;
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.task(taskId),
        ProjectionExpression: '#run.#runId',
        ExpressionAttributeNames: { '#run': 'run', '#runId': 'runId' },
      }),
    );
    const currentRunId = Item?.run?.runId;
    return typeof currentRunId === 'string' ? { taskId, runId: currentRunId } : undefined;
  }
}
