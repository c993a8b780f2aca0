import { randomUUID } from 'node:crypto';
import {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  SendMessageRequest,
  Task,
  TaskState,
} from '@a2a-js/sdk';
import { type Client, ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drain, rpc } from './sse.ts';
import {
  type ConformanceStack,
  errorInfoOf,
  type JsonObject,
  startConformanceStack,
  stateOf,
  taskOf,
  violatedFields,
} from './support.ts';

/**
 * The core requirements of the A2A v1.0 TCK (docs/protocol.md §3, §4, §6, §10, §11, §13.3, §13.4) against
 * the `tck` profile: send, get, list, cancel, execution modes, multi-turn, history and the
 * artifact scenarios. Raw HTTP, and the official @a2a-js/sdk client where it is natural.
 */

let sut: ConformanceStack;
let client: Client;

beforeAll(async () => {
  sut = await startConformanceStack('conf-core');
  // The client reads the tck profile's card and posts to the interface URL it names.
  client = await new ClientFactory().createFromUrl(
    `${sut.baseUrl}/agents/tck/.well-known/agent-card.json`,
    '',
  );
});
afterAll(async () => {
  await sut?.stop();
});

const sdkSend = (messageId: string, configuration?: JsonObject) =>
  client.sendMessage(
    SendMessageRequest.fromJSON({
      message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
      ...(configuration ? { configuration } : {}),
    }),
  );

const getTask = (id: string, historyLength?: number) =>
  sut.rpc('GetTask', { id, ...(historyLength === undefined ? {} : { historyLength }) });

const inputRequired = async () => {
  const task = taskOf(await sut.send('tck-input-required'));
  expect(stateOf(task)).toBe('TASK_STATE_INPUT_REQUIRED');
  return task;
};

describe('SendMessage', () => {
  it('CORE-SEND-001: a message creates a task with server-generated ids and answers {"task": …}', async () => {
    const reply = await sut.send('tck-complete-task');
    const task = taskOf(reply);
    expect(task.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(task.contextId).toMatch(/^[0-9a-f-]{36}$/);
    expect(stateOf(task)).toBe('TASK_STATE_COMPLETED');
    expect((task.status.message as JsonObject).parts).toEqual([{ text: 'Hello from TCK' }]);
    // The official client reads the same answer as a Task.
    const viaSdk = (await sdkSend(`tck-complete-task-${randomUUID()}`)) as Task;
    expect(viaSdk.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('CORE-SEND-002: invalid messages are refused with -32602 naming the field', async () => {
    const cases: [JsonObject, string][] = [
      [{ message: { role: 'ROLE_USER', parts: [{ text: 'x' }] } }, 'message.messageId'],
      [{ message: { messageId: 'm', role: 'ROLE_USER', parts: [] } }, 'message.parts'],
      [
        { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'a', url: 'https://x.example' }] } },
        'message.parts[0]',
      ],
      [{ message: { messageId: 'm', role: 'ROLE_ROBOT', parts: [{ text: 'x' }] } }, 'message.role'],
    ];
    for (const [params, field] of cases) {
      const reply = await sut.rpc('SendMessage', params);
      expect(reply.error?.code, field).toBe(-32602);
      expect(violatedFields(reply.error)).toContain(field);
    }
  });

  it('CORE-SEND-003: a part whose media type the agent does not accept → -32005 (tck-send-003)', async () => {
    const reply = await sut.send('tck-send-003', {
      message: { parts: [{ raw: 'dGNr', mediaType: 'application/x-unsupported-tck-type' }] },
    });
    expect(reply.error?.code).toBe(-32005);
    expect(errorInfoOf(reply.error)).toMatchObject({
      reason: 'CONTENT_TYPE_NOT_SUPPORTED',
      domain: 'a2a-protocol.org',
    });
    // Accepted media types pass: text and JSON data are in the tck profile's input modes.
    const ok = await sut.send('tck-complete-task', {
      message: { parts: [{ data: { a: 1 }, mediaType: 'application/json' }, { text: 'x' }] },
    });
    expect(stateOf(taskOf(ok))).toBe('TASK_STATE_COMPLETED');
  });

  it('CORE-ERR-002: SendMessage with empty params is an error (-32602 naming message)', async () => {
    const reply = await sut.rpc('SendMessage', {});
    expect(reply.error?.code).toBe(-32602);
    expect(violatedFields(reply.error)).toEqual(['message']);
    const noParams = await sut.rpc('SendMessage');
    expect(noParams.error?.code).toBe(-32602);
  });
});

describe('GetTask', () => {
  it('CORE-GET-001: returns the task as SendMessage answered it', async () => {
    const sent = taskOf(await sut.send('tck-artifact-text'));
    const got = await getTask(sent.id);
    expect(got.result).toEqual(sent);
    const viaSdk = await client.getTask(GetTaskRequest.fromJSON({ id: sent.id }));
    expect(Task.toJSON(viaSdk)).toEqual(sent);
  });

  it('CORE-GET-002: an unknown id → -32001 TaskNotFound', async () => {
    const reply = await getTask(randomUUID());
    expect(reply.error?.code).toBe(-32001);
    expect(errorInfoOf(reply.error)?.reason).toBe('TASK_NOT_FOUND');
  });
});

describe('execution modes', () => {
  it('CORE-EXECUTION-MODE-001: blocking by default waits for a terminal or interrupted state', async () => {
    expect(stateOf(taskOf(await sut.send('tck-artifact-data')))).toBe('TASK_STATE_COMPLETED');
    expect(stateOf(taskOf(await sut.send('tck-input-required')))).toBe('TASK_STATE_INPUT_REQUIRED');
  });

  it('CORE-EXECUTION-MODE-002: returnImmediately answers an in-progress task; GetTask continues it', async () => {
    for (const prefix of ['tck-complete-task', 'tck-artifact-text']) {
      const task = taskOf(await sut.send(prefix, { configuration: { returnImmediately: true } }));
      expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(stateOf(task));
      // I-RYW: the returned task is visible at once.
      expect((await getTask(task.id)).result.id).toBe(task.id);
      await expect.poll(async () => stateOf((await getTask(task.id)).result)).toBe('TASK_STATE_COMPLETED');
    }
  });

  it('the blocking cap (blockingCapSeconds): after it the current task is returned and GetTask continues it', async () => {
    const reply = await sut.send('slow', { profile: 'slow' });
    const task = taskOf(reply);
    expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(stateOf(task));
    const get = () => sut.rpc('GetTask', { id: task.id }, { profile: 'slow' });
    await expect
      .poll(async () => stateOf((await get()).result), { timeout: 20_000, interval: 250 })
      .toBe('TASK_STATE_COMPLETED');
    const done = (await get()).result;
    expect((done.artifacts as { parts: unknown[] }[])[0]?.parts).toEqual([
      { text: 'Hello from the conformance suite' },
    ]);
  });
});

describe('ListTasks', () => {
  const list = (params: JsonObject = {}) => sut.rpc('ListTasks', params);

  it('CORE-LIST-001: lists only what the caller may see, with all four response fields, and validates params', async () => {
    const own = taskOf(await sut.send('tck-complete-task'));
    const reply = await list({ pageSize: 100 });
    expect(Object.keys(reply.result).sort()).toEqual(['nextPageToken', 'pageSize', 'tasks', 'totalSize']);
    expect((reply.result.tasks as { id: string }[]).map((task) => task.id)).toContain(own.id);
    expect(reply.result.pageSize).toBe(100);
    expect(reply.result.totalSize).toBeGreaterThanOrEqual((reply.result.tasks as unknown[]).length);
    const invalid: [JsonObject, string][] = [
      [{ pageSize: 0 }, 'pageSize'],
      [{ pageSize: 101 }, 'pageSize'],
      [{ historyLength: -1 }, 'historyLength'],
      [{ status: 'TASK_STATE_RUNNING' }, 'status'],
      [{ statusTimestampAfter: 'yesterday' }, 'statusTimestampAfter'],
      [{ pageToken: 'not-a-token' }, 'pageToken'],
    ];
    for (const [params, field] of invalid) {
      const bad = await list(params);
      expect(bad.error?.code, field).toBe(-32602);
      expect(violatedFields(bad.error)).toEqual([field]);
    }
  });

  it('CORE-LIST-002: cursor pagination returns every task once (snake_case keys accepted)', async () => {
    const contextId = randomUUID();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(taskOf(await sut.send('tck-complete-task', { message: { contextId } })).id);
    const seen: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const reply = await list({
        context_id: contextId,
        page_size: 2,
        ...(token ? { page_token: token } : {}),
      });
      expect(reply.result.totalSize).toBe(5);
      expect(reply.result.pageSize).toBe(2);
      seen.push(...(reply.result.tasks as { id: string }[]).map((task) => task.id));
      token = reply.result.nextPageToken as string;
      pages++;
    } while (token !== '' && pages < 10);
    expect(pages).toBe(3);
    expect([...seen].sort()).toEqual([...ids].sort());
  });

  it('CORE-LIST-003: tasks are sorted by status timestamp, newest first', async () => {
    const contextId = randomUUID();
    for (let i = 0; i < 3; i++) await sut.send('tck-complete-task', { message: { contextId } });
    const tasks = (await list({ contextId })).result.tasks as { status: { timestamp: string } }[];
    const timestamps = tasks.map((task) => task.status.timestamp);
    expect(timestamps).toHaveLength(3);
    expect(timestamps).toEqual([...timestamps].sort().reverse());
  });

  it('CORE-LIST-004: nextPageToken is present on every page and "" on the last', async () => {
    const contextId = randomUUID();
    await sut.send('tck-complete-task', { message: { contextId } });
    await sut.send('tck-complete-task', { message: { contextId } });
    const first = await list({ contextId, pageSize: 1 });
    expect(typeof first.result.nextPageToken).toBe('string');
    expect(first.result.nextPageToken).not.toBe('');
    const last = await list({ contextId, pageSize: 1, pageToken: first.result.nextPageToken });
    expect(last.result.nextPageToken).toBe('');
    const whole = await list({ contextId });
    expect(whole.result).toMatchObject({ nextPageToken: '', totalSize: 2, pageSize: 50 });
  });

  it('CORE-LIST-005: artifacts are omitted unless includeArtifacts is true; filters by status and time', async () => {
    const contextId = randomUUID();
    const done = taskOf(await sut.send('tck-artifact-text', { message: { contextId } }));
    const waiting = taskOf(await sut.send('tck-input-required', { message: { contextId } }));
    const plain = (await list({ contextId })).result.tasks as JsonObject[];
    expect(plain.every((task) => !('artifacts' in task))).toBe(true);
    const full = (await list({ contextId, includeArtifacts: true })).result.tasks as JsonObject[];
    expect(full.find((task) => task.id === done.id)?.artifacts).toHaveLength(1);
    expect(full.find((task) => task.id === waiting.id)?.artifacts).toEqual([]);
    const onlyWaiting = await list({ contextId, status: 'TASK_STATE_INPUT_REQUIRED' });
    expect((onlyWaiting.result.tasks as JsonObject[]).map((task) => task.id)).toEqual([waiting.id]);
    expect(onlyWaiting.result.totalSize).toBe(1);
    const after = (waiting.status as { timestamp: string }).timestamp;
    const recent = await list({ contextId, statusTimestampAfter: after });
    expect((recent.result.tasks as JsonObject[]).map((task) => task.id)).toEqual([waiting.id]);
    // The official client reads the same page.
    const viaSdk = await client.listTasks(ListTasksRequest.fromJSON({ contextId }));
    expect(viaSdk.tasks.map((task) => task.id).sort()).toEqual([done.id, waiting.id].sort());
  });
});

describe('CancelTask', () => {
  it('CORE-CANCEL-001: an INPUT_REQUIRED task is canceled, idempotently, and GetTask agrees', async () => {
    const task = await inputRequired();
    const canceled = await sut.rpc('CancelTask', { id: task.id });
    expect(stateOf(canceled.result)).toBe('TASK_STATE_CANCELED');
    expect(((canceled.result.status as JsonObject).message as JsonObject).parts).toEqual([
      { text: 'Task canceled by the client.' },
    ]);
    expect(stateOf((await getTask(task.id)).result)).toBe('TASK_STATE_CANCELED');
    const again = await client.cancelTask(CancelTaskRequest.fromJSON({ id: task.id }));
    expect(again.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // A follow-up to the canceled task is refused: terminal tasks are immutable.
    const followUp = await sut.send('tck-complete-task', { message: { taskId: task.id } });
    expect(followUp.error?.code).toBe(-32004);
  });

  it('CORE-CANCEL-002: a COMPLETED task cannot be canceled (-32002 TASK_NOT_CANCELABLE)', async () => {
    const task = taskOf(await sut.send('tck-complete-task'));
    const reply = await sut.rpc('CancelTask', { id: task.id });
    expect(reply.error?.code).toBe(-32002);
    expect(errorInfoOf(reply.error)).toMatchObject({
      reason: 'TASK_NOT_CANCELABLE',
      domain: 'a2a-protocol.org',
    });
    expect(stateOf((await getTask(task.id)).result)).toBe('TASK_STATE_COMPLETED');
  });

  it('CORE-CANCEL-003: an unknown id → -32001', async () => {
    expect((await sut.rpc('CancelTask', { id: randomUUID() })).error?.code).toBe(-32001);
  });
});

describe('multi-turn', () => {
  it('CORE-MULTI-001: without a contextId the server generates one', async () => {
    const task = taskOf(await sut.send('tck-complete-task'));
    expect(task.contextId).toEqual(expect.any(String));
    expect(task.contextId).not.toBe('');
  });

  it('CORE-MULTI-001a: the generated contextId is on the task and its messages', async () => {
    const task = taskOf(await sut.send('tck-complete-task'));
    const history = (await getTask(task.id)).result.history as JsonObject[];
    expect(history.length).toBeGreaterThan(0);
    expect(
      history.every((message) => message.contextId === task.contextId && message.taskId === task.id),
    ).toBe(true);
  });

  it('CORE-MULTI-002: a client contextId is accepted and kept', async () => {
    const contextId = `ctx-${randomUUID()}`;
    const task = taskOf(await sut.send('tck-complete-task', { message: { contextId } }));
    expect(task.contextId).toBe(contextId);
  });

  it('CORE-MULTI-002a: an unacceptable contextId is rejected, never replaced', async () => {
    const reply = await sut.send('tck-complete-task', { message: { contextId: 42 } });
    expect(reply.error?.code).toBe(-32602);
    expect(violatedFields(reply.error)).toEqual(['message.contextId']);
  });

  it('CORE-MULTI-003: a follow-up with the taskId continues an INPUT_REQUIRED task to COMPLETED', async () => {
    const task = await inputRequired();
    const done = taskOf(
      await sut.send('tck-complete-task', { message: { taskId: task.id, contextId: task.contextId } }),
    );
    expect(done.id).toBe(task.id);
    expect(stateOf(done)).toBe('TASK_STATE_COMPLETED');
  });

  it('a follow-up moves the task on to WORKING, never back to SUBMITTED (decision 0050)', async () => {
    const task = await inputRequired();
    const answer = taskOf(
      await sut.send('tck-complete-task', {
        message: { taskId: task.id },
        configuration: { returnImmediately: true },
      }),
    );
    // returnImmediately answers the revision the follow-up committed: WORKING, not SUBMITTED.
    expect(stateOf(answer)).toBe('TASK_STATE_WORKING');
    // The run's end as an event, not a polling budget: a subscription closes at the terminal state
    // (or answers -32004 when the task is there already).
    const subscription = await rpc(sut.agentUrl(), 'SubscribeToTask', { id: task.id });
    if (subscription.kind === 'sse') await drain(subscription.frames);
    expect(stateOf((await getTask(task.id)).result)).toBe('TASK_STATE_COMPLETED');
  });

  it('CORE-MULTI-004: a taskId that does not exist → -32001', async () => {
    const reply = await sut.send('tck-complete-task', { message: { taskId: randomUUID() } });
    expect(reply.error?.code).toBe(-32001);
  });

  it('CORE-MULTI-005: with only a taskId the contextId is inferred', async () => {
    const task = await inputRequired();
    const done = taskOf(await sut.send('tck-complete-task', { message: { taskId: task.id } }));
    expect(done.contextId).toBe(task.contextId);
    const history = (await getTask(task.id)).result.history as JsonObject[];
    expect(history.every((message) => message.contextId === task.contextId)).toBe(true);
  });

  it('CORE-MULTI-006: a contextId that does not match the task → -32602', async () => {
    const task = await inputRequired();
    const reply = await sut.send('tck-complete-task', {
      message: { taskId: task.id, contextId: randomUUID() },
    });
    expect(reply.error?.code).toBe(-32602);
    expect(violatedFields(reply.error)).toEqual(['message.contextId']);
    expect(stateOf((await getTask(task.id)).result)).toBe('TASK_STATE_INPUT_REQUIRED');
  });
});

describe('history', () => {
  const conversation = async () => {
    const task = await inputRequired();
    await sut.send('tck-complete-task', { message: { taskId: task.id } });
    return task;
  };

  it('CORE-HIST-001: historyLength 0 on GetTask omits history', async () => {
    const task = await conversation();
    expect((await getTask(task.id, 0)).result).not.toHaveProperty('history');
  });

  it('CORE-HIST-002: historyLength 0 on SendMessage omits history', async () => {
    const task = taskOf(await sut.send('tck-complete-task', { configuration: { historyLength: 0 } }));
    expect(task).not.toHaveProperty('history');
  });

  it('CORE-HIST-003: history never exceeds historyLength, and keeps the most recent messages', async () => {
    const task = await conversation();
    const all = (await getTask(task.id)).result.history as JsonObject[];
    expect(all).toHaveLength(4);
    for (const n of [1, 2, 3]) {
      const cut = (await getTask(task.id, n)).result.history as JsonObject[];
      expect(cut).toEqual(all.slice(-n));
    }
    const sent = taskOf(await sut.send('tck-complete-task', { configuration: { historyLength: 1 } }));
    expect(sent.history as unknown[]).toHaveLength(1);
  });

  it('CORE-HIST-004: GetTask with historyLength 10 returns a non-empty history', async () => {
    const task = taskOf(await sut.send('tck-complete-task'));
    expect(((await getTask(task.id, 10)).result.history as unknown[]).length).toBeGreaterThan(0);
  });

  it('CORE-HIST-005: history is chronological (user, agent, user, agent)', async () => {
    const task = await conversation();
    const history = (await getTask(task.id)).result.history as JsonObject[];
    expect(history.map((message) => message.role)).toEqual([
      'ROLE_USER',
      'ROLE_AGENT',
      'ROLE_USER',
      'ROLE_AGENT',
    ]);
  });

  it('CORE-HIST-006: history holds what was exchanged', async () => {
    const messageId = `tck-complete-task-${randomUUID()}`;
    const task = taskOf(
      await sut.rpc('SendMessage', {
        message: { messageId, role: 'ROLE_USER', parts: [{ text: 'exactly these words' }] },
      }),
    );
    const history = (await getTask(task.id)).result.history as JsonObject[];
    expect(history[0]).toMatchObject({
      messageId,
      role: 'ROLE_USER',
      parts: [{ text: 'exactly these words' }],
    });
    expect(history[1]).toMatchObject({ role: 'ROLE_AGENT', parts: [{ text: 'Hello from TCK' }] });
  });
});

describe('artifacts (TCK test_artifacts.py)', () => {
  const artifactOf = async (prefix: string) => {
    const task = taskOf(await sut.send(prefix));
    expect(stateOf(task)).toBe('TASK_STATE_COMPLETED');
    const artifacts = task.artifacts as { artifactId: string; parts: JsonObject[] }[];
    expect(artifacts).toHaveLength(1);
    expect(artifacts[0]?.artifactId).toEqual(expect.any(String));
    return artifacts[0]!.parts;
  };

  it('tck-artifact-text: a text artifact', async () => {
    expect(await artifactOf('tck-artifact-text')).toEqual([{ text: 'Generated text content' }]);
  });

  it('tck-artifact-file: a raw file part with filename and media type', async () => {
    const [part] = await artifactOf('tck-artifact-file');
    expect(part).toMatchObject({ filename: 'output.txt', mediaType: 'text/plain' });
    expect(Buffer.from(part?.raw as string, 'base64').toString()).toBe('Generated file content');
  });

  it('tck-artifact-file-url: a file part by URL', async () => {
    expect(await artifactOf('tck-artifact-file-url')).toEqual([
      { url: 'https://example.com/output.txt', filename: 'output.txt', mediaType: 'text/plain' },
    ]);
  });

  it('tck-artifact-data: a data part', async () => {
    expect(await artifactOf('tck-artifact-data')).toEqual([
      { data: { key: 'value', count: 42 }, mediaType: 'application/json' },
    ]);
  });

  it('tck-message-response: the agent answers with a Message, not a Task', async () => {
    const reply = await sut.send('tck-message-response');
    expect(reply.result).not.toHaveProperty('task');
    const message = reply.result.message as JsonObject;
    expect(message).toMatchObject({ role: 'ROLE_AGENT', parts: [{ text: 'Direct message response' }] });
    expect(message.messageId).toEqual(expect.any(String));
    expect(message.contextId).toEqual(expect.any(String));
    // The official client sees a Message too.
    const viaSdk = await sdkSend(`tck-message-response-${randomUUID()}`);
    expect('messageId' in viaSdk).toBe(true);
  });
});
