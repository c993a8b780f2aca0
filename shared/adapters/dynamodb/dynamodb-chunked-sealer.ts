import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { SealingFailedError } from '../../domain/errors.ts';
import type { SealContext, Sealer } from '../../domain/ports.ts';
import { chunkSortKeys, isChunkReference, matchesReference, readReference } from './content-chunks.ts';
import { keys } from './keys.ts';

/**
 * A sealer that opens chunked content too (docs/data-model.md, "Large content"): a blob an item holds as a
 * reference is read from its chunks in the task's partition of the state table (strongly consistent GetItems,
 * the keys are the reference's), checked against the reference's length and hash, and opened as the whole
 * blob it was sealed as. Every reader of task content opens through it, so content read from the task row, a
 * journal view or event is one path. Seals pass through.
 */
export class ChunkedContentSealer implements Sealer {
  constructor(
    private readonly sealer: Sealer,
    private readonly client: DynamoDBDocumentClient,
    private readonly stateTableName: string,
  ) {}

  seal(plaintext: Uint8Array, context: SealContext): Promise<Uint8Array> {
    return this.sealer.seal(plaintext, context);
  }

  async open(blob: Uint8Array, context: SealContext): Promise<Uint8Array> {
    return this.sealer.open(isChunkReference(blob) ? await this.whole(blob, context) : blob, context);
  }

  private async whole(blob: Uint8Array, context: SealContext): Promise<Uint8Array> {
    const reference = readReference(blob);
    const parts = await Promise.all(
      chunkSortKeys(reference).map(async (sk) => {
        const { Item } = await this.client.send(
          new GetCommand({
            TableName: this.stateTableName,
            Key: keys.chunk(context.taskId, sk),
            ConsistentRead: true,
          }),
        );
        return Item?.data instanceof Uint8Array ? Item.data : new Uint8Array();
      }),
    );
    const whole = Buffer.concat(parts);
    // Missing or edited chunks (or a reference moved to another task) never open.
    if (!matchesReference(whole, reference))
      throw new SealingFailedError('Sealed content is incomplete', { field: context.field });
    return whole;
  }
}
