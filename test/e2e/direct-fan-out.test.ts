import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { failpointCounts } from '../../shared/app/operations/failpoints.ts';
import { faultProofConfig } from '../support/fault-drive.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { rpcCalls } from '../support/rpc-calls.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { waitFor } from '../support/wait-for.ts';
import {
  type ReceivedPost,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Every writer hands the revisions it projects to the delivery queue itself (decisions 0045,
 * 0061): the rpc (SUBMITTED), the executor (WORKING, COMPLETED) and the reaper (FAILED of an
 * abandoned run). Proven with the backstop out of the way: `pusher.midBatch=1` fails every batch
 * of the journal stream's pusher, so whatever reaches the webhook was queued by its writer.
 */

let stack: LocalStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    // The fault proofs' agents: the TCK scenarios on `default`, webhook retries after 1 s.
    config: faultProofConfig,
    endpoints: providedEndpoints(),
    prefix: 'e2e-direct-fan-out',
    // The second run's executor fails after its provider call, before its settle: the reaper
    // settles it at its lease (a crash before the call is re-queued instead, decision 0072).
    failpoints: 'pusher.midBatch=1,executor.beforeSettle=#2',
    runLeaseMs: 1_000,
    reaperIntervalMs: 250,
    log: () => {},
  });
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

const { call } = rpcCalls(() => `${stack.baseUrl}/agents/default`);

type StatusBody = { statusUpdate?: { taskId: string; status: { state: string } } };

const statesOf = (posts: readonly ReceivedPost[], taskId: string): string[] =>
  posts
    .map((post) => (post.body as StatusBody).statusUpdate)
    .filter((update) => update?.taskId === taskId)
    .map((update) => update?.status.state ?? '')
    .filter((state, index, states) => state !== states[index - 1]);

const create = async (scenario: string): Promise<string> => {
  const result = await call('SendMessage', {
    message: { messageId: `${scenario}-${randomUUID()}`, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
    configuration: { returnImmediately: true, taskPushNotificationConfig: { url: `${receiver.url}/hook` } },
  });
  return (result.task as { id: string }).id;
};

describe('webhooks without the journal stream: each writer queues its own revisions', () => {
  it('rpc, executor: SUBMITTED, WORKING, COMPLETED reach the webhook while the pusher fails every batch', async () => {
    const taskId = await create('tck-complete-task');
    await receiver.waitFor((posts) => statesOf(posts, taskId).includes('TASK_STATE_COMPLETED'), 30_000);
    expect(statesOf(receiver.posts, taskId)).toEqual([
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
    // The backstop was there and failed: its batching window gathers for a second (decision 0079).
    await waitFor(() => (failpointCounts()['pusher.midBatch']?.faults ?? 0) > 0, { what: 'a pusher batch' });
  });

  it('reaper: the FAILED of a run abandoned after its provider call reaches the webhook too', async () => {
    const taskId = await create('tck-complete-task');
    await receiver.waitFor((posts) => statesOf(posts, taskId).includes('TASK_STATE_FAILED'), 30_000);
    expect(failpointCounts()['executor.beforeSettle']?.faults).toBe(1);
    expect(statesOf(receiver.posts, taskId)).toEqual([
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_WORKING',
      'TASK_STATE_FAILED',
    ]);
  });
});
