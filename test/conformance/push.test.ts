import { randomUUID } from 'node:crypto';
import { StreamResponse } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { type ConformanceStack, type JsonObject, startConformanceStack, userMessage } from './support.ts';

/**
 * Push notification configs and webhook delivery (docs/protocol.md §7, §13.4 PUSH-*), against the local
 * stack with a real `node:http` receiver on loopback (the TCK's receiver is plain
 * `http://localhost`, which local mode allows).
 */

let sut: ConformanceStack;
let receiver: WebhookReceiver;
let completedTaskId: string;

const taskOf = (result: JsonObject): JsonObject & { id: string; status: { state: string } } =>
  (result.task ?? result) as JsonObject & { id: string; status: { state: string } };

beforeAll(async () => {
  sut = await startConformanceStack('conf-push');
  receiver = await startWebhookReceiver();
  completedTaskId = taskOf((await sut.send('tck-complete-task')).result).id;
});
afterAll(async () => {
  await receiver?.close();
  await sut?.stop();
});

describe('push config CRUD', () => {
  it('PUSH-CREATE-001: creates a config on a (completed) task and assigns an id', async () => {
    const reply = await sut.rpc('CreateTaskPushNotificationConfig', {
      taskId: completedTaskId,
      url: `${receiver.url}/create-001`,
    });
    expect(reply.error).toBeUndefined();
    expect(reply.result).toEqual({
      id: expect.any(String),
      taskId: completedTaskId,
      url: `${receiver.url}/create-001`,
    });
    expect(String(reply.result.id).length).toBeGreaterThan(0);
  });

  it('PUSH-CREATE-002: keeps a client id, the token and the authentication (flat v1.0 shape)', async () => {
    const id = `cfg-${randomUUID()}`;
    const params = {
      taskId: completedTaskId,
      id,
      url: `${receiver.url}/create-002`,
      token: 'opaque-token',
      authentication: { scheme: 'Bearer', credentials: 'secret-credentials' },
    };
    const reply = await sut.rpc('CreateTaskPushNotificationConfig', params);
    expect(reply.result).toEqual(params);
    // snake_case keys are accepted too (docs/protocol.md §2).
    const snake = await sut.rpc('CreateTaskPushNotificationConfig', {
      task_id: completedTaskId,
      url: `${receiver.url}/snake`,
    });
    expect(snake.result.taskId).toBe(completedTaskId);
  });

  it('refuses URLs that are not http(s), carry user:password, or point inside (metadata endpoint)', async () => {
    for (const url of [
      'ftp://example.com/hook',
      'https://user:pass@example.com/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::ffff:10.0.0.1]/hook',
      'http://0xa9.0xfe.0xa9.0xfe/',
    ]) {
      const reply = await sut.rpc('CreateTaskPushNotificationConfig', { taskId: completedTaskId, url });
      expect(reply.error?.code, url).toBe(-32602);
    }
    const inline = await sut.send('tck-complete-task', {
      configuration: { taskPushNotificationConfig: { url: 'http://10.1.2.3/hook' } },
    });
    expect(inline.error?.code).toBe(-32602);
    expect(JSON.stringify(inline.error?.data)).toContain('configuration.taskPushNotificationConfig.url');
  });

  it('PUSH-GET-001: returns a stored config', async () => {
    const created = await sut.rpc('CreateTaskPushNotificationConfig', {
      taskId: completedTaskId,
      url: `${receiver.url}/get-001`,
      authentication: { scheme: 'Basic', credentials: 'dXNlcjpwYXNz' },
    });
    const reply = await sut.rpc('GetTaskPushNotificationConfig', {
      taskId: completedTaskId,
      id: created.result.id,
    });
    expect(reply.result).toEqual(created.result);
  });

  it('PUSH-GET-002: an unknown config or task → -32001', async () => {
    const missingConfig = await sut.rpc('GetTaskPushNotificationConfig', {
      taskId: completedTaskId,
      id: 'nope',
    });
    expect(missingConfig.error?.code).toBe(-32001);
    const missingTask = await sut.rpc('GetTaskPushNotificationConfig', { taskId: randomUUID(), id: 'nope' });
    expect(missingTask.error?.code).toBe(-32001);
  });

  it('PUSH-LIST-001: lists the configs of a task, with pagination', async () => {
    const taskId = taskOf((await sut.send('tck-complete-task')).result).id;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await sut.rpc('CreateTaskPushNotificationConfig', {
        taskId,
        url: `${receiver.url}/l${i}`,
      });
      ids.push(created.result.id as string);
    }
    const all = await sut.rpc('ListTaskPushNotificationConfigs', { taskId });
    expect((all.result.configs as JsonObject[]).map((config) => config.id).sort()).toEqual([...ids].sort());
    expect(all.result.nextPageToken).toBeUndefined();
    const first = await sut.rpc('ListTaskPushNotificationConfigs', { taskId, pageSize: 2 });
    expect(first.result.configs).toHaveLength(2);
    const second = await sut.rpc('ListTaskPushNotificationConfigs', {
      taskId,
      pageSize: 2,
      pageToken: first.result.nextPageToken,
    });
    expect(second.result.configs).toHaveLength(1);
    expect(second.result.nextPageToken).toBeUndefined();
    const bad = await sut.rpc('ListTaskPushNotificationConfigs', { taskId, pageToken: '!!' });
    expect(bad.error?.code).toBe(-32602);
  });

  it('PUSH-DEL-001: deletes a config; it is gone afterwards', async () => {
    const created = await sut.rpc('CreateTaskPushNotificationConfig', {
      taskId: completedTaskId,
      url: `${receiver.url}/del-001`,
    });
    const reply = await sut.rpc('DeleteTaskPushNotificationConfig', {
      taskId: completedTaskId,
      id: created.result.id,
    });
    expect(reply.error).toBeUndefined();
    expect(reply.body.result).toBeNull();
    const after = await sut.rpc('GetTaskPushNotificationConfig', {
      taskId: completedTaskId,
      id: created.result.id,
    });
    expect(after.error?.code).toBe(-32001);
  });

  it('PUSH-DEL-002: deleting twice is not an error (idempotent)', async () => {
    const created = await sut.rpc('CreateTaskPushNotificationConfig', {
      taskId: completedTaskId,
      url: `${receiver.url}/del-002`,
    });
    for (let i = 0; i < 2; i++) {
      const reply = await sut.rpc('DeleteTaskPushNotificationConfig', {
        taskId: completedTaskId,
        id: created.result.id,
      });
      expect(reply.error).toBeUndefined();
    }
  });
});

describe('webhook delivery', () => {
  it('PUSH-DELIVER-001/002/003: the TCK flow — inline config, follow-up, a POST with the exact Authorization and a StreamResponse body', async () => {
    const credentials = `tck-test-token-${randomUUID()}`;
    const path = `/webhook-${randomUUID()}`;
    const first = await sut.send('tck-input-required', {
      configuration: {
        taskPushNotificationConfig: {
          url: `${receiver.url}${path}`,
          authentication: { scheme: 'Bearer', credentials },
        },
      },
    });
    const task = taskOf(first.result);
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const followUp = await sut.send('tck-complete-task', { message: { taskId: task.id } });
    expect(taskOf(followUp.result).status.state).toBe('TASK_STATE_COMPLETED');

    const mine = () => receiver.posts.filter((post) => post.path === path);
    const isCompleted = (body: unknown) =>
      (body as { statusUpdate?: { status?: { state?: string } } }).statusUpdate?.status?.state ===
      'TASK_STATE_COMPLETED';
    await receiver.waitFor(() => mine().some((post) => isCompleted(post.body)), 15_000);
    for (const post of mine()) {
      // DELIVER-001: exactly the configured scheme and credentials.
      expect(post.headers.authorization).toBe(`Bearer ${credentials}`);
      expect(post.headers['content-type']).toBe('application/a2a+json');
      expect(post.headers['x-a2a-notification-token']).toBeUndefined();
      // DELIVER-002: a valid v1.0 StreamResponse (exactly one payload) for this task.
      const body = post.body as JsonObject;
      expect(Object.keys(body)).toHaveLength(1);
      const parsed = StreamResponse.fromJSON(body);
      expect(parsed.payload).toBeDefined();
      const event = Object.values(body)[0] as { taskId: string; contextId: string };
      expect(event.taskId).toBe(task.id);
      expect(event.contextId).toBe(task.contextId);
    }
    // DELIVER-003: states in revision order, the interrupted one before the terminal one.
    const states = mine()
      .map(
        (post) => (post.body as { statusUpdate?: { status: { state: string } } }).statusUpdate?.status.state,
      )
      .filter((state) => state !== undefined);
    const lastInput = states.lastIndexOf('TASK_STATE_INPUT_REQUIRED');
    expect(lastInput).toBeGreaterThanOrEqual(0);
    expect(states.indexOf('TASK_STATE_COMPLETED')).toBeGreaterThan(lastInput);
    // The follow-up moves the task on: WORKING once, never SUBMITTED again (decision 0050).
    expect(states.slice(lastInput)).toEqual([
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
  });

  it('an inline config on SendStreamingMessage is stored and delivered like one on SendMessage', async () => {
    const path = `/stream-inline-${randomUUID()}`;
    const response = await fetch(sut.agentUrl(), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendStreamingMessage',
        params: {
          message: userMessage('tck-complete-task'),
          configuration: {
            taskPushNotificationConfig: { url: `${receiver.url}${path}`, token: 'inline-stream' },
          },
        },
      }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const firstData = (await response.text()).split('\n').find((line) => line.startsWith('data:'));
    const taskId = (JSON.parse(firstData?.slice(5) ?? '{}') as { result?: { task?: { id?: string } } }).result
      ?.task?.id;
    expect(taskId).toEqual(expect.any(String));
    const configs = await sut.rpc('ListTaskPushNotificationConfigs', { taskId });
    expect((configs.result.configs as JsonObject[]).map((config) => config.url)).toEqual([
      `${receiver.url}${path}`,
    ]);
    await receiver.waitFor((posts) => posts.some((post) => post.path === path), 15_000);
    const post = receiver.posts.find((candidate) => candidate.path === path);
    expect(post?.headers['x-a2a-notification-token']).toBe('inline-stream');
  });

  it('sends the notification token header when a token is set, and nothing for a deleted config', async () => {
    const path = `/token-${randomUUID()}`;
    const deletedPath = `/deleted-${randomUUID()}`;
    const task = taskOf((await sut.send('tck-input-required')).result);
    await sut.rpc('CreateTaskPushNotificationConfig', {
      taskId: task.id,
      url: `${receiver.url}${path}`,
      token: 'client-token-1',
    });
    const doomed = await sut.rpc('CreateTaskPushNotificationConfig', {
      taskId: task.id,
      url: `${receiver.url}${deletedPath}`,
    });
    await sut.rpc('DeleteTaskPushNotificationConfig', { taskId: task.id, id: doomed.result.id });
    await sut.send('tck-complete-task', { message: { taskId: task.id } });
    await receiver.waitFor((posts) => posts.some((post) => post.path === path), 15_000);
    const post = receiver.posts.find((candidate) => candidate.path === path);
    expect(post?.headers['x-a2a-notification-token']).toBe('client-token-1');
    expect(post?.headers.authorization).toBeUndefined();
    expect(receiver.posts.some((candidate) => candidate.path === deletedPath)).toBe(false);
  });
});
