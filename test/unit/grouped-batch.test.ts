import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { GroupStoppedError, handleInGroups, oneAtATime } from '../../shared/adapters/grouped-batch.ts';
import { processFifoBatch } from '../../shared/adapters/sqs-delivery-queue.ts';

/** The one "group by key, stop the group at its first failure" helper, and the FIFO consumer on it. */
// a1 b2 a3 c4 b5 a6: key = letter
const batch = ['a1', 'b2', 'a3', 'c4', 'b5', 'a6'];
const keyOf = (record: string): string => record.slice(0, 1);

describe('handleInGroups', () => {
  it('hands each group over once, in batch order, and reports nothing when none fails', async () => {
    const groups: string[][] = [];
    expect(await handleInGroups(batch, keyOf, async (group) => void groups.push([...group]))).toEqual([]);
    expect(groups.sort()).toEqual([['a1', 'a3', 'a6'], ['b2', 'b5'], ['c4']]);
  });

  it('fails a whole group whose handler throws, and a group from the position it stopped at', async () => {
    const failed = await handleInGroups(batch, keyOf, async (group) => {
      if (group[0] === 'b2') throw new Error('down');
      if (group[0] === 'a1') throw new GroupStoppedError(1);
    });
    // b2 b5 (whole group), a3 a6 (from position 1), in batch order.
    expect(failed.map((index) => batch[index])).toEqual(['b2', 'a3', 'b5', 'a6']);
  });
});

describe('oneAtATime', () => {
  it('stops a group at its first failed record, after onFailure saw it; a failing onFailure changes nothing', async () => {
    const handled: string[] = [];
    const seen: string[] = [];
    const failed = await handleInGroups(
      batch,
      keyOf,
      oneAtATime(
        async (record: string) => {
          if (record === 'a3' || record === 'c4') throw new Error(`fails ${record}`);
          handled.push(record);
        },
        async (record, error) => {
          seen.push(`${record}: ${(error as Error).message}`);
          if (record === 'c4') throw new Error('onFailure fails too');
        },
      ),
    );
    expect(handled.sort()).toEqual(['a1', 'b2', 'b5']);
    expect(seen.sort()).toEqual(['a3: fails a3', 'c4: fails c4']);
    expect(failed.map((index) => batch[index])).toEqual(['a3', 'c4', 'a6']);
  });
});

describe('processFifoBatch (the deliverer)', () => {
  const message = (id: string): SQSRecord =>
    ({ messageId: id, attributes: { MessageGroupId: keyOf(id) } }) as unknown as SQSRecord;

  it("reports the failed message and its group's later messages, each by message id", async () => {
    const response = await processFifoBatch(batch.map(message), {
      handle: async (record) => {
        if (record.messageId === 'b2') throw new Error('webhook down');
      },
    });
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'b2' }, { itemIdentifier: 'b5' }] });
  });
});
