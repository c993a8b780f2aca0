import { describe, expect, it } from 'vitest';
import { FullBatchFailureError, processPartialBatch } from '../../shared/adapters/partial-batch.ts';

/** Decision 0022: the local helper keeps Powertools' ReportBatchItemFailures semantics. */
interface FakeRecord {
  id?: string;
  fail: boolean;
}

const handle = async (record: FakeRecord): Promise<void> => {
  if (record.fail) throw new Error(`failed ${record.id}`);
};
const idOf = (record: FakeRecord): string | undefined => record.id;

describe('processPartialBatch (decision 0022)', () => {
  it('reports exactly the records that threw, by identifier', async () => {
    const records = [
      { id: 'a', fail: false },
      { id: 'b', fail: true },
      { id: 'c', fail: false },
      { id: 'd', fail: true },
    ];
    const response = await processPartialBatch(records, handle, idOf);
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'b' }, { itemIdentifier: 'd' }] });
  });

  it('answers an empty failure list when every record succeeds, and for an empty batch', async () => {
    expect(await processPartialBatch([{ id: 'a', fail: false }], handle, idOf)).toEqual({
      batchItemFailures: [],
    });
    expect(await processPartialBatch([], handle, idOf)).toEqual({ batchItemFailures: [] });
  });

  it('throws when every record of the batch fails, carrying each error', async () => {
    const failing = processPartialBatch(
      [
        { id: 'a', fail: true },
        { id: 'b', fail: true },
      ],
      handle,
      idOf,
    );
    await expect(failing).rejects.toBeInstanceOf(FullBatchFailureError);
    await failing.catch((error: FullBatchFailureError) => {
      expect(error.recordErrors.map((cause) => (cause as Error).message).sort()).toEqual([
        'failed a',
        'failed b',
      ]);
    });
  });

  it('handles the records of a batch concurrently, not one after another', async () => {
    let running = 0;
    let peak = 0;
    const slow = async (): Promise<void> => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((wake) => setImmediate(wake));
      running--;
    };
    await processPartialBatch([{ fail: false }, { fail: false }, { fail: false }], slow, idOf);
    expect(peak).toBe(3);
  });

  it('leaves out a failed record without an identifier (as a stream record without a sequence number)', async () => {
    const response = await processPartialBatch(
      [{ fail: true }, { id: 'b', fail: true }, { id: 'c', fail: false }],
      handle,
      idOf,
    );
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'b' }] });
  });
});
