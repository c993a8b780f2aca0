/**
 * What the SSE stream's poll schedule costs and how late it picks a revision up (decision 0046):
 * the real `streamTask` over the in-memory journal, with an injected clock, for a revision that
 * lands `gap` ms after the previous one. Reads are strongly consistent journal Queries, billed at
 * least 1 RRU each on AWS (decision 0036). Then the same for the blocking wait over runs of given
 * lengths (decision 0077). Deterministic: no emulator, no wall clock.
 *
 *   npx tsx bench/poll-schedule.ts
 */

import { projectRecord } from '../shared/app/journal/project-record.ts';
import { seededRandom } from '../shared/app/operations/failpoints.ts';
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
 * The blocking wait (`waitForView`, decision 0077): eventually consistent GetItem polls (0.5 RRU
 * each) of one instance's waits in turn, each read taking `rttMs`, the runs' lengths drawn from
 * `draw` (seeded, so every run of this script prints the same). The history is warmed by 32 waits,
 * then 200 are counted: mean reads, and how late the view was picked up (p50, p95, mean).
 */
const blocking = async (draw: () => number, rttMs: number) => {
  const history = new WaitHistory();
  const run = async (landMs: number) => {
    const start = Date.parse('2026-12-01T10:00:00.000Z');
    let now = start;
    let reads = 0;
    const view = {
      taskId: 't',
      contextId: 'c',
      owner: alice,
      profileId: alice.profileId,
      state: 'TASK_STATE_COMPLETED',
      revision: 3,
      statusTimestamp: '',
      expiresAt: 4e9,
    };
    const deps = {
      journal: {
        getView: async () => {
          reads += 1;
          const seen = now - start >= landMs;
          now += rttMs;
          return seen ? view : undefined;
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
      kind: 'answerable:x',
    });
    return { reads, lateMs: now - start - landMs };
  };
  for (let i = 0; i < 32; i++) await run(draw());
  const counted = [];
  for (let i = 0; i < 200; i++) counted.push(await run(draw()));
  const late = counted.map((wait) => wait.lateMs).sort((a, b) => a - b);
  const mean = (values: number[]) => values.reduce((total, value) => total + value, 0) / values.length;
  return {
    reads: mean(counted.map((wait) => wait.reads)),
    p50: late[Math.floor(0.5 * late.length)] as number,
    p95: late[Math.floor(0.95 * late.length)] as number,
    mean: mean(late),
  };
};

const fixed = (ms: number) => () => ms;
const uniform = (from: number, to: number) => {
  const next = seededRandom(7);
  return () => from + next() * (to - from);
};
/** Log-normal around `medianMs` (σ = 0.6): model calls, whose lengths vary by a factor of a few. */
const logNormal = (medianMs: number) => {
  const next = seededRandom(11);
  return () =>
    medianMs * Math.exp(0.6 * Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()));
};
const cases: Array<[string, () => number, number]> = [
  ['echo at 1 client: 40 ms, reads 2 ms', fixed(40), 2],
  ['fixed 100 ms, reads 2 ms', fixed(100), 2],
  ['fixed 300 ms, reads 2 ms', fixed(300), 2],
  ['20 clients on 2 cores: 300–650 ms, reads 60 ms', uniform(300, 650), 60],
  ['model call: log-normal, median 1 s, reads 5 ms', logNormal(1_000), 5],
  ['model call: log-normal, median 5 s, reads 5 ms', logNormal(5_000), 5],
  ['model call: fixed 20 s, reads 5 ms', fixed(20_000), 5],
];
console.log('\n| runs | reads per wait | late p50 (ms) | late p95 (ms) | late mean (ms) |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const [name, draw, rtt] of cases) {
  const { reads, p50, p95, mean } = await blocking(draw, rtt);
  console.log(
    `| ${name} | ${reads.toFixed(2)} | ${p50.toFixed(0)} | ${p95.toFixed(0)} | ${mean.toFixed(0)} |`,
  );
}
