import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  a2aParamsSchemas,
  cancelTaskParamsSchema,
  createTaskPushNotificationConfigParamsSchema,
  formatFieldPath,
  getExtendedAgentCardParamsSchema,
  getTaskParamsSchema,
  type ListTasksParams,
  listTaskPushNotificationConfigsParamsSchema,
  listTasksParamsSchema,
  maxIdLength,
  maxJsonDepth,
  normalizeParamKeys,
  parseParams,
  type SendMessageParams,
  sendMessageParamsSchema,
  subscribeToTaskParamsSchema,
} from '../../shared/app/rpc/schemas.ts';
import type { Message } from '../../shared/domain/a2a.ts';
import { InvalidParamsError } from '../../shared/domain/errors.ts';
import type * as z from '../../shared/zod.ts';

const violationsOf = (schema: z.core.$ZodType, params: unknown) => {
  try {
    parseParams(schema, params);
  } catch (error) {
    if (error instanceof InvalidParamsError) return error.violations;
    throw error;
  }
  throw new Error('expected InvalidParamsError');
};

const fieldsOf = (schema: z.core.$ZodType, params: unknown) =>
  violationsOf(schema, params).map((v) => v.field);

const userMessage = (overrides: Record<string, unknown> = {}) => ({
  messageId: 'm-1',
  role: 'ROLE_USER',
  parts: [{ text: 'hi' }],
  ...overrides,
});

describe('normalizeParamKeys', () => {
  it('renames snake_case keys to camelCase at every structured level, arrays included', () => {
    expect(
      normalizeParamKeys({
        history_length: 3,
        message: {
          message_id: 'm',
          parts: [{ media_type: 'text/plain', text: 'x' }],
          reference_task_ids: ['a'],
        },
      }),
    ).toEqual({
      historyLength: 3,
      message: { messageId: 'm', parts: [{ mediaType: 'text/plain', text: 'x' }], referenceTaskIds: ['a'] },
    });
  });

  it('leaves metadata objects and Part data values untouched, at any depth', () => {
    const metadata = { snake_key: { inner_key: 1 }, keep_null: null };
    const data = { user_field: [{ deep_key: true }], other_null: null };
    const out = normalizeParamKeys({
      metadata,
      message: { metadata, parts: [{ data, metadata }] },
      configuration: { task_push_notification_config: { url: 'https://h' } },
    });
    expect(out).toEqual({
      metadata,
      message: { metadata, parts: [{ data, metadata }] },
      configuration: { taskPushNotificationConfig: { url: 'https://h' } },
    });
  });

  it('keeps the camelCase value when both spellings are sent', () => {
    expect(normalizeParamKeys({ page_size: 5, pageSize: 7 })).toEqual({ pageSize: 7 });
    expect(normalizeParamKeys({ pageSize: 7, page_size: 5 })).toEqual({ pageSize: 7 });
  });

  it('drops null-valued structured fields (ProtoJSON: null = unset) and leaves odd keys alone', () => {
    expect(normalizeParamKeys({ context_id: null, _private: 1, Snake_Case: 2, a__b: 3, '': 'x' })).toEqual({
      _private: 1,
      Snake_Case: 2,
      a__b: 3,
      '': 'x',
    });
  });

  it('keeps a __proto__ key as inert data', () => {
    const out = normalizeParamKeys(JSON.parse('{"__proto__": {"polluted": true}, "a_b": 1}')) as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(out.aB).toBe(1);
  });

  it('never rewrites metadata and is idempotent (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (metadata, data) => {
        const input = { metadata, message: { parts: [{ data }], extra_field: metadata } };
        const once = normalizeParamKeys(input) as Record<string, unknown>;
        if (metadata !== null) expect(once.metadata).toBe(metadata);
        expect(normalizeParamKeys(once)).toEqual(once);
      }),
      { numRuns: 300 },
    );
  });
});

describe('formatFieldPath', () => {
  it('renders zod paths as camelCase field paths', () => {
    expect(formatFieldPath(['message', 'parts', 0, 'text'])).toBe('message.parts[0].text');
    expect(formatFieldPath([])).toBe('params');
  });
});

describe('SendMessage params', () => {
  it('parses the spec example into domain values', () => {
    const params = parseParams(sendMessageParamsSchema, {
      message: userMessage(),
      configuration: { historyLength: 5 },
    });
    expect(params.message).toEqual({ messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] });
    expect(params.configuration?.historyLength).toBe(5);
  });

  it('TCK CORE-ERR-002: {} names the missing message', () => {
    expect(violationsOf(sendMessageParamsSchema, {})).toEqual([
      { field: 'message', description: 'Required' },
    ]);
  });

  it('TCK: {"":"x"} is an unknown field (ignored), so message is missing', () => {
    expect(fieldsOf(sendMessageParamsSchema, { '': 'x' })).toEqual(['message']);
  });

  it('TCK: {"message":{"parts":"invalid"}} names parts, messageId and role', () => {
    const violations = violationsOf(sendMessageParamsSchema, { message: { parts: 'invalid' } });
    expect(violations.map((v) => v.field).sort()).toEqual([
      'message.messageId',
      'message.parts',
      'message.role',
    ]);
    expect(violations.find((v) => v.field === 'message.parts')?.description).toMatch(/array/);
  });

  it('names the part that has two content kinds, and the one that has none', () => {
    const violations = violationsOf(sendMessageParamsSchema, {
      message: userMessage({ parts: [{ text: 'ok' }, { text: 'a', url: 'https://x/y' }, { filename: 'f' }] }),
    });
    expect(violations).toEqual([
      {
        field: 'message.parts[1]',
        description: 'A part needs exactly one of text, raw, url or data; got text and url',
      },
      {
        field: 'message.parts[2]',
        description: 'A part needs exactly one of text, raw, url or data; none was given',
      },
    ]);
  });

  it('requires at least one part and a non-empty messageId', () => {
    expect(
      violationsOf(sendMessageParamsSchema, { message: userMessage({ parts: [], messageId: '' }) }),
    ).toEqual([
      { field: 'message.messageId', description: 'Must be a non-empty string' },
      { field: 'message.parts', description: 'At least one part is required' },
    ]);
  });

  it('accepts ROLE_USER/ROLE_AGENT, lowercase user/agent and the enum numbers', () => {
    for (const [input, role] of [
      ['ROLE_USER', 'ROLE_USER'],
      ['user', 'ROLE_USER'],
      [1, 'ROLE_USER'],
      ['ROLE_AGENT', 'ROLE_AGENT'],
      ['agent', 'ROLE_AGENT'],
      [2, 'ROLE_AGENT'],
    ] as const) {
      expect(
        parseParams(sendMessageParamsSchema, { message: userMessage({ role: input }) }).message.role,
      ).toBe(role);
    }
    for (const role of ['ROLE_UNSPECIFIED', 0, 'USER', 'toString', true]) {
      expect(violationsOf(sendMessageParamsSchema, { message: userMessage({ role }) })).toEqual([
        { field: 'message.role', description: 'Must be ROLE_USER or ROLE_AGENT' },
      ]);
    }
  });

  it('validates raw as base64 and normalizes URL-safe or unpadded input to standard base64', () => {
    const parse = (raw: string) =>
      parseParams(sendMessageParamsSchema, { message: userMessage({ parts: [{ raw }] }) });
    expect(parse('aGk=').message.parts[0]).toEqual({ raw: 'aGk=' });
    expect(parse('aGk').message.parts[0]).toEqual({ raw: 'aGk=' });
    expect(parse('-_8').message.parts[0]).toEqual({ raw: '+/8=' });
    for (const raw of ['not base64!', 'a', 'abc==', 'a=bc']) {
      expect(fieldsOf(sendMessageParamsSchema, { message: userMessage({ parts: [{ raw }] }) })).toEqual([
        'message.parts[0].raw',
      ]);
    }
  });

  it('keeps part metadata, filename and mediaType, and any JSON as data', () => {
    const parts = [
      { url: 'https://example.com/a.txt', filename: 'a.txt', mediaType: 'text/plain' },
      { data: [1, 'two', { three_four: null }], metadata: { some_key: 1 } },
      { data: 0 },
      { data: false },
    ];
    expect(parseParams(sendMessageParamsSchema, { message: userMessage({ parts }) }).message.parts).toEqual(
      parts,
    );
  });

  it('refuses part URLs that are not absolute http(s)', () => {
    for (const url of ['javascript:alert(1)', 'file:///etc/passwd', 'relative/path']) {
      expect(fieldsOf(sendMessageParamsSchema, { message: userMessage({ parts: [{ url }] }) })).toEqual([
        'message.parts[0].url',
      ]);
    }
  });

  it('refuses metadata that is not an object', () => {
    expect(
      fieldsOf(sendMessageParamsSchema, { message: userMessage({ metadata: [1] }), metadata: 'x' }),
    ).toEqual(['message.metadata', 'metadata']);
  });

  it('reads empty ids as unset and ignores unknown fields', () => {
    const params = parseParams(sendMessageParamsSchema, {
      message: userMessage({ contextId: '', kind: 'message', extra: { a: 1 } }),
      unknownTopLevel: true,
    });
    expect(params.message.contextId).toBeUndefined();
    expect(params.message).not.toHaveProperty('kind');
    expect(params.message).not.toHaveProperty('extra');
    expect(params).not.toHaveProperty('unknownTopLevel');
  });

  it('validates configuration: historyLength ≥ 0, push url http(s), authentication.scheme', () => {
    const violations = violationsOf(sendMessageParamsSchema, {
      message: userMessage(),
      configuration: {
        historyLength: -1,
        returnImmediately: 'yes',
        taskPushNotificationConfig: { url: 'ftp://x', authentication: {} },
      },
    });
    expect(violations.map((v) => v.field)).toEqual([
      'configuration.taskPushNotificationConfig.url',
      'configuration.taskPushNotificationConfig.authentication.scheme',
      'configuration.historyLength',
      'configuration.returnImmediately',
    ]);
  });

  it('outputs the domain Message type', () => {
    expectTypeOf<SendMessageParams['message']>().toEqualTypeOf<Message>();
    expectTypeOf<z.output<typeof sendMessageParamsSchema>>().toEqualTypeOf<SendMessageParams>();
  });
});

describe('camelCase and snake_case are both accepted for every method with multi-word keys', () => {
  const push = {
    url: 'https://hooks.example.com/a2a',
    token: 'tok',
    authentication: { scheme: 'Bearer', credentials: 'c' },
  };
  const cases: readonly { method: string; schema: z.core.$ZodType; camel: unknown; snake: unknown }[] = [
    {
      method: 'SendMessage',
      schema: sendMessageParamsSchema,
      camel: {
        message: {
          messageId: 'm',
          role: 'ROLE_USER',
          contextId: 'c',
          taskId: 't',
          referenceTaskIds: ['r'],
          parts: [{ raw: 'aGk=', mediaType: 'text/plain' }],
        },
        configuration: {
          acceptedOutputModes: ['text/plain'],
          historyLength: 2,
          returnImmediately: true,
          taskPushNotificationConfig: push,
        },
      },
      snake: {
        message: {
          message_id: 'm',
          role: 'ROLE_USER',
          context_id: 'c',
          task_id: 't',
          reference_task_ids: ['r'],
          parts: [{ raw: 'aGk=', media_type: 'text/plain' }],
        },
        configuration: {
          accepted_output_modes: ['text/plain'],
          history_length: 2,
          return_immediately: true,
          task_push_notification_config: push,
        },
      },
    },
    {
      method: 'GetTask',
      schema: getTaskParamsSchema,
      camel: { id: 't', historyLength: 0 },
      snake: { id: 't', history_length: 0 },
    },
    {
      method: 'ListTasks',
      schema: listTasksParamsSchema,
      camel: {
        contextId: 'c',
        status: 'TASK_STATE_WORKING',
        pageSize: 10,
        pageToken: 'opaque',
        historyLength: 1,
        statusTimestampAfter: '2026-01-01T00:00:00Z',
        includeArtifacts: true,
      },
      snake: {
        context_id: 'c',
        status: 'TASK_STATE_WORKING',
        page_size: 10,
        page_token: 'opaque',
        history_length: 1,
        status_timestamp_after: '2026-01-01T00:00:00Z',
        include_artifacts: true,
      },
    },
    {
      method: 'CreateTaskPushNotificationConfig',
      schema: createTaskPushNotificationConfigParamsSchema,
      camel: { taskId: 't', ...push },
      snake: { task_id: 't', ...push },
    },
    {
      method: 'GetTaskPushNotificationConfig',
      schema: a2aParamsSchemas.GetTaskPushNotificationConfig,
      camel: { taskId: 't', id: 'p' },
      snake: { task_id: 't', id: 'p' },
    },
    {
      method: 'DeleteTaskPushNotificationConfig',
      schema: a2aParamsSchemas.DeleteTaskPushNotificationConfig,
      camel: { taskId: 't', id: 'p' },
      snake: { task_id: 't', id: 'p' },
    },
    {
      method: 'ListTaskPushNotificationConfigs',
      schema: listTaskPushNotificationConfigsParamsSchema,
      camel: { taskId: 't', pageSize: 5, pageToken: 'x' },
      snake: { task_id: 't', page_size: 5, page_token: 'x' },
    },
  ];

  it.each(cases)('$method', ({ schema, camel, snake }) => {
    const fromCamel = parseParams(schema, camel);
    expect(parseParams(schema, snake)).toEqual(fromCamel);
    // Every multi-word value made it through (none silently dropped as an unknown field).
    const values = JSON.stringify(fromCamel);
    for (const needle of ['"c"', '"t"', '"r"', '"p"', 'text/plain', 'opaque', 'hooks.example.com']) {
      if (JSON.stringify(camel).includes(needle)) expect(values).toContain(needle);
    }
  });

  it('covers every method that has multi-word keys', () => {
    const withoutMultiWordKeys = [
      'SendStreamingMessage',
      'CancelTask',
      'SubscribeToTask',
      'GetExtendedAgentCard',
    ];
    const covered = new Set([...cases.map((c) => c.method), ...withoutMultiWordKeys]);
    expect([...covered].sort()).toEqual(Object.keys(a2aParamsSchemas).sort());
    expect(a2aParamsSchemas.SendStreamingMessage).toBe(sendMessageParamsSchema);
  });
});

describe('ListTasks params (docs/protocol.md §6)', () => {
  it('defaults pageSize to 50 and includeArtifacts to false', () => {
    expect(parseParams(listTasksParamsSchema, {})).toEqual({ pageSize: 50, includeArtifacts: false });
    expectTypeOf<z.output<typeof listTasksParamsSchema>>().toEqualTypeOf<ListTasksParams>();
  });

  it.each([0, -1, 101, 150, 1.5, 'abc', true])('pageSize %s is refused', (pageSize) => {
    expect(fieldsOf(listTasksParamsSchema, { pageSize })).toEqual(['pageSize']);
  });

  it('accepts pageSize 1 and 100, and int32 as a decimal string', () => {
    expect(parseParams(listTasksParamsSchema, { pageSize: 1 }).pageSize).toBe(1);
    expect(parseParams(listTasksParamsSchema, { pageSize: 100 }).pageSize).toBe(100);
    expect(parseParams(listTasksParamsSchema, { pageSize: '20' }).pageSize).toBe(20);
  });

  it('refuses a negative historyLength (spec §6.5 example)', () => {
    expect(violationsOf(listTasksParamsSchema, { historyLength: -5 })).toEqual([
      { field: 'historyLength', description: 'Must be 0 or more' },
    ]);
  });

  it('accepts TaskState names and enum numbers; UNSPECIFIED means no filter', () => {
    expect(parseParams(listTasksParamsSchema, { status: 'TASK_STATE_INPUT_REQUIRED' }).status).toBe(
      'TASK_STATE_INPUT_REQUIRED',
    );
    expect(parseParams(listTasksParamsSchema, { status: 2 }).status).toBe('TASK_STATE_WORKING');
    expect(parseParams(listTasksParamsSchema, { status: 8 }).status).toBe('TASK_STATE_AUTH_REQUIRED');
    expect(parseParams(listTasksParamsSchema, { status: 'TASK_STATE_UNSPECIFIED' }).status).toBeUndefined();
    expect(parseParams(listTasksParamsSchema, { status: 0 }).status).toBeUndefined();
  });

  it.each(['TASK_STATE_RUNNING', 'working', 9, -1, 2.5])('status %s is refused', (status) => {
    expect(fieldsOf(listTasksParamsSchema, { status })).toEqual(['status']);
  });

  it('normalizes statusTimestampAfter to UTC with milliseconds; epoch millis are accepted', () => {
    const parse = (value: unknown) => parseParams(listTasksParamsSchema, { statusTimestampAfter: value });
    expect(parse('2026-01-01T00:00:00Z').statusTimestampAfter).toBe('2026-01-01T00:00:00.000Z');
    expect(parse('2026-01-01T02:00:00.123456+02:00').statusTimestampAfter).toBe('2026-01-01T00:00:00.123Z');
    expect(parse(1767225600000).statusTimestampAfter).toBe('2026-01-01T00:00:00.000Z');
  });

  it.each([
    'yesterday',
    '2026-01-01',
    '2026-02-30T00:00:00Z',
    '2026-01-01T00:00:00',
    -1,
    1.5,
    '1767225600000',
  ])('statusTimestampAfter %s is refused', (value) => {
    expect(fieldsOf(listTasksParamsSchema, { statusTimestampAfter: value })).toEqual([
      'statusTimestampAfter',
    ]);
  });

  it('passes pageToken through opaquely and refuses a non-boolean includeArtifacts', () => {
    expect(parseParams(listTasksParamsSchema, { pageToken: '!!not-ours!!' }).pageToken).toBe('!!not-ours!!');
    expect(fieldsOf(listTasksParamsSchema, { includeArtifacts: 'true' })).toEqual(['includeArtifacts']);
  });
});

describe('other methods', () => {
  it('GetTask, CancelTask and SubscribeToTask require a non-empty id', () => {
    for (const schema of [getTaskParamsSchema, cancelTaskParamsSchema, subscribeToTaskParamsSchema]) {
      expect(violationsOf(schema, {})).toEqual([{ field: 'id', description: 'Required' }]);
      expect(fieldsOf(schema, { id: '' })).toEqual(['id']);
      expect(fieldsOf(schema, { id: 7 })).toEqual(['id']);
    }
    expect(parseParams(cancelTaskParamsSchema, { id: 't', metadata: { a_b: 1 } })).toEqual({
      id: 't',
      metadata: { a_b: 1 },
    });
  });

  it('CreateTaskPushNotificationConfig requires taskId and an http(s) url; id is optional', () => {
    expect(fieldsOf(createTaskPushNotificationConfigParamsSchema, {})).toEqual(['url', 'taskId']);
    expect(
      parseParams(createTaskPushNotificationConfigParamsSchema, { taskId: 't', url: 'http://localhost:9/h' }),
    ).toEqual(expect.objectContaining({ taskId: 't', url: 'http://localhost:9/h' }));
  });

  it('refuses ids longer than maxIdLength wherever an id becomes a DynamoDB key part', () => {
    // Found by test/conformance/edge-fuzz.test.ts: a 2 KB task id reached DynamoDB and came back
    // as -32603 (the key exceeds DynamoDB's limit) instead of a -32602 naming the field.
    const long = '𝔘'.repeat(maxIdLength / 2 + 1);
    const fits = 'é'.repeat(maxIdLength);
    const push = { taskId: 't', url: 'http://localhost:9/h' };
    const cases: [z.core.$ZodType, Record<string, unknown>, string][] = [
      [getTaskParamsSchema, { id: long }, 'id'],
      [cancelTaskParamsSchema, { id: long }, 'id'],
      [subscribeToTaskParamsSchema, { id: long }, 'id'],
      [createTaskPushNotificationConfigParamsSchema, { ...push, taskId: long }, 'taskId'],
      [createTaskPushNotificationConfigParamsSchema, { ...push, id: long }, 'id'],
      [a2aParamsSchemas.GetTaskPushNotificationConfig, { taskId: 't', id: long }, 'id'],
      [a2aParamsSchemas.DeleteTaskPushNotificationConfig, { taskId: long, id: 'c' }, 'taskId'],
      [listTaskPushNotificationConfigsParamsSchema, { taskId: long }, 'taskId'],
      [sendMessageParamsSchema, { message: userMessage({ taskId: long }) }, 'message.taskId'],
      [sendMessageParamsSchema, { message: userMessage({ contextId: long }) }, 'message.contextId'],
      [sendMessageParamsSchema, { message: userMessage({ messageId: long }) }, 'message.messageId'],
    ];
    for (const [schema, params, field] of cases) {
      expect(violationsOf(schema, params), field).toEqual([
        { field, description: `Must be at most ${maxIdLength} characters` },
      ]);
      const within = JSON.parse(JSON.stringify(params).replaceAll(long, fits)) as Record<string, unknown>;
      expect(() => parseParams(schema, within), field).not.toThrow();
    }
    // 256 UTF-16 code units are at most 768 UTF-8 bytes: `PUSH#<id>` stays under 1,024.
    expect(Buffer.byteLength(`PUSH#${'\uffff'.repeat(maxIdLength)}`)).toBeLessThanOrEqual(1024);
  });

  it('refuses free-form JSON nested deeper than maxJsonDepth, without overflowing the stack itself', () => {
    // Found by test/conformance/edge-fuzz.test.ts: a data part 30,000 arrays deep parsed fine and
    // then overflowed JSON.stringify while being sealed (-32603 instead of -32602).
    const nest = (levels: number, asObject: boolean): unknown => {
      let value: unknown = 'leaf';
      for (let level = 0; level < levels; level++) value = asObject ? { n: value } : [value];
      return value;
    };
    const description = `Must not nest more than ${maxJsonDepth} levels deep`;
    for (const asObject of [false, true]) {
      const fits = nest(maxJsonDepth, asObject);
      const deep = nest(maxJsonDepth + 1, asObject);
      const deepest = nest(50_000, asObject);
      expect(() =>
        parseParams(sendMessageParamsSchema, { message: userMessage({ parts: [{ data: fits }] }) }),
      ).not.toThrow();
      for (const data of [deep, deepest]) {
        expect(
          violationsOf(sendMessageParamsSchema, { message: userMessage({ parts: [{ data }] }) }),
        ).toEqual([{ field: 'message.parts[0].data', description }]);
      }
      // Metadata objects: the object itself is the first level.
      expect(() =>
        parseParams(sendMessageParamsSchema, {
          message: userMessage({ metadata: { m: nest(maxJsonDepth - 1, asObject) } }),
        }),
      ).not.toThrow();
      for (const [params, field] of [
        [{ message: userMessage({ metadata: { m: deepest } }) }, 'message.metadata'],
        [{ message: userMessage(), metadata: { m: deep } }, 'metadata'],
        [
          { message: userMessage({ parts: [{ text: 't', metadata: { m: deep } }] }) },
          'message.parts[0].metadata',
        ],
      ] as const) {
        expect(violationsOf(sendMessageParamsSchema, params)).toEqual([{ field, description }]);
      }
      expect(violationsOf(cancelTaskParamsSchema, { id: 't', metadata: { m: deepest } })).toEqual([
        { field: 'metadata', description },
      ]);
    }
  });

  it('GetExtendedAgentCard accepts absent or empty params and a tenant', () => {
    expect(parseParams(getExtendedAgentCardParamsSchema, undefined)).toEqual({});
    expect(parseParams(getExtendedAgentCardParamsSchema, {})).toEqual({});
    expect(parseParams(getExtendedAgentCardParamsSchema, { tenant: 'acme' })).toEqual({ tenant: 'acme' });
  });

  it('params that are not an object are a violation of `params`', () => {
    for (const params of [[], 'x', 3, true]) {
      expect(fieldsOf(getExtendedAgentCardParamsSchema, params)).toEqual(['params']);
    }
  });

  it('caps the number of violations reported', () => {
    const parts = Array.from({ length: 500 }, () => ({}));
    expect(violationsOf(sendMessageParamsSchema, { message: userMessage({ parts }) })).toHaveLength(20);
  });
});
