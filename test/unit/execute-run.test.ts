import { describe, expect, it } from 'vitest';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { SealingFailedError } from '../../shared/domain/errors.ts';
import type { SealContext } from '../../shared/domain/ports.ts';
import { createCore, testConfig } from '../support/core-fixture.ts';

/** A sealer that fails for one field, as a KMS outage or a bad key would. */
class FailingFieldSealer extends FakeSealer {
  constructor(private readonly failingField: string) {
    super();
  }
  override async seal(plaintext: Uint8Array, context: SealContext): Promise<Uint8Array> {
    if (context.field === this.failingField) throw new SealingFailedError('kms unavailable');
    return super.seal(plaintext, context);
  }
}

/** A sealer whose first opens of one field fail, as a KMS outage between the claim and the model call would. */
class FlakyOpenSealer extends FakeSealer {
  constructor(
    private readonly failingField: string,
    private failures: number,
  ) {
    super();
  }
  override async open(blob: Uint8Array, context: SealContext): Promise<Uint8Array> {
    if (context.field === this.failingField && this.failures > 0) {
      this.failures -= 1;
      throw Object.assign(new Error('kms unavailable'), { name: 'KMSInternalException' });
    }
    return super.open(blob, context);
  }
}

describe('executeRun', () => {
  it('completes a task with its sealed result in the completing transaction (I-RESULT)', async () => {
    const core = createCore();
    const { taskId } = await core.send('hello there');
    expect(await core.runNext()).toBe('completed');

    const task = core.tasks.tasks.get(taskId)!;
    expect(task.state).toBe('TASK_STATE_COMPLETED');
    expect(task.revision).toBe(3);
    const artifacts = await core.codec.openArtifacts(taskId, task.sealedArtifacts);
    expect(artifacts).toEqual([expect.objectContaining({ parts: [{ text: 'hello there' }] })]);
    const run = core.tasks.runs.get(task.currentRunId)!;
    expect(run).toMatchObject({ status: 'COMPLETED', version: 3 });
  });

  it('never calls the provider again for a duplicate delivery or a settled run (I-ONCE)', async () => {
    const core = createCore();
    const { taskId } = await core.send('once');
    const message = { ...core.queued[0]! };
    expect(await core.runNext()).toBe('completed');
    core.queued.push(message, message);
    expect(await core.runNext()).toBe('duplicate');
    expect(await core.runNext()).toBe('duplicate');
    expect(core.calls.get(core.tasks.tasks.get(taskId)!.currentRunId)).toBe(1);
  });

  it('fails run and task when the result cannot be sealed, storing no result', async () => {
    const core = createCore({ sealer: new FailingFieldSealer('artifacts') });
    const { taskId } = await core.send('secret result');
    expect(await core.runNext()).toBe('failed');
    const task = core.tasks.tasks.get(taskId)!;
    expect(task.state).toBe('TASK_STATE_FAILED');
    expect(task.sealedArtifacts).toBeUndefined();
    expect(task.metadata).toEqual({ reason: 'SEALING_FAILED' });
    expect(core.tasks.runs.get(task.currentRunId)!.status).toBe('FAILED');
  });

  it('lets a concurrent cancel win: a canceled task never becomes COMPLETED', async () => {
    const core = createCore();
    const { taskId } = await core.send('race me');
    // The claim (run and task: one write) happens first; the cancel lands before the completing write.
    let commits = 0;
    const original = core.tasks.commit.bind(core.tasks);
    core.tasks.commit = async (plan) => {
      commits++;
      if (commits === 2) {
        const current = core.tasks.tasks.get(taskId)!;
        core.tasks.tasks.set(taskId, {
          ...current,
          state: 'TASK_STATE_CANCELED',
          revision: current.revision + 1,
        });
      }
      return original(plan);
    };
    expect(await core.runNext()).toBe('canceled');
    const task = core.tasks.tasks.get(taskId)!;
    expect(task.state).toBe('TASK_STATE_CANCELED');
    expect(task.sealedArtifacts).toBeUndefined();
    expect(core.tasks.runs.get(task.currentRunId)!.status).toBe('CANCELED');
  });

  it('claims run and task in one write; a cancel that lands before it ends the run CANCELED without a model call (I-ONCE)', async () => {
    const core = createCore();
    const { taskId } = await core.send('cancel between');
    const plans: string[] = [];
    const original = core.tasks.commit.bind(core.tasks);
    core.tasks.commit = async (plan) => {
      const written = [
        plan.row?.run && 'run',
        plan.row?.task && 'task',
        ...(plan.items ?? []).map((write) => write.entity),
      ];
      plans.push(written.filter(Boolean).join('+'));
      if (plans.length === 1) {
        // A cancel commits after the executor read the run, before its claim (decision 0038).
        const current = core.tasks.tasks.get(taskId)!;
        core.tasks.tasks.set(taskId, {
          ...current,
          state: 'TASK_STATE_CANCELED',
          revision: current.revision + 1,
        });
        const run = core.tasks.runs.get(current.currentRunId)!;
        core.tasks.runs.set(run.runId, { ...run, cancelRequested: true, version: run.version + 1 });
      }
      return original(plan);
    };
    expect(await core.runNext()).toBe('canceled');
    expect(plans[0]).toBe('run+task');
    const task = core.tasks.tasks.get(taskId)!;
    expect(task.state).toBe('TASK_STATE_CANCELED');
    expect(core.tasks.runs.get(task.currentRunId)!.status).toBe('CANCELED');
    expect(core.calls.get(task.currentRunId) ?? 0).toBe(0);
  });

  it('re-reads the ceiling under the lock: a tightening that wins the race fails the task (I-LOCK, I-TIGHTEN)', async () => {
    const core = createCore();
    const { taskId } = await core.send('tighten me');
    let commits = 0;
    const original = core.tasks.commit.bind(core.tasks);
    core.tasks.commit = async (plan) => {
      commits++;
      // After the claim's write, before the completing write.
      if (commits === 2) {
        const runId = core.tasks.tasks.get(taskId)!.currentRunId;
        const run = core.tasks.runs.get(runId)!;
        core.tasks.runs.set(runId, { ...run, answerCeiling: 'metadata', version: run.version + 1 });
      }
      return original(plan);
    };
    expect(await core.runNext()).toBe('not-retainable');
    const task = core.tasks.tasks.get(taskId)!;
    expect(task.state).toBe('TASK_STATE_FAILED');
    expect(task.metadata).toEqual({ reason: 'RESULT_NOT_RETAINABLE' });
    expect(task.sealedArtifacts).toBeUndefined();
    expect(task.sealedHistory).toBeUndefined();
    const status = await core.codec.openStatusMessage(taskId, task.sealedStatusMessage);
    expect(JSON.stringify(status)).not.toContain('tighten me');
  });

  it('fails with RESULT_NOT_RETAINABLE when a fallback tightens the answer ceiling to metadata', async () => {
    const core = createCore();
    const { taskId } = await core.send('my words', 'to-strict');
    expect(await core.runNext()).toBe('not-retainable');
    const task = core.tasks.tasks.get(taskId)!;
    expect(task).toMatchObject({ state: 'TASK_STATE_FAILED', metadata: { reason: 'RESULT_NOT_RETAINABLE' } });
    expect(task.sealedArtifacts).toBeUndefined();
    const run = core.tasks.runs.get(task.currentRunId)!;
    expect(run.answerCeiling).toBe('metadata');
    expect(run.attempts.map((attempt) => attempt.outcome)).toEqual(['failed']);
  });

  it('keeps redacted text when a fallback tightens the answer ceiling to redacted', async () => {
    const core = createCore();
    const { taskId } = await core.send('write to bob@example.com', 'to-careful');
    expect(await core.runNext()).toBe('completed');
    const task = core.tasks.tasks.get(taskId)!;
    const artifacts = JSON.stringify(await core.codec.openArtifacts(taskId, task.sealedArtifacts));
    const history = JSON.stringify(await core.codec.openHistory(taskId, task.sealedHistory));
    expect(artifacts).not.toContain('bob@example.com');
    expect(history).not.toContain('bob@example.com');
    expect(artifacts).toContain('write to');
  });

  it('continues an INPUT_REQUIRED task as a new run and keeps the history in order', async () => {
    const tck = createCore({
      config: testConfig({
        providers: { tck: { type: 'scripted', behavior: 'tck' } },
        profiles: { default: { name: 'TCK', description: 'tck', providers: ['tck'] } },
      }),
    });
    const first = await tck.send('need input', 'default', { messageId: 'tck-input-required-1' });
    expect(await tck.runNext()).toBe('input-required');
    const second = await tck.send('here it is', 'default', {
      messageId: 'tck-complete-task-1',
      taskId: first.taskId,
    });
    expect(second.taskId).toBe(first.taskId);
    expect(await tck.runNext()).toBe('completed');
    const task = tck.tasks.tasks.get(first.taskId)!;
    const history = await tck.codec.openHistory(first.taskId, task.sealedHistory);
    expect(history.map((entry) => entry.message.role)).toEqual([
      'ROLE_USER',
      'ROLE_AGENT',
      'ROLE_USER',
      'ROLE_AGENT',
    ]);
    expect(history.map((entry) => entry.revision)).toEqual(
      [...history.map((entry) => entry.revision)].sort((a, b) => a - b),
    );
  });

  it('gives a run back to the queue when a fault comes before its provider was called (decision 0069)', async () => {
    const core = createCore({ sealer: new FlakyOpenSealer('history', 1) });
    const { taskId } = await core.send('not yet');
    const message = { ...core.queued[0]! };
    await expect(core.runNext()).rejects.toThrow('kms unavailable');
    const task = core.tasks.tasks.get(taskId)!;
    const given = core.tasks.runs.get(task.currentRunId)!;
    // QUEUED again, never called; the task keeps the WORKING revision its claim wrote.
    expect(given).toMatchObject({ status: 'QUEUED', version: 3 });
    expect(given.leaseUntil).toBe(given.startBy);
    expect(task).toMatchObject({ state: 'TASK_STATE_WORKING', revision: 2 });
    expect(core.calls.get(task.currentRunId) ?? 0).toBe(0);
    // The redelivered message claims it again (a run-only claim: no second WORKING revision).
    core.queued.push(message);
    expect(await core.runNext()).toBe('completed');
    expect(core.calls.get(task.currentRunId)).toBe(1);
    expect(core.tasks.tasks.get(taskId)).toMatchObject({ state: 'TASK_STATE_COMPLETED', revision: 3 });
  });

  it('never gives back a run whose provider was called: it stays RUNNING for the reaper (I-ONCE)', async () => {
    const core = createCore();
    const { taskId } = await core.send('called once');
    let commits = 0;
    const original = core.tasks.commit.bind(core.tasks);
    core.tasks.commit = async (plan) => {
      commits++;
      // The claim commits; the completing write after the model call fails.
      if (commits === 2) throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
      return original(plan);
    };
    await expect(core.runNext()).rejects.toThrow('throttled');
    const task = core.tasks.tasks.get(taskId)!;
    expect(core.tasks.runs.get(task.currentRunId)).toMatchObject({ status: 'RUNNING', version: 2 });
    expect(core.calls.get(task.currentRunId)).toBe(1);
  });
});
