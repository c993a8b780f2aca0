import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chunkBytes,
  chunkedFields,
  chunkTaskWrite,
  cutIntoChunks,
  inlineContentBytes,
  isChunkReference,
  matchesReference,
  minChunkedBytes,
  readReference,
  referenceOf,
  storedBlobs,
  withChunkReferences,
} from '../../shared/adapters/dynamodb/content-chunks.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';

/** Decision 0065: which content goes to chunk items, and the writes that store it. Pure. */

const blob = (length: number, fill = 7): Uint8Array => new Uint8Array(length).fill(fill);
const KiB = 1024;

const task = (content: Partial<StoredTask> = {}): StoredTask => ({
  taskId: 't1',
  contextId: 'c1',
  owner: { tenant: 't', principal: 'p' },
  profileId: 'default',
  state: 'TASK_STATE_WORKING',
  revision: 2,
  currentRunId: 'r1',
  statusTimestamp: '2026-12-01T00:00:00.000Z',
  createdAt: '2026-12-01T00:00:00.000Z',
  expiresAt: 1_000,
  ...content,
});

describe('chunk references', () => {
  it('names the blob by length, chunk count and hash; a reference is its own reference', () => {
    const whole = blob(chunkBytes * 2 + 5);
    const reference = referenceOf(whole);
    expect(reference).toHaveLength(40);
    expect(isChunkReference(reference)).toBe(true);
    expect(isChunkReference(whole)).toBe(false);
    // A sealed blob starts with its version (1), a packed header reference with 0x00.
    expect(isChunkReference(Uint8Array.of(1, ...reference.subarray(1)))).toBe(false);
    expect(readReference(reference)).toMatchObject({ length: whole.length, count: 3 });
    expect(referenceOf(reference)).toBe(reference);
    expect(matchesReference(whole, readReference(reference))).toBe(true);
    const edited = Uint8Array.from(whole);
    edited[chunkBytes] = 8;
    expect(matchesReference(edited, readReference(reference))).toBe(false);
    expect(Buffer.concat(cutIntoChunks(whole)).equals(whole)).toBe(true);
    expect(cutIntoChunks(whole).map((chunk) => chunk.length)).toEqual([chunkBytes, chunkBytes, 5]);
  });
});

describe('chunkedFields', () => {
  it('keeps what fits inline; takes the history first, then the artifacts, then the status message', () => {
    expect(
      chunkedFields({ statusMessage: blob(100 * KiB), artifacts: blob(100 * KiB), history: blob(50 * KiB) }),
    ).toEqual(new Set());
    expect([
      ...chunkedFields({
        statusMessage: blob(1 * KiB),
        artifacts: blob(200 * KiB),
        history: blob(200 * KiB),
      }),
    ]).toEqual(['history']);
    expect([
      ...chunkedFields({
        statusMessage: blob(100 * KiB),
        artifacts: blob(200 * KiB),
        history: blob(200 * KiB),
      }),
    ]).toEqual(['history', 'artifacts']);
    expect([...chunkedFields({ statusMessage: blob(300 * KiB), artifacts: blob(300 * KiB) })]).toEqual([
      'artifacts',
      'statusMessage',
    ]);
    // A small blob stays inline even when the rest is over: a chunk would save its row little.
    expect([...chunkedFields({ artifacts: blob(300 * KiB), history: blob(minChunkedBytes - 1) })]).toEqual([
      'artifacts',
    ]);
  });

  it('a journal item (status message and artifacts) chunks only what its task row chunked, and what stays inline fits', () => {
    const size = fc.integer({ min: 0, max: 1_200 * KiB });
    fc.assert(
      fc.property(size, size, size, fc.boolean(), (s, a, h, eventWithoutArtifacts) => {
        const row = { statusMessage: blob(s), artifacts: blob(a), history: blob(h) };
        const rowChunked = chunkedFields(row);
        // The write-through projects the planned blobs, the projector the row's stored ones.
        for (const journalInput of [row, storedBlobs(row)]) {
          const item = {
            statusMessage: journalInput.statusMessage,
            ...(eventWithoutArtifacts ? {} : { artifacts: journalInput.artifacts }),
          };
          const stored = storedBlobs(item);
          for (const field of ['statusMessage', 'artifacts'] as const) {
            const value = stored[field];
            if (value !== undefined && isChunkReference(value)) expect(rowChunked.has(field)).toBe(true);
          }
          const inline = [stored.statusMessage, stored.artifacts].reduce(
            (total, value) => total + (value?.length ?? 0),
            0,
          );
          expect(inline).toBeLessThanOrEqual(inlineContentBytes + 2 * minChunkedBytes);
        }
        const stored = storedBlobs(row);
        const inline = Object.values(stored).reduce((total, value) => total + (value?.length ?? 0), 0);
        expect(inline).toBeLessThanOrEqual(inlineContentBytes + 3 * minChunkedBytes);
      }),
    );
  });
});

describe('chunkTaskWrite', () => {
  const table = 'state';

  it('writes nothing more for content that fits its row: the task as it is', () => {
    const small = task({ sealedHistory: blob(2 * KiB), sealedArtifacts: blob(KiB) });
    const write = chunkTaskWrite(small, undefined, table);
    expect(write.writes).toEqual([]);
    expect(write.task).toEqual(small);
  });

  it('puts the chunks of a new large blob with the task, its reference in the row', () => {
    const history = blob(chunkBytes + 10);
    const write = chunkTaskWrite(task({ sealedHistory: history }), undefined, table);
    const reference = readReference(write.task.sealedHistory as Uint8Array);
    expect(write.bytes).toBe(history.length);
    expect(write.writes.map((item) => item.Put?.Item?.sk)).toEqual([
      `CHUNK#${reference.hash}#000`,
      `CHUNK#${reference.hash}#001`,
    ]);
    expect(write.writes[0]?.Put?.Item).toMatchObject({ pk: 'TASK#t1', expiresAt: 1_000 });
  });

  it('keeps a reference it read without writing its chunks again; a later expiry moves theirs', () => {
    const artifacts = referenceOf(blob(600 * KiB));
    const before = task({ sealedArtifacts: artifacts });
    expect(chunkTaskWrite(task({ revision: 3, sealedArtifacts: artifacts }), before, table).writes).toEqual(
      [],
    );
    const extended = chunkTaskWrite(
      task({ revision: 3, sealedArtifacts: artifacts, expiresAt: 2_000 }),
      before,
      table,
    );
    expect(extended.writes.map((item) => item.Update?.ExpressionAttributeValues)).toEqual([
      { ':expiresAt': 2_000 },
      { ':expiresAt': 2_000 },
    ]);
    expect(extended.bytes).toBe(0);
  });

  it('deletes the chunks of the history it replaces (a scrub leaves nothing behind), never the artifacts', () => {
    const oldHistory = blob(500 * KiB, 1);
    const oldArtifacts = blob(500 * KiB, 2);
    const before = task({
      sealedHistory: referenceOf(oldHistory),
      sealedArtifacts: referenceOf(oldArtifacts),
    });
    const write = chunkTaskWrite(
      task({ revision: 3, sealedHistory: blob(500 * KiB, 3), sealedArtifacts: blob(500 * KiB, 4) }),
      before,
      table,
    );
    const deleted = write.writes.flatMap((item) => (item.Delete ? [item.Delete.Key?.sk] : []));
    const { hash } = readReference(referenceOf(oldHistory));
    expect(deleted).toEqual([`CHUNK#${hash}#000`, `CHUNK#${hash}#001`]);
    expect(write.writes.filter((item) => item.Put)).toHaveLength(4);
    // The history removed altogether (content dropped): its chunks go too.
    const dropped = chunkTaskWrite(task({ revision: 3 }), before, table);
    expect(dropped.writes.map((item) => item.Delete?.Key?.sk)).toEqual(deleted);
  });
});

describe('withChunkReferences', () => {
  it('leaves a journal item that fits as it is, and refers to the chunks of one that does not', () => {
    const view = { taskId: 't1', sealedStatusMessage: blob(KiB), sealedArtifacts: blob(KiB) };
    expect(withChunkReferences(view)).toBe(view);
    const large = { ...view, sealedArtifacts: blob(900 * KiB) };
    const stored = withChunkReferences(large);
    expect(stored.sealedStatusMessage).toBe(large.sealedStatusMessage);
    expect(stored.sealedArtifacts).toEqual(referenceOf(large.sealedArtifacts));
  });
});
