import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemSleep } from '../system.ts';

/** BatchGetItem takes at most 100 keys per request. */
const maxKeysPerRequest = 100;
/** Rounds of retrying what DynamoDB left unprocessed (throttling, the 16 MB answer cap) before giving up. */
const maxRounds = 5;

/** The keys a BatchGetItem request could not read: its request items were left (partly) unprocessed. */
export class UnprocessedKeysError extends Error {
  override readonly name = 'UnprocessedKeysError';
  constructor(readonly unprocessed: number) {
    super(`BatchGetItem left ${unprocessed} keys unprocessed after ${maxRounds} rounds`);
  }
}

/**
 * The items found for `keys` of one table, read with as few BatchGetItem requests as the
 * 100-key limit allows (in parallel), unprocessed keys retried with a doubling back-off as AWS
 * advises. Items that do not exist are simply absent from the answer; each found item is billed
 * like a GetItem of it (half a read unit per started 4 KB, eventually consistent).
 */
export const batchGetAll = async (
  client: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
  options: { readonly projection?: string; readonly names?: Record<string, string> } = {},
  sleep: (ms: number) => Promise<void> = systemSleep,
): Promise<Record<string, unknown>[]> => {
  const chunks: Record<string, unknown>[][] = [];
  for (let start = 0; start < keys.length; start += maxKeysPerRequest)
    chunks.push(keys.slice(start, start + maxKeysPerRequest));
  const pages = await Promise.all(
    chunks.map(async (chunk) => {
      const items: Record<string, unknown>[] = [];
      let pending: Record<string, unknown>[] = chunk;
      for (let round = 0; pending.length > 0; round++) {
        if (round >= maxRounds) throw new UnprocessedKeysError(pending.length);
        if (round > 0) await sleep(25 * 2 ** (round - 1));
        const answer = await client.send(
          new BatchGetCommand({
            RequestItems: {
              [tableName]: {
                Keys: pending,
                ...(options.projection !== undefined && { ProjectionExpression: options.projection }),
                ...(options.names !== undefined && { ExpressionAttributeNames: options.names }),
              },
            },
          }),
        );
        items.push(...(answer.Responses?.[tableName] ?? []));
        pending = answer.UnprocessedKeys?.[tableName]?.Keys ?? [];
      }
      return items;
    }),
  );
  return pages.flat();
};
