import { randomUUID } from 'node:crypto';
import { SendMessageRequest, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, RestTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConformanceStack, type JsonObject, startConformanceStack } from './support.ts';

/**
 * The HTTP+JSON binding (docs/protocol.md §14) against the local stack: every route of the proto
 * and its `/{tenant}/…` variant, errors as google.rpc.Status with the ErrorInfo and the HTTP status
 * the specification maps, SSE of bare StreamResponses with `id:` lines and Last-Event-ID resume,
 * and the official @a2a-js/sdk REST transport end to end.
 */

let sut: ConformanceStack;
let client: Client;

beforeAll(async () => {
  sut = await startConformanceStack('conf-http-json');
  // Only the REST transport: the client must pick the card's HTTP+JSON interface.
  client = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new RestTransportFactory()],
      preferredTransports: ['HTTP+JSON'],
    }),
  ).createFromUrl(`${sut.agentUrl('tck')}/.well-known/agent-card.json`, '');
});
afterAll(async () => {
  await sut?.stop();
});

interface Reply {
  readonly status: number;
  readonly contentType: string;
  readonly body: JsonObject;
  readonly text: string;
}

const call = async (
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> => {
  const response = await fetch(`${sut.agentUrl('tck')}${path}`, {
    method,
    headers: {
      'A2A-Version': '1.0',
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  return {
    status: response.status,
    contentType,
    text,
    body: contentType.includes('json') && text !== '' ? (JSON.parse(text) as JsonObject) : {},
  };
};

const message = (prefix: string, extra: JsonObject = {}) => ({
  messageId: `${prefix}-${randomUUID()}`,
  role: 'ROLE_USER',
  parts: [{ text: 'hi' }],
  ...extra,
});

const taskIn = (reply: Reply) => reply.body.task as JsonObject & { id: string; status: { state: string } };

/** The error Status of a reply, with its ErrorInfo reason. */
const statusOf = (reply: Reply) => {
  const error = reply.body.error as { code: number; status: string; message: string; details: JsonObject[] };
  return { ...error, reason: error.details.find((detail) => 'reason' in detail)?.reason };
};

interface Frame {
  readonly id?: string;
  readonly event?: string;
  readonly data: JsonObject;
}

/** An SSE answer's frames (the stream is read to its end). */
const framesOf = (text: string): Frame[] =>
  text
    .split('\n\n')
    .filter((block) => block.includes('data:'))
    .map((block) => {
      const lines = block.split('\n');
      const field = (name: string) =>
        lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
      return {
        id: field('id'),
        event: field('event'),
        data: JSON.parse(field('data') ?? '{}') as JsonObject,
      };
    });

describe('HTTP+JSON routes', () => {
  it('POST /message:send → the task; GET /tasks/{id} and its tenant variant agree', async () => {
    const sent = await call('POST', '/message:send', { message: message('tck-artifact-text') });
    expect(sent.status).toBe(200);
    expect(sent.contentType).toMatch(/^application\/json/);
    const task = taskIn(sent);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    for (const path of [`/tasks/${task.id}`, `/acme/tasks/${task.id}`]) {
      const got = await call('GET', `${path}?historyLength=1`);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ id: task.id, status: { state: 'TASK_STATE_COMPLETED' } });
      expect((got.body.history as unknown[]).length).toBe(1);
    }
    // application/a2a+json is accepted and, when asked for, sent.
    const a2aJson = await call('GET', `/tasks/${task.id}`, undefined, { Accept: 'application/a2a+json' });
    expect(a2aJson.contentType).toMatch(/^application\/a2a\+json/);
    const asA2aJson = await call(
      'POST',
      '/message:send',
      JSON.stringify({ message: message('tck-complete-task') }),
      {
        'Content-Type': 'application/a2a+json',
      },
    );
    expect(taskIn(asA2aJson).status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('GET /tasks lists with query parameters (numbers, booleans, short state names)', async () => {
    const contextId = randomUUID();
    await call('POST', '/message:send', { message: message('tck-artifact-text', { contextId }) });
    const listed = await call(
      'GET',
      `/tasks?contextId=${contextId}&pageSize=5&includeArtifacts=true&status=completed`,
    );
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ pageSize: 5, totalSize: 1, nextPageToken: '' });
    const [task] = listed.body.tasks as JsonObject[];
    expect(task?.artifacts).toEqual(expect.any(Array));
    const none = await call('GET', `/tasks?contextId=${contextId}&status=TASK_STATE_WORKING`);
    expect(none.body).toMatchObject({ tasks: [], totalSize: 0 });
    expect((await call('GET', '/tasks?pageSize=500')).status).toBe(400);
  });

  it('POST /tasks/{id}:cancel cancels; again is idempotent; a completed task → 409 TASK_NOT_CANCELABLE', async () => {
    const open = taskIn(await call('POST', '/message:send', { message: message('tck-input-required') }));
    expect(open.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const canceled = await call('POST', `/tasks/${open.id}:cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ id: open.id, status: { state: 'TASK_STATE_CANCELED' } });
    expect((await call('POST', `/t1/tasks/${open.id}:cancel`, {})).status).toBe(200);
    const done = taskIn(await call('POST', '/message:send', { message: message('tck-complete-task') }));
    const refused = await call('POST', `/tasks/${done.id}:cancel`);
    expect(refused.status).toBe(409);
    expect(statusOf(refused)).toMatchObject({
      code: 409,
      status: 'FAILED_PRECONDITION',
      reason: 'TASK_NOT_CANCELABLE',
    });
  });

  it('push configs: create, get, list, delete (→ {}), under the task and under a tenant', async () => {
    const open = taskIn(await call('POST', '/message:send', { message: message('tck-input-required') }));
    const base = `/tasks/${open.id}/pushNotificationConfigs`;
    const created = await call('POST', base, { url: 'https://hooks.example.com/a2a', token: 'tok' });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    expect(created.body).toMatchObject({ taskId: open.id, url: 'https://hooks.example.com/a2a' });
    expect((await call('GET', `${base}/${id}`)).body).toMatchObject({ id, taskId: open.id });
    expect((await call('GET', `/acme${base}`)).body).toMatchObject({
      configs: [expect.objectContaining({ id })],
    });
    const deleted = await call('DELETE', `${base}/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({});
    const gone = await call('GET', `${base}/${id}`);
    expect(gone.status).toBe(404);
    expect(statusOf(gone).reason).toBe('TASK_NOT_FOUND');
  });

  it('GET /extendedAgentCard without a declared card → 400 UNSUPPORTED_OPERATION', async () => {
    const reply = await call('GET', '/extendedAgentCard');
    expect(reply.status).toBe(400);
    expect(statusOf(reply)).toMatchObject({ status: 'UNIMPLEMENTED', reason: 'UNSUPPORTED_OPERATION' });
  });
});

describe('HTTP+JSON errors (google.rpc.Status, AIP-193)', () => {
  it('an unknown task → 404 NOT_FOUND with the ErrorInfo JSON-RPC carries', async () => {
    const reply = await call('GET', '/tasks/nope');
    expect(reply.status).toBe(404);
    expect(reply.contentType).toMatch(/^application\/json/);
    const status = statusOf(reply);
    expect(status).toMatchObject({ code: 404, status: 'NOT_FOUND', reason: 'TASK_NOT_FOUND' });
    expect(status.details[0]).toMatchObject({
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      domain: 'a2a-protocol.org',
    });
  });

  it('a wrong Content-Type → 415; an unsupported version → 400; bad JSON and bad params → 400', async () => {
    const wrongType = await call('POST', '/message:send', 'hello', { 'Content-Type': 'text/plain' });
    expect(wrongType.status).toBe(415);
    expect(statusOf(wrongType).reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
    const version = await call(
      'POST',
      '/message:send',
      { message: message('tck-complete-task') },
      { 'A2A-Version': '99.0' },
    );
    expect(version.status).toBe(400);
    expect(statusOf(version).reason).toBe('VERSION_NOT_SUPPORTED');
    // v0.3 had no such routes: its version is not served here.
    expect(statusOf(await call('GET', '/tasks/x', undefined, { 'A2A-Version': '0.3' })).reason).toBe(
      'VERSION_NOT_SUPPORTED',
    );
    expect((await call('POST', '/message:send', '{not json')).status).toBe(400);
    const invalid = await call('POST', '/message:send', { message: { role: 'ROLE_USER', parts: [] } });
    expect(invalid.status).toBe(400);
    expect(statusOf(invalid).status).toBe('INVALID_ARGUMENT');
  });

  it('a route with the wrong verb → 405 with Allow; an unknown path → 404', async () => {
    const wrongVerb = await call('DELETE', '/message:send');
    expect(wrongVerb.status).toBe(405);
    expect((await call('GET', '/nothing/here/at/all')).status).toBe(404);
  });
});

describe('HTTP+JSON streaming', () => {
  it('POST /message:stream: bare StreamResponses, the Task first, id: lines, closed at the end', async () => {
    const reply = await call('POST', '/message:stream', { message: message('tck-stream-001') });
    expect(reply.status).toBe(200);
    expect(reply.contentType).toMatch(/^text\/event-stream/);
    const frames = framesOf(reply.text);
    expect(frames[0]?.data.task).toBeDefined();
    expect(frames.every((frame) => !('jsonrpc' in frame.data))).toBe(true);
    expect(frames.at(-1)?.data.statusUpdate).toMatchObject({ status: { state: 'TASK_STATE_COMPLETED' } });
    // Revision ids where an event has one, increasing (docs/protocol.md §17).
    const ids = frames.flatMap((frame) => (frame.id === undefined ? [] : [Number(frame.id)]));
    expect(ids.length).toBeGreaterThan(1);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('GET and POST /tasks/{id}:subscribe: the Task first; Last-Event-ID resumes after it; terminal → 400', async () => {
    const open = taskIn(await call('POST', '/message:send', { message: message('tck-input-required') }));
    const subscription = fetch(`${sut.agentUrl('tck')}/tasks/${open.id}:subscribe`, {
      headers: { 'A2A-Version': '1.0' },
    });
    const posted = fetch(`${sut.agentUrl('tck')}/tasks/${open.id}:subscribe`, {
      method: 'POST',
      headers: { 'A2A-Version': '1.0' },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await call('POST', '/message:send', { message: message('tck-complete-task', { taskId: open.id }) });
    for (const response of await Promise.all([subscription, posted])) {
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const frames = framesOf(await response.text());
      expect(frames[0]?.data.task).toMatchObject({ id: open.id });
      expect(frames.at(-1)?.data.statusUpdate).toMatchObject({ status: { state: 'TASK_STATE_COMPLETED' } });
    }
    const terminal = await call('GET', `/tasks/${open.id}:subscribe`);
    expect(terminal.status).toBe(400);
    expect(statusOf(terminal).reason).toBe('UNSUPPORTED_OPERATION');
  });

  it('Last-Event-ID on :subscribe: the task as last seen, then only the revisions after it', async () => {
    const open = taskIn(await call('POST', '/message:send', { message: message('tck-input-required') }));
    // A second turn that asks for input again: the stream closes at INPUT_REQUIRED, the task stays open.
    const turn = framesOf(
      (await call('POST', '/message:stream', { message: message('tck-input-required', { taskId: open.id }) }))
        .text,
    );
    const [first, last] = [turn[0]?.id, turn.at(-1)?.id];
    expect(Number(last)).toBeGreaterThan(Number(first));
    const abort = new AbortController();
    const resumed = await fetch(`${sut.agentUrl('tck')}/tasks/${open.id}:subscribe`, {
      headers: { 'A2A-Version': '1.0', 'Last-Event-ID': first! },
      signal: abort.signal,
    });
    const reader = resumed.body!.getReader();
    let text = '';
    while (!framesOf(text).some((frame) => frame.id === last)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    abort.abort();
    const frames = framesOf(text);
    expect(frames[0]?.data.task).toMatchObject({ id: open.id });
    expect(frames.slice(1).every((frame) => Number(frame.id) > Number(first))).toBe(true);
    expect(frames.at(-1)?.id).toBe(last);
  });
});

describe('with the official @a2a-js/sdk REST transport', () => {
  const request = (prefix: string, extra: JsonObject = {}) =>
    SendMessageRequest.fromJSON({
      message: message(prefix, extra),
      configuration: { returnImmediately: false },
    });

  it('sendMessage, getTask, listTasks, cancelTask over HTTP+JSON', async () => {
    const task = (await client.sendMessage(request('tck-artifact-text'))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: 5 });
    expect(got.id).toBe(task.id);
    const listed = await client.listTasks({
      tenant: '',
      contextId: task.contextId,
      pageSize: 10,
      pageToken: '',
      historyLength: 0,
      includeArtifacts: true,
      status: TaskState.TASK_STATE_UNSPECIFIED,
      statusTimestampAfter: undefined,
    });
    expect(listed.tasks.map((listedTask) => listedTask.id)).toContain(task.id);
    const open = (await client.sendMessage(request('tck-input-required'))) as Task;
    const canceled = await client.cancelTask({ tenant: '', id: open.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.getTask({ tenant: '', id: 'missing', historyLength: 0 })).rejects.toThrow();
  });

  it('sendMessageStream and resubscribeTask read the SSE stream', async () => {
    const kinds: string[] = [];
    for await (const event of client.sendMessageStream(request('tck-stream-001'))) {
      kinds.push(
        'status' in event && 'id' in event ? 'task' : 'kind' in event ? String(event.kind) : 'event',
      );
    }
    expect(kinds.length).toBeGreaterThan(1);
    const open = (await client.sendMessage(request('tck-input-required'))) as Task;
    const seen: unknown[] = [];
    const reading = (async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: open.id })) seen.push(event);
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await client.sendMessage(request('tck-complete-task', { taskId: open.id }));
    await reading;
    expect(seen.length).toBeGreaterThan(1);
  });
});
