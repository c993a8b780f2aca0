import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Clock, StreamSlot, StreamSlots } from '../../domain/ports.ts';
import type { Owner } from '../../domain/task.ts';

/** Which of a caller's counts a set of slots keeps: open streams, or blocking sends waiting. */
export type SlotPool = 'STREAMS' | 'BLOCKING';

/**
 * A caller's open streams (or blocking sends) as up to `max` slot items of the state table
 * (`STREAMS#<tenant>#<principal>` / `SLOT#<n>`, `BLOCKING#…` for blocking sends; docs/configuration.md, `limits`). Opening a stream takes the
 * first free or lapsed slot with one conditional put, starting at a random slot so concurrent opens rarely
 * meet; a full caller costs `max` failed puts. Closing deletes the slot if it is still this stream's. The
 * items are not task rows: the stream triggers' filter (`sk = TASK`) skips them, and TTL removes a lapsed
 * one.
 */
export class DynamoDbStreamSlots implements StreamSlots {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly clock: Clock,
    private readonly pool: SlotPool = 'STREAMS',
    private readonly random: () => number = Math.random,
  ) {}

  async acquire(
    owner: Owner,
    streamId: string,
    options: { readonly max: number; readonly leaseMs: number },
  ): Promise<StreamSlot | undefined> {
    const now = this.clock.now().getTime();
    const first = Math.floor(this.random() * options.max);
    for (let step = 0; step < options.max; step++) {
      const index = (first + step) % options.max;
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              ...slotKey(this.pool, owner, index),
              streamId,
              slotUntil: now + options.leaseMs,
              expiresAt: Math.ceil((now + options.leaseMs) / 1000),
            },
            ConditionExpression: 'attribute_not_exists(pk) OR slotUntil < :now',
            ExpressionAttributeValues: { ':now': now },
          }),
        );
        return { index, streamId };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    return undefined;
  }

  async release(owner: Owner, slot: StreamSlot): Promise<void> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: slotKey(this.pool, owner, slot.index),
          ConditionExpression: 'streamId = :streamId',
          ExpressionAttributeValues: { ':streamId': slot.streamId },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}

const slotKey = (pool: SlotPool, owner: Owner, index: number) => ({
  pk: `${pool}#${owner.tenant}#${owner.principal}`,
  sk: `SLOT#${index}`,
});
