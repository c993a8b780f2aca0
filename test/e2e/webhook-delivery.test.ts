import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { rpcCalls } from '../support/rpc-calls.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import {
  type ReceivedPost,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.ts';

// Its failing receiver makes the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Webhook delivery end to end (decision 0009): local stack → journal stream → pusher → FIFO
 * delivery queue (the emulator with its FIFO correction) → deliverer → real node:http receivers.
 * One receiver fails its first POSTs (retries with backoff), one is slow; a fast one must not
 * wait for either, and every receiver sees each revision in order (duplicates allowed).
 */

const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: {
    default: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'], privacyLevel: 'full' },
  },
  webhooks: { retryBaseSeconds: 1 },
});

let stack: LocalStack;
let fast: WebhookReceiver;
let flaky: WebhookReceiver;
let slow: WebhookReceiver;
const failuresBeforeSuccess = 2;
let openSlowGate: () => void = () => {};
const slowGate = new Promise<void>((open) => {
  openSlowGate = open;
});

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix: 'e2e-hooks',
    log: () => {},
  });
  fast = await startWebhookReceiver();
  flaky = await startWebhookReceiver({
    respond: (_post, index) => (index < failuresBeforeSuccess ? 503 : 200),
  });
  // Answers nothing until the test opens its gate: "slow" is an order, not a duration, so a
  // loaded machine cannot make the fast webhook look late or the slow one look fast.
  slow = await startWebhookReceiver({ respond: () => slowGate.then(() => 200) });
});
afterAll(async () => {
  openSlowGate();
  await stack?.stop();
  await Promise.all([fast?.close(), flaky?.close(), slow?.close()]);
});

const { call, send } = rpcCalls(() => `${stack.baseUrl}/agents/default`);

type StatusBody = { statusUpdate?: { taskId: string; status: { state: string; timestamp: string } } };

/** The task's status updates a receiver accepted (2xx), consecutive duplicates folded. */
const acceptedStatuses = (posts: readonly ReceivedPost[], taskId: string, skip = 0): string[] => {
  const keys = posts
    .slice(skip)
    .map((post) => (post.body as StatusBody).statusUpdate)
    .filter((update) => update?.taskId === taskId)
    .map((update) => `${update?.status.state}@${update?.status.timestamp}`);
  return keys.filter((key, index) => key !== keys[index - 1]);
};

const completed = (posts: readonly ReceivedPost[]) =>
  posts.some((post) => (post.body as StatusBody).statusUpdate?.status.state === 'TASK_STATE_COMPLETED');

describe('webhook delivery through the local stack', () => {
  it('retries a failing webhook, keeps each webhook in revision order, and a slow one delays no other', async () => {
    const task = await send('tck-input-required');
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    for (const receiver of [fast, flaky, slow]) {
      const config = await call('CreateTaskPushNotificationConfig', {
        taskId: task.id,
        url: `${receiver.url}/hook`,
      });
      expect(config.id).toEqual(expect.any(String));
    }
    expect((await send('tck-complete-task', task.id)).status.state).toBe('TASK_STATE_COMPLETED');

    // The fast webhook gets both revisions while the slow one has not answered its first: one
    // webhook's wait delays no other (per-config FIFO groups).
    await fast.waitFor(completed, 60_000);
    const slowCompletedWhenFastDone = completed(slow.posts);
    openSlowGate();
    await flaky.waitFor(completed, 60_000);
    await slow.waitFor(completed, 90_000);

    // Each webhook: the revisions after its creation, in order — the follow-up's WORKING (never
    // SUBMITTED again, decision 0050), then COMPLETED.
    const expected = acceptedStatuses(fast.posts, task.id);
    expect(expected.map((key) => key.split('@')[0])).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    // The failing webhook's first POSTs were retried (the same revision again), then the rest in order.
    expect(flaky.posts.length).toBeGreaterThan(failuresBeforeSuccess);
    expect(acceptedStatuses(flaky.posts, task.id, failuresBeforeSuccess)).toEqual(expected);
    expect(acceptedStatuses(slow.posts, task.id)).toEqual(expected);
    // The slow webhook had not been sent COMPLETED while its earlier revision was unanswered
    // (its POSTs are in revision order), and the fast one had it already.
    expect(slowCompletedWhenFastDone).toBe(false);
  });
});
