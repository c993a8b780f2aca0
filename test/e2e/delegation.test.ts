import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { askQuestion } from '../../shared/adapters/providers/scripted-provider.ts';
import { armFailpoints, disarmFailpoints, failpointCounts } from '../../shared/app/operations/failpoints.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { agentCall, type Json, settledTask, toolAnswerOf } from '../support/agent-calls.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { freePort } from '../support/mcp-server-process.ts';
import { expectStackWarnings } from '../support/stack-log.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Delegation to another A2A agent (docs/configuration.md `a2aAgents`) through the local stack: the
 * profile `a` runs the scripted `call-tool` model, which calls `a2a__helper` — the profile `b` of
 * the same stack, reached over HTTP through its agent card with the official A2A client and the
 * SSRF guard (loopback allowed locally). Counted on b's own task list.
 */

let stack: LocalStack;

const configFor = (port: number) =>
  parseConfig({
    privacy: { level: 'metadata' },
    providers: {
      delegate: {
        type: 'scripted',
        behavior: 'call-tool',
        tool: 'a2a__helper',
        arguments: { message: 'hello from a' },
      },
      ask: { type: 'scripted', behavior: 'call-tool', tool: 'a2a__helper' },
      park: {
        type: 'scripted',
        behavior: 'call-tool',
        tool: 'a2a__slowpoke',
        arguments: { message: 'take your time' },
      },
      echo: { type: 'scripted', behavior: 'echo' },
      slow: { type: 'scripted', behavior: 'slow' },
      quizzed: {
        type: 'scripted',
        behavior: 'call-tool',
        tool: 'a2a__quiz',
        arguments: { message: 'start the quiz' },
        answerInput: 'blue',
      },
      asks: { type: 'scripted', behavior: 'ask' },
    },
    profiles: {
      a: {
        name: 'A',
        description: 'Delegates',
        providers: ['delegate'],
        privacyLevel: 'full',
        agents: { helper: {} },
      },
      ask: {
        name: 'Ask',
        description: 'Delegates its input',
        providers: ['ask'],
        privacyLevel: 'full',
        agents: { helper: {} },
      },
      b: { name: 'B', description: 'Echoes', providers: ['echo'], privacyLevel: 'full' },
      c: {
        name: 'C',
        description: 'Delegates to a slow agent',
        providers: ['park'],
        privacyLevel: 'full',
        agents: { slowpoke: {} },
      },
      slow: { name: 'Slow', description: 'Echoes after 2 s', providers: ['slow'], privacyLevel: 'full' },
      d: {
        name: 'D',
        description: 'Delegates and answers the question it gets back',
        providers: ['quizzed'],
        privacyLevel: 'full',
        agents: { quiz: {} },
      },
      quiz: {
        name: 'Quiz',
        description: 'Asks before it answers',
        providers: ['asks'],
        privacyLevel: 'full',
      },
    },
    a2aAgents: {
      // Waits not at all in place: every call outlives the run's wait.
      slowpoke: {
        cardUrl: `http://127.0.0.1:${port}/agents/slow/.well-known/agent-card.json`,
        timeoutMs: 10_000,
        waitSeconds: 0,
      },
      helper: { cardUrl: `http://127.0.0.1:${port}/agents/b/.well-known/agent-card.json`, timeoutMs: 10_000 },
      quiz: {
        cardUrl: `http://127.0.0.1:${port}/agents/quiz/.well-known/agent-card.json`,
        timeoutMs: 10_000,
      },
    },
  });

beforeAll(async () => {
  const port = await freePort();
  stack = await startLocalStack({
    port,
    config: configFor(port),
    endpoints: providedEndpoints(),
    prefix: `e2e-delegation-${randomUUID().slice(0, 6)}`,
    // Short, so a run that stopped is found by the reaper within seconds, not the deployed 90 s.
    runLeaseMs: 3_000,
    reaperIntervalMs: 500,
    log: () => {},
  });
});
afterAll(async () => {
  await stack?.stop();
});

const call = agentCall(() => stack.baseUrl);
const settled = (agent: string, id: string) => settledTask(call, agent, id);

const send = async (agent: string, text: string) =>
  (
    await call(agent, 'SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
    })
  )?.task as Json & {
    id: string;
    status: { state: string };
    artifacts?: { parts: { text: string }[] }[];
  };

const tasksOf = async (agent: string) =>
  ((await call(agent, 'ListTasks', { pageSize: 100 }))?.tasks as (Json & { id: string })[]) ?? [];

describe('delegation to another profile of the same server', () => {
  it('a delegates one message to b and answers with b’s artifacts; b holds exactly one new task', async () => {
    const before = (await tasksOf('b')).length;
    const task = await send('a', 'please ask b');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const answer = task.artifacts?.[0]?.parts[0]?.text ?? '';
    expect(answer).toContain('Tool a2a__helper answered');
    const result = JSON.parse(answer.slice(answer.indexOf('{'))) as Json & { taskId: string };
    expect(result.state).toBe('completed');
    expect(result.artifacts).toEqual([{ name: 'echo', parts: [{ text: 'hello from a' }] }]);
    const after = await tasksOf('b');
    expect(after.length).toBe(before + 1);
    expect(after.map((one) => one.id)).toContain(result.taskId);
  });

  it('the model reads a remote task by its id without sending anything', async () => {
    const first = await send('a', 'again');
    const answer = first.artifacts?.[0]?.parts[0]?.text ?? '';
    const { taskId } = JSON.parse(answer.slice(answer.indexOf('{'))) as { taskId: string };
    const before = (await tasksOf('b')).length;
    const read = await send('ask', JSON.stringify({ taskId }));
    const text = read.artifacts?.[0]?.parts[0]?.text ?? '';
    expect(text).toContain(`"taskId":"${taskId}"`);
    expect(text).toContain('"state":"completed"');
    expect((await tasksOf('b')).length).toBe(before);
  });
});

describe('a retried delegated step reaches the same remote task', () => {
  afterAll(() => disarmFailpoints());

  it('the executor stops right after recording b’s task; the reaper queues the run again, it reads that task: one task at b', async () => {
    armFailpoints('executor.afterDelegationHeld=#1');
    const before = (await tasksOf('b')).length;
    const accepted = (
      await call('a', 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'crash while waiting' }] },
        configuration: { returnImmediately: true },
      })
    )?.task as { id: string };
    const task = await settled('a', accepted.id);
    expect(failpointCounts()['executor.afterDelegationHeld']?.faults).toBe(1);
    expect(task?.status.state).toBe('TASK_STATE_COMPLETED');
    const answer = toolAnswerOf(task);
    expect(answer.state).toBe('completed');
    const after = await tasksOf('b');
    expect(after.length).toBe(before + 1);
    expect(after.map((one) => one.id)).toContain(answer.taskId);
  });
});

describe('a remote task that outlives the wait', () => {
  it('c’s run waits (RUNNING, its state on the row) and is queued again by the reaper; it reads the settled task: one task at slow', async () => {
    const before = (await tasksOf('slow')).length;
    const accepted = (
      await call('c', 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'park' }] },
        configuration: { returnImmediately: true },
      })
    )?.task as { id: string };
    const task = await settled('c', accepted.id);
    expect(task?.status.state).toBe('TASK_STATE_COMPLETED');
    // `waitSeconds: 0`: the call never waited in place, so a completed answer was read after the
    // run was queued again.
    const answer = toolAnswerOf(task);
    expect(answer.state).toBe('completed');
    expect(answer.artifacts).toEqual([{ name: 'echo', parts: [{ text: 'take your time' }] }]);
    const after = await tasksOf('slow');
    expect(after.length).toBe(before + 1);
    expect(after.map((one) => one.id)).toContain(answer.taskId);
  });
});

/** The user messages a remote task holds, oldest first (its history, as its agent kept it). */
const userMessagesOf = async (agent: string, id: string) => {
  const task = (await call(agent, 'GetTask', { id, historyLength: 100 })) as Json & {
    history?: { messageId: string; role: string; parts: { text?: string }[] }[];
  };
  return (task.history ?? []).filter((message) => message.role === 'ROLE_USER');
};

const delegateToQuiz = async () => {
  const accepted = (
    await call('d', 'SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'take the quiz' }] },
      configuration: { returnImmediately: true },
    })
  )?.task as { id: string };
  return settled('d', accepted.id);
};

/** What d's run must end with: quiz's one task, completed, holding the question's answer. */
const expectQuizAnswered = async (task: Awaited<ReturnType<typeof delegateToQuiz>>, before: number) => {
  expect(task?.status.state).toBe('TASK_STATE_COMPLETED');
  const answer = toolAnswerOf(task);
  expect(answer.state).toBe('completed');
  expect(answer.artifacts).toEqual([{ name: 'answer', parts: [{ text: 'start the quiz → blue' }] }]);
  const after = await tasksOf('quiz');
  expect(after.length).toBe(before + 1);
  expect(after.map((one) => one.id)).toContain(answer.taskId);
  // Both messages reached that one task, each once, with ids derived from d's run and step.
  const asked = await userMessagesOf('quiz', answer.taskId);
  expect(asked.map((message) => message.parts[0]?.text)).toEqual(['start the quiz', 'blue']);
  expect(asked.every((message) => /^dlg-[0-9a-f]{32}$/.test(message.messageId))).toBe(true);
  expect(new Set(asked.map((message) => message.messageId)).size).toBe(2);
};

describe('a remote agent that asks for input', () => {
  afterAll(() => disarmFailpoints());

  it('quiz answers INPUT_REQUIRED; d’s model reads the question and answers it on the same remote task; d completes with quiz’s answer', async () => {
    const before = (await tasksOf('quiz')).length;
    await expectQuizAnswered(await delegateToQuiz(), before);
  });

  it('quiz itself: the first message of a task gets the question, the next one on that task completes it', async () => {
    const asked = (
      await call('quiz', 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'q' }] },
      })
    )?.task as Json & { id: string; status: { state: string; message?: { parts: { text: string }[] } } };
    expect(asked.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(asked.status.message?.parts[0]?.text).toBe(askQuestion);
    const answered = (
      await call('quiz', 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', taskId: asked.id, parts: [{ text: 'a' }] },
      })
    )?.task as Json & { id: string; status: { state: string }; artifacts?: { parts: { text: string }[] }[] };
    expect(answered.id).toBe(asked.id);
    expect(answered.status.state).toBe('TASK_STATE_COMPLETED');
    expect(answered.artifacts?.[0]?.parts[0]?.text).toBe('q → a');
  });

  for (const nth of [1, 2]) {
    it(`the executor stops right after recording quiz’s task at the ${nth === 1 ? 'first message' : 'answer'}; the reaper queues the run again, it reads that task: one task at quiz, each message once`, async () => {
      armFailpoints(`executor.afterDelegationHeld=#${nth}`);
      const before = (await tasksOf('quiz')).length;
      const task = await delegateToQuiz();
      expect(failpointCounts()['executor.afterDelegationHeld']?.faults).toBe(1);
      await expectQuizAnswered(task, before);
      disarmFailpoints();
    });
  }
});
