import { randomUUID } from 'node:crypto';
import {
  type AgentCard,
  type Message,
  SendMessageRequest,
  type StreamResponse,
  type Task,
  TaskState,
} from '@a2a-js/sdk';
import { Client } from '@a2a-js/sdk/client';
import {
  isLegacyAgentCard,
  LegacyJsonRpcTransport,
  parseLegacyAgentCard,
} from '@a2a-js/sdk/compat/v0_3/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { drain, rpc, type SseFrame } from './sse.ts';
import { type ConformanceStack, type JsonObject, startConformanceStack } from './support.ts';

/**
 * A2A v0.3 compatibility (docs/protocol.md §1; decision 0015): a client still on 0.3 — the
 * @a2a-js/sdk v0.3 compatibility client, `LegacyJsonRpcTransport`, which speaks the v0.3 wire
 * (`message/send`, `kind`, lowercase states) and translates it back, so a wrong v0.3 shape fails
 * its parsing or reads as TASK_STATE_UNSPECIFIED — against the local stack, found through the
 * v0.3 fields of the same agent card. Raw HTTP where the SDK hides the wire (`final`, the
 * header-less request, webhook bodies).
 */

let sut: ConformanceStack;
let receiver: WebhookReceiver;
let card: JsonObject;
let client: Client;

beforeAll(async () => {
  sut = await startConformanceStack('conf-v03');
  receiver = await startWebhookReceiver();
  // A v0.3 client reads the v0.3 card, asked for by the version in the card's URL (docs/protocol.md §9).
  card = (await (
    await fetch(`${sut.baseUrl}/agents/tck/.well-known/agent-card.json?A2A-Version=0.3`)
  ).json()) as JsonObject;
  const legacyCard: AgentCard = parseLegacyAgentCard(card);
  const endpoint = legacyCard.supportedInterfaces[0]?.url ?? '';
  client = new Client(new LegacyJsonRpcTransport({ endpoint }), legacyCard);
});
afterAll(async () => {
  await receiver?.close();
  await sut?.stop();
});

const request = (prefix: string, extra: JsonObject = {}) =>
  SendMessageRequest.fromJSON({
    message: { messageId: `${prefix}-${randomUUID()}`, role: 'ROLE_USER', parts: [{ text: 'hi' }], ...extra },
    configuration: { returnImmediately: false },
  });

const send = async (prefix: string, extra: JsonObject = {}): Promise<Task> => {
  const result = await client.sendMessage(request(prefix, extra));
  if (!('status' in result)) throw new Error(`expected a task, got ${JSON.stringify(result)}`);
  return result;
};

const textsOf = (task: Task): string[] =>
  (task.artifacts ?? []).flatMap((artifact) =>
    artifact.parts.flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : [])),
  );

/** A raw v0.3 request: v0.3 method name, no A2A-Version header (what 0.3 clients send). */
const rawV03 = (method: string, params: unknown) =>
  rpc(sut.agentUrl('tck'), method, params, { 'A2A-Version': '' });

const v03Message = (prefix: string, extra: JsonObject = {}) => ({
  kind: 'message',
  messageId: `${prefix}-${randomUUID()}`,
  role: 'user',
  parts: [{ kind: 'text', text: 'hi' }],
  ...extra,
});

type V03Result = JsonObject & { kind?: string; final?: boolean; status?: { state?: string } };
const resultsOf = (frames: readonly SseFrame[]): V03Result[] =>
  frames.map((frame) => (frame.data?.result ?? {}) as V03Result);

describe('v0.3 agent card', () => {
  it('the v0.3 card carries the v0.3 fields alongside the v1.0 ones, naming the same JSON-RPC endpoint', () => {
    const [v1Interface] = card.supportedInterfaces as { url: string; protocolVersion: string }[];
    expect(v1Interface?.protocolVersion).toBe('1.0');
    expect(card).toMatchObject({
      url: v1Interface?.url,
      preferredTransport: 'JSONRPC',
      protocolVersion: expect.stringMatching(/^0\.3(\.\d+)?$/),
      additionalInterfaces: [{ url: v1Interface?.url, transport: 'JSONRPC' }],
      supportsAuthenticatedExtendedCard: false,
    });
    // A superset card: v1.0 clients keep reading supportedInterfaces, v0.3 clients read `url`.
    expect(isLegacyAgentCard(card)).toBe(false);
    const legacy = parseLegacyAgentCard(card);
    expect(legacy.supportedInterfaces[0]).toMatchObject({
      url: v1Interface?.url,
      protocolBinding: 'JSONRPC',
    });
    expect(legacy.name).toBe('TCK system under test');
  });
});

describe('v0.3 client round trip', () => {
  it('message/send (blocking) → a completed task with its artifact; tasks/get agrees', async () => {
    const task = await send('tck-artifact-text');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textsOf(task)).toEqual(['Generated text content']);
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: 10 });
    expect(got.id).toBe(task.id);
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textsOf(got)).toEqual(['Generated text content']);
    expect(got.history.length).toBeGreaterThan(0);
  });

  it('the wire is v0.3: kind, lowercase state and role, file parts; the Message answer is bare', async () => {
    const reply = await rawV03('message/send', {
      message: v03Message('tck-artifact-file'),
      configuration: { blocking: true },
    });
    if (reply.kind !== 'json') throw new Error('expected JSON');
    const task = reply.body.result as JsonObject & {
      artifacts: { parts: JsonObject[] }[];
      history: JsonObject[];
    };
    expect(task).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    expect(task.artifacts[0]?.parts[0]).toEqual({
      kind: 'file',
      file: {
        bytes: Buffer.from('Generated file content').toString('base64'),
        name: 'output.txt',
        mimeType: 'text/plain',
      },
    });
    expect(task.history[0]).toMatchObject({ kind: 'message', role: 'user' });
    const direct = await client.sendMessage(request('tck-message-response'));
    expect('messageId' in direct && (direct as Message).parts[0]?.content).toEqual({
      $case: 'text',
      value: 'Direct message response',
    });
  });

  it('tasks/cancel: input-required → canceled; a completed task is not cancelable (-32002)', async () => {
    const task = await send('tck-input-required');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const done = await send('tck-complete-task');
    const refused = await rawV03('tasks/cancel', { id: done.id });
    expect(refused.kind === 'json' && refused.body.error?.code).toBe(-32002);
    const unknown = await rawV03('tasks/get', { id: randomUUID() });
    expect(unknown.kind === 'json' && unknown.body.error?.code).toBe(-32001);
  });

  it('message/stream: the SDK reads the stream to a completed task', async () => {
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(request('tck-stream-001'))) events.push(event);
    expect(events[0]?.payload?.$case).toBe('task');
    const last = events.at(-1)?.payload;
    expect(last?.$case).toBe('statusUpdate');
    if (last?.$case === 'statusUpdate') expect(last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(events.some((event) => event.payload?.$case === 'artifactUpdate')).toBe(true);
  });

  it('message/stream: a Message answer is the one event of its stream (decision 0067)', async () => {
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(request('tck-message-response'))) events.push(event);
    expect(events.map((event) => event.payload?.$case)).toEqual(['message']);
    const answer = await rawV03('message/stream', { message: v03Message('tck-message-response') });
    if (answer.kind !== 'sse') throw new Error(`expected SSE, got ${JSON.stringify(answer)}`);
    expect(resultsOf((await drain(answer.frames)).events)).toEqual([
      expect.objectContaining({ kind: 'message', role: 'agent' }),
    ]);
  });

  it('message/stream on the wire: every event has a kind, and only the last status-update is final', async () => {
    for (const [prefix, closing] of [
      ['tck-stream-001', 'completed'],
      ['tck-input-required', 'input-required'],
    ] as const) {
      const answer = await rawV03('message/stream', { message: v03Message(prefix) });
      if (answer.kind !== 'sse') throw new Error(`expected SSE, got ${JSON.stringify(answer)}`);
      const results = resultsOf((await drain(answer.frames)).events);
      expect(results[0]?.kind, prefix).toBe('task');
      for (const result of results)
        expect(['task', 'status-update', 'artifact-update']).toContain(result.kind);
      const updates = results.filter((result) => result.kind === 'status-update');
      expect(updates.length, prefix).toBeGreaterThan(0);
      expect(updates.at(-1), prefix).toMatchObject({ final: true, status: { state: closing } });
      for (const update of updates.slice(0, -1)) expect(update.final, prefix).toBe(false);
      expect(results.at(-1), prefix).toBe(updates.at(-1));
    }
  });

  it('tasks/resubscribe stays open through input-required and ends with the final completed status', async () => {
    const task = await send('tck-input-required');
    const answer = await rawV03('tasks/resubscribe', { id: task.id });
    if (answer.kind !== 'sse') throw new Error('expected SSE');
    const first = await answer.frames.next();
    expect(first.value?.data?.result).toMatchObject({ kind: 'task', status: { state: 'input-required' } });
    await send('tck-complete-task', { taskId: task.id });
    const results = resultsOf((await drain(answer.frames)).events);
    expect(results.at(-1)).toMatchObject({
      kind: 'status-update',
      final: true,
      status: { state: 'completed' },
    });
    expect(results.slice(0, -1).every((result) => result.final !== true)).toBe(true);
  });
});

describe('v0.3 push notifications', () => {
  it('set/get/list/delete, and the webhook receives v0.3 bodies (a v1.0 config on the same task keeps v1.0 ones)', async () => {
    const task = await send('tck-input-required');
    const v03Path = `/v03-${randomUUID()}`;
    const v1Path = `/v1-${randomUUID()}`;
    const credentials = `v03-token-${randomUUID()}`;

    const created = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: '',
      taskId: task.id,
      url: `${receiver.url}${v03Path}`,
      token: '',
      authentication: { scheme: 'Bearer', credentials },
    });
    // Without an id, the v0.3 config is the task's own (id = task id), as the v0.3 SDKs did it.
    expect(created).toMatchObject({ taskId: task.id, id: task.id, url: `${receiver.url}${v03Path}` });
    expect(created.authentication).toMatchObject({ scheme: 'Bearer', credentials });
    const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
    expect(got).toMatchObject({ id: created.id, url: created.url });
    const v1Config = await sut.rpc('CreateTaskPushNotificationConfig', {
      taskId: task.id,
      url: `${receiver.url}${v1Path}`,
    });
    expect(v1Config.error).toBeUndefined();
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(listed.configs.map((config) => config.url).sort()).toEqual(
      [`${receiver.url}${v03Path}`, `${receiver.url}${v1Path}`].sort(),
    );

    await send('tck-complete-task', { taskId: task.id });
    const on = (path: string) => receiver.posts.filter((post) => post.path === path);
    await receiver.waitFor(
      () =>
        on(v03Path).some((post) => (post.body as V03Result).status?.state === 'completed') &&
        on(v1Path).some((post) => JSON.stringify(post.body).includes('TASK_STATE_COMPLETED')),
      20_000,
    );
    // What a v0.3 server POSTs (a2a-js 0.3 DefaultPushNotificationSender, decision 0026): the Task.
    for (const post of on(v03Path)) {
      expect(post.headers['content-type']).toBe('application/json');
      expect(post.headers.authorization).toBe(`Bearer ${credentials}`);
      expect(post.body).toMatchObject({ kind: 'task', id: task.id, contextId: task.contextId });
      expect(post.body).not.toHaveProperty('final');
    }
    const v03States = on(v03Path).map((post) => (post.body as V03Result).status?.state);
    expect(v03States.at(-1)).toBe('completed');
    for (const post of on(v1Path)) {
      expect(post.headers['content-type']).toBe('application/a2a+json');
      expect(Object.keys(post.body as JsonObject)).toHaveLength(1);
      expect(post.body).not.toHaveProperty('kind');
    }

    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id }); // idempotent
    const gone = await rawV03('tasks/pushNotificationConfig/get', {
      id: task.id,
      pushNotificationConfigId: created.id,
    });
    expect(gone.kind === 'json' && gone.body.error?.code).toBe(-32001);
    const remaining = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(remaining.configs.map((config) => config.url)).toEqual([`${receiver.url}${v1Path}`]);
  });

  it('an inline pushNotificationConfig on message/send gets v0.3 bodies too', async () => {
    const path = `/inline-${randomUUID()}`;
    const reply = await rawV03('message/send', {
      message: v03Message('tck-artifact-text'),
      configuration: {
        blocking: true,
        pushNotificationConfig: { url: `${receiver.url}${path}`, token: 'inline-token' },
      },
    });
    if (reply.kind !== 'json') throw new Error('expected JSON');
    expect(reply.body.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    await receiver.waitFor(
      (posts) =>
        posts.some((post) => post.path === path && (post.body as V03Result).status?.state === 'completed'),
      20_000,
    );
    const post = receiver.posts.find((candidate) => candidate.path === path);
    expect(post?.headers['x-a2a-notification-token']).toBe('inline-token');
    expect(post?.headers['content-type']).toBe('application/json');
    // The completed Task carries the artifacts message/send answered with, in v0.3 parts.
    const completed = receiver.posts.findLast(
      (candidate) => candidate.path === path && (candidate.body as V03Result).status?.state === 'completed',
    );
    const answered = reply.body.result as { id: string; artifacts: { parts: { kind: string }[] }[] };
    expect(answered.artifacts[0]?.parts[0]?.kind).toBe('text');
    expect(completed?.body).toMatchObject({ kind: 'task', id: answered.id, artifacts: answered.artifacts });
  });

  it('agent/getAuthenticatedExtendedCard without an extended card → -32007', async () => {
    const reply = await rawV03('agent/getAuthenticatedExtendedCard', {});
    expect(reply.kind === 'json' && reply.body.error?.code).toBe(-32007);
  });
});
