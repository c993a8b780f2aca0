import { describe, expect, it } from 'vitest';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import { PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { type ExecuteRunDeps, executeClaimedRun, executeRun } from '../../shared/app/runs/execute-run.ts';
import { getTask } from '../../shared/app/tasks/read-task.ts';
import { type RunsHere, type SendMessageDeps, sendMessage } from '../../shared/app/tasks/send-message.ts';
import type { AgentProvider } from '../../shared/domain/ports.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
import type { RunRecord } from '../../shared/domain/task.ts';
import { webhookPolicyFor } from '../../shared/domain/webhook-address.ts';
import { alice, createCore, testConfig, userMessage } from '../support/core-fixture.ts';

/**
 * A blocking send's run, run by the rpc that created it (decision 0091): claimed by its create
 * (decision 0096: no claim write, no read), answered from the revision it committed and projected
 * (no journal poll), queued for the executor when it fails here, and kept running past the cap.
 * The in-memory core: its journal counts reads, its queue keeps what was sent.
 */

const config = (blockingCapSeconds?: number) =>
  testConfig({
    providers: { local: { type: 'scripted', behavior: 'echo' } },
    profiles: {
      default: {
        name: 'Echo',
        description: 'x',
        providers: ['local'],
        ...(blockingCapSeconds !== undefined && { blockingCapSeconds }),
      },
    },
  });

/** A provider that answers only once `release` is called. */
const heldProvider = () => {
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const echo = new ScriptedProvider('local', 'echo');
  const provider: AgentProvider = {
    run: async (request) => {
      await released;
      return echo.run(request);
    },
  };
  return { provider, release: () => release() };
};

const setup = (
  options: {
    capSeconds?: number;
    providers?: Record<string, AgentProvider>;
    /** A DynamoDB fault in the run's first step (opening the history), before its provider call. */
    failRun?: boolean;
    /** Runs before the run here, as a concurrent writer would (another delivery, a cancel). */
    beforeRun?: (image: { run: RunRecord; task: StoredTask }, deps: ExecuteRunDeps) => Promise<unknown>;
  } = {},
) => {
  const core = createCore({ config: config(options.capSeconds), providers: options.providers });
  const tasks = core.tasks;
  const writeThrough = new WriteThrough(core.tasks, core.journal);
  const reads = { views: 0, rows: 0 };
  const journal = Object.create(core.journal) as typeof core.journal;
  journal.getView = (taskId) => {
    reads.views++;
    return core.journal.getView(taskId);
  };
  const counted = Object.create(tasks) as typeof tasks;
  counted.getRunWithTask = (taskId, runId) => {
    reads.rows++;
    return tasks.getRunWithTask(taskId, runId);
  };
  counted.getTask = (taskId) => {
    reads.rows++;
    return tasks.getTask(taskId);
  };
  const kept: Promise<unknown>[] = [];
  const codec = Object.create(core.deps.codec) as typeof core.deps.codec;
  let faults = options.failRun ? 1 : 0;
  codec.openHistory = (taskId, sealed) => {
    if (faults-- > 0) return Promise.reject(new Error('DynamoDB fault'));
    return core.deps.codec.openHistory(taskId, sealed);
  };
  const runDeps = { ...core.deps, tasks: counted, writeThrough, codec };
  const runsHere: RunsHere = {
    canRun: () => true,
    run: async (image) => {
      await options.beforeRun?.(image, runDeps);
      return executeClaimedRun(runDeps, image);
    },
    keepAlive: (work) => void kept.push(work),
  };
  const deps: SendMessageDeps = { ...core.deps, tasks: counted, writeThrough, journal, runsHere };
  const send = (text: string, configuration?: { returnImmediately?: boolean }) =>
    sendMessage(deps, {
      caller: alice,
      profileId: 'default',
      message: userMessage(text),
      ...(configuration && { configuration }),
    });
  return { core, deps, reads, kept, send };
};

describe('a blocking send runs its run in the rpc (decision 0091)', () => {
  it('answers the completed task with no queue message, no read of the row and no journal poll', async () => {
    const { core, reads, send } = setup();
    const task = await send('hello');
    // Claimed by its create (decision 0096): revision 1 WORKING, then the settle.
    expect((await core.journal.listEvents(task.id, 0)).map((event) => event.state)).toEqual([
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.[0]?.parts).toEqual([{ text: 'hello' }]);
    expect(task.history?.map((message) => message.role)).toEqual(['ROLE_USER', 'ROLE_AGENT']);
    expect(core.queued).toHaveLength(0);
    expect(reads).toEqual({ views: 0, rows: 0 });
    expect([...core.calls.values()]).toEqual([1]);
  });

  it('a send with an inline push config is queued: its revisions are not committed in a burst (decision 0093)', async () => {
    const { core, deps } = setup({ capSeconds: 0.05 });
    const task = await sendMessage(
      {
        ...deps,
        pushCodec: new PushConfigCodec(new FakeSealer()),
        webhookPolicy: webhookPolicyFor(true, true),
      },
      {
        caller: alice,
        profileId: 'default',
        message: userMessage('hello'),
        configuration: { taskPushNotificationConfig: { id: 'inline', url: 'https://hooks.example/in' } },
      },
    );
    expect(core.queued.map((message) => message.taskId)).toEqual([task.id]);
    expect(await core.runNext()).toBe('completed');
    expect([...core.calls.values()]).toEqual([1]);
  });

  it('answers a revision the journal holds: GetTask at once shows it (I-RYW)', async () => {
    const { core, deps, send } = setup();
    const task = await send('hello');
    const read = await getTask(deps, alice, task.id);
    expect(read.status).toEqual(task.status);
    expect(read.artifacts).toEqual(task.artifacts);
    expect((await core.journal.getView(task.id))?.state).toBe('TASK_STATE_COMPLETED');
  });

  it('a run that fails here is given back and queued for the executor, as a failed message is delivered again', async () => {
    const { core, send } = setup({ capSeconds: 0.05, failRun: true });
    const task = await send('hello');
    expect(core.queued.map((message) => message.taskId)).toEqual([task.id]);
    // The wait answers from the journal at the cap: the task keeps its WORKING revision (decision 0069).
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    expect(
      (await core.tasks.getRun(task.id, (await core.tasks.getTask(task.id))!.currentRunId))?.status,
    ).toBe('QUEUED');
    expect(await core.runNext()).toBe('completed');
    expect([...core.calls.values()]).toEqual([1]);
  });

  it('a run still working at the cap is answered as it is and kept running to its end', async () => {
    const held = heldProvider();
    const { core, kept, send } = setup({ capSeconds: 0.05, providers: { local: held.provider } });
    const task = await send('hello');
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    expect(kept).toHaveLength(1);
    expect(core.queued).toHaveLength(0);
    held.release();
    await Promise.all(kept);
    expect((await core.journal.getView(task.id))?.state).toBe('TASK_STATE_COMPLETED');
    expect([...core.calls.values()]).toEqual([1]);
  });

  it("a run its create claimed is the rpc's alone: a stray delivery of it calls nothing (I-ONCE)", async () => {
    const results: string[] = [];
    const { core, send } = setup({
      // A queue message for the same run (none is sent; a reaper's would come after the lease) finds it RUNNING.
      beforeRun: async (image, deps) =>
        void results.push(await executeRun(deps, { taskId: image.task.taskId, runId: image.run.runId })),
    });
    const task = await send('hello');
    expect(results).toEqual(['duplicate']);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect([...core.calls.values()]).toEqual([1]);
  });

  it('returnImmediately queues the run: only a blocking send runs here', async () => {
    const { core, send } = setup();
    const task = await send('hello', { returnImmediately: true });
    expect(task.status.state).toBe('TASK_STATE_SUBMITTED');
    expect(core.queued.map((message) => message.taskId)).toEqual([task.id]);
    expect(core.calls.size).toBe(0);
  });
});
