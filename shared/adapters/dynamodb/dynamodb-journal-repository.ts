import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import type { JournalRepository, ViewFilter, ViewPage, ViewQuery } from '../../domain/ports.ts';
import type { JournalEvent, JournalView, Projection } from '../../domain/projection.ts';
import { isConditionalCheckFailed } from './condition-failures.ts';
import {
  counterItemSchema,
  counterKeys,
  eventItemSchema,
  fromEventItem,
  fromViewItem,
  keys,
  toEventItem,
  toViewItem,
  viewItemSchema,
} from './entities.ts';
import { queryAll } from './query-all.ts';

/** Where the view is expected before a revision is written: absent, or at a revision and expiry. */
type ExpectedView = { readonly revision: number; readonly expiresAt: number } | undefined;

export const byOwnerIndex = 'byOwner';
/** Attempts at the view write before the projector's own retry takes over. */
const maxPutAttempts = 3;

/** The UTC day and hour a view expires in: its counter bucket (decision 0006). */
export const expiryBucket = (expiresAt: number): { day: string; hour: number } => {
  const iso = new Date(expiresAt * 1000).toISOString();
  return { day: iso.slice(0, 10), hour: Number(iso.slice(11, 13)) };
};

/**
 * The view write lost to another write of the same view: its condition failed, or its transaction
 * (with the counter moves) was canceled, for a condition or a conflicting write in flight. Either
 * way the view is read again and the write decided anew.
 */
const lostToAnotherWrite = (error: unknown): boolean =>
  isConditionalCheckFailed(error) || error instanceof TransactionCanceledException;

const hourAttribute = (hour: number): string => `h${String(hour).padStart(2, '0')}`;

/** Counter items live one day past the day they count; TTL removes them. */
const counterExpiry = (day: string): number => Date.parse(`${day}T00:00:00.000Z`) / 1000 + 2 * 86_400;

/**
 * The counter updates that move one view from the bucket of `from` (absent: a new view) to the
 * bucket of `to`: nothing when both fall into the same hour, else one ADD per touched day.
 */
export const counterMoves = (
  from: number | undefined,
  to: number,
): { day: string; deltas: Record<string, number> }[] => {
  const target = expiryBucket(to);
  const source = from === undefined ? undefined : expiryBucket(from);
  if (source && source.day === target.day && source.hour === target.hour) return [];
  const days = new Map<string, Record<string, number>>();
  const add = (bucket: { day: string; hour: number }, delta: number) => {
    const deltas = days.get(bucket.day) ?? {};
    deltas.n = (deltas.n ?? 0) + delta;
    const hour = hourAttribute(bucket.hour);
    deltas[hour] = (deltas[hour] ?? 0) + delta;
    days.set(bucket.day, deltas);
  };
  if (source) add(source, -1);
  add(target, 1);
  return [...days].map(([day, deltas]) => ({
    day,
    deltas: Object.fromEntries(Object.entries(deltas).filter(([, delta]) => delta !== 0)),
  }));
};

/** The journal table: one view per task (newest revision wins) and one event item per revision. */
export class DynamoDbJournalRepository implements JournalRepository {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * The event first, then the view (decision 0019). The event put is idempotent (only if absent),
   * so it needs no transaction; a view at a revision always has its event. The view is written
   * conditioned on being where the old image says it was: a plain conditional put when the
   * owner's counters stay in their bucket (the usual case after the first revision), else one
   * transaction with the counter moves. When the condition fails (a late, replayed or gapped
   * record), the view is read and the write decided again: a newer view keeps its place; an older
   * or absent one is moved with counters computed from what is really stored.
   */
  async putRevision(projection: Projection): Promise<'written' | 'duplicate'> {
    const eventWritten = await this.putEvent(projection);
    let expected: ExpectedView = projection.previous;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.writeView(projection.view, expected);
        return 'written';
      } catch (error) {
        if (!lostToAnotherWrite(error)) throw error;
        const current = await this.getView(projection.view.taskId);
        // A replayed or late record: the view is already at or past it (its event is filled in).
        if (current !== undefined && current.revision >= projection.view.revision) {
          return eventWritten ? 'written' : 'duplicate';
        }
        if (attempt >= maxPutAttempts) throw error;
        expected = current && { revision: current.revision, expiresAt: current.expiresAt };
      }
    }
  }

  /** True when the event was written now, false when it was there already. */
  private async putEvent(projection: Projection): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: toEventItem(projection.event),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  private async writeView(view: JournalView, expected: ExpectedView): Promise<void> {
    const viewPut = {
      TableName: this.tableName,
      Item: toViewItem(view),
      ...(expected === undefined
        ? { ConditionExpression: 'attribute_not_exists(pk)' }
        : {
            ConditionExpression: '#revision = :expected',
            ExpressionAttributeNames: { '#revision': 'revision' },
            ExpressionAttributeValues: { ':expected': expected.revision },
          }),
    };
    const counterUpdates = counterMoves(expected?.expiresAt, view.expiresAt).map(({ day, deltas }) => {
      const names: Record<string, string> = { '#expiresAt': 'expiresAt' };
      const values: Record<string, number> = { ':ttl': counterExpiry(day) };
      const adds = Object.entries(deltas).map(([attribute, delta], index) => {
        names[`#a${index}`] = attribute;
        values[`:d${index}`] = delta;
        return `#a${index} :d${index}`;
      });
      return {
        Update: {
          TableName: this.tableName,
          Key: counterKeys.item({ ...view.owner, profileId: view.profileId }, day),
          UpdateExpression: `ADD ${adds.join(', ')} SET #expiresAt = :ttl`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      };
    });
    // The counters move with the view or not at all (ADD is not idempotent): only then a transaction.
    if (counterUpdates.length === 0) await this.client.send(new PutCommand(viewPut));
    else
      await this.client.send(
        new TransactWriteCommand({ TransactItems: [{ Put: viewPut }, ...counterUpdates] }),
      );
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
