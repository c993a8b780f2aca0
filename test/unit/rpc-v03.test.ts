import { AgentCard as V1AgentCard } from '@a2a-js/sdk';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { buildAgentCard, buildExtendedAgentCard, securityOf } from '../../shared/app/profiles/agent-card.ts';
import { type DeliverDeps, deliverPush } from '../../shared/app/push/deliver-push.ts';
import { PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import {
  type A2aMethodTable,
  createDispatcher,
  type DispatchResult,
  defineMethod,
  type RequestContext,
  type SseEvent,
  type StreamItem,
  toStreamResult,
} from '../../shared/app/rpc/dispatcher.ts';
import { toProtoJson } from '../../shared/app/rpc/proto-json.ts';
import { a2aParamsSchemas, messageSchema, parseParams } from '../../shared/app/rpc/schemas.ts';
import { createV03Methods } from '../../shared/app/rpc/v03-methods.ts';
import {
  dataPartCompatFlag,
  fromV03Message,
  fromV03SendParams,
  toV03Event,
  toV03PushConfig,
  toV03SendResult,
  toV03State,
  toV03Task,
} from '../../shared/app/rpc/v03-shapes.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { parseConfig } from '../../shared/config/config.ts';
import {
  type JsonValue,
  type Message,
  type Part,
  type StreamResponse,
  type Task,
  type TaskState,
  taskStates,
} from '../../shared/domain/a2a.ts';
import { TaskNotFoundError, UnsupportedOperationError } from '../../shared/domain/errors.ts';
import type { WebhookRequest } from '../../shared/domain/ports.ts';
import type { JournalEvent } from '../../shared/domain/projection.ts';
import type { StoredPushConfig } from '../../shared/domain/push.ts';

/** The A2A v0.3 compatibility layer (docs/protocol.md §1; decision 0015): shapes and method table. */

const at = '2026-03-01T12:00:00.000Z';

const agentMessage = (parts: Part[]): Message => ({
  messageId: 'm-agent',
  role: 'ROLE_AGENT',
  parts,
  contextId: 'ctx-1',
  taskId: 't-1',
});

const completedTask: Task = {
  id: 't-1',
  contextId: 'ctx-1',
  status: { state: 'TASK_STATE_COMPLETED', timestamp: at, message: agentMessage([{ text: 'done' }]) },
  artifacts: [
    {
      artifactId: 'a-1',
      name: 'result',
      parts: [
        { text: 'hello', metadata: { lang: 'en' } },
        { raw: 'aGk=', filename: 'hi.txt', mediaType: 'text/plain' },
        { url: 'https://files.example.com/x.png', mediaType: 'image/png' },
        { data: { answer: 42 } },
        { data: [1, 2] },
      ],
    },
  ],
  history: [{ messageId: 'm-user', role: 'ROLE_USER', parts: [{ text: 'hi' }], contextId: 'ctx-1' }],
};

describe('v1.0 → v0.3 shapes', () => {
  it('every state has its own lowercase v0.3 name', () => {
    const names = taskStates.map(toV03State);
    expect(new Set(names).size).toBe(taskStates.length);
    expect(toV03State('TASK_STATE_INPUT_REQUIRED')).toBe('input-required');
    expect(toV03State('TASK_STATE_AUTH_REQUIRED')).toBe('auth-required');
    for (const name of names) expect(name).toMatch(/^[a-z-]+$/);
  });

  it('a Task gets kind, lowercase state and roles, file and data parts', () => {
    expect(toProtoJson(toV03Task(completedTask))).toEqual({
      kind: 'task',
      id: 't-1',
      contextId: 'ctx-1',
      status: {
        state: 'completed',
        timestamp: at,
        message: {
          kind: 'message',
          messageId: 'm-agent',
          role: 'agent',
          parts: [{ kind: 'text', text: 'done' }],
          contextId: 'ctx-1',
          taskId: 't-1',
        },
      },
      artifacts: [
        {
          artifactId: 'a-1',
          name: 'result',
          parts: [
            { kind: 'text', text: 'hello', metadata: { lang: 'en' } },
            { kind: 'file', file: { bytes: 'aGk=', name: 'hi.txt', mimeType: 'text/plain' } },
            { kind: 'file', file: { uri: 'https://files.example.com/x.png', mimeType: 'image/png' } },
            { kind: 'data', data: { answer: 42 } },
            { kind: 'data', data: { value: [1, 2] }, metadata: { [dataPartCompatFlag]: true } },
          ],
        },
      ],
      history: [
        {
          kind: 'message',
          messageId: 'm-user',
          role: 'user',
          parts: [{ kind: 'text', text: 'hi' }],
          contextId: 'ctx-1',
        },
      ],
    });
  });

  it('message/send answers the Task or the Message itself, no wrapper', () => {
    expect(toV03SendResult({ task: completedTask })).toMatchObject({ kind: 'task', id: 't-1' });
    expect(toV03SendResult({ message: agentMessage([{ text: 'x' }]) })).toMatchObject({
      kind: 'message',
      role: 'agent',
    });
  });

  const statusUpdate = (state: TaskState): StreamResponse => ({
    statusUpdate: { taskId: 't-1', contextId: 'ctx-1', status: { state, timestamp: at } },
  });

  it('`final` marks the status event that ends the stream, and only it', () => {
    for (const state of taskStates) {
      const terminal = [
        'TASK_STATE_COMPLETED',
        'TASK_STATE_FAILED',
        'TASK_STATE_CANCELED',
        'TASK_STATE_REJECTED',
      ];
      const interrupted = ['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'];
      // message/stream closes at terminal or interrupted states; tasks/resubscribe and webhooks at terminal ones.
      expect(toV03Event(statusUpdate(state), 'terminal-or-interrupted'), state).toMatchObject({
        kind: 'status-update',
        status: { state: toV03State(state) },
        final: terminal.includes(state) || interrupted.includes(state),
      });
      expect(toV03Event(statusUpdate(state), 'terminal'), state).toMatchObject({
        final: terminal.includes(state),
      });
    }
  });

  it('artifact updates and snapshots carry their kind', () => {
    const artifact = { artifactId: 'a', parts: [{ text: 'x' }] };
    expect(
      toProtoJson(
        toV03Event(
          { artifactUpdate: { taskId: 't-1', contextId: 'ctx-1', artifact, lastChunk: true } },
          'terminal',
        ),
      ),
    ).toEqual({
      kind: 'artifact-update',
      taskId: 't-1',
      contextId: 'ctx-1',
      artifact: { artifactId: 'a', parts: [{ kind: 'text', text: 'x' }] },
      lastChunk: true,
    });
    expect(toV03Event({ task: completedTask }, 'terminal')).toMatchObject({ kind: 'task' });
    expect(toV03Event({ message: agentMessage([{ text: 'x' }]) }, 'terminal')).toMatchObject({
      kind: 'message',
    });
  });

  it('a push config is nested, its auth scheme a list', () => {
    expect(
      toProtoJson(
        toV03PushConfig({
          id: 'c1',
          taskId: 't-1',
          url: 'https://hooks.example.com/a2a',
          token: 'tok',
          authentication: { scheme: 'Bearer', credentials: 'secret' },
        }),
      ),
    ).toEqual({
      taskId: 't-1',
      pushNotificationConfig: {
        id: 'c1',
        url: 'https://hooks.example.com/a2a',
        token: 'tok',
        authentication: { schemes: ['Bearer'], credentials: 'secret' },
      },
    });
  });
});

describe('v0.3 → v1.0 requests', () => {
  const partArbitrary: fc.Arbitrary<Part> = fc.oneof(
    fc.record({ text: fc.string() }),
    fc.record({
      raw: fc.uint8Array({ maxLength: 12 }).map((bytes) => Buffer.from(bytes).toString('base64')),
    }),
    fc.record({ url: fc.constant('https://files.example.com/f'), mediaType: fc.constant('image/png') }),
    // A top-level `data: null` reads as unset in ProtoJSON requests, in v1.0 as well (schemas.ts).
    fc.record({ data: fc.jsonValue().filter((value) => value !== null) as fc.Arbitrary<JsonValue> }),
  );

  it('a v1.0 message survives the trip to v0.3 and back (property)', () => {
    fc.assert(
      fc.property(
        fc.array(partArbitrary, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        (parts, fromUser) => {
          const message: Message = {
            messageId: 'm-1',
            role: fromUser ? 'ROLE_USER' : 'ROLE_AGENT',
            parts,
            contextId: 'ctx-1',
          };
          // The wire trip: v0.3 JSON as a client would send it, then the v1.0 schema.
          const wire = JSON.parse(JSON.stringify(toProtoJson(toV03SendResult({ message }))));
          const back = parseParams(messageSchema, fromV03Message(wire));
          // Compared as JSON: the wire has no -0, which fc.jsonValue may generate.
          const json = (value: unknown) => JSON.parse(JSON.stringify(toProtoJson(value)));
          expect(json(back)).toEqual(json(message));
        },
      ),
    );
  });

  it('MessageSendParams: blocking inverts returnImmediately; push auth schemes → scheme', () => {
    const send = (configuration?: unknown) =>
      parseParams(
        a2aParamsSchemas.SendMessage,
        fromV03SendParams({
          message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
          ...(configuration === undefined ? {} : { configuration }),
        }),
      );
    expect(send().message).toEqual({ messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] });
    expect(send()).not.toHaveProperty('configuration');
    expect(send({ blocking: true }).configuration?.returnImmediately).toBe(false);
    expect(send({ blocking: false }).configuration?.returnImmediately).toBe(true);
    expect(send({ historyLength: 2 }).configuration).toEqual({ historyLength: 2 });
    expect(
      send({
        pushNotificationConfig: {
          url: 'https://hooks.example.com/a2a',
          authentication: { schemes: ['Bearer', 'Basic'], credentials: 'c' },
        },
      }).configuration?.taskPushNotificationConfig,
    ).toEqual({
      url: 'https://hooks.example.com/a2a',
      authentication: { scheme: 'Bearer', credentials: 'c' },
    });
  });

  it('invalid v0.3 content is refused by the same v1.0 rules (-32602 naming the field)', () => {
    const bad = (parts: unknown[]) => () =>
      parseParams(
        a2aParamsSchemas.SendMessage,
        fromV03SendParams({ message: { messageId: 'm', role: 'user', parts } }),
      );
    expect(bad([{ kind: 'file', file: { bytes: '!!' } }])).toThrow(/Invalid parameters|base64/);
    expect(bad([{ kind: 'image', image: 'x' }])).toThrow();
    expect(bad([])).toThrow();
  });
});

// ---------------------------------------------------------------------------------------------
// The method table over a fake v1.0 table
// ---------------------------------------------------------------------------------------------

interface Seen {
  method: string;
  params: unknown;
  ctx: RequestContext;
}

const pushConfig = (id: string) => ({ id, taskId: 't-1', url: 'https://hooks.example.com/a2a' });

const streamOf = (...items: StreamItem[]) =>
  toStreamResult(
    (async function* () {
      yield* items;
    })(),
  );

/** A v1.0 table of fakes answering like a2a-methods.ts does, recording every call. */
const fakeV1 = (
  seen: Seen[],
  overrides: Partial<Record<keyof A2aMethodTable, unknown>> = {},
): A2aMethodTable => {
  const answers: Record<keyof A2aMethodTable, (params: Record<string, unknown>) => unknown> = {
    SendMessage: () => ({ task: completedTask }),
    SendStreamingMessage: () =>
      streamOf(
        {
          eventId: '1',
          response: { task: { ...completedTask, status: { state: 'TASK_STATE_SUBMITTED', timestamp: at } } },
        },
        { comment: 'keep-alive' },
        {
          statusUpdate: {
            taskId: 't-1',
            contextId: 'ctx-1',
            status: { state: 'TASK_STATE_WORKING', timestamp: at },
          },
        },
        {
          eventId: '3',
          response: {
            statusUpdate: {
              taskId: 't-1',
              contextId: 'ctx-1',
              status: { state: 'TASK_STATE_INPUT_REQUIRED', timestamp: at },
            },
          },
        },
      ),
    GetTask: () => completedTask,
    ListTasks: () => ({}),
    CancelTask: () => completedTask,
    SubscribeToTask: () =>
      streamOf({
        eventId: '2',
        response: {
          statusUpdate: {
            taskId: 't-1',
            contextId: 'ctx-1',
            status: { state: 'TASK_STATE_INPUT_REQUIRED', timestamp: at },
          },
        },
      }),
    CreateTaskPushNotificationConfig: (params) => ({ ...params }),
    GetTaskPushNotificationConfig: (params) => pushConfig(params.id as string),
    // Two pages: c1 c2 | c3.
    ListTaskPushNotificationConfigs: (params) =>
      params.pageToken === undefined
        ? {
            configs: [pushConfig('c1'), pushConfig('c2')].slice(0, params.pageSize as number),
            nextPageToken: 'p2',
          }
        : { configs: [pushConfig('c3')] },
    DeleteTaskPushNotificationConfig: () => undefined,
    GetExtendedAgentCard: () => {
      throw new UnsupportedOperationError('The extended agent card is not declared by this agent');
    },
    ...(overrides as object),
  };
  return Object.fromEntries(
    Object.entries(a2aParamsSchemas).map(([method, schema]) => [
      method,
      defineMethod(schema, async (params, ctx) => {
        seen.push({ method, params, ctx });
        return answers[method as keyof A2aMethodTable](params as Record<string, unknown>);
      }),
    ]),
  ) as unknown as A2aMethodTable;
};

const setup = (overrides: Partial<Record<keyof A2aMethodTable, unknown>> = {}) => {
  const seen: Seen[] = [];
  const v1 = fakeV1(seen, overrides);
  const dispatcher = createDispatcher(v1, {
    errorDomain: 'errors.example.test',
    logger: { error: () => {} },
    v03Methods: createV03Methods(v1),
  });
  const call = (method: string, params: unknown, headers: Record<string, string> = {}) =>
    dispatcher.dispatch(JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }), {
      'content-type': 'application/json',
      ...headers,
    });
  return { seen, call };
};

const bodyOf = (result: DispatchResult) => {
  if (result.kind !== 'json') throw new Error('expected JSON');
  return result.body as { id: unknown; result?: unknown; error?: { code: number; message: string } };
};

const collect = async (result: DispatchResult): Promise<SseEvent[]> => {
  if (result.kind !== 'sse') throw new Error(`expected SSE, got ${JSON.stringify(result)}`);
  const out: SseEvent[] = [];
  for await (const event of result.events) out.push(event);
  return out;
};

const v03Send = {
  message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
  configuration: { blocking: true },
};

describe('v0.3 method table', () => {
  it('message/send without A2A-Version reaches SendMessage with v1.0 params and answers a v0.3 Task', async () => {
    const { seen, call } = setup();
    const body = bodyOf(await call('message/send', v03Send));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      method: 'SendMessage',
      params: {
        message: { role: 'ROLE_USER', parts: [{ text: 'hi' }] },
        configuration: { returnImmediately: false },
      },
      ctx: { a2aVersion: '0.3' },
    });
    expect(body).toMatchObject({ id: 7, result: { kind: 'task', status: { state: 'completed' } } });
  });

  it('A2A-Version: 0.3 selects the table too; a v1.0 name there, or tasks/list, is -32601', async () => {
    const { call, seen } = setup();
    expect(bodyOf(await call('tasks/get', { id: 't-1' }, { 'A2A-Version': '0.3' })).result).toMatchObject({
      kind: 'task',
    });
    expect(seen[0]).toMatchObject({ method: 'GetTask', params: { id: 't-1' } });
    expect(bodyOf(await call('GetTask', { id: 't-1' }, { 'A2A-Version': '0.3' })).error?.code).toBe(-32601);
    expect(bodyOf(await call('tasks/list', {})).error?.code).toBe(-32601);
  });

  it('v0.3 params are validated with v0.3 field names', async () => {
    const { call, seen } = setup();
    const error = bodyOf(await call('tasks/pushNotificationConfig/delete', { id: 't-1' }))
      .error as unknown as {
      code: number;
      data: { fieldViolations: { field: string }[] }[];
    };
    expect(error.code).toBe(-32602);
    expect(error.data[0]?.fieldViolations.map((violation) => violation.field)).toEqual([
      'pushNotificationConfigId',
    ]);
    expect(seen).toEqual([]);
  });

  it('message/stream: every event in v0.3 shape, ids and heartbeats kept, `final` on the closing status', async () => {
    const events = await collect(await setup().call('message/stream', v03Send));
    expect(events).toEqual([
      {
        eventId: '1',
        message: {
          jsonrpc: '2.0',
          id: 7,
          result: expect.objectContaining({ kind: 'task', status: { state: 'submitted', timestamp: at } }),
        },
      },
      { comment: 'keep-alive' },
      {
        eventId: undefined,
        message: {
          jsonrpc: '2.0',
          id: 7,
          result: expect.objectContaining({ kind: 'status-update', final: false }),
        },
      },
      {
        eventId: '3',
        message: {
          jsonrpc: '2.0',
          id: 7,
          result: expect.objectContaining({
            kind: 'status-update',
            status: { state: 'input-required', timestamp: at },
            final: true,
          }),
        },
      },
    ]);
  });

  it('tasks/resubscribe stays open through input-required: that status is not final', async () => {
    const events = await collect(await setup().call('tasks/resubscribe', { id: 't-1' }));
    expect(events).toEqual([
      {
        eventId: '2',
        message: expect.objectContaining({ result: expect.objectContaining({ final: false }) }),
      },
    ]);
  });

  it('an early stream failure is a plain JSON error, as in v1.0', async () => {
    const { call } = setup({
      SubscribeToTask: () => {
        throw new TaskNotFoundError('t-9');
      },
    });
    expect(bodyOf(await call('tasks/resubscribe', { id: 't-9' })).error?.code).toBe(-32001);
  });

  it('pushNotificationConfig/set: nested in, nested out; without an id the config id is the task id', async () => {
    const { call, seen } = setup();
    const body = bodyOf(
      await call('tasks/pushNotificationConfig/set', {
        taskId: 't-1',
        pushNotificationConfig: {
          url: 'https://hooks.example.com/a2a',
          authentication: { schemes: ['Bearer'], credentials: 'c' },
        },
      }),
    );
    expect(seen[0]).toMatchObject({
      method: 'CreateTaskPushNotificationConfig',
      params: {
        taskId: 't-1',
        id: 't-1',
        url: 'https://hooks.example.com/a2a',
        authentication: { scheme: 'Bearer', credentials: 'c' },
      },
      ctx: { a2aVersion: '0.3' },
    });
    expect(body.result).toEqual({
      taskId: 't-1',
      pushNotificationConfig: {
        id: 't-1',
        url: 'https://hooks.example.com/a2a',
        authentication: { schemes: ['Bearer'], credentials: 'c' },
      },
    });
    const named = setup();
    await named.call('tasks/pushNotificationConfig/set', {
      taskId: 't-1',
      pushNotificationConfig: { id: 'mine', url: 'https://hooks.example.com/a2a' },
    });
    expect(named.seen[0]?.params).toMatchObject({ id: 'mine' });
  });

  it('pushNotificationConfig/get by id, or the first config without one; list gathers every page; delete → null', async () => {
    const { call, seen } = setup();
    expect(
      bodyOf(await call('tasks/pushNotificationConfig/get', { id: 't-1', pushNotificationConfigId: 'c2' }))
        .result,
    ).toMatchObject({
      pushNotificationConfig: { id: 'c2' },
    });
    expect(seen.at(-1)).toMatchObject({
      method: 'GetTaskPushNotificationConfig',
      params: { taskId: 't-1', id: 'c2' },
    });
    expect(bodyOf(await call('tasks/pushNotificationConfig/get', { id: 't-1' })).result).toMatchObject({
      pushNotificationConfig: { id: 'c1' },
    });
    const list = bodyOf(await call('tasks/pushNotificationConfig/list', { id: 't-1' })).result as {
      pushNotificationConfig: { id: string };
    }[];
    expect(list.map((entry) => entry.pushNotificationConfig.id)).toEqual(['c1', 'c2', 'c3']);
    const deleted = bodyOf(
      await call('tasks/pushNotificationConfig/delete', { id: 't-1', pushNotificationConfigId: 'c1' }),
    );
    expect(deleted).toEqual({ jsonrpc: '2.0', id: 7, result: null });
    expect(seen.at(-1)).toMatchObject({
      method: 'DeleteTaskPushNotificationConfig',
      params: { taskId: 't-1', id: 'c1' },
    });
  });

  it('get without an id on a task without configs → -32001', async () => {
    const { call } = setup({ ListTaskPushNotificationConfigs: () => ({ configs: [] }) });
    expect(bodyOf(await call('tasks/pushNotificationConfig/get', { id: 't-1' })).error?.code).toBe(-32001);
  });

  it('agent/getAuthenticatedExtendedCard: an undeclared card is v0.3 -32007', async () => {
    expect(bodyOf(await setup().call('agent/getAuthenticatedExtendedCard', undefined)).error?.code).toBe(
      -32007,
    );
  });

  it('reads the v0.3 extensions header X-A2A-Extensions', async () => {
    const { call, seen } = setup();
    await call('tasks/get', { id: 't-1' }, { 'X-A2A-Extensions': 'urn:a, urn:b' });
    expect(seen[0]?.ctx.extensions).toEqual(['urn:a', 'urn:b']);
  });

  it('without a v0.3 table, v0.3 requests still get -32009', async () => {
    const v1 = fakeV1([]);
    const dispatcher = createDispatcher(v1, { errorDomain: 'e.test', logger: { error: () => {} } });
    const result = await dispatcher.dispatch(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }),
      {},
    );
    expect(bodyOf(result).error?.code).toBe(-32009);
  });
});

describe('v0.3 card fields', () => {
  const config = (auth: unknown) =>
    parseConfig({
      auth,
      providers: { local: { type: 'scripted' } },
      profiles: {
        default: {
          name: 'Echo',
          description: 'Echoes',
          providers: ['local'],
          privacyLevel: 'full',
          extendedCard: { skills: [{ id: 'x', name: 'X', description: 'Extra', tags: ['x'] }] },
        },
      },
    });
  const baseUrl = 'https://agents.example.com/v1';

  it('sit beside the v1.0 fields on the v0.3 card and name the v1.0 interface; the v1.0 card has none', () => {
    const v1Card = buildAgentCard(config({}), 'default', baseUrl)!;
    for (const field of [
      'url',
      'preferredTransport',
      'protocolVersion',
      'additionalInterfaces',
      'security',
    ]) {
      expect(v1Card).not.toHaveProperty(field);
    }
    expect(v1Card).not.toHaveProperty('supportsAuthenticatedExtendedCard');
    const card = buildAgentCard(config({}), 'default', baseUrl, '0.3')!;
    expect(card.supportedInterfaces).toEqual(v1Card.supportedInterfaces);
    expect(card.supportedInterfaces).toContainEqual({
      url: `${baseUrl}/agents/default`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    });
    expect(card).toMatchObject({
      url: `${baseUrl}/agents/default`,
      preferredTransport: 'JSONRPC',
      protocolVersion: '0.3.0',
      additionalInterfaces: [{ url: `${baseUrl}/agents/default`, transport: 'JSONRPC' }],
      supportsAuthenticatedExtendedCard: false,
    });
    expect(card).not.toHaveProperty('security');
  });

  it('v0.3 `security` mirrors securityRequirements; the extended card flag follows capabilities', () => {
    const tokens = { 'a-static-token-of-enough-length': { tenant: 't', principal: 'p' } };
    const card = buildAgentCard(config({ tokens }), 'default', baseUrl, '0.3')!;
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
    expect(card.security).toEqual([{ bearer: [] }]);
    expect(card.supportsAuthenticatedExtendedCard).toBe(card.capabilities.extendedAgentCard);
    expect(card.supportsAuthenticatedExtendedCard).toBe(true);
    // agent/getAuthenticatedExtendedCard answers the extended card, v0.3 fields included.
    expect(buildExtendedAgentCard(config({ tokens }), 'default', baseUrl, '0.3')).toMatchObject({
      url: card.url,
      supportsAuthenticatedExtendedCard: true,
    });
    expect(buildExtendedAgentCard(config({ tokens }), 'default', baseUrl)).not.toHaveProperty('url');
  });

  it('agent/getAuthenticatedExtendedCard passes a declared card through', async () => {
    const extended = buildExtendedAgentCard(
      config({ tokens: { 'a-static-token-of-enough-length': { tenant: 't', principal: 'p' } } }),
      'default',
      baseUrl,
      '0.3',
    );
    const seen: Seen[] = [];
    const v1 = fakeV1(seen, { GetExtendedAgentCard: () => extended });
    const dispatcher = createDispatcher(v1, {
      errorDomain: 'e.test',
      logger: { error: () => {} },
      v03Methods: createV03Methods(v1),
    });
    const result = await dispatcher.dispatch(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'agent/getAuthenticatedExtendedCard' }),
      {},
    );
    expect(bodyOf(result).result).toMatchObject({
      url: `${baseUrl}/agents/default`,
      skills: expect.any(Array),
    });
  });
});

describe('v0.3 securitySchemes (decision 0026)', () => {
  const digest = 'a'.repeat(64);
  const jwt = { issuer: 'https://issuer.example', audience: 'a2a', jwksUrl: 'https://issuer.example/jwks' };
  const configWith = (auth: unknown) =>
    parseConfig({
      auth,
      providers: { local: { type: 'scripted' } },
      profiles: {
        default: { name: 'Echo', description: 'Echoes', providers: ['local'], privacyLevel: 'full' },
      },
    });
  const cardWith = (auth: unknown) =>
    buildAgentCard(configWith(auth), 'default', 'https://agents.example.com/v1', '0.3')!;

  it('each entry carries the v0.3 shape next to the unchanged v1.0 one', () => {
    const auth = { jwt, apiKeys: { [digest]: { tenant: 't', principal: 'p' } } };
    const card = cardWith(auth);
    // v1.0: exactly the wrappers securityOf declares, inside each entry.
    for (const [name, v1] of Object.entries(securityOf(configWith(auth).auth).securitySchemes ?? {})) {
      expect(card.securitySchemes?.[name]).toMatchObject(v1);
    }
    // v0.3 (types.ts@v0.3.0: HTTPAuthSecurityScheme {type, scheme}, APIKeySecurityScheme {type, in, name}).
    expect(card.securitySchemes).toEqual({
      bearer: {
        type: 'http',
        scheme: 'Bearer',
        bearerFormat: 'JWT',
        httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' },
      },
      apiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'X-API-Key',
        apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' },
      },
    });
    expect(card.security).toEqual([{ bearer: [] }, { apiKey: [] }]);
  });

  it("the SDK's v0.3 client parses the card (it refused the v1.0-only entries), and its v1.0 parser reads the same schemes", () => {
    const card = cardWith({ jwt, apiKeys: { [digest]: { tenant: 't', principal: 'p' } } });
    const wire = JSON.parse(JSON.stringify(card));
    const legacy = parseLegacyAgentCard(wire);
    const v1 = V1AgentCard.fromJSON(wire);
    expect(legacy.securitySchemes).toEqual(v1.securitySchemes);
    expect(v1.securitySchemes.bearer?.scheme).toMatchObject({
      $case: 'httpAuthSecurityScheme',
      value: { scheme: 'Bearer', bearerFormat: 'JWT' },
    });
    expect(v1.securitySchemes.apiKey?.scheme).toMatchObject({
      $case: 'apiKeySecurityScheme',
      value: { location: 'header', name: 'X-API-Key' },
    });
    // The v1.0-only shape is what a v0.3 client cannot read.
    expect(() =>
      parseLegacyAgentCard({
        ...wire,
        securitySchemes: securityOf(configWith({ jwt }).auth).securitySchemes,
      }),
    ).toThrow(/security scheme type/);
  });
});

describe('v0.3 webhook body (decision 0026)', () => {
  const sealer = new FakeSealer();
  const codec = new TaskContentCodec(sealer);
  const owner = { tenant: 't', principal: 'p' };
  const artifact = { artifactId: 'a-1', name: 'result', parts: [{ text: 'hello' }] };

  const eventOf = async (
    revision: number,
    state: TaskState,
    content: { statusMessage?: Message; artifacts?: Task['artifacts'] },
  ): Promise<JournalEvent> => {
    const sealed = await codec.seal('t-1', content);
    return {
      taskId: 't-1',
      contextId: 'ctx-1',
      owner,
      revision,
      state,
      statusTimestamp: at,
      ...(sealed.sealedStatusMessage ? { sealedStatusMessage: sealed.sealedStatusMessage } : {}),
      ...(sealed.sealedArtifacts ? { sealedArtifacts: sealed.sealedArtifacts } : {}),
      expiresAt: 4_000_000_000,
    };
  };

  const deliver = async (protocolVersion: '0.3' | '1.0' | undefined, revision: number) => {
    const events = [
      await eventOf(1, 'TASK_STATE_SUBMITTED', {}),
      await eventOf(2, 'TASK_STATE_WORKING', { artifacts: [artifact] }),
      await eventOf(3, 'TASK_STATE_COMPLETED', { statusMessage: agentMessage([{ text: 'done' }]) }),
    ];
    const config: StoredPushConfig = {
      taskId: 't-1',
      configId: 'c-1',
      url: 'https://hooks.example.com/a2a',
      createdAt: at,
      expiresAt: 4_000_000_000,
      ...(protocolVersion ? { protocolVersion } : {}),
    };
    const posts: WebhookRequest[] = [];
    const deps = {
      pushConfigs: { get: async () => config },
      journal: {
        listEvents: async (_taskId: string, after: number) =>
          events.filter((event) => event.revision > after),
      },
      codec,
      pushCodec: new PushConfigCodec(sealer),
      sender: {
        post: async (request: WebhookRequest) => {
          posts.push(request);
          return { kind: 'delivered' as const, status: 200 };
        },
      },
      clock: { now: () => new Date(at) },
    } as unknown as DeliverDeps;
    const outcome = await deliverPush(deps, { taskId: 't-1', configId: 'c-1', revision });
    return { outcome, posts, bodies: posts.map((post) => JSON.parse(String(post.body))) };
  };

  it('a config created through v0.3 gets one POST per revision: the v0.3 Task as of it, artifacts included', async () => {
    const { outcome, posts, bodies } = await deliver('0.3', 3);
    expect(outcome).toEqual({ kind: 'delivered', posts: 1 });
    expect(posts[0]?.headers['content-type']).toBe('application/json');
    // What a2a-js 0.3's DefaultPushNotificationSender POSTs: the Task (kind "task"), not an event.
    expect(bodies).toEqual([
      {
        kind: 'task',
        id: 't-1',
        contextId: 'ctx-1',
        status: {
          state: 'completed',
          timestamp: at,
          message: {
            kind: 'message',
            messageId: 'm-agent',
            role: 'agent',
            parts: [{ kind: 'text', text: 'done' }],
            contextId: 'ctx-1',
            taskId: 't-1',
          },
        },
        // Committed at revision 2; revision 3 changed only the status.
        artifacts: [{ artifactId: 'a-1', name: 'result', parts: [{ kind: 'text', text: 'hello' }] }],
      },
    ]);
    const first = await deliver('0.3', 1);
    expect(first.bodies).toEqual([
      { kind: 'task', id: 't-1', contextId: 'ctx-1', status: { state: 'submitted', timestamp: at } },
    ]);
  });

  it('a v1.0 config keeps its StreamResponses: artifact updates, then the status update', async () => {
    for (const version of [undefined, '1.0'] as const) {
      const { posts, bodies } = await deliver(version, 2);
      expect(posts.map((post) => post.headers['content-type'])).toEqual([
        'application/a2a+json',
        'application/a2a+json',
      ]);
      expect(bodies.map((body) => Object.keys(body))).toEqual([['artifactUpdate'], ['statusUpdate']]);
      expect(bodies[1].statusUpdate.status.state).toBe('TASK_STATE_WORKING');
    }
  });
});
