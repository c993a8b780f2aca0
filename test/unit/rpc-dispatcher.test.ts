import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type A2aMethodTable,
  createDispatcher,
  type DispatcherOptions,
  type DispatchResult,
  defineMethod,
  type HeaderMap,
  type JsonRpcResponse,
  type MethodTable,
  parseExtensionsHeader,
  type RequestContext,
  type SseEvent,
  type StreamItem,
  toStreamResult,
} from '../../shared/app/rpc/dispatcher.ts';
import { badRequestType, errorInfoType } from '../../shared/app/rpc/errors-table.ts';
import {
  applyHistoryLength,
  applyIncludeArtifacts,
  formatTimestamp,
  toProtoJson,
} from '../../shared/app/rpc/proto-json.ts';
import {
  a2aParamsSchemas,
  getTaskParamsSchema,
  type ListTasksParams,
  type SendMessageParams,
} from '../../shared/app/rpc/schemas.ts';
import type { StreamResponse, Task } from '../../shared/domain/a2a.ts';
import {
  SealingFailedError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '../../shared/domain/errors.ts';

const NOW = new Date('2026-03-01T12:00:00.000Z');
const V1 = { 'A2A-Version': '1.0' };
const JSON_HEADERS = { 'Content-Type': 'application/json', ...V1 };

const task = (id: string, state: Task['status']['state'] = 'TASK_STATE_WORKING'): Task => ({
  id,
  contextId: 'ctx-1',
  status: { state, timestamp: '2026-03-01T12:00:00.000Z' },
});

interface Seen {
  method: string;
  params: unknown;
  ctx: RequestContext;
}

/** A full A2A table whose use cases are fakes: each records what it got and echoes it. */
const recordingTable = (seen: Seen[], overrides: Partial<A2aMethodTable> = {}): A2aMethodTable => {
  const record =
    (method: string) =>
    async (params: unknown, ctx: RequestContext): Promise<unknown> => {
      seen.push({ method, params, ctx });
      return { echo: params };
    };
  const table = Object.fromEntries(
    Object.entries(a2aParamsSchemas).map(([method, params]) => [method, { params, run: record(method) }]),
  ) as unknown as A2aMethodTable;
  return { ...table, ...overrides };
};

const fakeLogger = () => {
  const calls: { message: string; attributes: Readonly<Record<string, unknown>> }[] = [];
  return {
    calls,
    logger: {
      error: (message: string, attributes: Readonly<Record<string, unknown>>) =>
        calls.push({ message, attributes }),
    },
  };
};

const setup = (overrides: Partial<A2aMethodTable> = {}, options: Partial<DispatcherOptions> = {}) => {
  const seen: Seen[] = [];
  const { calls, logger } = fakeLogger();
  const dispatcher = createDispatcher(recordingTable(seen, overrides), {
    errorDomain: 'errors.example.test',
    logger,
    now: () => NOW,
    ...options,
  });
  return { dispatcher, seen, logs: calls };
};

const request = (method: unknown, params?: unknown, id: unknown = 1): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });

const jsonBody = (result: DispatchResult): JsonRpcResponse => {
  if (result.kind !== 'json') throw new Error(`expected a JSON answer, got ${result.kind}`);
  expect(result.status).toBe(200);
  return result.body;
};

/** The TCK's error-object JSON schema: {code:int, message:str, data?}, additionalProperties:false. */
const assertErrorObjectSchema = (error: unknown): void => {
  expect(typeof error === 'object' && error !== null && !Array.isArray(error)).toBe(true);
  const record = error as Record<string, unknown>;
  expect(Object.keys(record).every((key) => ['code', 'message', 'data'].includes(key))).toBe(true);
  expect(Number.isInteger(record.code)).toBe(true);
  expect(typeof record.message).toBe('string');
  const code = record.code as number;
  expect((code <= -32001 && code >= -32099) || (code <= -32600 && code >= -32700)).toBe(true);
  if ('data' in record) expect(Array.isArray(record.data)).toBe(true);
};

const errorOf = (result: DispatchResult) => {
  const body = jsonBody(result);
  if (!('error' in body)) throw new Error(`expected an error, got ${JSON.stringify(body)}`);
  assertErrorObjectSchema(body.error);
  return { id: body.id, ...body.error };
};

const resultOf = (result: DispatchResult) => {
  const body = jsonBody(result);
  if (!('result' in body)) throw new Error(`expected a result, got ${JSON.stringify(body)}`);
  return body.result;
};

const collect = async (events: AsyncIterable<SseEvent>): Promise<SseEvent[]> => {
  const out: SseEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
};

describe('envelope failures', () => {
  const { dispatcher } = setup();

  it.each([
    ['not JSON', '{"jsonrpc":'],
    ['empty body', ''],
    ['plain text', 'hello'],
  ])('%s → -32700 with id null and HTTP 200', async (_, body) => {
    expect(errorOf(await dispatcher.dispatch(body, JSON_HEADERS))).toEqual({
      id: null,
      code: -32700,
      message: 'Invalid JSON payload',
    });
  });

  it.each([
    ['a batch array', '[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}]', null, 'request'],
    ['an empty array', '[]', null, 'request'],
    ['a string', '"GetTask"', null, 'request'],
    ['a number', '42', null, 'request'],
    ['null', 'null', null, 'request'],
    ['jsonrpc missing', '{"id":7,"method":"GetTask"}', 7, 'jsonrpc'],
    ['jsonrpc "1.0"', '{"jsonrpc":"1.0","id":"a","method":"GetTask"}', 'a', 'jsonrpc'],
    ['jsonrpc 2', '{"jsonrpc":2,"id":1,"method":"GetTask"}', 1, 'jsonrpc'],
    ['method missing', '{"jsonrpc":"2.0","id":1}', 1, 'method'],
    ['method not a string', '{"jsonrpc":"2.0","id":1,"method":42}', 1, 'method'],
    ['method empty', '{"jsonrpc":"2.0","id":1,"method":""}', 1, 'method'],
    ['id an object', '{"jsonrpc":"2.0","id":{},"method":"GetTask"}', null, 'id'],
    ['id an array', '{"jsonrpc":"2.0","id":[1],"method":"GetTask"}', null, 'id'],
    ['id a boolean', '{"jsonrpc":"2.0","id":true,"method":"GetTask"}', null, 'id'],
  ])('%s → -32600 (not the SDK -32602), HTTP 200, naming the field', async (_, body, id, field) => {
    const error = errorOf(await dispatcher.dispatch(body, JSON_HEADERS));
    expect(error).toMatchObject({ id, code: -32600, message: 'Invalid Request' });
    expect(error.data).toEqual([
      { '@type': badRequestType, fieldViolations: [expect.objectContaining({ field })] },
    ]);
  });

  it('a request without an id is answered with id null', async () => {
    const body = jsonBody(
      await dispatcher.dispatch('{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t"}}', V1),
    );
    expect(body).toEqual({ jsonrpc: '2.0', id: null, result: { echo: { id: 't' } } });
  });

  it.each(['NoSuchMethod', 'sendMessage', 'toString', '__proto__', 'constructor', 'hasOwnProperty'])(
    'unknown method %s → -32601',
    async (method) => {
      expect(errorOf(await dispatcher.dispatch(request(method, {}, 'x'), JSON_HEADERS))).toEqual({
        id: 'x',
        code: -32601,
        message: 'Method not found',
      });
    },
  );

  it('a declared non-JSON Content-Type → -32005; JSON with parameters or none at all is accepted', async () => {
    const plain = await dispatcher.dispatch(request('GetTask', { id: 't' }), {
      'content-type': 'text/plain',
      ...V1,
    });
    expect(errorOf(plain)).toMatchObject({ id: null, code: -32005, message: 'Incompatible content types' });
    for (const headers of [
      { 'Content-Type': 'application/json; charset=utf-8' },
      {},
      { 'content-type': 'application/a2a+json' },
    ]) {
      expect(
        resultOf(await dispatcher.dispatch(request('GetTask', { id: 't' }), { ...headers, ...V1 })),
      ).toEqual({
        echo: { id: 't' },
      });
    }
  });
});

describe('params validation → -32602 with a google.rpc.BadRequest', () => {
  const { dispatcher, seen } = setup();

  const badRequest = async (params: unknown) => {
    const error = errorOf(await dispatcher.dispatch(request('SendMessage', params), JSON_HEADERS));
    expect(error).toMatchObject({ id: 1, code: -32602, message: 'Invalid parameters' });
    expect(error.data).toHaveLength(1);
    const [detail] = error.data ?? [];
    expect(detail?.['@type']).toBe(badRequestType);
    return detail && 'fieldViolations' in detail ? detail.fieldViolations : [];
  };

  it('{} names message', async () => {
    expect(await badRequest({})).toEqual([{ field: 'message', description: 'Required' }]);
  });

  it('{"message":{"parts":"invalid"}} names message.parts', async () => {
    expect((await badRequest({ message: { parts: 'invalid' } })).map((v) => v.field)).toContain(
      'message.parts',
    );
  });

  it('{"":"x"} names message', async () => {
    expect(await badRequest({ '': 'x' })).toEqual([{ field: 'message', description: 'Required' }]);
  });

  it('a part with two content kinds names that part', async () => {
    const violations = await badRequest({
      message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'a', data: { b: 1 } }] },
    });
    expect(violations).toEqual([
      {
        field: 'message.parts[0]',
        description: 'A part needs exactly one of text, raw, url or data; got text and data',
      },
    ]);
  });

  it('params that are not an object name params; the use case never runs', async () => {
    expect(await badRequest([{ message: {} }])).toEqual([
      { field: 'params', description: expect.any(String) },
    ]);
    expect(seen).toEqual([]);
  });

  it('an InvalidParamsError thrown by a use case maps the same way', async () => {
    const { dispatcher: d } = setup({
      CancelTask: defineMethod(a2aParamsSchemas.CancelTask, async () => {
        const { InvalidParamsError } = await import('../../shared/domain/errors.ts');
        throw new InvalidParamsError([{ field: 'id', description: 'Unknown task id format' }]);
      }),
    });
    const error = errorOf(await d.dispatch(request('CancelTask', { id: 't' }), JSON_HEADERS));
    expect(error.data).toEqual([
      { '@type': badRequestType, fieldViolations: [{ field: 'id', description: 'Unknown task id format' }] },
    ]);
  });
});

describe('the method table', () => {
  it('runs the method with parsed, key-normalized params and the request context', async () => {
    const { dispatcher, seen } = setup();
    const body = request(
      'ListTasks',
      { context_id: 'c', page_size: '10', unknown_field: 1, metadata: { a_b: 1 } },
      'r-1',
    );
    const result = await dispatcher.dispatch(
      body,
      { ...JSON_HEADERS, 'A2A-Extensions': 'urn:a, urn:b,,urn:a' },
      {
        caller: { tenant: 't1', principal: 'alice' },
        requestId: 'req-1',
        profileId: 'research',
        baseUrl: 'https://agents.example.com/agents/research',
      },
    );
    expect(jsonBody(result)).toEqual({
      jsonrpc: '2.0',
      id: 'r-1',
      result: { echo: { contextId: 'c', pageSize: 10, includeArtifacts: false } },
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.ctx).toEqual({
      caller: { tenant: 't1', principal: 'alice' },
      requestId: 'req-1',
      a2aVersion: '1.0',
      extensions: ['urn:a', 'urn:b'],
      profileId: 'research',
      baseUrl: 'https://agents.example.com/agents/research',
      binding: 'JSONRPC',
    });
  });

  it('fills context defaults when the transport gives none', async () => {
    const { dispatcher, seen } = setup();
    await dispatcher.dispatch(request('GetExtendedAgentCard'), V1);
    expect(seen[0]?.ctx).toMatchObject({ caller: null, profileId: 'default', baseUrl: '', extensions: [] });
    expect(seen[0]?.ctx.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serializes results as ProtoJSON: unset fields dropped, undefined result → null', async () => {
    const { dispatcher } = setup({
      GetTask: defineMethod(getTaskParamsSchema, async (params) => ({
        ...task(params.id),
        artifacts: undefined,
      })),
      DeleteTaskPushNotificationConfig: defineMethod(
        a2aParamsSchemas.DeleteTaskPushNotificationConfig,
        async () => undefined,
      ),
    });
    const got = resultOf(await dispatcher.dispatch(request('GetTask', { id: 't-9' }), V1));
    expect(got).toEqual(task('t-9'));
    expect(got).not.toHaveProperty('artifacts');
    const deleted = jsonBody(
      await dispatcher.dispatch(request('DeleteTaskPushNotificationConfig', { taskId: 't', id: 'p' }), V1),
    );
    expect(deleted).toEqual({ jsonrpc: '2.0', id: 1, result: null });
  });

  it('types params in run from the schema', () => {
    const table = {
      SendMessage: defineMethod(a2aParamsSchemas.SendMessage, async (params) => {
        expectTypeOf(params).toEqualTypeOf<SendMessageParams>();
        return params.message.messageId;
      }),
      ListTasks: {
        params: a2aParamsSchemas.ListTasks,
        run: async (params: ListTasksParams) => params.pageSize,
      },
    } satisfies MethodTable;
    createDispatcher(table, { errorDomain: 'x', logger: fakeLogger().logger });
    createDispatcher(
      {
        GetTask: {
          params: getTaskParamsSchema,
          run: async (params) => {
            expectTypeOf(params.id).toEqualTypeOf<string>();
            return null;
          },
        },
      },
      { errorDomain: 'x', logger: fakeLogger().logger },
    );
  });
});

describe('errors thrown by use cases', () => {
  it('a DomainError becomes its A2A code with an ErrorInfo', async () => {
    const { dispatcher } = setup({
      GetTask: defineMethod(getTaskParamsSchema, async (params) => {
        throw new TaskNotFoundError(params.id);
      }),
    });
    expect(errorOf(await dispatcher.dispatch(request('GetTask', { id: 'nope' }, 2), V1))).toEqual({
      id: 2,
      code: -32001,
      message: 'Task not found',
      data: [
        {
          '@type': errorInfoType,
          reason: 'TASK_NOT_FOUND',
          domain: 'a2a-protocol.org',
          metadata: { taskId: 'nope', timestamp: '2026-03-01T12:00:00.000Z' },
        },
      ],
    });
  });

  it('a plain Error → -32603 "Internal error", nothing of it in the body, the cause logged', async () => {
    const cause = new Error('DynamoDB said ProvisionedThroughputExceeded for table secret-table');
    const { dispatcher, logs } = setup({
      GetTask: defineMethod(getTaskParamsSchema, async () => {
        throw cause;
      }),
    });
    const result = await dispatcher.dispatch(request('GetTask', { id: 't' }, 3), V1, { requestId: 'req-9' });
    expect(jsonBody(result)).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32603, message: 'Internal error' },
    });
    const text = JSON.stringify(jsonBody(result));
    expect(text).not.toMatch(/secret-table|ProvisionedThroughput|at |\.ts/);
    expect(logs).toEqual([
      {
        message: 'JSON-RPC request failed',
        attributes: { requestId: 'req-9', method: 'GetTask', error: cause },
      },
    ]);
  });

  it('internal domain errors (sealing, conflicts, enqueue) are generic too', async () => {
    const { dispatcher, logs } = setup({
      GetTask: defineMethod(getTaskParamsSchema, async () => {
        throw new SealingFailedError('kms key arn:aws:kms:eu-west-1:1:key/abc disabled');
      }),
    });
    expect(errorOf(await dispatcher.dispatch(request('GetTask', { id: 't' }), V1))).toEqual({
      id: 1,
      code: -32603,
      message: 'Internal error',
    });
    expect(logs).toHaveLength(1);
  });

  it('a non-Error throw and a throwing logger still give an envelope', async () => {
    const { dispatcher } = setup(
      {
        GetTask: defineMethod(getTaskParamsSchema, async () => {
          throw 'a string';
        }),
      },
      {
        logger: {
          error: () => {
            throw new Error('logger down');
          },
        },
      },
    );
    expect(errorOf(await dispatcher.dispatch(request('GetTask', { id: 't' }), V1)).code).toBe(-32603);
  });

  it('even a failure while mapping the error (a broken clock) gives the generic envelope', async () => {
    const { dispatcher } = setup(
      {
        GetTask: defineMethod(getTaskParamsSchema, async (params) => {
          throw new TaskNotFoundError(params.id);
        }),
      },
      {
        now: () => {
          throw new Error('clock broken');
        },
      },
    );
    expect(jsonBody(await dispatcher.dispatch(request('GetTask', { id: 't' }), V1))).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32603, message: 'Internal error' },
    });
  });

  it('A2A errors are not logged as internal failures', async () => {
    const { dispatcher, logs } = setup({
      GetTask: defineMethod(getTaskParamsSchema, async () => {
        throw new UnsupportedOperationError('terminal');
      }),
    });
    expect(errorOf(await dispatcher.dispatch(request('GetTask', { id: 't' }), V1)).code).toBe(-32004);
    expect(logs).toEqual([]);
  });
});

describe('A2A-Version (docs/protocol.md §9, §17)', () => {
  const send = { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } };
  const served = async (headers: HeaderMap, method = 'SendMessage', query?: HeaderMap) => {
    const { dispatcher, seen } = setup();
    const result = await dispatcher.dispatch(request(method, send), headers, { query });
    return { result, seen };
  };

  it.each([
    ['1.0', { 'A2A-Version': '1.0' }],
    ['1.0.3 (patch ignored)', { 'A2A-Version': '1.0.3' }],
    ['lowercase header key', { 'a2a-version': '1.0' }],
    ['uppercase header key', { 'A2A-VERSION': ' 1.0 ' }],
    ['missing, PascalCase method', {}],
    ['empty, PascalCase method', { 'A2A-Version': '' }],
  ])('%s → served as 1.0', async (_, headers) => {
    const { result, seen } = await served(headers);
    expect(resultOf(result)).toEqual({ echo: expect.objectContaining({ message: expect.anything() }) });
    expect(seen[0]?.ctx.a2aVersion).toBe('1.0');
  });

  it.each([
    ['1.1', { 'A2A-Version': '1.1' }],
    ['1.1.0 (patch ignored)', { 'A2A-Version': '1.1.0' }],
  ])(
    '%s → served as 1.1, the 1.0 methods with task generations (docs/protocol.md §16)',
    async (_, headers) => {
      const { result, seen } = await served(headers);
      expect(resultOf(result)).toEqual({ echo: expect.objectContaining({ message: expect.anything() }) });
      expect(seen[0]?.ctx.a2aVersion).toBe('1.1');
    },
  );

  it.each([
    ['99.0', { 'A2A-Version': '99.0' }, '99.0'],
    ['1.2', { 'A2A-Version': '1.2' }, '1.2'],
    ['2', { 'A2A-Version': '2' }, '2'],
    ['0.3 with a v1.0 method', { 'A2A-Version': '0.3' }, '0.3'],
  ])('%s → -32009 VersionNotSupported', async (_, headers, version) => {
    const { result, seen } = await served(headers);
    const error = errorOf(result);
    expect(error).toMatchObject({ code: -32009, message: 'Protocol version not supported' });
    expect(error.data?.[0]).toMatchObject({ reason: 'VERSION_NOT_SUPPORTED', metadata: { version } });
    expect(seen).toEqual([]);
  });

  it('a v0.3 method name without a header → -32009 when no v0.3 table is configured', async () => {
    for (const method of ['message/send', 'tasks/get', 'tasks/pushNotificationConfig/set']) {
      const { result } = await served({}, method);
      expect(errorOf(result)).toMatchObject({ code: -32009, data: [{ metadata: { version: '0.3' } }] });
    }
  });

  it('a v0.3 method name under A2A-Version 1.0 is simply unknown (-32601)', async () => {
    expect(errorOf((await served(V1, 'message/send')).result).code).toBe(-32601);
  });

  it('is also read from the query string; the header wins over it', async () => {
    expect(errorOf((await served({}, 'SendMessage', { 'A2A-Version': '99.0' })).result).code).toBe(-32009);
    expect(resultOf((await served({}, 'SendMessage', { 'a2a-version': '1.0.1' })).result)).toBeDefined();
    expect(resultOf((await served(V1, 'SendMessage', { 'A2A-Version': '99.0' })).result)).toBeDefined();
  });
});

describe('A2A-Extensions', () => {
  it('parses the comma-separated header', () => {
    expect(parseExtensionsHeader(' urn:a ,urn:b,, urn:a')).toEqual(['urn:a', 'urn:b']);
    expect(parseExtensionsHeader(undefined)).toEqual([]);
  });

  it('a required extension that was not requested → -32008 naming it; requested → served', async () => {
    const { dispatcher, seen } = setup({}, { requiredExtensions: ['urn:a2a:tck:required-extension'] });
    const missing = errorOf(await dispatcher.dispatch(request('GetTask', { id: 't' }), V1));
    expect(missing).toMatchObject({
      code: -32008,
      message: 'Extension support required',
      data: [
        { reason: 'EXTENSION_SUPPORT_REQUIRED', metadata: { extension: 'urn:a2a:tck:required-extension' } },
      ],
    });
    expect(seen).toEqual([]);
    const ok = await dispatcher.dispatch(request('GetTask', { id: 't' }), {
      ...V1,
      'a2a-extensions': ['urn:other', 'urn:a2a:tck:required-extension'],
    });
    expect(resultOf(ok)).toEqual({ echo: { id: 't' } });
  });
});

describe('streaming methods', () => {
  const statusUpdate = (state: Task['status']['state']): StreamResponse => ({
    statusUpdate: {
      taskId: 't',
      contextId: 'ctx-1',
      status: { state, timestamp: '2026-03-01T12:00:00.000Z' },
    },
  });

  const streaming = (stream: () => AsyncIterable<StreamItem>) =>
    setup({
      SubscribeToTask: defineMethod(a2aParamsSchemas.SubscribeToTask, async () => toStreamResult(stream())),
    }).dispatcher;

  it('answers SSE: every item wrapped as a JSON-RPC success with the request id, event ids kept', async () => {
    const dispatcher = streaming(async function* () {
      yield { eventId: '1', response: { task: task('t') } };
      yield statusUpdate('TASK_STATE_COMPLETED');
    });
    const result = await dispatcher.dispatch(request('SubscribeToTask', { id: 't' }, 'sub-1'), V1);
    if (result.kind !== 'sse') throw new Error('expected SSE');
    expect(result.status).toBe(200);
    expect(await collect(result.events)).toEqual([
      { eventId: '1', message: { jsonrpc: '2.0', id: 'sub-1', result: { task: task('t') } } },
      { message: { jsonrpc: '2.0', id: 'sub-1', result: statusUpdate('TASK_STATE_COMPLETED') } },
    ]);
  });

  it('a failure before the first event stays a plain JSON error', async () => {
    const dispatcher = streaming(async function* () {
      yield* [];
      throw new TaskNotFoundError('t');
    });
    expect(errorOf(await dispatcher.dispatch(request('SubscribeToTask', { id: 't' }), V1)).code).toBe(-32001);
  });

  it('a stream that ends before its first event is an internal error', async () => {
    const dispatcher = streaming(async function* () {
      yield* [];
    });
    expect(errorOf(await dispatcher.dispatch(request('SubscribeToTask', { id: 't' }), V1)).code).toBe(-32603);
  });

  it('a failure mid-stream ends the stream with an error envelope', async () => {
    const dispatcher = streaming(async function* () {
      yield { task: task('t') };
      throw new Error('journal read failed: secret detail');
    });
    const result = await dispatcher.dispatch(request('SubscribeToTask', { id: 't' }, 5), V1);
    if (result.kind !== 'sse') throw new Error('expected SSE');
    const events = await collect(result.events);
    expect(events.at(-1)).toEqual({
      message: { jsonrpc: '2.0', id: 5, error: { code: -32603, message: 'Internal error' } },
    });
    expect(events).toHaveLength(2);
  });

  it('a client that goes away closes the use case stream', async () => {
    let closed = false;
    const dispatcher = streaming(async function* () {
      try {
        yield { task: task('t') };
        yield statusUpdate('TASK_STATE_WORKING');
        yield statusUpdate('TASK_STATE_COMPLETED');
      } finally {
        closed = true;
      }
    });
    const result = await dispatcher.dispatch(request('SubscribeToTask', { id: 't' }), V1);
    if (result.kind !== 'sse') throw new Error('expected SSE');
    for await (const event of result.events) {
      expect('message' in event ? event.message : event).toHaveProperty('result');
      break;
    }
    expect(closed).toBe(true);
  });
});

describe('the dispatcher never throws (property)', () => {
  const methodNames = [...Object.keys(a2aParamsSchemas), 'message/send', 'tasks/get', 'Nope', 'toString', ''];

  /** Use cases that, in turn, succeed, fail with a domain error, blow up or stream. */
  const chaoticTable = (): A2aMethodTable => {
    let calls = 0;
    const run = async (params: unknown): Promise<unknown> => {
      calls += 1;
      switch (calls % 5) {
        case 0:
          throw new TaskNotFoundError('t');
        case 1:
          throw new Error(`boom ${JSON.stringify(params)}`);
        case 2:
          throw { weird: true, boom: 1 };
        case 3:
          return toStreamResult(
            (async function* () {
              yield { task: task('t') };
              if (calls % 2 === 0) throw new Error('boom mid-stream');
            })(),
          );
        default:
          return { params };
      }
    };
    return Object.fromEntries(
      Object.entries(a2aParamsSchemas).map(([method, params]) => [method, { params, run }]),
    ) as unknown as A2aMethodTable;
  };

  /** Mostly-right values with a chance of anything, so every stage of the dispatcher is reached. */
  const mostly = <T>(usual: fc.Arbitrary<T>): fc.Arbitrary<T | fc.JsonValue> =>
    fc.oneof({ arbitrary: usual, weight: 4 }, { arbitrary: fc.jsonValue(), weight: 1 });

  const part = fc.oneof(
    fc.record({ text: fc.string() }),
    fc.dictionary(fc.constantFrom('text', 'raw', 'url', 'data', 'metadata', 'media_type'), fc.jsonValue()),
  );
  const message = fc.record(
    {
      messageId: mostly(fc.string({ minLength: 1 })),
      role: mostly(fc.constantFrom('ROLE_USER', 'user', 'agent', 1)),
      parts: mostly(fc.array(part, { minLength: 1, maxLength: 3 })),
      metadata: fc.jsonValue(),
    },
    { requiredKeys: ['messageId', 'role', 'parts'] },
  );
  const params = fc.oneof(
    fc.jsonValue(),
    fc.record(
      {
        id: mostly(fc.string({ minLength: 1 })),
        task_id: mostly(fc.string({ minLength: 1 })),
        url: mostly(fc.constant('https://hooks.example.com/a2a')),
        message: mostly(message),
        page_size: mostly(fc.integer({ min: -5, max: 120 })),
        status: mostly(fc.constantFrom('TASK_STATE_WORKING', 3, 'nope')),
        statusTimestampAfter: mostly(fc.date({ noInvalidDate: true }).map((d) => d.toISOString())),
      },
      { requiredKeys: [] },
    ),
  );
  const envelope = fc.record(
    {
      jsonrpc: mostly(fc.constant('2.0')),
      id: mostly(fc.oneof(fc.string(), fc.integer(), fc.constant(null))),
      method: mostly(fc.constantFrom(...methodNames)),
      params,
    },
    { requiredKeys: ['jsonrpc', 'method'] },
  );

  const body = fc.oneof(
    fc.string(),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    { arbitrary: envelope.map((v) => JSON.stringify(v)), weight: 6 },
  );
  const headers = fc.record(
    {
      'A2A-Version': fc.oneof(
        { arbitrary: fc.constantFrom('1.0', '1.0.1', '', '0.3', '99.0'), weight: 4 },
        { arbitrary: fc.string(), weight: 1 },
      ),
      'content-type': fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain'),
      'A2A-Extensions': fc.string(),
    },
    { requiredKeys: [] },
  );

  it('answers every input with a well-formed envelope (HTTP 200, allowed codes, error = code/message/data)', async () => {
    const { logger } = fakeLogger();
    const dispatcher = createDispatcher(chaoticTable(), { errorDomain: 'x', logger });
    const seenCodes = new Set<number | 'result' | 'sse'>();
    await fc.assert(
      fc.asyncProperty(body, headers, async (raw, hdrs) => {
        const result = await dispatcher.dispatch(raw, hdrs);
        expect(result.status).toBe(200);
        if (result.kind === 'sse') seenCodes.add('sse');
        const messages =
          result.kind === 'json'
            ? [result.body]
            : (await collect(result.events)).flatMap((event) => ('message' in event ? [event.message] : []));
        expect(messages.length).toBeGreaterThan(0);
        for (const message of messages) {
          expect(message.jsonrpc).toBe('2.0');
          expect(message.id === null || ['string', 'number'].includes(typeof message.id)).toBe(true);
          expect(Object.keys(message).sort()).toSatisfy(
            (keys: string[]) => keys.join() === 'error,id,jsonrpc' || keys.join() === 'id,jsonrpc,result',
          );
          if ('error' in message) {
            assertErrorObjectSchema(message.error);
            expect(JSON.stringify(message.error)).not.toContain('boom');
            seenCodes.add(message.error.code);
          } else {
            seenCodes.add('result');
          }
        }
      }),
      { numRuns: 2500 },
    );
    // The inputs reached every stage, not just the JSON parser.
    for (const reached of [
      -32700,
      -32600,
      -32601,
      -32602,
      -32603,
      -32001,
      -32005,
      -32009,
      'result',
      'sse',
    ] as const) {
      expect(seenCodes.has(reached), String(reached)).toBe(true);
    }
  }, 60_000);
});

describe('ProtoJSON serialization (results)', () => {
  const message = (n: number) => ({
    messageId: `m${n}`,
    role: 'ROLE_USER' as const,
    parts: [{ text: `${n}` }],
  });
  const withHistory: Task = { ...task('t'), history: [message(1), message(2), message(3)] };

  it('drops unset fields, keeps camelCase, writes Timestamps with Z and milliseconds and bytes as base64', () => {
    expect(
      toProtoJson({
        id: 't',
        contextId: undefined,
        status: { state: 'TASK_STATE_WORKING', timestamp: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)) },
        list: [1, undefined, 'x'],
        raw: new Uint8Array([104, 105]),
        big: 2n ** 63n,
        fn: () => 1,
        metadata: { nested_key: { keep: null } },
      }),
    ).toEqual({
      id: 't',
      status: { state: 'TASK_STATE_WORKING', timestamp: '2026-01-02T03:04:05.000Z' },
      list: [1, 'x'],
      raw: 'aGk=',
      big: '9223372036854775808',
      metadata: { nested_key: { keep: null } },
    });
    expect(toProtoJson(undefined)).toBeNull();
  });

  it('formatTimestamp normalizes to UTC milliseconds and refuses what is not a time', () => {
    expect(formatTimestamp('2026-01-01T02:00:00+02:00')).toBe('2026-01-01T00:00:00.000Z');
    expect(formatTimestamp(0)).toBe('1970-01-01T00:00:00.000Z');
    expect(() => formatTimestamp('soon')).toThrow(RangeError);
  });

  it('historyLength: unset keeps all, 0 omits the field, N keeps the N most recent', () => {
    expect(applyHistoryLength(withHistory)).toBe(withHistory);
    expect(applyHistoryLength(withHistory, 0)).not.toHaveProperty('history');
    expect(applyHistoryLength(withHistory, 2).history?.map((m) => m.messageId)).toEqual(['m2', 'm3']);
    expect(applyHistoryLength(withHistory, 10).history).toHaveLength(3);
    expect(withHistory.history).toHaveLength(3);
  });

  it('includeArtifacts: false omits the field entirely, true keeps it (even as [])', () => {
    const withArtifacts: Task = { ...task('t'), artifacts: [{ artifactId: 'a', parts: [{ text: 'x' }] }] };
    expect(applyIncludeArtifacts(withArtifacts, false)).not.toHaveProperty('artifacts');
    expect(applyIncludeArtifacts(withArtifacts, true)).toEqual(withArtifacts);
    expect(applyIncludeArtifacts(task('t'), true).artifacts).toEqual([]);
    expect(JSON.stringify(applyIncludeArtifacts(withArtifacts, false))).not.toContain('artifacts');
  });
});
