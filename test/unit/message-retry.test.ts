import { describe, expect, it } from 'vitest';
import { cancelTask } from '../../shared/app/tasks/cancel-task.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { maxSendLevels, runIdOf, taskIdOf } from '../../shared/app/tasks/message-identity.ts';
import { sendMessage } from '../../shared/app/tasks/send-message.ts';
import type { Message } from '../../shared/domain/a2a.ts';
import { MessageIdReusedError } from '../../shared/domain/errors.ts';
import type { Owner } from '../../shared/domain/task.ts';
import { alice, createCore, testConfig, userMessage } from '../support/core-fixture.ts';

/**
 * I-RETRY (docs/invariants.md, docs/protocol.md §4 "Retries"): the same send again by the same
 * caller at the same agent starts no second task and no second run while the caller has not acted
 * on the task it created; once it did (a follow-up, a cancel), the same send is a new message and
 * starts the next task of its chain (at most `maxSendLevels`); other content under the same
 * messageId is a new message; another caller's or another agent's equal send is its own. Counted
 * in tasks, queued runs and model calls of the in-memory core.
 */

const config = testConfig({
  providers: { local: { type: 'scripted', behavior: 'echo' }, tck: { type: 'scripted', behavior: 'tck' } },
  profiles: {
    default: { name: 'Echo', description: 'x', providers: ['local'] },
    other: { name: 'Other', description: 'x', providers: ['local'] },
    tck: { name: 'TCK', description: 'x', providers: ['tck'] },
  },
});

const send = (
  core: ReturnType<typeof createCore>,
  message: Message,
  profileId = 'default',
  caller: Owner = alice,
) => createTask(core.deps, { caller, profileId, message });

const modelCalls = (core: ReturnType<typeof createCore>) =>
  [...core.calls.values()].reduce((a, b) => a + b, 0);

describe('message identity', () => {
  it('derives one task id per whole send and level, and one run id per task and message', () => {
    const message = userMessage('hi', { messageId: 'm-1' });
    const send = { sender: { ...alice, profileId: 'default' }, message };
    const id = taskIdOf(send);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // Key order does not matter; the binding and version defaults are JSON-RPC 1.0.
    const reordered = JSON.parse(
      JSON.stringify({ parts: message.parts, role: message.role, messageId: 'm-1' }),
    );
    expect(taskIdOf({ ...send, message: reordered, binding: 'JSONRPC', protocolVersion: '1.0' })).toBe(id);
    const others = [
      { ...send, sender: { ...send.sender, principal: 'bob' } },
      { ...send, sender: { ...send.sender, tenant: 't2' } },
      { ...send, sender: { ...send.sender, profileId: 'other' } },
      { ...send, message: { ...message, parts: [{ text: 'other' }] } },
      { ...send, message: { ...message, metadata: { a: 1 } } },
      { ...send, configuration: { returnImmediately: true } },
      { ...send, binding: 'HTTP+JSON' },
      { ...send, protocolVersion: '0.3' as const },
      { ...send, streaming: true },
    ];
    expect(new Set([id, ...others.map((other) => taskIdOf(other))]).size).toBe(others.length + 1);
    expect(taskIdOf(send, 1)).not.toBe(id);
    expect(taskIdOf(send, 1)).toBe(taskIdOf(send, 1));
    // The run id follows the whole message.
    expect(runIdOf('t', reordered)).toBe(runIdOf('t', message));
    expect(runIdOf('t', { ...message, parts: [{ text: 'hi!' }] })).not.toBe(runIdOf('t', message));
    expect(runIdOf('t', { ...message, metadata: { a: 1 } })).not.toBe(runIdOf('t', message));
  });
});

describe('I-RETRY', () => {
  it('a retried message answers from the first task: one task, one run, one model call', async () => {
    const core = createCore({ config });
    const message = userMessage('hello', { messageId: 'retry-1' });
    const first = await send(core, message);
    const again = await send(core, { ...message });
    expect(again.taskId).toBe(first.taskId);
    expect(core.tasks.tasks.size).toBe(1);
    expect(core.queued).toHaveLength(2); // the first run is still QUEUED: the retry wakes it again
    await core.runNext();
    expect(await core.runNext()).toBe('duplicate');
    expect(modelCalls(core)).toBe(1);
    // Once the run is claimed, a retry queues nothing more.
    expect((await send(core, message)).taskId).toBe(first.taskId);
    expect(core.queued).toHaveLength(0);
    expect(core.tasks.runs.size).toBe(1);
  });

  it('a blocking retry after completion answers the completed task', async () => {
    const core = createCore({ config });
    const message = userMessage('hello', { messageId: 'retry-2' });
    const deps = {
      ...core.deps,
      sleep: async () => {
        if (core.queued.length > 0) await core.runNext();
        await core.projectAll();
      },
    };
    const first = await sendMessage(deps, { caller: alice, profileId: 'default', message });
    expect(first.status.state).toBe('TASK_STATE_COMPLETED');
    const again = await sendMessage(deps, { caller: alice, profileId: 'default', message });
    expect(again).toEqual(first);
    expect(core.tasks.tasks.size).toBe(1);
    expect(modelCalls(core)).toBe(1);
  });

  it('five concurrent sends of one message resolve to one task and one run', async () => {
    const core = createCore({ config });
    const message = userMessage('hello', { messageId: 'retry-3' });
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(core, message)));
    expect(new Set(answers.map((answer) => answer.taskId)).size).toBe(1);
    expect(core.tasks.tasks.size).toBe(1);
    expect(core.tasks.runs.size).toBe(1);
    while (core.queued.length > 0) await core.runNext();
    expect(modelCalls(core)).toBe(1);
  });

  it('the same messageId with other content is a new message: its own task and run', async () => {
    const core = createCore({ config });
    const message = userMessage('hello', { messageId: 'retry-4' });
    const first = await send(core, message);
    const other = await send(core, { ...message, parts: [{ text: 'something else' }] });
    expect(other.taskId).not.toBe(first.taskId);
    expect(core.tasks.tasks.size).toBe(2);
    expect(core.tasks.runs.size).toBe(2);
    // Each is retried on its own.
    expect((await send(core, message)).taskId).toBe(first.taskId);
    expect(core.tasks.tasks.size).toBe(2);
  });

  it('once the caller followed up on its task, the same send starts a new task, which its own retry answers', async () => {
    const core = createCore({ config });
    const opening = userMessage('hi', { messageId: 'tck-input-required-r8' });
    const { taskId } = await send(core, opening, 'tck');
    await core.runNext();
    // Not acted on yet: a retry, even after the run came back to input.
    expect((await send(core, opening, 'tck')).taskId).toBe(taskId);
    await send(core, userMessage('go on', { messageId: 'tck-complete-task-r8', taskId }), 'tck');
    const next = await send(core, opening, 'tck');
    expect(next.taskId).not.toBe(taskId);
    expect((await send(core, opening, 'tck')).taskId).toBe(next.taskId);
    expect(core.tasks.tasks.size).toBe(2);
    while (core.queued.length > 0) await core.runNext();
    expect(core.tasks.tasks.get(next.taskId)?.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(modelCalls(core)).toBe(3);
  });

  it(`once the caller canceled its task, the same send starts a new task; ${maxSendLevels} times at most, then MESSAGE_ID_REUSED`, async () => {
    const core = createCore({ config });
    const message = userMessage('hi', { messageId: 'tck-input-required-r9' });
    const seen = new Set<string>();
    for (let level = 0; level < maxSendLevels; level++) {
      const { taskId } = await send(core, message, 'tck');
      expect(seen.has(taskId)).toBe(false);
      seen.add(taskId);
      await cancelTask(core.deps, { caller: { ...alice, profileId: 'tck' }, taskId });
    }
    const before = core.tasks.tasks.size;
    await expect(send(core, message, 'tck')).rejects.toBeInstanceOf(MessageIdReusedError);
    expect(core.tasks.tasks.size).toBe(before);
    expect(before).toBe(maxSendLevels);
  });

  it('another caller’s or another agent’s equal messageId is its own task', async () => {
    const core = createCore({ config });
    const message = userMessage('hello', { messageId: 'retry-5' });
    const mine = await send(core, message);
    const bobs = await send(core, message, 'default', { tenant: 't1', principal: 'bob' });
    const elsewhere = await send(core, message, 'other');
    expect(new Set([mine.taskId, bobs.taskId, elsewhere.taskId]).size).toBe(3);
    expect(core.tasks.runs.size).toBe(3);
  });

  it('a retried follow-up starts no second run, also after its run completed the task', async () => {
    const core = createCore({ config });
    const opening = userMessage('hi', { messageId: 'tck-input-required-r6' });
    const { taskId } = await send(core, opening, 'tck');
    await core.runNext();
    expect(core.tasks.tasks.get(taskId)?.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const followUp = userMessage('go on', { messageId: 'tck-complete-task-r6', taskId });
    const first = await send(core, followUp, 'tck');
    // While its run is queued, while it works, and after it completed: the same task, no new run.
    expect((await send(core, followUp, 'tck')).taskId).toBe(taskId);
    await core.runNext();
    expect(await core.runNext()).toBe('duplicate');
    expect(core.tasks.tasks.get(taskId)?.state).toBe('TASK_STATE_COMPLETED');
    const again = await send(core, followUp, 'tck');
    expect(again).toEqual({ taskId, revision: core.tasks.tasks.get(taskId)?.revision });
    expect(again.revision).toBeGreaterThan(first.revision);
    expect(core.tasks.runs.size).toBe(2);
    expect(modelCalls(core)).toBe(2);
    const history = await core.codec.openHistory(taskId, core.tasks.tasks.get(taskId)?.sealedHistory);
    expect(history.filter((entry) => entry.message.messageId === followUp.messageId)).toHaveLength(1);
  });

  it('a follow-up reusing a messageId of the task with other content is a new message of the task', async () => {
    const core = createCore({ config });
    const opening = userMessage('hi', { messageId: 'tck-input-required-r7' });
    const { taskId } = await send(core, opening, 'tck');
    await core.runNext();
    for (const text of ['first answer', 'second answer']) {
      await send(core, { ...opening, parts: [{ text }], taskId }, 'tck');
      await core.runNext();
      expect(core.tasks.tasks.get(taskId)?.state).toBe('TASK_STATE_INPUT_REQUIRED');
    }
    const history = await core.codec.openHistory(taskId, core.tasks.tasks.get(taskId)?.sealedHistory);
    const mine = history.filter((entry) => entry.message.role === 'ROLE_USER');
    expect(mine.map((entry) => entry.message.parts)).toEqual([
      [{ text: 'hi' }],
      [{ text: 'first answer' }],
      [{ text: 'second answer' }],
    ]);
    expect(core.tasks.runs.size).toBe(3);
  });
});
