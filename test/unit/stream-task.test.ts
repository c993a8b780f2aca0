import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import type { StreamItem } from '../../shared/app/rpc/dispatcher.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { timerSleep } from '../../shared/app/tasks/read-task.ts';
import { RunFeed } from '../../shared/app/tasks/run-feed.ts';
import {
  defaultStreamTiming,
  heartbeat,
  parseLastEventId,
  type StreamTaskInput,
  type StreamTiming,
  streamTask,
  subscribeToTask,
} from '../../shared/app/tasks/stream-task.ts';
import { parseConfig } from '../../shared/config/config.ts';
import type { StreamResponse } from '../../shared/domain/a2a.ts';
import { TaskNotFoundError, UnsupportedOperationError } from '../../shared/domain/errors.ts';
import type { StreamSlots, WritePlan } from '../../shared/domain/ports.ts';
import type { JournalEvent, StoredTask } from '../../shared/domain/projection.ts';
import { alice, createCore, userMessage } from '../support/core-fixture.ts';

/**
 * The SSE stream use case over the in-memory journal, with a projector whose lag the test
 * controls (every committed revision is projected, in order, when the test says so) and an
 * injected clock and sleep (time only moves when the stream sleeps).
 */

const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: { default: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'] } },
});

const timing: StreamTiming = {
  firstPollMs: 20,
  maxPollMs: 1_000,
  activeWindowMs: 3_000,
  activeMaxPollMs: 100,
  // The doubling back-off (the default's share-of-the-wait delay is tested on its own, decision 0046).
  activeShare: undefined,
  heartbeatMs: 15_000,
  maxDurationMs: 60_000,
  projectionWaitMs: 10_000,
  gapWaitMs: 5_000,
  maxReadFailures: 3,
};

type Image = [StoredTask | undefined, StoredTask];

const setup = (streamTiming: StreamTiming = timing) => {
  const core = createCore({ config });
  // The stream records of the state table: every committed task image, projected on demand.
  const unprojected: Image[] = [];
  const commit = core.tasks.commit.bind(core.tasks);
  core.tasks.commit = async (plan: WritePlan) => {
    const taskId = plan.row?.taskId;
    const before = taskId === undefined ? undefined : core.tasks.tasks.get(taskId);
    const result = await commit(plan);
    if (plan.row?.task) unprojected.push([before, plan.row.task]);
    return result;
  };
  const project = async (count = Number.POSITIVE_INFINITY) => {
    for (let i = 0; i < count && unprojected.length > 0; i++) {
      const [oldImage, newImage] = unprojected.shift() as Image;
      await projectRecord(core.journal, oldImage, newImage);
    }
  };

  let now = Date.now();
  const clock = { now: () => new Date(now) };
  const sleeps: number[] = [];
  const scheduled: { at: number; action: () => Promise<unknown> }[] = [];
  /** Runs `action` once the stream's time has passed `afterMs` from now. */
  const at = (afterMs: number, action: () => Promise<unknown>) =>
    scheduled.push({ at: now + afterMs, action });
  const sleep = async (ms: number) => {
    sleeps.push(ms);
    now += ms;
    for (const entry of [...scheduled]) {
      if (entry.at <= now) {
        scheduled.splice(scheduled.indexOf(entry), 1);
        await entry.action();
      }
    }
  };
  const listEvents = vi.spyOn(core.journal, 'listEvents');
  const deps = { ...core.deps, clock, sleep, streamTiming };

  // A scenario prefix plus a fresh suffix: each call is a new message (a repeated messageId is a retry).
  let sent = 0;
  const create = async (prefix: string, extra: Parameters<typeof userMessage>[1] = {}) =>
    createTask(deps, {
      caller: alice,
      profileId: 'default',
      message: userMessage('hi', { messageId: `${prefix}-${++sent}`, ...extra }),
    });

  const stream = (input: Partial<StreamTaskInput> & Pick<StreamTaskInput, 'taskId' | 'start'>) =>
    streamTask(deps, { caller: alice, closeAt: 'terminal', ...input });

  /** Executes the next queued run, and projects its revisions, once `afterMs` have passed. */
  const runAt = (afterMs: number) =>
    at(afterMs, async () => {
      await core.runNext();
      await project();
    });

  return {
    core,
    deps,
    project,
    unprojected,
    sleeps,
    at,
    runAt,
    listEvents,
    create,
    stream,
    nowMs: () => now,
  };
};

/** Collects every item with the stream time at which it was produced. */
const collect = async (items: AsyncIterable<StreamItem>, nowMs: () => number) => {
  const out: { item: StreamItem; at: number }[] = [];
  for await (const item of items) out.push({ item, at: nowMs() });
  return out;
};

/** A compact view of a stream: `task:STATE#id`, `status:STATE#id`, `artifact:text`, `heartbeat`. */
const describeItem = (item: StreamItem): string => {
  if ('comment' in item) return 'heartbeat';
  const [response, id] =
    'response' in item ? [item.response, item.eventId] : [item as StreamResponse, undefined];
  const suffix = id === undefined ? '' : `#${id}`;
  if ('task' in response) return `task:${response.task.status.state.replace('TASK_STATE_', '')}${suffix}`;
  if ('statusUpdate' in response)
    return `status:${response.statusUpdate.status.state.replace('TASK_STATE_', '')}${suffix}`;
  if ('artifactUpdate' in response) {
    const part = response.artifactUpdate.artifact.parts[0];
    return `artifact:${part && 'text' in part ? part.text : 'file'}${suffix}`;
  }
  return 'message';
};

/** A streaming send's stream beside its run here, opened from the committed image and fed by the run. */
const fedStream = (
  deps: Parameters<typeof streamTask>[0],
  created: { readonly taskId: string; readonly revision: number },
  image: StoredTask,
  feed: RunFeed,
  signal?: AbortSignal,
) =>
  streamTask(deps, {
    caller: alice,
    taskId: created.taskId,
    start: { kind: 'created', revision: created.revision, image },
    closeAt: 'terminal-or-interrupted',
    feed,
    signal,
  });

describe('streamTask: SendStreamingMessage (from the caller own write)', () => {
  it('shows the created revision, then each committed revision in order: WORKING, artifact + COMPLETED', async () => {
    const s = setup();
    const created = await s.create('tck-stream-001');
    await s.project();
    s.at(50, async () => {
      await s.core.runNext();
      await s.project();
    });
    const items = await collect(
      s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
      }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'artifact:Stream hello from TCK',
      'status:COMPLETED#3',
    ]);
    const artifact = items[2]?.item as StreamResponse;
    expect(artifact).toMatchObject({ artifactUpdate: { taskId: created.taskId, lastChunk: true } });
    expect(artifact).not.toHaveProperty('artifactUpdate.append');
  });

  it('with its run here: opens from the committed image and shows what its run feeds, reading no journal', async () => {
    const s = setup();
    const created = await s.create('tck-stream-001');
    // Nothing projected yet: a stream that needed the view would wait for it.
    const image = s.core.tasks.tasks.get(created.taskId) as StoredTask;
    const feed = new RunFeed();
    const asked: number[] = [];
    // Time never passes: only what the run feeds moves the stream past its first wait.
    const sleep = (ms: number) => {
      asked.push(ms);
      return new Promise<void>(() => undefined);
    };
    const items: string[] = [];
    const streamed = (async () => {
      for await (const item of fedStream({ ...s.deps, sleep }, created, image, feed))
        items.push(describeItem(item));
    })();
    await vi.waitFor(() => expect(asked).toHaveLength(1));
    expect(items).toEqual(['task:SUBMITTED#1']);
    // Fed, it does not poll: it waits at most the idle ceiling (the run's revisions wake it).
    expect(asked).toEqual([timing.maxPollMs]);
    await s.core.runNext();
    await s.project();
    for (const event of await s.core.journal.listEvents(created.taskId, 1)) feed.journaled(event);
    s.listEvents.mockClear();
    await streamed;
    expect(items).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'artifact:Stream hello from TCK',
      'status:COMPLETED#3',
    ]);
    expect(s.listEvents).not.toHaveBeenCalled();
  });

  it('with its run here: each wait ends when the run feeds it, its timer and its listener on the signal with it', async () => {
    const s = setup();
    const created = await s.create('tck-stream-001');
    const image = s.core.tasks.tasks.get(created.taskId) as StoredTask;
    const feed = new RunFeed();
    const closed = new AbortController();
    // Time never passes: a wait ends only when its own signal aborts.
    const waits: AbortSignal[] = [];
    const sleep = (_ms: number, signal?: AbortSignal) => {
      if (signal !== undefined) waits.push(signal);
      return new Promise<void>((resolve) =>
        signal?.addEventListener('abort', () => resolve(), { once: true }),
      );
    };
    const listeners: number[] = [];
    const streamed = (async () => {
      for await (const _ of fedStream({ ...s.deps, sleep }, created, image, feed, closed.signal))
        listeners.push(getEventListeners(closed.signal, 'abort').length);
    })();
    await s.core.runNext();
    await s.project();
    const [working, completed] = await s.core.journal.listEvents(created.taskId, 1);
    await vi.waitFor(() => expect(waits).toHaveLength(1));
    feed.journaled(working as JournalEvent);
    await vi.waitFor(() => expect(waits).toHaveLength(2));
    feed.journaled(completed as JournalEvent);
    await streamed;
    expect(waits.map((wait) => wait.aborted)).toEqual([true, true]);
    expect(Math.max(...listeners)).toBeLessThanOrEqual(1);
    expect(getEventListeners(closed.signal, 'abort')).toHaveLength(0);
  });

  it('starts at the created revision even when the journal has moved on (I-RYW, nothing skipped)', async () => {
    const s = setup();
    const created = await s.create('tck-artifact-text');
    await s.core.runNext();
    await s.project();
    const items = await collect(
      s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
      }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'artifact:Generated text content',
      'status:COMPLETED#3',
    ]);
    // The snapshot of revision 1 has no artifacts yet and only the user's message as history.
    const first = items[0]?.item as { response: { task: { artifacts?: unknown[]; history?: unknown[] } } };
    expect(first.response.task.artifacts).toEqual([]);
    expect(first.response.task.history).toHaveLength(1);
  });

  it('waits for a late projection of the own write, and never shows an uncommitted state', async () => {
    const s = setup();
    const created = await s.create('tck-complete-task');
    s.at(300, () => s.project());
    s.at(400, async () => {
      await s.core.runNext();
      await s.project();
    });
    const items = await collect(
      s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
      }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'status:COMPLETED#3',
    ]);
  });

  it('closes at an interrupted state', async () => {
    const s = setup();
    const created = await s.create('tck-input-required');
    await s.core.runNext();
    await s.project();
    const items = await collect(
      s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
      }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'status:INPUT_REQUIRED#3',
    ]);
  });
});

describe('streamTask: a send whose agent may answer with a Message (decision 0067)', () => {
  /** A held SendStreamingMessage of `prefix`, its run executed and projected `runAtMs` later. */
  const heldStream = async (prefix: string, runAtMs: number, waitMs = 25_000) => {
    const s = setup();
    const created = await s.create(prefix);
    await s.project();
    s.runAt(runAtMs);
    const startedAt = s.nowMs();
    const items = await collect(
      s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
        messageAnswerWaitMs: waitMs,
      }),
      s.nowMs,
    );
    return { s, created, items, startedAt };
  };

  it('streams exactly one Message, the one a blocking send answers, then closes (STREAM-MSG-001)', async () => {
    // Fails without the wait: the stream is then task:SUBMITTED, status:WORKING, status:COMPLETED.
    const { s, created, items } = await heldStream('tck-message-response', 50);
    expect(items.map(({ item }) => describeItem(item))).toEqual(['message']);
    const task = await s.core.deps.journal.getView(created.taskId);
    expect(task?.state).toBe('TASK_STATE_COMPLETED');
    expect(items[0]?.item).toEqual({
      message: {
        messageId: expect.any(String),
        role: 'ROLE_AGENT',
        // The task exists durably (GetTask reads it): the message names it, as the blocking answer does.
        taskId: created.taskId,
        contextId: task?.contextId,
        parts: [{ text: 'Direct message response' }],
      },
    });
    // Nothing before it: no snapshot, no id (a message-only stream has nothing to resume).
    expect(items[0]?.item).not.toHaveProperty('eventId');
  });

  it.each([
    { when: 'once it settled', runAtMs: 50, waitMs: 25_000, snapshotAtMs: 50 },
    { when: 'from the wait bound on, then live', runAtMs: 5_000, waitMs: 1_000, snapshotAtMs: 1_000 },
  ])('streams a run that answered with a task exactly as an unheld stream, $when', async (held) => {
    const { items, startedAt } = await heldStream('tck-stream-001', held.runAtMs, held.waitMs);
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'artifact:Stream hello from TCK',
      'status:COMPLETED#3',
    ]);
    // Held: the snapshot of revision 1 comes when the run settled or the wait gave up, not at 0;
    // the run's own revisions when it ran.
    expect((items[0]?.at ?? 0) - startedAt).toBe(held.snapshotAtMs);
    expect((items[1]?.at ?? 0) - startedAt).toBeGreaterThanOrEqual(held.runAtMs);
  });

  it('a Message after the wait bound ends a task stream, as a blocking send past its cap answers with the task', async () => {
    const { items } = await heldStream('tck-message-response', 5_000, 1_000);
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'status:COMPLETED#3',
    ]);
  });

  it('sends heartbeats while it waits, never more than heartbeatMs apart', async () => {
    const { items, startedAt } = await heldStream('tck-message-response', 40_000, 50_000);
    expect(items.map(({ item }) => describeItem(item))).toEqual(['heartbeat', 'heartbeat', 'message']);
    const sentAt = [startedAt, ...items.map(({ at }) => at)];
    for (let i = 1; i < sentAt.length; i++) {
      expect((sentAt[i] as number) - (sentAt[i - 1] as number)).toBeLessThanOrEqual(timing.heartbeatMs);
    }
  });

  it('a subscriber to a task that answers with a Message still gets a task stream (the spec: Task first)', async () => {
    const s = setup();
    const created = await s.create('tck-message-response');
    await s.project();
    s.runAt(50);
    const items = await collect(s.stream({ taskId: created.taskId, start: { kind: 'subscribe' } }), s.nowMs);
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'status:COMPLETED#3',
    ]);
    const last = items.at(-1)?.item as { response: StreamResponse };
    expect(last.response).toMatchObject({
      statusUpdate: { status: { message: { parts: [{ text: 'Direct message response' }] } } },
    });
  });
});

describe('streamTask: SubscribeToTask', () => {
  const inputRequiredTask = async (s: ReturnType<typeof setup>) => {
    const created = await s.create('tck-input-required');
    await s.core.runNext();
    await s.project();
    return created.taskId;
  };

  it('stays open through INPUT_REQUIRED and ends with the terminal event another request caused (STREAM-SUB-002)', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    s.at(500, async () => {
      await s.create('tck-complete-task', { taskId });
      await s.project();
      await s.core.runNext();
      await s.project();
    });
    const items = await collect(s.stream({ taskId, start: { kind: 'subscribe' } }), s.nowMs);
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:INPUT_REQUIRED#3',
      // The follow-up moves the task on; it never shows SUBMITTED again (decision 0050), and the
      // run's claim adds no second WORKING.
      'status:WORKING#4',
      'status:COMPLETED#5',
    ]);
  });

  it('gives two concurrent subscribers the same events in the same order', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    s.at(200, async () => {
      await s.create('tck-artifact-text', { taskId });
      await s.project();
      await s.core.runNext();
      await s.project();
    });
    const [a, b] = await Promise.all([
      collect(s.stream({ taskId, start: { kind: 'subscribe' } }), s.nowMs),
      collect(s.stream({ taskId, start: { kind: 'subscribe' } }), s.nowMs),
    ]);
    const events = (list: { item: StreamItem }[]) => list.map(({ item }) => item);
    expect(events(a)).toEqual(events(b));
    expect(events(a).map(describeItem)).toEqual([
      'task:INPUT_REQUIRED#3',
      'status:WORKING#4',
      'artifact:Generated text content',
      'status:COMPLETED#5',
    ]);
  });

  it('answers TaskNotFound for an unknown, foreign or expired task before any event', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    await expect(s.stream({ taskId: 'nope', start: { kind: 'subscribe' } }).next()).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
    const bob = { tenant: 't1', principal: 'bob', profileId: 'default' };
    await expect(
      s.stream({ taskId, caller: bob, start: { kind: 'subscribe' } }).next(),
    ).rejects.toBeInstanceOf(TaskNotFoundError);
    const view = s.core.journal.views.get(taskId);
    if (view === undefined) throw new Error('no view');
    s.core.journal.views.set(taskId, { ...view, expiresAt: Math.floor(s.nowMs() / 1000) - 1 });
    await expect(s.stream({ taskId, start: { kind: 'subscribe' } }).next()).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
  });

  it('answers UnsupportedOperation for a terminal task (STREAM-SUB-003)', async () => {
    const s = setup();
    const created = await s.create('tck-complete-task');
    await s.core.runNext();
    await s.project();
    await expect(
      s.stream({ taskId: created.taskId, start: { kind: 'subscribe' } }).next(),
    ).rejects.toBeInstanceOf(UnsupportedOperationError);
  });

  it('resumes after Last-Event-ID: the task as of that revision, then only later revisions', async () => {
    const s = setup();
    const created = await s.create('tck-artifact-text');
    await s.core.runNext();
    await s.project();
    const resumed = await collect(
      s.stream({ taskId: created.taskId, start: { kind: 'subscribe', lastEventId: '2' } }),
      s.nowMs,
    );
    expect(resumed.map(({ item }) => describeItem(item))).toEqual([
      'task:WORKING#2',
      'artifact:Generated text content',
      'status:COMPLETED#3',
    ]);
    const fromStart = await collect(
      s.stream({ taskId: created.taskId, start: { kind: 'subscribe', lastEventId: '1' } }),
      s.nowMs,
    );
    expect(fromStart.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'artifact:Generated text content',
      'status:COMPLETED#3',
    ]);
    // Nothing was missed after the terminal revision: a terminal task is refused as usual.
    await expect(
      s.stream({ taskId: created.taskId, start: { kind: 'subscribe', lastEventId: '3' } }).next(),
    ).rejects.toBeInstanceOf(UnsupportedOperationError);
  });

  it('resumes an open task after Last-Event-ID and keeps the artifacts set before that revision', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    await s.create('tck-artifact-text', { taskId });
    await s.project();
    await s.core.runNext();
    await s.project();
    // INPUT_REQUIRED(3) → WORKING(4, the follow-up) → COMPLETED+artifact(5).
    const items = await collect(
      s.stream({ taskId, start: { kind: 'subscribe', lastEventId: '4' } }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:WORKING#4',
      'artifact:Generated text content',
      'status:COMPLETED#5',
    ]);
  });

  it('never goes back when the view lags the event the client re-attaches after (I-ORDER)', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    const lagging = s.core.journal.views.get(taskId);
    await s.create('tck-artifact-text', { taskId });
    await s.project();
    await s.core.runNext();
    await s.project();
    // The events of WORKING(4) and COMPLETED(5) are in the journal, the view is still at 3.
    if (lagging === undefined) throw new Error('expected a view');
    s.core.journal.views.set(taskId, lagging);
    const items = await collect(
      s.stream({ taskId, start: { kind: 'subscribe', lastEventId: '4' } }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:WORKING#4',
      'artifact:Generated text content',
      'status:COMPLETED#5',
    ]);
  });

  it('waits for a journal behind the revision the client re-attaches after, never showing an older one (decision 0032)', async () => {
    const s = setup();
    const created = await s.create('tck-artifact-text');
    await s.core.runNext();
    // Committed up to COMPLETED(3); the journal holds only SUBMITTED(1). The client saw WORKING(2)
    // in a stream that opened from the committed row (its projection was more than 10 s late).
    await s.project(1);
    s.at(2_000, () => s.project());
    const began = s.nowMs();
    const items = await collect(
      s.stream({ taskId: created.taskId, start: { kind: 'subscribe', lastEventId: '2' } }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:WORKING#2',
      'artifact:Generated text content',
      'status:COMPLETED#3',
    ]);
    expect(items[0]!.at - began).toBeGreaterThanOrEqual(2_000);
  });

  it('opens from the committed row when the journal stays behind the re-attach (decision 0032)', async () => {
    const s = setup();
    const created = await s.create('tck-artifact-text');
    await s.core.runNext();
    await s.project(1);
    const began = s.nowMs();
    const items = await collect(
      s.stream({ taskId: created.taskId, start: { kind: 'subscribe', lastEventId: '2' } }),
      s.nowMs,
    );
    // After projectionWaitMs: the committed task as of its row (COMPLETED), then the stream ends.
    expect(items.map(({ item }) => describeItem(item))).toEqual(['task:COMPLETED#3']);
    expect(items[0]!.at - began).toBeGreaterThanOrEqual(timing.projectionWaitMs);
  });

  it('re-attaches to a task the journal does not hold yet instead of answering TaskNotFound (decision 0032)', async () => {
    const s = setup();
    const taskId = (await s.create('tck-input-required')).taskId;
    await s.core.runNext();
    s.at(1_000, () => s.project());
    const stream = s.stream({ taskId, start: { kind: 'subscribe', lastEventId: '1' } });
    const first = await stream.next();
    expect(describeItem(first.value as StreamItem)).toBe('task:SUBMITTED#1');
    expect(describeItem((await stream.next()).value as StreamItem)).toBe('status:WORKING#2');
    expect(describeItem((await stream.next()).value as StreamItem)).toBe('status:INPUT_REQUIRED#3');
    await stream.return(undefined);
    // Without Last-Event-ID, or after a revision never committed, the journal decides as before.
    const other = (await s.create('tck-input-required')).taskId;
    await expect(s.stream({ taskId: other, start: { kind: 'subscribe' } }).next()).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
    await expect(
      s.stream({ taskId: other, start: { kind: 'subscribe', lastEventId: '9' } }).next(),
    ).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it('answers TaskNotFound at once to a re-attach after retention passed, the journal gone or not (I-PURGE)', async () => {
    const s = setup();
    const taskId = (await s.create('tck-input-required')).taskId;
    await s.core.runNext();
    const expiredAt = Math.floor(s.nowMs() / 1000) - 1;
    const row = s.core.tasks.tasks.get(taskId);
    if (row === undefined) throw new Error('no task row');
    s.core.tasks.tasks.set(taskId, { ...row, expiresAt: expiredAt });
    // Not projected: the journal does not hold the task; the committed row is past retention.
    const began = s.nowMs();
    await expect(
      s.stream({ taskId, start: { kind: 'subscribe', lastEventId: '1' } }).next(),
    ).rejects.toBeInstanceOf(TaskNotFoundError);
    expect(s.nowMs() - began).toBeLessThan(timing.projectionWaitMs);
  });

  it('reads Last-Event-ID as a revision, and ignores anything else', () => {
    expect(parseLastEventId('7')).toBe(7);
    expect(parseLastEventId(' 12 ')).toBe(12);
    for (const junk of [undefined, '', '0', '-1', '1.5', 'abc', '1e3', '9'.repeat(20)]) {
      expect(parseLastEventId(junk)).toBeUndefined();
    }
  });

  it('sends a heartbeat whenever nothing was sent for heartbeatMs, and closes at maxDurationMs', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    const startedAt = s.nowMs();
    const items = await collect(s.stream({ taskId, start: { kind: 'subscribe' } }), s.nowMs);
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:INPUT_REQUIRED#3',
      'heartbeat',
      'heartbeat',
      'heartbeat',
    ]);
    expect(items[1]?.item).toEqual(heartbeat);
    const sentAt = [startedAt, ...items.map(({ at }) => at), s.nowMs()];
    for (let i = 1; i < sentAt.length; i++) {
      expect((sentAt[i] as number) - (sentAt[i - 1] as number)).toBeLessThanOrEqual(timing.heartbeatMs);
    }
    expect(s.nowMs() - startedAt).toBe(timing.maxDurationMs);
  });

  it('polls fast after a change and backs off to maxPollMs when idle; an event makes it fast again', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    s.at(5_000, async () => {
      await s.create('tck-complete-task', { taskId });
      await s.project();
    });
    const iterator = s.stream({ taskId, start: { kind: 'subscribe' } });
    expect(describeItem((await iterator.next()).value as StreamItem)).toBe('task:INPUT_REQUIRED#3');
    expect(describeItem((await iterator.next()).value as StreamItem)).toBe('status:WORKING#4');
    // 3 s after the snapshot at most 100 ms apart, then doubling to 1,000 ms.
    expect(s.sleeps.slice(0, 5)).toEqual([20, 40, 80, 100, 100]);
    const activeCount = s.sleeps.findIndex((ms) => ms > 100);
    expect(s.sleeps.slice(0, activeCount).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(3_000);
    expect(s.sleeps.slice(activeCount, activeCount + 4)).toEqual([200, 400, 800, 1000]);
    const before = s.sleeps.length;
    await s.core.runNext();
    await s.project();
    expect(describeItem((await iterator.next()).value as StreamItem)).toBe('status:COMPLETED#5');
    expect(s.sleeps[before]).toBe(20);
    await iterator.return(undefined);
  });

  it('by default waits a fifth of the time since the last change (10–100 ms): a revision is picked up at most a fifth of its wait late (decision 0046)', async () => {
    for (const gapMs of [36, 300, 2_000]) {
      const s = setup({ ...timing, ...defaultStreamTiming, maxDurationMs: timing.maxDurationMs });
      const taskId = await inputRequiredTask(s);
      const iterator = s.stream({ taskId, start: { kind: 'subscribe' } });
      await iterator.next(); // the snapshot
      const changedAt = s.nowMs();
      const before = s.sleeps.length;
      // The follow-up's revision reaches the journal `gapMs` after the snapshot.
      await s.create('tck-complete-task', { taskId });
      s.at(gapMs, () => s.project());
      expect(describeItem((await iterator.next()).value as StreamItem)).toMatch(
        /^status:(SUBMITTED|WORKING)#4$/,
      );
      let elapsed = 0;
      for (const ms of s.sleeps.slice(before)) {
        expect(ms).toBe(Math.min(100, Math.max(10, Math.round(0.2 * elapsed))));
        elapsed += ms;
      }
      const late = s.nowMs() - changedAt - gapMs;
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThanOrEqual(Math.max(10, Math.min(100, 0.2 * gapMs)));
      await iterator.return(undefined);
    }
  });

  it('costs about one journal read per second per idle stream (bounded polling)', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    s.listEvents.mockClear();
    await collect(s.stream({ taskId, start: { kind: 'subscribe' } }), s.nowMs);
    // One idle minute: ~30 reads in the first 3 s (≤ 100 ms apart), then one per 1,000 ms.
    const reads = s.listEvents.mock.calls.length;
    expect(reads).toBeGreaterThanOrEqual(80);
    expect(reads).toBeLessThanOrEqual(100);
  });

  it('stops polling as soon as the consumer closes the stream (client gone)', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    const iterator = s.stream({ taskId, start: { kind: 'subscribe' } });
    await iterator.next();
    s.listEvents.mockClear();
    expect(await iterator.return(undefined)).toEqual({ done: true, value: undefined });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(s.listEvents).not.toHaveBeenCalled();
  });

  it('ends mid-wait when its connection closes (signal), reading nothing more, and gives its slot back (docs/protocol.md §5)', async () => {
    const s = setup();
    const taskId = await inputRequiredTask(s);
    const order: string[] = [];
    const streamSlots: StreamSlots = {
      acquire: async (_owner, streamId) => {
        order.push('slot taken');
        return { index: 0, streamId };
      },
      release: async () => void order.push('slot released'),
    };
    // Time never passes: only the signal ends a wait.
    const waits: number[] = [];
    const sleep = (ms: number, signal?: AbortSignal) => {
      waits.push(ms);
      return new Promise<void>((resolve) =>
        signal?.addEventListener('abort', () => resolve(), { once: true }),
      );
    };
    const closed = new AbortController();
    const stream = await subscribeToTask({ ...s.deps, sleep, streamSlots }, alice, taskId, {
      signal: closed.signal,
    });
    expect(describeItem((await stream.next()).value as StreamItem)).toBe('task:INPUT_REQUIRED#3');
    const next = stream.next();
    await vi.waitFor(() => expect(waits).toHaveLength(1));
    s.listEvents.mockClear();
    order.push('connection closed');
    closed.abort();
    expect(await next).toEqual({ done: true, value: undefined });
    expect(order).toEqual(['slot taken', 'connection closed', 'slot released']);
    expect(s.listEvents).not.toHaveBeenCalled();
  });

  it('holds later revisions back while an earlier one is missing, so the order is the revision order', async () => {
    const s = setup();
    const created = await s.create('tck-artifact-text');
    await s.project();
    await s.core.runNext();
    // The completion (rev 3) is projected before the claim (rev 2), which lands a second later.
    const [claim, completion] = s.unprojected.splice(0, 2) as [Image, Image];
    await projectRecord(s.core.journal, ...completion);
    s.at(1_000, () => projectRecord(s.core.journal, ...claim));
    const items = await collect(
      s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
      }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'artifact:Generated text content',
      'status:COMPLETED#3',
    ]);
  });

  it('moves past a revision that never reaches the journal after gapWaitMs, keeping the order', async () => {
    const s = setup();
    const created = await s.create('tck-artifact-text');
    await s.project();
    await s.core.runNext();
    const [, completion] = s.unprojected.splice(0, 2) as [Image, Image];
    await projectRecord(s.core.journal, ...completion);
    const startedAt = s.nowMs();
    const items = await collect(
      s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
      }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'artifact:Generated text content',
      'status:COMPLETED#3',
    ]);
    expect(s.nowMs() - startedAt).toBeGreaterThanOrEqual(timing.gapWaitMs);
  });

  // The in-memory journal cannot throttle, and DynamoDB Local never does: the failed reads are a
  // mocked rejection standing for a throttle the SDK's own retries did not absorb.
  it('rides out failed journal reads fewer than maxReadFailures in a row, missing no revision', async () => {
    const s = setup();
    const created = await s.create('tck-artifact-text');
    await s.project();
    s.at(50, async () => {
      await s.core.runNext();
      await s.project();
    });
    const throttled = Object.assign(new Error('Rate of requests exceeds the allowed throughput'), {
      name: 'ThrottlingException',
    });
    s.listEvents.mockRejectedValueOnce(throttled).mockRejectedValueOnce(throttled);
    const items = await collect(
      s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
      }),
      s.nowMs,
    );
    expect(items.map(({ item }) => describeItem(item))).toEqual([
      'task:SUBMITTED#1',
      'status:WORKING#2',
      'artifact:Generated text content',
      'status:COMPLETED#3',
    ]);
  });

  it('ends with the read error after maxReadFailures failed reads in a row', async () => {
    const s = setup();
    const created = await s.create('tck-artifact-text');
    await s.project();
    const throttled = Object.assign(new Error('Rate of requests exceeds the allowed throughput'), {
      name: 'ThrottlingException',
    });
    for (let i = 0; i < timing.maxReadFailures; i++) s.listEvents.mockRejectedValueOnce(throttled);
    const seen: string[] = [];
    await expect(async () => {
      for await (const item of s.stream({
        taskId: created.taskId,
        start: { kind: 'created', revision: created.revision },
        closeAt: 'terminal-or-interrupted',
      }))
        seen.push(describeItem(item));
    }).rejects.toBe(throttled);
    expect(seen).toEqual(['task:SUBMITTED#1']);
    expect(s.listEvents).toHaveBeenCalledTimes(timing.maxReadFailures);
  });
});

describe('timerSleep', () => {
  it('ends at once when its signal aborts (or has), and leaves no listener on the signal behind', async () => {
    const closed = new AbortController();
    await timerSleep(1, closed.signal);
    expect(getEventListeners(closed.signal, 'abort')).toHaveLength(0);
    const hour = timerSleep(3_600_000, closed.signal);
    expect(getEventListeners(closed.signal, 'abort')).toHaveLength(1);
    closed.abort();
    await expect(hour).resolves.toBeUndefined();
    expect(getEventListeners(closed.signal, 'abort')).toHaveLength(0);
    await expect(timerSleep(3_600_000, closed.signal)).resolves.toBeUndefined();
  });
});
