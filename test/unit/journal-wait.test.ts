import { describe, expect, it } from 'vitest';
import { type ReadTaskDeps, waitForView } from '../../shared/app/read-task.ts';
import { isTerminal } from '../../shared/domain/a2a.ts';
import type { JournalRepository } from '../../shared/domain/ports.ts';
import type { JournalView } from '../../shared/domain/projection.ts';

const owner = { tenant: 't1', principal: 'p1' };
const view = (revision: number, state: JournalView['state']): JournalView =>
  ({
    taskId: 'task-1',
    contextId: 'ctx-1',
    owner,
    state,
    revision,
    statusTimestamp: `2026-11-30T12:00:0${revision}.000Z`,
    expiresAt: Math.floor(Date.now() / 1000) + 86_400,
  }) as JournalView;

/** A journal answering the given reads in turn (the last one repeats), recording each read's options. */
const scriptedJournal = (answers: Array<JournalView | undefined>) => {
  const reads: Array<{ consistent?: boolean } | undefined> = [];
  const journal = {
    getView: async (_taskId: string, options?: { consistent?: boolean }) => {
      reads.push(options);
      return answers.length > 1 ? answers.shift() : answers[0];
    },
  } as unknown as JournalRepository;
  return { journal, reads };
};

const depsWith = (journal: JournalRepository): ReadTaskDeps => {
  let now = Date.parse('2026-11-30T12:00:00.000Z');
  return {
    journal,
    tasks: {} as ReadTaskDeps['tasks'],
    codec: {} as ReadTaskDeps['codec'],
    clock: { now: () => new Date(now) },
    sleep: async (ms) => {
      now += ms;
    },
  };
};

describe('the blocking wait on the journal (decision 0017)', () => {
  it('polls with eventually consistent reads and returns the wanted committed view', async () => {
    const { journal, reads } = scriptedJournal([
      undefined,
      view(1, 'TASK_STATE_SUBMITTED'),
      view(2, 'TASK_STATE_WORKING'),
      view(3, 'TASK_STATE_COMPLETED'),
    ]);
    const found = await waitForView(depsWith(journal), owner, 'task-1', {
      minRevision: 1,
      until: isTerminal,
      timeoutMs: 10_000,
    });
    expect(found).toMatchObject({ revision: 3, state: 'TASK_STATE_COMPLETED' });
    expect(reads).toHaveLength(4);
    expect(reads.every((options) => options?.consistent === false)).toBe(true);
  });

  it('never answers with an older revision than one it has seen (a stale read goes back)', async () => {
    const { journal } = scriptedJournal([view(2, 'TASK_STATE_WORKING'), view(1, 'TASK_STATE_SUBMITTED')]);
    const found = await waitForView(depsWith(journal), owner, 'task-1', {
      minRevision: 1,
      until: isTerminal,
      timeoutMs: 2_000,
    });
    expect(found?.revision).toBe(2);
  });
});
