import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { type RpcAnswer, rpc, stateOf } from '../conformance/sse.ts';
import { executorThatNeverRuns } from '../support/idle-executor.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A stream whose client closed the connection gives its caller's stream slot back at once
 * (docs/protocol.md §5, `limits.streamsPerCaller`), not at its next heartbeat: with one slot per
 * caller and heartbeats 30 s apart, the caller opens its next stream within seconds of closing
 * one. The streams watch a task that never moves on (the executor is a stand-in that never takes
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

type Sse = Extract<RpcAnswer, { kind: 'sse' }>;

/** The stream's first event, read from the open connection. */
const firstEvent = async (stream: Sse) => {
  const first = await stream.frames.next();
  if (first.done === true) throw new Error('The stream ended before its first event');
  return first.value;
};

/** The caller is at its one slot: one more stream is refused with -32004 STREAMS_PER_CALLER_EXCEEDED. */
const expectRefused = (answer: RpcAnswer): void => {
  expect(answer.kind).toBe('json');
  if (answer.kind !== 'json') return;
  expect(answer.body.error).toMatchObject({
    code: -32004,
    data: [{ reason: 'STREAMS_PER_CALLER_EXCEEDED' }],
  });
};

/**
 * Opens `open`'s stream once the caller's slot is free (a stream of the test before may still be
 * giving its slot back); each refusal on the way is -32004.
 */
const openOnceReleased = async (open: () => Promise<RpcAnswer>): Promise<Sse> => {
  let opened: Sse | undefined;
  await waitFor(
    async () => {
      const answer = await open();
      if (answer.kind === 'sse') opened = answer;
      else expectRefused(answer);
      return opened !== undefined;
    },
    { timeoutMs: releasedWithinMs, intervalMs: 100, what: "the closed stream's slot released" },
  );
  return opened as Sse;
};

/** How each stream method opens a stream that stays open: on a task that stays SUBMITTED. */
const openers: ReadonlyArray<readonly [string, () => Promise<() => Promise<RpcAnswer>>]> = [
  [
    'SubscribeToTask',
    async () => {
      const taskId = await submittedTask();
      return () => rpc(url, 'SubscribeToTask', { id: taskId });
    },
  ],
  ['SendStreamingMessage', async () => () => rpc(url, 'SendStreamingMessage', { message: message() })],
];

describe('a stream its client closed releases its slot at once', () => {
  it.each(openers)(
    '%s: the same caller opens its next stream before any heartbeat',
    async (_method, opener) => {
      const open = await opener();
      const first = await openOnceReleased(open);
      expect(stateOf(await firstEvent(first))).toBe('TASK_STATE_SUBMITTED');
      expectRefused(await open());

      first.close();
      const second = await openOnceReleased(open);
      expect(stateOf(await firstEvent(second))).toBe('TASK_STATE_SUBMITTED');
      second.close();
    },
  );
});
