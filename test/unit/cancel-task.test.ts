import { describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { canceledText, cancelTask } from '../../shared/app/tasks/cancel-task.ts';
import { getTask } from '../../shared/app/tasks/read-task.ts';
import { toSendMessageResponse } from '../../shared/app/tasks/send-message.ts';
import { parseConfig } from '../../shared/config/config.ts';
import {
  ProviderUnavailableError,
  TaskBusyError,
  TaskNotCancelableError,
  TaskNotFoundError,
} from '../../shared/domain/errors.ts';
import type { AgentProvider } from '../../shared/domain/ports.ts';
import { alice, createCore, testConfig } from '../support/core-fixture.ts';

const bob = { tenant: 't1', principal: 'bob', profileId: 'default' } as const;

const tckConfig = () =>
  parseConfig({
    providers: { tck: { type: 'scripted', behavior: 'tck' } },
    profiles: { default: { name: 'TCK', description: 'tck', providers: ['tck'], privacyLevel: 'full' } },
  });

describe('cancelTask (docs/protocol.md §11)', () => {
  it('cancels a queued task in one transaction: the run ends CANCELED and is never executed', async () => {
    const core = createCore();
    const { taskId } = await core.send('never run');
    const task = await cancelTask(core.deps, { caller: alice, taskId });
    expect(task.status.state).toBe('TASK_STATE_CANCELED');
    expect(task.status.message?.parts).toEqual([{ text: canceledText }]);
    const row = core.tasks.tasks.get(taskId)!;
    expect(row.revision).toBe(2);
    expect(core.tasks.runs.get(row.currentRunId)).toMatchObject({
      status: 'CANCELED',
      cancelRequested: true,
      version: 2,
    });
    expect(await core.runNext()).toBe('duplicate');
    expect(core.calls.size).toBe(0);
    // I-RYW: GetTask of the same caller sees the cancel at once.
    expect((await getTask(core.deps, alice, taskId)).status.state).toBe('TASK_STATE_CANCELED');
  });

  it('cancels an INPUT_REQUIRED task, and a repeat cancel returns it unchanged (idempotent)', async () => {
    const core = createCore({ config: tckConfig() });
    const { taskId } = await core.send('more?', 'default', { messageId: 'tck-input-required-1' });
    expect(await core.runNext()).toBe('input-required');
    const first = await cancelTask(core.deps, { caller: alice, taskId });
    expect(first.status.state).toBe('TASK_STATE_CANCELED');
    const revision = core.tasks.tasks.get(taskId)!.revision;
    const again = await cancelTask(core.deps, { caller: alice, taskId });
    expect(again).toEqual(first);
    expect(core.tasks.tasks.get(taskId)!.revision).toBe(revision);
  });

  it('refuses terminal tasks with TaskNotCancelable and unknown or foreign ones with TaskNotFound', async () => {
    const core = createCore();
    const { taskId } = await core.send('done');
    await core.runNext();
    await expect(cancelTask(core.deps, { caller: alice, taskId })).rejects.toBeInstanceOf(
      TaskNotCancelableError,
    );
    await expect(cancelTask(core.deps, { caller: bob, taskId })).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(cancelTask(core.deps, { caller: alice, taskId: 'nope' })).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
    expect(core.tasks.tasks.get(taskId)!.state).toBe('TASK_STATE_COMPLETED');
  });

  it('re-reads after losing to a completion and then answers TaskNotCancelable', async () => {
    const core = createCore();
    const { taskId } = await core.send('racing');
    // The completion commits just before the cancel's transaction (version conflict → re-read).
    core.tasks.beforeCommit = async () => {
      await core.runNext();
    };
    await expect(cancelTask(core.deps, { caller: alice, taskId })).rejects.toBeInstanceOf(
      TaskNotCancelableError,
    );
    const row = core.tasks.tasks.get(taskId)!;
    expect(row.state).toBe('TASK_STATE_COMPLETED');
    expect(await core.codec.openArtifacts(taskId, row.sealedArtifacts)).toHaveLength(1);
  });

  it('answers TaskBusy (never an internal error) when every re-read allows the cancel and every write loses', async () => {
    const core = createCore();
    const { taskId } = await core.send('busy');
    const row = core.tasks.tasks.get(taskId)!;
    // Another writer moves the task's revision just before each of the cancel's writes.
    const moveOn = () => {
      const current = core.tasks.tasks.get(taskId)!;
      core.tasks.tasks.set(taskId, { ...current, revision: current.revision + 1 });
      core.tasks.beforeCommit = moveOn;
    };
    core.tasks.beforeCommit = moveOn;
    await expect(cancelTask(core.deps, { caller: alice, taskId })).rejects.toBeInstanceOf(TaskBusyError);
    core.tasks.beforeCommit = undefined;
    expect(core.tasks.tasks.get(taskId)!.state).toBe(row.state);
  });

  it('flags a RUNNING run; its executor loses the completion and settles the run CANCELED', async () => {
    let core: ReturnType<typeof createCore> | undefined;
    let taskId = '';
    const cancelling: AgentProvider = {
      run: async (request) => {
        await cancelTask(core!.deps, { caller: alice, taskId });
        return new ScriptedProvider('local', 'echo').run(request);
      },
    };
    core = createCore({ providers: { local: cancelling } });
    ({ taskId } = await core.send('cancel me while running'));
    expect(await core.runNext()).toBe('canceled');
    const row = core.tasks.tasks.get(taskId)!;
    expect(row.state).toBe('TASK_STATE_CANCELED');
    expect(row.sealedArtifacts).toBeUndefined();
    expect(core.tasks.runs.get(row.currentRunId)).toMatchObject({
      status: 'CANCELED',
      cancelRequested: true,
    });
  });

  it('notices a cancel between provider attempts and never calls the fallback', async () => {
    const config = testConfig({
      profiles: { default: { name: 'x', description: 'x', providers: ['failing', 'local'] } },
    });
    let core: ReturnType<typeof createCore> | undefined;
    let taskId = '';
    const failingAfterCancel: AgentProvider = {
      run: async () => {
        await cancelTask(core!.deps, { caller: alice, taskId });
        throw new ProviderUnavailableError('failing', 503);
      },
    };
    let fallbackCalls = 0;
    const fallback: AgentProvider = {
      run: async (request) => {
        fallbackCalls++;
        return new ScriptedProvider('local', 'echo').run(request);
      },
    };
    core = createCore({ config, providers: { failing: failingAfterCancel, local: fallback } });
    ({ taskId } = await core.send('fallback?'));
    expect(await core.runNext()).toBe('canceled');
    expect(fallbackCalls).toBe(0);
    expect(core.tasks.runs.get(core.tasks.tasks.get(taskId)!.currentRunId)!.status).toBe('CANCELED');
  });
});

describe('a direct Message answer (tck-message-response)', () => {
  it('completes the durable task and makes SendMessage answer with the message', async () => {
    const core = createCore({ config: tckConfig() });
    const { taskId } = await core.send('hi', 'default', { messageId: 'tck-message-response-1' });
    expect(await core.runNext()).toBe('completed');
    await core.projectAll();
    const task = await getTask(core.deps, alice, taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts).toEqual([]);
    expect(toSendMessageResponse(task)).toEqual({ message: task.status.message });
    expect(task.status.message?.parts).toEqual([{ text: 'Direct message response' }]);

    const plain = await core.send('x', 'default', { messageId: 'tck-complete-task-1' });
    await core.runNext();
    await core.projectAll();
    const completed = await getTask(core.deps, alice, plain.taskId);
    expect(toSendMessageResponse(completed)).toEqual({ task: completed });
  });
});
