import { describe, expect, it } from 'vitest';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { historyFieldsFor, inlineHistoryBytes, loadHistory } from '../../shared/app/tasks/task-history.ts';
import { historyExpiryOf, historyWriteOf } from '../../shared/domain/history.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
import type { HistoryEntry } from '../../shared/domain/task.ts';
import { InMemoryTaskRepository } from '../support/in-memory-repositories.ts';

/** History in segments (docs/data-model.md, "History"): the pure rules and the write/read helpers. */
const codec = new TaskContentCodec(new FakeSealer());
const at = '2026-12-05T00:00:00.000Z';
const epoch = Date.parse(at) / 1000;

const task = (fields: Partial<StoredTask> = {}): StoredTask => ({
  taskId: 't1',
  contextId: 'c1',
  owner: { tenant: 't', principal: 'p' },
  profileId: 'default',
  state: 'TASK_STATE_WORKING',
  revision: 1,
  currentRunId: 'r1',
  statusTimestamp: at,
  createdAt: at,
  expiresAt: epoch + 100,
  ...fields,
});

const entry = (revision: number, bytes = 100): HistoryEntry => ({
  revision,
  message: { messageId: `m${revision}`, role: 'ROLE_USER', parts: [{ text: 'x'.repeat(bytes) }] },
});

describe('history segments: which write applies them', () => {
  it('applies a segment write only in the write of its revision (in place only at the same revision)', () => {
    const write = { at: 3, put: [] };
    expect(historyWriteOf(task({ revision: 3, historyWrite: write }), task({ revision: 2 }))).toBe(write);
    // Carried on to a later revision: spent.
    expect(historyWriteOf(task({ revision: 4, historyWrite: write }), task({ revision: 3 }))).toBeUndefined();
    // A revision's write carried into an in-place write of that revision: spent too.
    expect(historyWriteOf(task({ revision: 3, historyWrite: write }), task({ revision: 3 }))).toBeUndefined();
    const inPlace = { at: 3, inPlace: true as const, put: [] };
    expect(historyWriteOf(task({ revision: 3, historyWrite: inPlace }), task({ revision: 3 }))).toBe(inPlace);
    expect(
      historyWriteOf(task({ revision: 3, historyWrite: inPlace }), task({ revision: 2 })),
    ).toBeUndefined();
  });

  it('keeps segments at least as long as the row, extending them once the row moves past', () => {
    expect(historyExpiryOf(task(), undefined)).toEqual({ extendStored: false });
    // The first segments: as long again as the row has left.
    expect(historyExpiryOf(task({ historyFrom: 3 }), task())).toEqual({
      expiresAt: epoch + 200,
      extendStored: false,
    });
    expect(
      historyExpiryOf(task({ historyFrom: 3, historyExpiresAt: epoch + 150 }), task({ historyFrom: 3 })),
    ).toEqual({
      expiresAt: epoch + 150,
      extendStored: false,
    });
    const moved = task({ historyFrom: 3, historyExpiresAt: epoch + 150, expiresAt: epoch + 160 });
    expect(historyExpiryOf(moved, task({ historyFrom: 3 }))).toEqual({
      expiresAt: epoch + 320,
      extendStored: true,
    });
  });
});

describe('history segments: what a write keeps and puts', () => {
  it('keeps a short history in the row and writes no segment', async () => {
    const fields = await historyFieldsFor(codec, task(), [entry(1)], [entry(1), entry(2)], { revision: 2 });
    expect(fields.historyFrom).toBeUndefined();
    expect(fields.historyWrite).toBeUndefined();
    expect(await codec.openHistory('t1', fields.sealedHistory)).toEqual([entry(1), entry(2)]);
  });

  it('lets the older revisions go as segments; the newest stays, and the row never takes one back', async () => {
    // Two fit the row's budget, three do not.
    const big = Math.floor(inlineHistoryBytes / 3);
    const before = [entry(1, big), entry(2, big)];
    const fields = await historyFieldsFor(codec, task({ revision: 2 }), before, [...before, entry(3, big)], {
      revision: 3,
    });
    expect(fields.historyFrom).toBe(2);
    expect(fields.historyWrite?.put?.map((segment) => segment.revision)).toEqual([1]);
    expect(await codec.openHistorySegment('t1', 1, fields.historyWrite!.put![0]!.sealed)).toEqual([
      entry(1, big),
    ]);
    // A short entry after: the row still does not take revision 1 back.
    const later = await historyFieldsFor(
      codec,
      task({ revision: 3, historyFrom: 2 }),
      [entry(2, big), entry(3, big)],
      [entry(2, big), entry(3, big), entry(4, 10)],
      { revision: 4 },
    );
    expect(later.historyFrom).toBeGreaterThanOrEqual(2);
  });

  it('puts again only the stored segments whose entries changed (redacted)', async () => {
    const big = inlineHistoryBytes;
    const stored = [entry(1, big), entry(2, big), entry(3, big)];
    const redacted = stored.map((one, index) =>
      index === 0 ? { ...one, message: { ...one.message, parts: [{ text: '[REDACTED]' }] } } : one,
    );
    const fields = await historyFieldsFor(codec, task({ revision: 3, historyFrom: 3 }), stored, redacted, {
      revision: 3,
      inPlace: true,
    });
    expect(fields.historyWrite?.put?.map((segment) => segment.revision)).toEqual([1]);
    expect(fields.historyWrite?.inPlace).toBe(true);
  });

  it('reads back the whole history, or only the segments the last messages need, never newer than asked', async () => {
    const tasks = new InMemoryTaskRepository();
    let current = task({
      revision: 1,
      sealedHistory: (await codec.seal('t1', { history: [entry(1, 5000)] })).sealedHistory,
    });
    let history = [entry(1, 5000)];
    for (let revision = 2; revision <= 8; revision++) {
      const next = [...history, entry(revision, 5000)];
      const fields = await historyFieldsFor(codec, current, history, next, { revision });
      const written = { ...current, ...fields, revision };
      await tasks.commit({
        row: {
          taskId: 't1',
          task: written,
          expect: { revision: current.revision === 1 && revision === 2 ? 'absent' : current.revision },
          before: revision === 2 ? undefined : current,
        },
      });
      current = (await tasks.getTask('t1'))!;
      history = next;
    }
    const deps = { tasks, codec };
    expect(current.historyFrom).toBeGreaterThan(1);
    expect((await loadHistory(deps, current)).map((one) => one.revision)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect((await loadHistory(deps, current, { last: 3 })).map((one) => one.revision).slice(-3)).toEqual([
      6, 7, 8,
    ]);
    expect((await loadHistory(deps, current, { asOf: 4 })).map((one) => one.revision)).toEqual([1, 2, 3, 4]);
    const reads: (number | undefined)[] = [];
    const counting = {
      ...deps,
      tasks: {
        readHistorySegments: (id: string, below: number, last?: number) => {
          reads.push(last);
          return tasks.readHistorySegments(id, below, last);
        },
      },
    };
    await loadHistory(counting, current, { last: 2 });
    expect(reads.every((last) => last !== undefined && last <= 2)).toBe(true);
  });
});
