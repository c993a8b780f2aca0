import { type DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { JournalRepository, ViewFilter, ViewPage, ViewQuery } from '../../domain/ports.ts';
import type { JournalEvent, JournalView } from '../../domain/projection.ts';
import { DynamoDbJournalWriter, expiryBucket } from './dynamodb-journal-writer.ts';
import {
  counterItemSchema,
  eventItemSchema,
  fromEventItem,
  fromViewItem,
  viewItemSchema,
} from './entities.ts';
import { counterKeys, keys } from './keys.ts';
import { queryAll } from './query-all.ts';

export { counterMoves, expiryBucket } from './dynamodb-journal-writer.ts';

export const byOwnerIndex = 'byOwner';

const hourAttribute = (hour: number): string => `h${String(hour).padStart(2, '0')}`;

/**
 * The journal table: one view per task (newest revision wins) and one event item per revision.
 * The writes are `DynamoDbJournalWriter`'s (the executor and reaper bundle only those); this adds
 * the reads of the rpc and the admin command.
 */
export class DynamoDbJournalRepository extends DynamoDbJournalWriter implements JournalRepository {
  constructor(client: DynamoDBDocumentClient, tableName: string) {
    super(client, tableName);
  }

  async getView(taskId: string, options?: { consistent?: boolean }): Promise<JournalView | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.view(taskId),
        ConsistentRead: options?.consistent ?? true,
      }),
    );
    return Item ? fromViewItem(viewItemSchema.parse(Item)) : undefined;
  }

  async listEvents(taskId: string, afterRevision: number): Promise<JournalEvent[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': keys.task(taskId).pk,
        ':from': keys.event(taskId, afterRevision + 1).sk,
        ':to': `${keys.eventPrefix}~`,
      },
      ConsistentRead: true,
    });
    return items.map((item) => fromEventItem(eventItemSchema.parse(item)));
  }

  async listViews(query: ViewQuery): Promise<ViewPage> {
    const range = keyRange(query, query.after);
    if (range === undefined) return { views: [], more: false };
    const filter = filterOf(query);
    const views: JournalView[] = [];
    let exclusiveStartKey: Record<string, unknown> | undefined;
    do {
      // One view more than asked tells whether another page follows.
      const needed = query.limit + 1 - views.length;
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: byOwnerIndex,
          KeyConditionExpression: range.expression,
          FilterExpression: filter.expression,
          ExpressionAttributeNames: { ...range.names, ...filter.names },
          ExpressionAttributeValues: { ...range.values, ...filter.values },
          ScanIndexForward: false,
          // Filters drop items after Limit is applied; read ahead when they are likely to.
          Limit: filter.selective ? Math.min(1_000, needed * 4) : needed,
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) {
        if (item.ownerSort === range.exclusiveUpper) continue;
        views.push(fromViewItem(viewItemSchema.parse(item)));
      }
      exclusiveStartKey = page.LastEvaluatedKey;
    } while (views.length <= query.limit && exclusiveStartKey !== undefined);
    return { views: views.slice(0, query.limit), more: views.length > query.limit };
  }

  /**
   * Unfiltered: the owner's counters (one small query, flat in the number of tasks). Filtered: a
   * COUNT query over the owner index with the same conditions, linear in the owner's views
   * within the timestamp range.
   */
  async countViews(filter: ViewFilter): Promise<number> {
    if (
      filter.contextId === undefined &&
      filter.state === undefined &&
      filter.statusTimestampAfter === undefined
    ) {
      return this.countFromCounters(filter);
    }
    const range = keyRange(filter, undefined);
    if (range === undefined) return 0;
    const conditions = filterOf(filter);
    let count = 0;
    let exclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: byOwnerIndex,
          KeyConditionExpression: range.expression,
          FilterExpression: conditions.expression,
          ExpressionAttributeNames: { ...range.names, ...conditions.names },
          ExpressionAttributeValues: { ...range.values, ...conditions.values },
          Select: 'COUNT',
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      count += page.Count ?? 0;
      exclusiveStartKey = page.LastEvaluatedKey;
    } while (exclusiveStartKey !== undefined);
    return count;
  }

  /** Days after today count whole; today counts from the current hour on. */
  private async countFromCounters(filter: ViewFilter): Promise<number> {
    const today = expiryBucket(Math.floor(filter.now.getTime() / 1000));
    const first = counterKeys.item(filter.owner, today.day);
    let count = 0;
    let exclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': first.pk, ':from': first.sk, ':to': `${counterKeys.prefix}~` },
          ConsistentRead: true,
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      for (const raw of page.Items ?? []) {
        const item = counterItemSchema.parse(raw);
        if (item.sk !== first.sk) {
          count += item.n ?? 0;
          continue;
        }
        for (let hour = today.hour; hour < 24; hour++) {
          const value = (item as Record<string, unknown>)[hourAttribute(hour)];
          if (typeof value === 'number') count += value;
        }
      }
      exclusiveStartKey = page.LastEvaluatedKey;
    } while (exclusiveStartKey !== undefined);
    return Math.max(0, count);
  }
}

interface Expression {
  readonly expression: string;
  readonly names: Record<string, string>;
  readonly values: Record<string, unknown>;
}

/**
 * The key condition on the owner index: the owner, `statusTimestampAfter` as an inclusive lower
 * bound on `ownerSort` (`<timestamp>#<taskId>` sorts after `<timestamp>`), and a page position as
 * an exclusive upper bound. Undefined when the bounds leave nothing to read.
 */
const keyRange = (
  filter: ViewFilter,
  after: ViewQuery['after'],
): (Expression & { readonly exclusiveUpper?: string }) | undefined => {
  const names = { '#ownerKey': 'ownerKey', '#ownerSort': 'ownerSort' };
  const owner = keys.ownerKey(filter.owner.tenant, filter.owner.principal, filter.owner.profileId);
  const lower = filter.statusTimestampAfter;
  const upper = after && keys.ownerSort(after.statusTimestamp, after.taskId);
  if (lower !== undefined && upper !== undefined) {
    if (upper < lower) return undefined;
    // BETWEEN is inclusive; the item at the position itself is skipped by the reader.
    return {
      expression: '#ownerKey = :owner AND #ownerSort BETWEEN :lower AND :upper',
      names,
      values: { ':owner': owner, ':lower': lower, ':upper': upper },
      exclusiveUpper: upper,
    };
  }
  if (lower !== undefined) {
    return {
      expression: '#ownerKey = :owner AND #ownerSort >= :lower',
      names,
      values: { ':owner': owner, ':lower': lower },
    };
  }
  if (upper !== undefined) {
    return {
      expression: '#ownerKey = :owner AND #ownerSort < :upper',
      names,
      values: { ':owner': owner, ':upper': upper },
    };
  }
  return {
    expression: '#ownerKey = :owner',
    names: { '#ownerKey': 'ownerKey' },
    values: { ':owner': owner },
  };
};

/** Expired views read as absent (I-PURGE); contextId and state are filters on the index items. */
const filterOf = (filter: ViewFilter): Expression & { readonly selective: boolean } => {
  const parts = ['#expiresAt > :now'];
  const names: Record<string, string> = { '#expiresAt': 'expiresAt' };
  const values: Record<string, unknown> = { ':now': Math.floor(filter.now.getTime() / 1000) };
  if (filter.contextId !== undefined) {
    parts.push('#contextId = :contextId');
    names['#contextId'] = 'contextId';
    values[':contextId'] = filter.contextId;
  }
  if (filter.state !== undefined) {
    parts.push('#state = :state');
    names['#state'] = 'state';
    values[':state'] = filter.state;
  }
  return {
    expression: parts.join(' AND '),
    names,
    values,
    selective: filter.contextId !== undefined || filter.state !== undefined,
  };
};
