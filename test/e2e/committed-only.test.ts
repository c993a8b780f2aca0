import { randomUUID } from 'node:crypto';
import type { Context, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { armFailpoints, disarmFailpoints } from '../../shared/app/operations/failpoints.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { drain, rpc, type SseFrame, stateOf } from '../conformance/sse.ts';
import { readTaskRows } from '../support/fault-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import {
  type ReceivedPost,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * I-COMMITTED (docs/invariants.md): polling, SSE and webhooks read only the journal, which the
 * writers' write-through and the projector write from committed state (decision 0043). The test
 * turns the write-through off (its failpoint, as a write-through that failed) and holds the
 * projector back (its
 * invocations wait at a gate, as a slow or failing projector would) while the executor commits a
 * task's completion to the state table, and checks that no channel shows it: GetTask still answers
 * the earlier revision, the open SSE subscription gets no COMPLETED event, the webhook no POST.
 * Opened again, every channel shows COMPLETED. A GetTask that read the state row, or an executor
 * that called back the subscriber or the webhook itself, fails it.
 */

const prefix = 'e2e-committed';
const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: {
    default: {
      name: 'TCK',
      description: 'TCK scenarios',
      providers: ['tck'],
      privacyLevel: 'full',
      blockingCapSeconds: 120,
    },
  },
  webhooks: { retryBaseSeconds: 1 },
});

/** The projector's gate: while closed, projector invocations wait (the batch stays unprojected). */
let gateOpen = true;
let openGate: () => void = () => {};
let gate: Promise<void> = Promise.resolve();
const closeGate = () => {
  gateOpen = false;
  gate = new Promise((resolve) => {
    openGate = () => {
      gateOpen = true;
      resolve();
    };
  });
};

let stack: LocalStack;
let webhook: WebhookReceiver;

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix,
    log: () => {},
    handlers: {
      // The real projector module (imported at the first call, after the stack set its environment).
      projector: async (event: DynamoDBStreamEvent, context: Context) => {
        if (!gateOpen) await gate;
        const { handler } = await import('../../functions/projector/handler.ts');
        return handler(event, context);
      },
    },
  });
  webhook = await startWebhookReceiver();
});
afterAll(async () => {
  disarmFailpoints();
  openGate();
  await stack?.stop();
  await webhook?.close();
});

const call = async (method: string, params: unknown): Promise<Record<string, unknown>> => {
  const answer = await rpc(`${stack.baseUrl}/agents/default`, method, params);
  if (answer.kind !== 'json' || answer.body.result === undefined) {
    throw new Error(`${method} failed: ${answer.kind === 'json' ? JSON.stringify(answer.body) : 'stream'}`);
  }
  return answer.body.result;
};

const message = (prefixOfId: string, taskId?: string) => ({
  message: {
    messageId: `${prefixOfId}-${randomUUID()}`,
    role: 'ROLE_USER',
    parts: [{ text: 'hi' }],
    ...(taskId ? { taskId } : {}),
  },
});

type Task = { id: string; status: { state: string } };

const posted = (posts: readonly ReceivedPost[], state: string): boolean =>
  posts.some(
    (post) =>
      (post.body as { statusUpdate?: { status: { state: string } } }).statusUpdate?.status.state === state,
  );

const committedRow = async (taskId: string) =>
  (await readTaskRows(stack.endpoints, prefix)).tasks.get(taskId);

const waitUntil = async (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('I-COMMITTED: what the projector has not projected, no channel shows', () => {
  it('holds GetTask, SSE and the webhook at the projected revision while the state row is COMPLETED', async () => {
    const task = (await call('SendMessage', message('tck-input-required'))).task as Task;
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    await call('CreateTaskPushNotificationConfig', { taskId: task.id, url: `${webhook.url}/hook` });
    const subscription = await rpc(`${stack.baseUrl}/agents/default`, 'SubscribeToTask', { id: task.id });
    if (subscription.kind !== 'sse') throw new Error('SubscribeToTask did not stream');
    const frames: SseFrame[] = [];
    const reading = drain(subscription.frames, (frame) => {
      frames.push(frame);
      return stateOf(frame) === 'TASK_STATE_COMPLETED';
    });
    await waitUntil('the subscription snapshot', () => frames.length > 0, 30_000);
    const before = (await call('GetTask', { id: task.id })) as Task & { id: string };
    expect(before.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const projectedRevision = (await committedRow(task.id))?.revision ?? 0;

    closeGate();
    // Every write-through fails: what is committed now reaches the journal only through the gate.
    armFailpoints('writeThrough.afterCommit=1');
    // The follow-up completes the task; this blocking call waits for its projection.
    const followUp = call('SendMessage', message('tck-complete-task', task.id));
    await waitUntil(
      'the state row is COMPLETED',
      async () => (await committedRow(task.id))?.state === 'TASK_STATE_COMPLETED',
    );
    const row = await committedRow(task.id);
    expect(row?.revision).toBeGreaterThan(projectedRevision);
    expect(row?.hasResult).toBe(true);

    // Committed, not projected: no channel shows it (checked for a while, not once).
    const heldUntil = Date.now() + 3_000;
    while (Date.now() < heldUntil) {
      const now = (await call('GetTask', { id: task.id })) as Task;
      expect(now.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(frames.map(stateOf)).not.toContain('TASK_STATE_COMPLETED');
      expect(frames.map(stateOf)).not.toContain('TASK_STATE_WORKING');
      expect(posted(webhook.posts, 'TASK_STATE_COMPLETED')).toBe(false);
      expect(posted(webhook.posts, 'TASK_STATE_WORKING')).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    disarmFailpoints();
    openGate();
    const answered = (await followUp).task as Task;
    expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
    await reading;
    expect(frames.map(stateOf).filter(Boolean).at(-1)).toBe('TASK_STATE_COMPLETED');
    await webhook.waitFor((posts) => posted(posts, 'TASK_STATE_COMPLETED'), 60_000);
    expect(((await call('GetTask', { id: task.id })) as Task).status.state).toBe('TASK_STATE_COMPLETED');
    subscription.close();
  });
});
