/**
 * What the SSE stream's poll schedule costs and how late it picks a revision up (decision 0046):
 * the real `streamTask` over the in-memory journal, with an injected clock, for a revision that
 * lands `gap` ms after the previous one. Reads are strongly consistent journal Queries, billed at
 * least 1 RRU each on AWS (decision 0036). Deterministic: no emulator, no wall clock.
 *
 *   npx tsx bench/poll-schedule.ts
 */

import { projectRecord } from '../shared/app/journal/project-record.ts';
import { createTask } from '../shared/app/tasks/create-task.ts';
import { type ReadTaskDeps, WaitHistory, waitForView } from '../shared/app/tasks/read-task.ts';
import { defaultStreamTiming, type StreamTiming, streamTask } from '../shared/app/tasks/stream-task.ts';
import { parseConfig } from '../shared/config/config.ts';
import { isTerminal } from '../shared/domain/a2a.ts';
import type { JournalRepository, WritePlan } from '../shared/domain/ports.ts';
import type { StoredTask } from '../shared/domain/projection.ts';
import { alice, createCore, userMessage } from '../test/support/core-fixture.ts';

const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: { default: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'] } },
});

/** The schedule before decision 0046 (20 ms, doubling, at most 40 ms for 3 s, then up to 1 s). */
const before: StreamTiming = {
  ...defaultStreamTiming,
  firstPollMs: 20,
  activeMaxPollMs: 40,
  activeShare: undefined,
};

/** Reads and lateness of one stream waiting `gapMs` for the next revision. */
const measure = async (timing: StreamTiming, gapMs: number) => {
  const core = createCore({ config });
  const pending: Array<[StoredTask | undefined, StoredTask]> = [];
  const commit = core.tasks.commit.bind(core.tasks);
  core.tasks.commit = async (plan: WritePlan) => {
    const previous = plan.row ? core.tasks.tasks.get(plan.row.taskId) : undefined;
    const result = await commit(plan);
    if (plan.row?.task) pending.push([previous, plan.row.task]);
    return result;
  };
  const project = async () => {
    for (const [oldImage, newImage] of pending.splice(0))
      await projectRecord(core.journal, oldImage, newImage);
  };
  let now = Date.parse('2026-12-01T10:00:00.000Z');
  let landAt = Number.POSITIVE_INFINITY;
  let reads = 0;
  const listEvents = core.journal.listEvents.bind(core.journal);
  core.journal.listEvents = (taskId, after) => {
    reads += 1;
    return listEvents(taskId, after);
  };
  const deps = {
    ...core.deps,
    clock: { now: () => new Date(now) },
    streamTiming: timing,
    sleep: async (ms: number) => {
      now += ms;
      if (now >= landAt) {
        landAt = Number.POSITIVE_INFINITY;
        await project();
      }
    },
  };
  const send = (messageId: string, taskId?: string) =>
    createTask(deps, {
      caller: alice,
      profileId: 'default',
      message: userMessage('hi', { messageId, ...(taskId ? { taskId } : {}) }),
    });
  const { taskId } = await send('tck-input-required');
  await core.runNext();
  await project();
  const stream = streamTask(deps, {
    caller: alice,
    taskId,
    start: { kind: 'subscribe' },
    closeAt: 'terminal',
  });
  await stream.next();
  const changedAt = now;
  reads = 0;
  await send('tck-complete-task', taskId);
  landAt = now + gapMs;
  await stream.next();
  await stream.return(undefined);
  return { reads, lateMs: now - changedAt - gapMs };
};

const gaps = [20, 36, 60, 100, 300, 1_000, 3_000, 5_000, 10_000];
console.log('| gap (ms) | reads before | late before (ms) | reads after | late after (ms) |');
console.log('| ---: | ---: | ---: | ---: | ---: |');
for (const gap of gaps) {
  const [b, a] = [await measure(before, gap), await measure(defaultStreamTiming, gap)];
  console.log(`| ${gap} | ${b.reads} | ${b.lateMs} | ${a.reads} | ${a.lateMs} |`);
}

/**
 * The blocking wait (`waitForView`, unchanged): eventually consistent GetItem polls (0.5 RRU
 * each), after 16 waits of the same kind that took `landMs` (decision 0035's deferral warmed up).
 */
const blocking = async (landMs: number) => {
  const history = new WaitHistory();
  const run = async () => {
    const start = Date.parse('2026-12-01T10:00:00.000Z');
    let now = start;
    let reads = 0;
    const view = {
      taskId: 't',
      contextId: 'c',
      owner: alice,
      state: 'TASK_STATE_COMPLETED',
      revision: 3,
      statusTimestamp: '',
      expiresAt: 4e9,
    };
    const deps = {
      journal: {
        getView: async () => {
          reads += 1;
          return now - start >= landMs ? view : undefined;
        },
      } as unknown as JournalRepository,
      tasks: {} as ReadTaskDeps['tasks'],
      codec: {} as ReadTaskDeps['codec'],
      clock: { now: () => new Date(now) },
      sleep: async (ms: number) => {
        now += ms;
      },
      waitHistory: history,
    };
    await waitForView(deps, alice, 't', {
      minRevision: 1,
      until: isTerminal,
      timeoutMs: 25_000,
      kind: 'settled:x',
    });
    return { reads, lateMs: now - start - landMs };
  };
  for (let i = 0; i < 16; i++) await run();
  return run();
};
console.log('\n| run (ms) | blocking-wait polls (warm history) | late (ms) |');
console.log('| ---: | ---: | ---: |');
for (const land of [36, 60, 100, 300, 1_000, 5_000]) {
  const { reads, lateMs } = await blocking(land);
  console.log(`| ${land} | ${reads} | ${lateMs} |`);
}
