import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import type { JournalState, JournalWriter } from '../../domain/ports.ts';
import type { JournalEvent, JournalView, Projection } from '../../domain/projection.ts';
import { isConditionalCheckFailed } from './condition-failures.ts';
import { withChunkReferences } from './content-chunks.ts';
import { toEventItem, toViewItem } from './entities.ts';
import { counterKeys, keys } from './keys.ts';

/** Where the view is expected before a revision is written: absent, or at a revision and expiry. */
type ExpectedView = { readonly revision: number; readonly expiresAt: number } | undefined;

/** Attempts at the view write before the projector's own retry takes over. */
const maxPutAttempts = 3;

/** The UTC day and hour a view expires in: its counter bucket (docs/protocol.md §6). */
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

/**
 * The journal's writes: events and views with the owner's counters, and
 * the one read that decides whether a revision is projected. Every writer puts a revision's event
 * before its view.
 */
export class DynamoDbJournalWriter implements JournalWriter {
  constructor(
    protected readonly client: DynamoDBDocumentClient,
    protected readonly tableName: string,
  ) {}

  /**
   * Two eventually consistent GetItems (half a read unit each under 4 KB): what they show is
   * there — events stay, views only move forward — and what they miss may just have been written.
   */
  async projected(taskId: string, revision: number): Promise<JournalState> {
    const [event, view] = await Promise.all([
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: keys.event(taskId, revision),
          ProjectionExpression: 'pk',
        }),
      ),
      this.viewAt(taskId, false),
    ]);
    return { event: event.Item !== undefined, ...(view && { viewRevision: view.revision }) };
  }

  /** Where the view is: its revision and expiry (the counters' bucket), or undefined. */
  private async viewAt(taskId: string, consistent: boolean): Promise<ExpectedView> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.view(taskId),
        ConsistentRead: consistent,
        ProjectionExpression: '#revision, #expiresAt',
        ExpressionAttributeNames: { '#revision': 'revision', '#expiresAt': 'expiresAt' },
      }),
    );
    return Item && { revision: Number(Item.revision), expiresAt: Number(Item.expiresAt) };
  }

  /**
   * The event first, then the view. The event put is idempotent (only if absent),
   * so it needs no transaction; a view at a revision always has its event. The view is written
   * conditioned on being where the old image says it was: a plain conditional put when the
   * owner's counters stay in their bucket (the usual case after the first revision), else one
   * transaction with the counter moves. When the condition fails (a late, replayed or gapped
   * record), the view is read and the write decided again: a newer view keeps its place; an older
   * or absent one is moved with counters computed from what is really stored.
   */
  async putRevision(projection: Projection): Promise<'written' | 'duplicate'> {
    const eventWritten = await this.putEvent(projection.event);
    let expected: ExpectedView = projection.previous;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.writeView(projection.view, expected);
        return 'written';
      } catch (error) {
        if (!lostToAnotherWrite(error)) throw error;
        const current = await this.viewAt(projection.view.taskId, true);
        // A replayed or late record: the view is already at or past it (its event is filled in).
        if (current !== undefined && current.revision >= projection.view.revision) {
          return eventWritten ? 'written' : 'duplicate';
        }
        if (attempt >= maxPutAttempts) throw error;
        expected = current;
      }
    }
  }

  async putView(projection: Projection): Promise<'written' | 'moved'> {
    try {
      await this.writeView(projection.view, projection.previous);
      return 'written';
    } catch (error) {
      if (lostToAnotherWrite(error)) return 'moved';
      throw error;
    }
  }

  /** True when the event was written now, false when it was there already. */
  async putEvent(event: JournalEvent): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: toEventItem(withChunkReferences(event)),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }

  private async writeView(view: JournalView, expected: ExpectedView): Promise<void> {
    const viewPut = {
      TableName: this.tableName,
      Item: toViewItem(withChunkReferences(view)),
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
}
