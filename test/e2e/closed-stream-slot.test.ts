import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { type RpcAnswer, readFrames, rpc, stateOf } from '../conformance/sse.ts';
import { executorThatNeverRuns } from '../support/idle-executor.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A stream whose client closed the connection gives its caller's stream slot back at once
 * (docs/protocol.md §5, `limits.streamsPerCaller`), not at its next heartbeat: with one slot per
 * caller and heartbeats 30 s apart, the caller opens its next stream within seconds of closing
 * one, over JSON-RPC and HTTP+JSON. The streams watch a task that never moves on (the executor is a stand-in that never takes
 * its run), so nothing but the closed connection can end them.
 */

const config = parseConfig({
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: { default: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'] } },
  limits: { streamsPerCaller: 1 },
  // The longest heartbeat there is: a stream that kept its slot until it next woke would keep it 30 s.
  streaming: { heartbeatSeconds: 30, maxStreamSeconds: 600 },
});

/** Far below the 30 s to the next heartbeat: a deadline that bounds a hang, not what is asserted. */
const releasedWithinMs = 10_000;

let stack: LocalStack;
let url: string;

beforeAll(async () => {
  stack = await startLocalStack({
    config,
    endpoints: providedEndpoints(),
    prefix: 'e2e-closed-stream',
    log: () => {},
    // Every run queued for the executor, which never starts it: the task stays SUBMITTED.
    blockingRunsInRpc: false,
    handlers: { executor: executorThatNeverRuns },
  });
  url = `${stack.baseUrl}/agents/default`;
});
afterAll(async () => {
  await stack?.stop();
});

const message = () => ({ messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hold on' }] });

/** A task that stays SUBMITTED for the whole test. */
const submittedTask = async (): Promise<string> => {
  const answer = await rpc(url, 'SendMessage', {
    message: message(),
    configuration: { returnImmediately: true },
  });
  if (answer.kind !== 'json' || answer.body.result === undefined) throw new Error('SendMessage failed');
  return (answer.body.result as { task: { id: string } }).task.id;
};

/** One try to open a stream: open, with its first event's state to read, or refused with a reason. */
type Attempt =
  | { readonly kind: 'open'; readonly firstState: () => Promise<string | undefined>; close(): void }
  | { readonly kind: 'refused'; readonly reason: string | undefined };

/** JSON-RPC: the stream, or the -32004 refusal and its reason. */
const overJsonRpc = async (answer: Promise<RpcAnswer>): Promise<Attempt> => {
  const opened = await answer;
  if (opened.kind === 'sse') {
    return {
      kind: 'open',
      firstState: async () => {
        const first = await opened.frames.next();
        return first.done === true ? undefined : stateOf(first.value);
      },
      close: opened.close,
    };
  }
  expect(opened.body.error?.code).toBe(-32004);
  const data = opened.body.error?.data as { reason?: string }[] | undefined;
  return { kind: 'refused', reason: data?.find((detail) => detail.reason !== undefined)?.reason };
};

/** HTTP+JSON `GET /tasks/{id}:subscribe`: the stream, or the 400 refusal and its ErrorInfo reason. */
const overHttpJson = async (taskId: string): Promise<Attempt> => {
  const abort = new AbortController();
  const response = await fetch(`${url}/tasks/${taskId}:subscribe`, {
    headers: { 'A2A-Version': '1.0' },
    signal: abort.signal,
  });
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const frames = readFrames(response, abort);
    return {
      kind: 'open',
      firstState: async () => {
        const first = await frames.next();
        const event =
          first.done === true ? undefined : (first.value.data as { task?: { status?: { state?: string } } });
        return event?.task?.status?.state;
      },
      close: () => abort.abort(),
    };
  }
  expect(response.status).toBe(400);
  const body = (await response.json()) as { error: { details: { reason?: string }[] } };
  return {
    kind: 'refused',
    reason: body.error.details.find((detail) => detail.reason !== undefined)?.reason,
  };
};

/** The caller is at its one slot: one more stream is refused, naming the limit. */
const expectRefused = (attempt: Attempt): void => {
  expect(attempt).toMatchObject({ kind: 'refused', reason: 'STREAMS_PER_CALLER_EXCEEDED' });
};

/**
 * Opens `open`'s stream once the caller's slot is free (a stream of the test before may still be
 * giving its slot back); each refusal on the way names the limit.
 */
const openOnceReleased = async (
  open: () => Promise<Attempt>,
): Promise<Extract<Attempt, { kind: 'open' }>> => {
  let opened: Extract<Attempt, { kind: 'open' }> | undefined;
  await waitFor(
    async () => {
      const attempt = await open();
      if (attempt.kind === 'open') opened = attempt;
      else expectRefused(attempt);
      return opened !== undefined;
    },
    { timeoutMs: releasedWithinMs, intervalMs: 100, what: "the closed stream's slot released" },
  );
  return opened as Extract<Attempt, { kind: 'open' }>;
};

/** How each stream method opens a stream that stays open: on a task that stays SUBMITTED. */
const openers: ReadonlyArray<readonly [string, () => Promise<() => Promise<Attempt>>]> = [
  [
    'SubscribeToTask',
    async () => {
      const taskId = await submittedTask();
      return () => overJsonRpc(rpc(url, 'SubscribeToTask', { id: taskId }));
    },
  ],
  [
    'SendStreamingMessage',
    async () => () => overJsonRpc(rpc(url, 'SendStreamingMessage', { message: message() })),
  ],
  [
    'HTTP+JSON GET /tasks/{id}:subscribe',
    async () => {
      const taskId = await submittedTask();
      return () => overHttpJson(taskId);
    },
  ],
];

describe('a stream its client closed releases its slot at once', () => {
  it.each(openers)(
    '%s: the same caller opens its next stream before any heartbeat',
    async (_method, opener) => {
      const open = await opener();
      const first = await openOnceReleased(open);
      expect(await first.firstState()).toBe('TASK_STATE_SUBMITTED');
      expectRefused(await open());

      first.close();
      const second = await openOnceReleased(open);
      expect(await second.firstState()).toBe('TASK_STATE_SUBMITTED');
      second.close();
    },
  );
});
