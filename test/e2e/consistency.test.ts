import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { failpointCounts } from '../../shared/app/operations/failpoints.ts';
import {
  type Committed,
  driveTasks,
  faultProofConfig,
  finishChannels,
  judgeChannels,
  recordCommits,
  webhookCaughtUp,
  webhookSightings,
} from '../support/fault-drive.ts';
import { queueDepths } from '../support/fault-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * The consistency proof of issue #5 (docs/reliability.md): tasks — completed, with artifacts,
 * multi-turn through INPUT_REQUIRED, canceled, failed, rejected — while an SSE stream per task, a
 * GetTask poller and a webhook watch them, and the projector, the pusher and the deliverer fail
 * some records on purpose (failpoints) and retry them. Every sighting is judged against the
 * revisions the writers committed, recorded at the SDK (not read back from the journal).
 */

// `npm test` runs the full proof of issue #5: 200 tasks (32 s on a quiet 2-core machine; about
// 4 minutes when it is loaded). A2A_CONSISTENCY_TASKS changes the size; `npm run soak` judges
// 1,000 tasks the same way with every failpoint armed.
const tasks = Number(process.env.A2A_CONSISTENCY_TASKS ?? 200);
const concurrency = Number(process.env.A2A_CONSISTENCY_CLIENTS ?? 8);
// The write-through's failpoints (decision 0043) leave some revisions to the projector, cut some between event and view.
const failpoints =
  'projector.midBatch=0.1,pusher.midBatch=0.05,deliverer.post=0.1,writeThrough.afterCommit=0.1,writeThrough.afterEvent=0.1,seed=5';

// The failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

let stack: LocalStack;
let receiver: WebhookReceiver;
let recorder: ReturnType<typeof recordCommits>;

beforeAll(async () => {
  recorder = recordCommits();
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({
    config: faultProofConfig,
    endpoints: providedEndpoints(),
    prefix: 'e2e-consistency',
    failpoints,
    delivererConcurrency: 16,
    log: () => {},
  });
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  recorder?.stop();
});

describe('polling, SSE and webhooks under projector and delivery faults', () => {
  it(`show ${tasks} tasks' committed states in revision order, and the webhook gets every event`, async () => {
    const began = performance.now();
    const driven = await driveTasks({
      baseUrl: stack.baseUrl,
      webhookUrl: receiver.url,
      tasks,
      concurrency,
    });
    const drivenMs = performance.now() - began;
    const commits: ReadonlyMap<string, readonly Committed[]> = recorder.commits;
    await receiver.waitFor((posts) => webhookCaughtUp(commits, posts), 120_000);
    await finishChannels({ baseUrl: stack.baseUrl, concurrency }, driven);
    const verdict = judgeChannels({
      commits,
      traces: driven.traces,
      polls: driven.polls,
      webhook: webhookSightings(receiver.posts),
    });
    const faults = failpointCounts();
    const dlqs = await queueDepths(stack, ['ProjectorDlq', 'PusherDlq', 'DeliveryDlq']);
    const finals = new Map<string, number>();
    for (const trace of driven.traces) {
      const final = trace.streams.flat().at(-1)?.state ?? 'none';
      finals.set(final, (finals.get(final) ?? 0) + 1);
    }
    console.log(
      JSON.stringify(
        {
          tasks: verdict.tasks,
          revisions: verdict.revisions,
          finalStates: Object.fromEntries(finals),
          sightings: verdict.sightings,
          webhookPosts: receiver.posts.length,
          webhookDuplicateStatusUpdates: verdict.webhookDuplicates,
          faults,
          projectorRetries: stack.pollers.projector.stats().retries,
          pusherRetries: stack.pollers.pusher?.stats().retries,
          delivererFailed: stack.pollers.deliverer?.stats().failed,
          dlqs,
          clientErrors: driven.traces.reduce((sum, trace) => sum + trace.errors.length, 0),
          pollErrors: driven.pollErrors,
          drivenMs: Math.round(drivenMs),
          totalMs: Math.round(performance.now() - began),
        },
        null,
        1,
      ),
    );

    const stuck = driven.traces.filter(
      (trace) =>
        !['TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED', 'TASK_STATE_FAILED', 'TASK_STATE_REJECTED'].includes(
          trace.streams.flat().at(-1)?.state ?? '',
        ),
    );
    for (const trace of stuck.slice(0, 5)) console.log('not terminal on SSE:', JSON.stringify(trace));
    expect(verdict.violations.slice(0, 20)).toEqual([]);
    expect(verdict.tasks).toBe(tasks);
    // Every trace got its task, and every kind ended as scripted.
    expect(driven.traces.filter((trace) => trace.taskId === undefined)).toEqual([]);
    for (const trace of driven.traces) {
      const final = trace.streams.flat().at(-1)?.state;
      const expected = {
        complete: 'TASK_STATE_COMPLETED',
        artifact: 'TASK_STATE_COMPLETED',
        multiTurn: 'TASK_STATE_COMPLETED',
        canceled: 'TASK_STATE_CANCELED',
        failed: 'TASK_STATE_FAILED',
        rejected: 'TASK_STATE_REJECTED',
        // Not in this drive's mix (the soak's).
        toolCall: 'TASK_STATE_COMPLETED',
        delegate: 'TASK_STATE_COMPLETED',
        delegateParked: 'TASK_STATE_COMPLETED',
      }[trace.kind];
      expect(final, `${trace.kind} task ${trace.taskId}`).toBe(expected);
    }
    // The faults did happen, and were retried, not parked.
    expect(faults['projector.midBatch']?.faults).toBeGreaterThan(0);
    expect(faults['deliverer.post']?.faults).toBeGreaterThan(0);
    expect(faults['writeThrough.afterCommit']?.faults).toBeGreaterThan(0);
    expect(faults['writeThrough.afterEvent']?.faults).toBeGreaterThan(0);
    expect(verdict.webhookDuplicates).toBeGreaterThan(0);
    expect(dlqs).toEqual({ ProjectorDlq: 0, PusherDlq: 0, DeliveryDlq: 0 });
  }, 600_000);
});
