import { describe, expect, it } from 'vitest';
import {
  journalWaitTiming,
  pollStepMs,
  type ReadTaskDeps,
  WaitHistory,
  waitForView,
} from '../../shared/app/tasks/read-task.ts';
import { sendMessage } from '../../shared/app/tasks/send-message.ts';
import { isTerminal } from '../../shared/domain/a2a.ts';
import type { JournalRepository } from '../../shared/domain/ports.ts';
import type { JournalView } from '../../shared/domain/projection.ts';
import { alice, createCore, userMessage } from '../support/core-fixture.ts';

const owner = { tenant: 't1', principal: 'p1', profileId: 'default' };
const view = (revision: number, state: JournalView['state']): JournalView =>
  ({
    taskId: 'task-1',
    contextId: 'ctx-1',
    owner,
    profileId: owner.profileId,
    createdAt: '2026-11-30T12:00:00.000Z',
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

const depsWith = (journal: JournalRepository, waitHistory?: WaitHistory): ReadTaskDeps => {
  let now = Date.parse('2026-11-30T12:00:00.000Z');
  return {
    journal,
    tasks: {} as ReadTaskDeps['tasks'],
    codec: {} as ReadTaskDeps['codec'],
    clock: { now: () => new Date(now) },
    sleep: async (ms) => {
      now += ms;
    },
    ...(waitHistory ? { waitHistory } : {}),
  };
};

/**
 * Deps whose journal shows the view at `revision` 3 in `state` from `landsAfterMs` after the wait
 * began (the fake clock's start); records when each read happened.
 */
const landing = (
  landsAfterMs: number,
  waitHistory?: WaitHistory,
  state: JournalView['state'] = 'TASK_STATE_COMPLETED',
) => {
  const readsAt: number[] = [];
  const holder: { deps?: ReadTaskDeps } = {};
  const journal = {
    getView: async () => {
      const at = (holder.deps as ReadTaskDeps).clock.now().getTime() - Date.parse('2026-11-30T12:00:00.000Z');
      readsAt.push(at);
      return at >= landsAfterMs ? view(3, state) : undefined;
    },
  } as unknown as JournalRepository;
  holder.deps = depsWith(journal, waitHistory);
  return { deps: holder.deps, readsAt };
};

const waitSettled = (deps: ReadTaskDeps, kind = 'answerable:default') =>
  waitForView(deps, owner, 'task-1', { minRevision: 1, until: isTerminal, timeoutMs: 25_000, kind });

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

describe('the first poll is due when a tenth of the recent waits of the kind had found their view (decision 0077)', () => {
  /** When the first poll is due after recent waits whose tenth quantile is `quantileMs`. */
  const deferredTo = (quantileMs: number) => Math.max(0, Math.round(quantileMs) - pollStepMs(quantileMs));

  it('without a history (a fresh instance) the first read is immediate, as before', async () => {
    const { deps, readsAt } = landing(300);
    expect(await waitSettled(deps)).toMatchObject({ revision: 3 });
    expect(readsAt[0]).toBe(0);
    expect(readsAt.at(-1)).toBeGreaterThanOrEqual(300);
  });

  it('after waits of ~300 ms, the next wait first reads a step before 300 ms and still finds its view', async () => {
    const history = new WaitHistory();
    const first = landing(300, history);
    await waitSettled(first.deps);
    const foundAt = first.readsAt.at(-1) as number;
    expect(history.firstPollMs('answerable:default')).toBe(deferredTo(foundAt));
    const next = landing(310, history);
    expect(await waitSettled(next.deps)).toMatchObject({ revision: 3, state: 'TASK_STATE_COMPLETED' });
    expect(next.readsAt[0]).toBe(deferredTo(foundAt));
    expect(next.readsAt.at(-1)).toBeGreaterThanOrEqual(310);
    expect(next.readsAt.length).toBeLessThanOrEqual(3);
    expect(first.readsAt.length).toBeGreaterThan(10);
  });

  it('a view that lands earlier than the history says is found at the first read, and the history comes down', async () => {
    const history = new WaitHistory();
    const slow = landing(2_000, history);
    await waitSettled(slow.deps);
    const foundAt = slow.readsAt.at(-1) as number;
    expect(history.firstPollMs('answerable:default')).toBe(deferredTo(foundAt));
    // Quicker now: found at the deferred first read, remembered as a share of that time.
    const quick = landing(100, history);
    expect(await waitSettled(quick.deps)).toMatchObject({ revision: 3 });
    expect(quick.readsAt).toEqual([deferredTo(foundAt)]);
    for (let i = 0; i < 12; i++) await waitSettled(landing(100, history).deps);
    expect(history.firstPollMs('answerable:default')).toBeLessThanOrEqual(100 + pollStepMs(100));
    const settled = landing(100, history);
    await waitSettled(settled.deps);
    expect((settled.readsAt.at(-1) as number) - 100).toBeLessThanOrEqual(pollStepMs(100));
  });

  it('keeps kinds apart, never defers past the deadline, and learns nothing from a wait that timed out', async () => {
    const history = new WaitHistory();
    const slow = landing(5_000, history);
    await waitSettled(slow.deps, 'answerable:slow-agent');
    const learned = deferredTo(slow.readsAt.at(-1) as number);
    expect(learned).toBeGreaterThan(4_500);
    expect(history.firstPollMs('answerable:slow-agent')).toBe(learned);
    expect(history.firstPollMs('projected')).toBe(0);
    // Deferred by ~4.8 s, but the deadline is 1 s: one read at the deadline, and nothing found.
    const late = landing(10_000, history, 'TASK_STATE_WORKING');
    const found = await waitForView(late.deps, owner, 'task-1', {
      minRevision: 1,
      until: isTerminal,
      timeoutMs: 1_000,
      kind: 'answerable:slow-agent',
    });
    expect(found).toBeUndefined();
    expect(late.readsAt).toEqual([1_000]);
    expect(history.firstPollMs('answerable:slow-agent')).toBe(learned);
    // A view short of the wanted state is the answer at the deadline, as without a history.
    const working = landing(0, history, 'TASK_STATE_WORKING');
    const partial = await waitForView(working.deps, owner, 'task-1', {
      minRevision: 1,
      until: isTerminal,
      timeoutMs: 6_000,
      kind: 'answerable:slow-agent',
    });
    expect(partial).toMatchObject({ state: 'TASK_STATE_WORKING' });
    expect(history.firstPollMs('answerable:slow-agent')).toBe(learned);
  });

  it('remembers only the last waits: an old quick wait stops counting after a window of slower ones', async () => {
    const history = new WaitHistory();
    await waitSettled(landing(50, history).deps);
    await waitSettled(landing(3_000, history).deps);
    expect(history.firstPollMs('answerable:default')).toBeLessThan(50);
    for (let i = 0; i < journalWaitTiming.historySize; i++) await waitSettled(landing(400, history).deps);
    expect(history.firstPollMs('answerable:default')).toBeGreaterThanOrEqual(
      deferredTo(400) - pollStepMs(400),
    );
    expect(history.firstPollMs('answerable:default')).toBeLessThanOrEqual(400);
  });

  it('defers into the quickest of varied waits: at most a tenth find their view at the first poll', async () => {
    const history = new WaitHistory();
    // Waits of 200, 220, …, 500 ms in a shuffled order (no history of the kind yet).
    const lands = Array.from({ length: 16 }, (_, index) => 200 + ((index * 7) % 16) * 20);
    for (const ms of lands) await waitSettled(landing(ms, history).deps);
    const due = history.firstPollMs('answerable:default');
    const atFirstPoll = lands.filter((ms) => ms <= due).length;
    // Near the quickest wait (the 0035 rule deferred to 0.75 × half of it), within the quickest tenth.
    expect(due).toBeGreaterThanOrEqual(180);
    expect(atFirstPoll).toBeLessThanOrEqual(Math.ceil(lands.length / 10));
  });

  it('SendMessage remembers a blocking wait under its profile and a returnImmediately one as a projection', async () => {
    const core = createCore();
    const waitHistory = new WaitHistory();
    let now = Date.parse('2026-11-30T12:00:00.000Z');
    // Each sleep is 400 ms on this clock, in which the run executes and the stream projects.
    const deps = {
      ...core.deps,
      waitHistory,
      clock: { now: () => new Date(now) },
      sleep: async () => {
        now += 400;
        while (core.queued.length > 0) await core.runNext();
        await core.projectAll();
      },
    };
    const blocking = await sendMessage(deps, {
      caller: alice,
      profileId: 'default',
      message: userMessage('hi'),
    });
    expect(blocking.status.state).toBe('TASK_STATE_COMPLETED');
    expect(waitHistory.firstPollMs('answerable:default')).toBe(deferredTo(400));
    expect(waitHistory.firstPollMs('projected')).toBe(0);
    await sendMessage(deps, {
      caller: alice,
      profileId: 'default',
      message: userMessage('hi again'),
      configuration: { returnImmediately: true },
    });
    expect(waitHistory.firstPollMs('projected')).toBe(deferredTo(400));
  });
});

describe('each poll waits a share of the wait so far (decision 0077)', () => {
  it('a short wait polls 10 ms apart and finds its view at most 10 ms late', async () => {
    const next = landing(44);
    expect(await waitSettled(next.deps)).toMatchObject({ revision: 3 });
    const gaps = next.readsAt.slice(1).map((at, index) => at - (next.readsAt[index] as number));
    expect(gaps.every((gap) => gap === journalWaitTiming.minPollMs)).toBe(true);
    expect((next.readsAt.at(-1) as number) - 44).toBeLessThanOrEqual(journalWaitTiming.minPollMs);
  });

  it('a long wait costs a logarithm of its length and is picked up at most a share of it late', async () => {
    const { deps, readsAt } = landing(5_000);
    expect(await waitSettled(deps)).toMatchObject({ revision: 3 });
    const gaps = readsAt.slice(1).map((at, index) => at - (readsAt[index] as number));
    // Every step is the share of the wait's age at the read before it, within 10…500 ms.
    expect(gaps).toEqual(readsAt.slice(0, -1).map((at) => pollStepMs(at)));
    expect(Math.max(...gaps)).toBe(Math.round(journalWaitTiming.pollShare * (readsAt.at(-2) as number)));
    expect((readsAt.at(-1) as number) - 5_000).toBeLessThanOrEqual(journalWaitTiming.pollShare * 5_000);
    expect(pollStepMs(60_000)).toBe(journalWaitTiming.maxPollMs);
    // 25 ms apart for a second, then doubling to 200 ms (decisions 0035/0046) took 64 reads.
    expect(readsAt.length).toBeLessThan(60);
  });
});
