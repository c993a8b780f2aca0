import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RunLeases, RunRef } from '../../domain/ports.ts';
import { keys, leaseShards } from './entities.ts';

export const leaseIndexName = 'byLease';

/**
 * Run leases in the state table (decision 0011). `renew` updates only the lease attributes,
 * conditioned on the run still being RUNNING — never the version, so the executor's completing
 * transaction keeps its expected version (I-LOCK). `listExpired` reads the sparse byLease index
 * (KEYS_ONLY; only RUNNING runs are in it), one query per shard.
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
          Key: keys.run(run.taskId, run.runId),
          UpdateExpression: 'SET #leaseUntil = :leaseUntil, #leaseShard = :leaseShard',
          // A cancel request also stops the renewal: that is how a run in a long call learns of it.
          ConditionExpression: '#status = :running AND #cancelRequested = :false',
          ExpressionAttributeNames: {
            '#leaseUntil': 'leaseUntil',
            '#leaseShard': 'leaseShard',
            '#status': 'status',
            '#cancelRequested': 'cancelRequested',
          },
          ExpressionAttributeValues: {
            ':leaseUntil': leaseUntil,
            ':leaseShard': keys.leaseShard(run.runId),
            ':running': 'RUNNING',
            ':false': false,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'renewed';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const old = error.Item;
        return old?.status?.S === 'RUNNING' && old.cancelRequested?.BOOL === true ? 'canceled' : 'lost';
      }
      throw error;
    }
  }

  async watch(run: RunRef): Promise<'running' | 'lost' | 'canceled'> {
    // Eventually consistent (half the read cost): a cancel is seen one watch later at worst.
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.run(run.taskId, run.runId),
        ProjectionExpression: '#status, #cancelRequested',
        ExpressionAttributeNames: { '#status': 'status', '#cancelRequested': 'cancelRequested' },
      }),
    );
    if (Item?.status !== 'RUNNING') return 'lost';
    return Item.cancelRequested === true ? 'canceled' : 'running';
  }

  async listExpired(now: number, limit: number): Promise<RunRef[]> {
    const perShard = await Promise.all(
      Array.from({ length: leaseShards }, (_, shard) => this.queryShard(`LEASE#${shard}`, now, limit)),
    );
    return perShard.flat().slice(0, limit);
  }

  private async queryShard(shard: string, now: number, limit: number): Promise<RunRef[]> {
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
    return Items.flatMap((item) => {
      const pk = String(item.pk ?? '');
      const sk = String(item.sk ?? '');
      if (!pk.startsWith('TASK#') || !sk.startsWith('RUN#')) return [];
      return [{ taskId: pk.slice('TASK#'.length), runId: sk.slice('RUN#'.length) }];
    });
  }
}
