import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbRunLeases } from '../../shared/adapters/dynamodb/dynamodb-run-leases.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { OpenAiProvider } from '../../shared/adapters/providers/openai-provider.ts';
import { type ExecuteRunDeps, executeRun } from '../../shared/app/runs/execute-run.ts';
import {
  abandonedRunReason,
  abandonedRunText,
  reapExpiredRuns,
  unstartedRunReason,
  unstartedRunText,
} from '../../shared/app/runs/reap-runs.ts';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { VersionConflictError } from '../../shared/domain/errors.ts';
import type { RunMessage } from '../../shared/domain/ports.ts';
import { alice, userMessage } from '../support/core-fixture.ts';
import { type FakeModelServer, openAiText, startFakeModelServer } from '../support/fake-model-servers.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';

/**
 * Leases and the reaper against DynamoDB Local (real conditional writes, the real sparse
 * byLease index) with the OpenAI adapter on a local wire-format server that holds its answer
 * until the test releases it — a run that is RUNNING for as long as the test needs.
 */
describe('run leases and the reaper against the emulators', () => {
  let env: TestResources;
  let tasks: DynamoDbTaskRepository;
  let leases: DynamoDbRunLeases;
  let codec: TaskContentCodec;
  let model: FakeModelServer;
  let release: () => void = () => {};
  const config = parseConfig({
    privacy: { level: 'metadata' },
    providers: { llm: { type: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'gpt-test' } },
    profiles: { default: { name: 'LLM', description: 'x', providers: ['llm'] } },
  });

  beforeAll(async () => {
    env = await createTestResources('leases');
    tasks = new DynamoDbTaskRepository(env.clients.doc, env.resources.tables.State.name);
    leases = new DynamoDbRunLeases(env.clients.doc, env.resources.tables.State.name);
    codec = new TaskContentCodec(
      new KmsSealer({ kms: env.clients.kms, keyId: env.resources.key.keyId, installation: 'test' }),
    );
    model = await startFakeModelServer(() => openAiText('unused'));
  });
  afterAll(async () => {
    release();
    await model?.stop();
    env?.destroy();
  });

  /** The next model answer waits until `release()`. */
  const holdNextAnswer = () => {
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    model.script = () => ({ ...openAiText('The answer.'), hold: held });
  };

  const queued: RunMessage[] = [];
  const baseDeps = (): ExecuteRunDeps & Parameters<typeof createTask>[0] => ({
    tasks,
    codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    providerFor: () =>
      new ToolLoopAgent(
        new OpenAiProvider({
          providerId: 'llm',
          baseUrl: `${model.url}/v1`,
          model: 'gpt-test',
          timeoutMs: 60_000,
        }),
      ),
  });

  const sendOne = async (text: string, traceparent?: string) => {
    const { taskId } = await createTask(
      { ...baseDeps(), callerTraceparent: () => traceparent },
      {
        caller: alice,
        profileId: 'default',
        message: userMessage(text),
      },
    );
    return { taskId, message: queued.shift()! };
  };

  const waitFor = async <T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> => {
    for (;;) {
      const value = await read();
      if (ok(value)) return value;
      await new Promise((wake) => setTimeout(wake, 20));
    }
  };

  it('a crashed executor (no renewals): the reaper settles run and task FAILED; the run never runs again (I-ONCE)', async () => {
    holdNextAnswer();
    const before = model.requests.length;
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const { taskId, message } = await sendOne('crash during this', traceparent);
    // The executor that "crashes": it claimed the run and never renews its lease.
    const crashed = executeRun({ ...baseDeps(), leaseMs: 60_000 }, message);
    await model.received(before + 1);
    const running = (await tasks.getRun(taskId, message.runId))!;
    expect(running).toMatchObject({ status: 'RUNNING' });
    expect(await leases.listExpired(running.leaseUntil! + 1, 100)).toContainEqual({
      taskId,
      runId: message.runId,
    });

    // Nothing is reaped before the lease ends.
    const early = await reapExpiredRuns(
      { ...baseDeps(), leases, clock: { now: () => new Date(running.leaseUntil! - 1) } },
      100,
    );
    expect(early.found).toBe(0);

    const reapedAt = new Date(running.leaseUntil! + 1_000);
    // Each expired run is handled in its task's trace: the creator's traceparent, from the row.
    const traces: Array<{ taskId: string; traceparent?: string }> = [];
    const report = await reapExpiredRuns(
      {
        ...baseDeps(),
        leases,
        clock: { now: () => reapedAt },
        inTaskTrace: (trace, work) => {
          traces.push(trace);
          return work();
        },
      },
      100,
    );
    expect(report.reaped).toBeGreaterThanOrEqual(1);
    expect(traces).toContainEqual({ taskId, traceparent });

    const run = (await tasks.getRun(taskId, message.runId))!;
    expect(run).toMatchObject({
      status: 'FAILED',
      version: running.version + 1,
      endedAt: reapedAt.toISOString(),
    });
    expect(run.leaseUntil).toBeUndefined();
    const task = (await tasks.getTask(taskId))!;
    expect(task).toMatchObject({ state: 'TASK_STATE_FAILED', metadata: { reason: abandonedRunReason } });
    const status = await codec.openStatusMessage(taskId, task.sealedStatusMessage);
    expect(status?.parts).toEqual([{ text: abandonedRunText }]);
    // Off the sparse index: a later reaper tick finds nothing of it.
    expect(await leases.listExpired(Date.now() + 86_400_000, 100)).not.toContainEqual({
      taskId,
      runId: message.runId,
    });

    // The "crashed" executor wakes up: its completion loses the version check, nothing is stored.
    release();
    expect(await crashed).not.toBe('completed');
    expect((await tasks.getTask(taskId))!).toMatchObject({
      state: 'TASK_STATE_FAILED',
      revision: task.revision,
    });
    // A redelivered queue message never calls the model again.
    expect(await executeRun(baseDeps(), message)).toBe('duplicate');
    expect(model.requests.length - before).toBe(1);
  });

  it('a run whose message was lost (crash between commit and enqueue) is settled FAILED after its start deadline', async () => {
    const createdAt = new Date();
    // The queue "loses" the message, as a crash right after the commit would.
    const { taskId } = await createTask(
      {
        ...baseDeps(),
        clock: { now: () => createdAt },
        queue: { enqueue: async () => {} },
        runStartDeadlineMs: 5_000,
      },
      { caller: alice, profileId: 'default', message: userMessage('never queued') },
    );
    const task = (await tasks.getTask(taskId))!;
    const runId = task.currentRunId;
    expect(await tasks.getRun(taskId, runId)).toMatchObject({
      status: 'QUEUED',
      leaseUntil: createdAt.getTime() + 5_000,
    });
    const early = await reapExpiredRuns(
      { ...baseDeps(), leases, clock: { now: () => new Date(createdAt.getTime() + 4_000) } },
      100,
    );
    expect(early.found).toBe(0);
    const reapedAt = new Date(createdAt.getTime() + 6_000);
    expect(
      (await reapExpiredRuns({ ...baseDeps(), leases, clock: { now: () => reapedAt } }, 100)).reaped,
    ).toBe(1);
    const run = (await tasks.getRun(taskId, runId))!;
    expect(run).toMatchObject({ status: 'FAILED', endedAt: reapedAt.toISOString() });
    expect(run.leaseUntil).toBeUndefined();
    const failed = (await tasks.getTask(taskId))!;
    expect(failed).toMatchObject({ state: 'TASK_STATE_FAILED', metadata: { reason: unstartedRunReason } });
    expect((await codec.openStatusMessage(taskId, failed.sealedStatusMessage))?.parts).toEqual([
      { text: unstartedRunText },
    ]);
    // A message that turns up late finds the run settled and calls no model.
    const before = model.requests.length;
    expect(await executeRun(baseDeps(), { taskId, runId })).toBe('duplicate');
    expect(model.requests.length).toBe(before);
  });

  it('a run never started (never claimed) past its start deadline is queued again, at most 3 times, then FAILED RUN_NOT_STARTED (decision 0053)', async () => {
    const createdAt = new Date();
    const lost = { enqueue: async () => {} };
    const create = (text: string) =>
      createTask(
        { ...baseDeps(), clock: { now: () => createdAt }, queue: lost, runStartDeadlineMs: 5_000 },
        { caller: alice, profileId: 'default', message: userMessage(text) },
      );
    const { taskId } = await create('lost four times');
    const runId = (await tasks.getTask(taskId))!.currentRunId;
    const requeued: RunMessage[] = [];
    const reaperAt = (ms: number) => ({
      ...baseDeps(),
      leases,
      requeue: { enqueue: async (message: RunMessage) => void requeued.push(message) },
      runStartDeadlineMs: 5_000,
      clock: { now: () => new Date(createdAt.getTime() + ms) },
    });
    // Each deadline passes with the message lost again: queued again with a new deadline, the
    // version unchanged (nothing but the queue moved), the task still SUBMITTED.
    for (const [requeues, at] of [
      [1, 6_000],
      [2, 12_000],
      [3, 18_000],
    ] as const) {
      await reapExpiredRuns(reaperAt(at), 100);
      expect(await tasks.getRun(taskId, runId)).toMatchObject({
        status: 'QUEUED',
        version: 1,
        requeues,
        startBy: createdAt.getTime() + at + 5_000,
        leaseUntil: createdAt.getTime() + at + 5_000,
      });
      expect((await tasks.getTask(taskId))!.state).toBe('TASK_STATE_SUBMITTED');
    }
    expect(requeued.filter((message) => message.runId === runId)).toHaveLength(3);
    // The bound: past the fourth deadline it fails as before.
    await reapExpiredRuns(reaperAt(24_000), 100);
    expect(await tasks.getRun(taskId, runId)).toMatchObject({ status: 'FAILED', requeues: 3 });
    expect((await tasks.getTask(taskId))!).toMatchObject({
      state: 'TASK_STATE_FAILED',
      metadata: { reason: unstartedRunReason },
    });
    expect(requeued.filter((message) => message.runId === runId)).toHaveLength(3);

    // A re-queued run runs once: the late original and the new message race for the one claim.
    const late = await create('late, then queued again');
    const lateRunId = (await tasks.getTask(late.taskId))!.currentRunId;
    await reapExpiredRuns(reaperAt(6_000), 100);
    expect(requeued.at(-1)).toEqual({ taskId: late.taskId, runId: lateRunId });
    const before = model.requests.length;
    const outcomes = await Promise.all([
      executeRun(baseDeps(), { taskId: late.taskId, runId: lateRunId }),
      executeRun(baseDeps(), requeued.at(-1)!),
    ]);
    expect(outcomes.sort()).toEqual(['completed', 'duplicate']);
    expect(model.requests.length).toBe(before + 1);
    expect((await tasks.getTask(late.taskId))!.state).toBe('TASK_STATE_COMPLETED');
  });

  it('a create is one write of the task row with its run: cut off, it leaves neither task nor run and queues nothing (decision 0038)', async () => {
    const createdAt = new Date();
    const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const [runId, taskId] = ids;
    // The process dies at the first write that holds the task row; any write before it goes through.
    const cut = Object.assign(Object.create(tasks) as DynamoDbTaskRepository, {
      commit: async (plan: Parameters<DynamoDbTaskRepository['commit']>[0]) => {
        if (plan.row?.task !== undefined) throw new Error('crashed');
        return tasks.commit(plan);
      },
    });
    const sent: RunMessage[] = [];
    await expect(
      createTask(
        {
          ...baseDeps(),
          tasks: cut,
          clock: { now: () => createdAt },
          ids: { newId: () => ids.shift()! },
          queue: { enqueue: async (message: RunMessage) => void sent.push(message) },
          runStartDeadlineMs: 5_000,
        },
        { caller: alice, profileId: 'default', message: userMessage('cut off') },
      ),
    ).rejects.toThrow('crashed');
    expect(sent).toEqual([]);
    expect(await tasks.getTask(taskId!)).toBeUndefined();
    // No lone run was written ahead of the task row (decision 0027 wrote the run first).
    expect(await tasks.getRun(taskId!, runId!)).toBeUndefined();
  });

  it('a claim soon after creation keeps the lease the run was created with, so its lease index entry is not moved (decision 0027)', async () => {
    const { taskId, message } = await sendOne('keep my lease');
    const queuedRun = (await tasks.getRun(taskId, message.runId))!;
    expect(queuedRun).toMatchObject({ status: 'QUEUED', startBy: expect.any(Number) });
    const claims: number[] = [];
    const watching = Object.assign(Object.create(tasks) as DynamoDbTaskRepository, {
      commit: async (plan: Parameters<DynamoDbTaskRepository['commit']>[0]) => {
        if (plan.row?.run?.status === 'RUNNING') claims.push(plan.row.run.leaseUntil!);
        return tasks.commit(plan);
      },
    });
    expect(await executeRun({ ...baseDeps(), tasks: watching }, message)).toBe('completed');
    expect(claims).toEqual([queuedRun.leaseUntil]);

    // A claim that comes late (here 20 s, more than half a renewal interval) takes a fresh lease.
    const late = await sendOne('claimed late');
    const lateRun = (await tasks.getRun(late.taskId, late.message.runId))!;
    const claimedAt = new Date(lateRun.leaseUntil! - 90_000 + 20_000);
    expect(
      await executeRun({ ...baseDeps(), tasks: watching, clock: { now: () => claimedAt } }, late.message),
    ).toBe('completed');
    expect(claims[1]).toBe(claimedAt.getTime() + 90_000);
  });

  it('a queued run held longer than its lease waits for its start deadline; past it, the reaper settles it (decision 0027)', async () => {
    const createdAt = new Date();
    const { taskId } = await createTask(
      {
        ...baseDeps(),
        clock: { now: () => createdAt },
        queue: { enqueue: async () => {} },
        runLeaseMs: 5_000,
        runStartDeadlineMs: 60_000,
      },
      { caller: alice, profileId: 'default', message: userMessage('held in the queue') },
    );
    const runId = (await tasks.getTask(taskId))!.currentRunId;
    expect(await tasks.getRun(taskId, runId)).toMatchObject({
      status: 'QUEUED',
      leaseUntil: createdAt.getTime() + 5_000,
      startBy: createdAt.getTime() + 60_000,
    });
    const at = (ms: number) => ({
      ...baseDeps(),
      leases,
      clock: { now: () => new Date(createdAt.getTime() + ms) },
    });
    // Past the lease, before the deadline: not reaped; the lease moves to the deadline.
    await reapExpiredRuns(at(6_000), 100);
    expect(await tasks.getRun(taskId, runId)).toMatchObject({
      status: 'QUEUED',
      version: 1,
      leaseUntil: createdAt.getTime() + 60_000,
    });
    expect((await tasks.getTask(taskId))!.state).toBe('TASK_STATE_SUBMITTED');
    expect(await leases.listExpired(createdAt.getTime() + 59_000, 1_000)).not.toContainEqual({
      taskId,
      runId,
    });
    // Past the deadline: the message is taken as lost.
    await reapExpiredRuns(at(61_000), 100);
    expect(await tasks.getRun(taskId, runId)).toMatchObject({ status: 'FAILED' });
    expect((await tasks.getTask(taskId))!).toMatchObject({
      state: 'TASK_STATE_FAILED',
      metadata: { reason: unstartedRunReason },
    });
  });

  it('renewals keep a live run off the reaper without moving its version; a duplicate delivery never calls the model', async () => {
    holdNextAnswer();
    const before = model.requests.length;
    const { taskId, message } = await sendOne('long work');
    const live = executeRun({ ...baseDeps(), leases, leaseMs: 60_000, leaseRenewMs: 50 }, message);
    await model.received(before + 1);
    const claimed = (await tasks.getRun(taskId, message.runId))!;
    expect(claimed.status).toBe('RUNNING');

    // A duplicate SQS delivery while the run is RUNNING: no claim, no model call.
    expect(await executeRun(baseDeps(), message)).toBe('duplicate');

    const renewed = await waitFor(
      () => tasks.getRun(taskId, message.runId),
      (run) => (run?.leaseUntil ?? 0) > claimed.leaseUntil!,
    );
    expect(renewed!.version).toBe(claimed.version);

    // The reaper at a time past the claim's lease but before the renewed one: nothing to reap.
    const afterFirstLease = new Date(claimed.leaseUntil! + 1);
    const report = await reapExpiredRuns(
      { ...baseDeps(), leases, clock: { now: () => afterFirstLease } },
      100,
    );
    expect(report.found).toBe(0);

    // The reaper's fence: a reap that read the old lease loses against the renewal.
    const fenced = tasks.commit({
      row: {
        taskId,
        run: { ...claimed, status: 'FAILED', version: claimed.version + 1, leaseUntil: undefined },
        expect: { runVersion: claimed.version, leaseExpiredBefore: afterFirstLease.getTime() },
      },
    });
    await expect(fenced).rejects.toBeInstanceOf(VersionConflictError);

    release();
    expect(await live).toBe('completed');
    const done = (await tasks.getRun(taskId, message.runId))!;
    // The completing transaction expected the claimed version: renewals did not break I-LOCK.
    expect(done).toMatchObject({ status: 'COMPLETED', version: claimed.version + 1 });
    expect(done.leaseUntil).toBeUndefined();
    expect((await tasks.getTask(taskId))!.state).toBe('TASK_STATE_COMPLETED');
    expect(model.requests.length - before).toBe(1);
  });

  it('a lost lease aborts the model call: the run stays settled by the reaper and is not completed', async () => {
    holdNextAnswer();
    const before = model.requests.length;
    const closedBefore = model.closedEarly();
    const { taskId, message } = await sendOne('lose the lease');
    const live = executeRun({ ...baseDeps(), leases, leaseMs: 60_000, leaseRenewMs: 50 }, message);
    await model.received(before + 1);
    const running = (await tasks.getRun(taskId, message.runId))!;
    // Something else settled the run (the reaper of another region's clock, an operator): the
    // next renewal finds it no longer RUNNING and aborts the in-flight request.
    await tasks.commit({
      row: {
        taskId,
        run: { ...running, status: 'FAILED', version: running.version + 1, leaseUntil: undefined },
        expect: { runVersion: running.version },
      },
    });
    expect(await live).not.toBe('completed');
    // The held request was abandoned by the client before its answer was released.
    await waitFor(
      async () => model.closedEarly(),
      (closed) => closed > closedBefore,
    );
    release();
    expect((await tasks.getRun(taskId, message.runId))!.status).toBe('FAILED');
    expect(model.requests.length - before).toBe(1);
  });
});
