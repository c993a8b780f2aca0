import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { unstartedRunReason } from '../../shared/app/runs/reap-runs.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { rpc, type SseFrame, stateOf } from '../conformance/sse.ts';
import { readTaskRows } from '../support/fault-stack.ts';
import { executorThatNeverRuns } from '../support/idle-executor.ts';
import { providedEndpoints } from '../support/local-guard.ts';

/**
 * A task whose run never starts is settled FAILED (RUN_NOT_STARTED) by the reaper at its start
 * deadline (decision 0014), long after the streams watching it last saw anything. The soak's
 * driver relies on this (decision 0032): every stream attached to the task — the creating
 * SendStreamingMessage, a SubscribeToTask, a re-attach with Last-Event-ID opened before the reap,
 * and one opened after it — ends with the reaper's FAILED revision and then closes. The executor
 * is a stand-in that never takes its message, as a backlog the deadline outlives would.
 */

const prefix = 'e2e-reaped-stream';
const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: {
    default: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'], privacyLevel: 'full' },
  },
  // Heartbeats every second: a stream idle for several of them still delivers the next revision.
  streaming: { heartbeatSeconds: 1, maxStreamSeconds: 600 },
});

let stack: LocalStack;
let url: string;

beforeAll(async () => {
  stack = await startLocalStack({
    config,
    endpoints: providedEndpoints(),
    prefix,
    log: () => {},
    // The run is queued again at each start deadline, at most 3 times, and then reaped: the
    // streams stay idle for 4 deadlines (12 s, a dozen heartbeats).
    runLeaseMs: 1_000,
    runStartDeadlineMs: 3_000,
    reaperIntervalMs: 250,
    // Every run queued for the executor: the rpc would otherwise run a streaming send's run itself.
    blockingRunsInRpc: false,
    // Never starts a run: the run stays QUEUED until the reaper settles it.
    handlers: { executor: executorThatNeverRuns },
  });
  url = `${stack.baseUrl}/agents/default`;
});
afterAll(async () => {
  await stack?.stop();
});

const open = async (method: string, params: unknown, headers: Record<string, string> = {}) => {
  const answer = await rpc(url, method, params, headers);
  if (answer.kind !== 'sse') throw new Error(`${method} did not stream: ${JSON.stringify(answer.body)}`);
  return answer;
};

interface Read {
  /** Event frames so far (comments are only counted). */
  readonly events: SseFrame[];
  comments: number;
  /** True when the test had to cut the stream: the server never closed it. */
  cut: boolean;
  readonly done: Promise<void>;
}

/** Reads a stream until the server closes it (bounded: a stream that never ends is cut and fails). */
const readAll = (answer: Awaited<ReturnType<typeof open>>, timeoutMs = 60_000): Read => {
  const read = { events: [] as SseFrame[], comments: 0, cut: false } as Omit<Read, 'done'>;
  const timer = setTimeout(() => {
    read.cut = true;
    answer.close();
  }, timeoutMs);
  const done = (async () => {
    try {
      for await (const frame of answer.frames) {
        if (frame.data === undefined) read.comments++;
        else read.events.push(frame);
      }
    } finally {
      clearTimeout(timer);
    }
  })();
  return Object.assign(read, { done });
};

const summary = (events: readonly SseFrame[]) => events.map((frame) => `${frame.id}:${stateOf(frame)}`);

describe('a task reaped RUN_NOT_STARTED, watched by streams that were idle for a long while', () => {
  it('every attached and re-attached stream gets the FAILED revision and closes', async () => {
    const fromCreate = readAll(
      await open('SendStreamingMessage', {
        message: {
          messageId: `tck-complete-task-${randomUUID()}`,
          role: 'ROLE_USER',
          parts: [{ text: 'x' }],
        },
      }),
    );
    for (let waited = 0; fromCreate.events.length === 0 && waited < 30_000; waited += 50) {
      await new Promise((wake) => setTimeout(wake, 50));
    }
    const first = fromCreate.events[0];
    const taskId = (first?.data?.result as { task?: { id: string } } | undefined)?.task?.id;
    if (taskId === undefined) throw new Error(`no task: ${JSON.stringify(first)}`);
    expect(first!.id).toBe('1');

    // Attached before the reap: a plain subscription and a re-attach after revision 1.
    const fromSubscribe = readAll(await open('SubscribeToTask', { id: taskId }));
    const fromReattach = readAll(await open('SubscribeToTask', { id: taskId }, { 'Last-Event-ID': '1' }));
    await Promise.all([fromCreate.done, fromSubscribe.done, fromReattach.done]);

    const row = (await readTaskRows(stack.endpoints, prefix)).tasks.get(taskId);
    expect(row).toMatchObject({ state: 'TASK_STATE_FAILED', revision: 2, reason: unstartedRunReason });
    const expected = ['1:TASK_STATE_SUBMITTED', '2:TASK_STATE_FAILED'];
    for (const read of [fromCreate, fromSubscribe, fromReattach]) {
      expect(summary(read.events)).toEqual(expected);
      expect(read.cut).toBe(false);
    }
    // The streams were idle for seconds before the reap: heartbeats kept them open meanwhile.
    expect(fromSubscribe.comments).toBeGreaterThan(0);

    // Re-attached after the reap at the last revision it saw: the missed FAILED revision, then the end.
    const late = readAll(await open('SubscribeToTask', { id: taskId }, { 'Last-Event-ID': '1' }));
    await late.done;
    expect(summary(late.events)).toEqual(expected);
    expect(late.cut).toBe(false);
    // Without Last-Event-ID, a terminal task has nothing to subscribe to (docs/protocol.md §5).
    const refused = await rpc(url, 'SubscribeToTask', { id: taskId });
    expect(refused.kind === 'json' ? refused.body.error?.code : 'sse').toBe(-32004);
  });
});
