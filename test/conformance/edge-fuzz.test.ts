import { randomUUID } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aErrorDomain, jsonRpcErrorTable } from '../../shared/app/rpc/errors-table.ts';
import { v03ParamsSchemas } from '../../shared/app/rpc/v03-methods.ts';
import { parseConfig } from '../../shared/config/config.ts';
import {
  type A2aMethod,
  a2aMethods,
  type ConformanceStack,
  conformanceConfig,
  type JsonObject,
  startConformanceStack,
  stateOf,
  taskOf,
  userMessage,
} from './support.ts';

/**
 * Bad input at the HTTP/JSON-RPC edge, property-based (issue 7 item 4, docs/security.md "Rules": bad input
 * gets a precise JSON-RPC error, never a 5xx or a stack trace). fast-check generates requests —
 * random JSON, near-valid requests of all 11 methods with one field broken (wrong types, missing
 * fields, huge strings, deep nesting, unicode, invalid UTF-8 bytes), wrong content types, bodies
 * around both size limits, odd headers, paths and HTTP methods — and sends them, eight at a time,
 * through the real local HTTP harness to the real rpc handler (local stack, emulators).
 *
 * The oracle derives what each request must get from the request alone, in the order the edge
 * checks it (gateway size limit → authorizer → route → body cap → content type → JSON → envelope
 * → version → method → params): the exact code where one is determined, otherwise a code the
 * method may answer; every error a well-formed JSON-RPC error carrying the ErrorInfo or
 * BadRequest that the project's error table (shared/app/rpc/errors-table.ts) gives its code; no
 * 5xx and no -32603; no stack trace or internal path in any body. Afterwards a normal SendMessage
 * still completes.
 *
 * `FUZZ_RUNS` sets the number of generated requests (default 1,200 under `npm test`; the full
 * run is `FUZZ_RUNS=10000 npx vitest run test/conformance/edge-fuzz.test.ts`). `FUZZ_SEED`
 * replays a run.
 */

const totalRequests = Math.max(8, Number(process.env.FUZZ_RUNS ?? 1_200));
const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const concurrency = 8;
const numRuns = Math.ceil(totalRequests / concurrency);

const token = 'fuzz-token-3b7d91';
const fuzzConfig = parseConfig({
  ...conformanceConfig,
  auth: { tokens: { [token]: { tenant: 'fuzz', principal: 'fuzzer' } } },
});
const appBodyCap = fuzzConfig.maxRequestBytes;
/** infra/local/http-harness.ts `maxBodyBytesDefault`: API Gateway's own limit, answered 413. */
const gatewayBodyCap = 1024 * 1024;

/** Every A2A error code a well-formed call of each method may answer (docs/protocol.md §8). */
const a2aCodesOf: Readonly<Record<A2aMethod, readonly number[]>> = {
  SendMessage: [-32001, -32004, -32005],
  SendStreamingMessage: [-32001, -32004, -32005],
  GetTask: [-32001],
  ListTasks: [],
  CancelTask: [-32001, -32002],
  SubscribeToTask: [-32001, -32004],
  CreateTaskPushNotificationConfig: [-32001, -32003],
  GetTaskPushNotificationConfig: [-32001, -32003],
  ListTaskPushNotificationConfigs: [-32001, -32003],
  DeleteTaskPushNotificationConfig: [-32001, -32003],
  GetExtendedAgentCard: [-32004, -32007],
};
const streamingMethods = new Set<string>(['SendStreamingMessage', 'SubscribeToTask']);

// ---------------------------------------------------------------------------------------------
// What the error table says each code carries
// ---------------------------------------------------------------------------------------------

type Detail =
  /** `orBadRequest`: the code also has a validation row (-32602 is both invalid params and MESSAGE_ID_REUSED). */
  | { kind: 'errorInfo'; reasons: Set<string>; domains: Set<string>; orBadRequest?: boolean }
  | { kind: 'badRequest' | 'none' };

const detailByCode = new Map<number, Detail>();
for (const row of Object.values(jsonRpcErrorTable)) {
  const known = detailByCode.get(row.code);
  if (row.detail.kind === 'errorInfo') {
    const domain = row.detail.domain === 'a2a' ? a2aErrorDomain : fuzzConfig.errorDomain;
    const entry: Detail =
      known?.kind === 'errorInfo'
        ? known
        : {
            kind: 'errorInfo' as const,
            reasons: new Set<string>(),
            domains: new Set<string>(),
            orBadRequest: known?.kind === 'badRequest',
          };
    entry.reasons.add(row.detail.reason);
    entry.domains.add(domain);
    detailByCode.set(row.code, entry);
  } else if (known?.kind === 'errorInfo' && row.detail.kind === 'badRequest') {
    known.orBadRequest = true;
  } else if (known === undefined && row.detail.kind !== 'limit') {
    // A limit's ErrorInfo + BadRequest needs requests above a limit, which the fuzzer never builds.
    detailByCode.set(row.code, { kind: row.detail.kind });
  }
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

interface FuzzRequest {
  readonly label: string;
  readonly httpMethod: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** The params were broken on purpose in a way no method accepts: exactly -32602. */
  readonly brokenParams?: boolean;
}

/** Fixtures made in beforeAll, so generated requests reach existing tasks and push configs too. */
const fixture = { taskId: 'unset', contextId: 'unset', pushConfigId: 'unset' };

const anyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\ud800',
    '\udfff',
    '\u202e',
    '𝔘𝔫𝔦',
    '../../etc/passwd',
    '%00',
    '$' + '{x}',
  ),
);

/** A string of up to ~70 KB: the app's body cap (64 KiB) is crossed inside a single field. */
const hugeString = fc
  .tuple(fc.integer({ min: 1, max: 70_000 }), fc.constantFrom('x', 'é', '€', '𝔘', '\u0000', '"'))
  .map(([length, unit]) => unit.repeat(Math.ceil(length / unit.length)));

/**
 * Nested arrays/objects far deeper than any schema walks, than DynamoDB maps go, and than a
 * recursive JSON.stringify survives: up to the depth that still fits under the body cap. Built
 * as a placeholder that `toJsonText` expands, since the test's own stringify would overflow.
 */
const deepValue = fc
  .tuple(fc.integer({ min: 1, max: 30_000 }), fc.constantFrom('a', 'o'))
  .map(([depth, kind]) => `__deep_${depth}_${kind}__`);

const expandDeep = (_match: string, depth: string, kind: string): string => {
  const levels = Number(depth);
  return kind === 'a'
    ? `${'['.repeat(levels)}"leaf"${']'.repeat(levels)}`
    : `${'{"n":'.repeat(levels)}"leaf"${'}'.repeat(levels)}`;
};

/** JSON text of a generated value, deep placeholders expanded. */
const toJsonText = (value: unknown): string =>
  (JSON.stringify(value) ?? 'null').replace(/"__deep_(\d+)_([ao])__"/g, expandDeep);

const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -0, [], {}, '', 'null'),
  fc.integer(),
  anyString,
  fc.jsonValue({ maxDepth: 3 }),
  hugeString,
  deepValue,
);

const idLike = fc.oneof(
  fc.constant('fixture-task'),
  fc.uuid(),
  anyString.filter((value) => value !== ''),
  fc.integer({ min: 2_050, max: 8_000 }).map((length) => 'i'.repeat(length)),
);

const resolveId = (value: string): string => (value === 'fixture-task' ? fixture.taskId : value);

const part = fc.oneof(
  fc.record({ text: anyString }),
  fc.record({ data: fc.oneof(fc.jsonValue({ maxDepth: 4 }), deepValue) }),
  fc.record({
    raw: fc.base64String({ maxLength: 64 }),
    mediaType: fc.constantFrom('text/plain', 'image/png'),
  }),
  fc.record({
    url: fc.constantFrom('https://example.com/a.txt', 'http://127.0.0.1:9/x'),
    filename: anyString,
  }),
);

const message = fc.record(
  {
    messageId: fc.uuid(),
    role: fc.constantFrom('ROLE_USER', 'user', 1),
    parts: fc.array(part, { minLength: 1, maxLength: 3 }),
    metadata: fc.dictionary(anyString, fc.oneof(fc.jsonValue({ maxDepth: 3 }), deepValue), { maxKeys: 3 }),
    contextId: fc.uuid(),
    taskId: idLike,
  },
  { requiredKeys: ['messageId', 'role', 'parts'] },
);

/** Well-formed params of each method (values may still name tasks that do not exist). */
const validParams: Readonly<Record<A2aMethod, fc.Arbitrary<JsonObject>>> = {
  SendMessage: fc.record({
    message,
    configuration: fc.record({ returnImmediately: fc.constant(true), historyLength: fc.nat(5) }),
  }),
  SendStreamingMessage: fc.record({ message }),
  GetTask: fc.record({ id: idLike, historyLength: fc.nat(10) }, { requiredKeys: ['id'] }),
  ListTasks: fc.record(
    {
      pageSize: fc.integer({ min: 1, max: 100 }),
      status: fc.constantFrom('TASK_STATE_COMPLETED', 'TASK_STATE_WORKING', 3),
      contextId: anyString,
      includeArtifacts: fc.boolean(),
      statusTimestampAfter: fc.constantFrom('2026-01-01T00:00:00Z', 0),
    },
    { requiredKeys: [] },
  ),
  CancelTask: fc.record({ id: idLike }),
  SubscribeToTask: fc.record({ id: idLike }),
  CreateTaskPushNotificationConfig: fc.record({
    taskId: idLike,
    url: fc.constantFrom(
      'http://127.0.0.1:9/fuzz-hook',
      'https://example.com/hook',
      'http://169.254.169.254/',
    ),
    token: anyString,
  }),
  GetTaskPushNotificationConfig: fc.record({
    taskId: idLike,
    id: fc.oneof(fc.constant('fixture-push'), anyString),
  }),
  ListTaskPushNotificationConfigs: fc.record({ taskId: idLike }),
  DeleteTaskPushNotificationConfig: fc.record({ taskId: idLike, id: anyString }),
  GetExtendedAgentCard: fc.constant({}),
};

/** A required field of each method, and values its schema refuses for it. */
const notAString = fc.oneof(
  fc.constantFrom(0, 1.5, true, false, [], {}, ['a'], { id: 'x' }),
  fc.integer(),
  deepValue,
);
const breakers: Readonly<Record<A2aMethod, fc.Arbitrary<(params: JsonObject) => unknown>>> = (() => {
  const set = (field: string, value: fc.Arbitrary<unknown>) =>
    value.map((broken) => (params: JsonObject) => ({ ...params, [field]: broken }));
  const drop = (field: string) =>
    fc.constant((params: JsonObject) =>
      Object.fromEntries(Object.entries(params).filter(([key]) => key !== field)),
    );
  const notAnObject = fc.constantFrom<unknown>(0, 'params', true, ['x'], []).map((broken) => () => broken);
  const message = (field: string, value: fc.Arbitrary<unknown>) =>
    value.map((broken) => (params: JsonObject) => ({
      ...params,
      message: { ...(params.message as JsonObject), [field]: broken },
    }));
  const send = fc.oneof(
    drop('message'),
    set('message', notAString),
    message(
      'parts',
      fc.constantFrom<unknown>([], 'text', [{}], [{ text: 'a', data: 1 }], [{ text: 5 }], [{ raw: '!!' }]),
    ),
    message('parts', fc.constant([{ url: 'file:///etc/passwd' }])),
    message('role', fc.constantFrom<unknown>('ROLE_SYSTEM', 'admin', 3, 0, '', true)),
    message('messageId', fc.constantFrom<unknown>('', 7, null, {})),
    message('metadata', fc.constantFrom<unknown>([], 'm', 3)),
    set(
      'configuration',
      fc.constantFrom<unknown>('x', 3, { historyLength: -1 }, { returnImmediately: 'yes' }),
    ),
    notAnObject,
  );
  const taskId = (field: string) =>
    fc.oneof(drop(field), set(field, notAString), set(field, fc.constant('')));
  return {
    SendMessage: send,
    SendStreamingMessage: send,
    GetTask: fc.oneof(
      taskId('id'),
      set('historyLength', fc.constantFrom<unknown>(-1, 1.5, 'ten', 2 ** 40)),
      notAnObject,
    ),
    ListTasks: fc.oneof(
      set('pageSize', fc.constantFrom<unknown>(0, 101, -5, 1.5, 'many', true)),
      set('status', fc.constantFrom<unknown>('DONE', 99, -1, true)),
      set('statusTimestampAfter', fc.constantFrom<unknown>('yesterday', -1, '2026-13-01T00:00:00Z')),
      set('includeArtifacts', fc.constantFrom<unknown>('yes', 1)),
      notAnObject,
    ),
    CancelTask: fc.oneof(taskId('id'), notAnObject),
    SubscribeToTask: fc.oneof(taskId('id'), notAnObject),
    CreateTaskPushNotificationConfig: fc.oneof(
      taskId('taskId'),
      drop('url'),
      set('url', fc.constantFrom<unknown>('ftp://example.com/', 'not a url', 7, 'javascript:alert(1)')),
      set('authentication', fc.constantFrom<unknown>({ credentials: 'c' }, 'Bearer', { scheme: '' })),
      notAnObject,
    ),
    GetTaskPushNotificationConfig: fc.oneof(taskId('taskId'), taskId('id'), notAnObject),
    ListTaskPushNotificationConfigs: fc.oneof(taskId('taskId'), set('pageSize', fc.constant(0)), notAnObject),
    DeleteTaskPushNotificationConfig: fc.oneof(taskId('taskId'), taskId('id'), notAnObject),
    GetExtendedAgentCard: fc.oneof(set('tenant', notAString), notAnObject),
  };
})();

const methodName = fc.constantFrom(...a2aMethods);

const resolveFixtures = (value: unknown): unknown => {
  if (value === 'fixture-task') return fixture.taskId;
  if (value === 'fixture-push') return fixture.pushConfigId;
  if (Array.isArray(value) || value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = key === 'id' || key === 'taskId' ? resolveFixtures(item) : item;
  }
  if (out.message && typeof out.message === 'object' && !Array.isArray(out.message)) {
    const inner = out.message as JsonObject;
    if (typeof inner.taskId === 'string') out.message = { ...inner, taskId: resolveId(inner.taskId) };
  }
  return out;
};

const jsonRpcId = fc.oneof(fc.uuid(), fc.integer(), fc.constant(null), anyString);

/** A JSON-RPC body: a valid call, one with its params broken, one with its envelope broken. */
const rpcBody = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.tuple(methodName, jsonRpcId).chain(([method, id]) =>
      validParams[method].map((params) => ({
        envelope: { jsonrpc: '2.0', id, method, params: resolveFixtures(params) },
        broken: false,
      })),
    ),
  },
  {
    weight: 4,
    arbitrary: fc.tuple(methodName, jsonRpcId).chain(([method, id]) =>
      fc.tuple(validParams[method], breakers[method]).map(([params, breaker]) => ({
        envelope: { jsonrpc: '2.0', id, method, params: breaker(resolveFixtures(params) as JsonObject) },
        broken: true,
      })),
    ),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(methodName, jsonRpcId, validParams.GetTask).chain(([method, id, params]) =>
      fc
        .oneof(
          fc.record(
            {
              jsonrpc: oddValue,
              id: fc.constant(id),
              method: fc.constant(method),
              params: fc.constant(params),
            },
            { requiredKeys: ['id', 'method'] },
          ),
          fc.record(
            {
              jsonrpc: fc.constant('2.0'),
              id: fc.constant(id),
              method: oddValue,
              params: fc.constant(params),
            },
            { requiredKeys: ['jsonrpc', 'id'] },
          ),
          fc.record({
            jsonrpc: fc.constant('2.0'),
            id: oddValue,
            method: fc.constant(method),
            params: fc.constant(params),
          }),
          fc.record({
            jsonrpc: fc.constant('2.0'),
            id: fc.constant(id),
            method: fc.oneof(
              anyString,
              fc.constantFrom(
                ...Object.keys(v03ParamsSchemas),
                'sendMessage',
                'SendMessage ',
                'constructor',
                '__proto__',
                'toString',
                'hasOwnProperty',
                'Admin',
                'PurgeNow',
              ),
            ),
            params: fc.constant(params),
          }),
        )
        .map((envelope) => ({ envelope, broken: false })),
    ),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((envelope) => ({ envelope, broken: false })) },
);

/** Raw bytes: broken JSON, invalid UTF-8 in and around valid JSON, nothing at all. */
const rawBody = fc.oneof(
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  rpcBody.chain(({ envelope }) =>
    fc
      .tuple(
        fc.nat(),
        fc.constantFrom(
          [0xff],
          [0xc3],
          [0xe2, 0x82],
          [0xed, 0xa0, 0x80],
          [0xc0, 0xaf],
          [0xf8, 0x88, 0x80, 0x80, 0x80],
        ),
      )
      .map(([at, bytes]) => {
        const json = Buffer.from(toJsonText(envelope));
        const cut = at % (json.length + 1);
        return Buffer.concat([json.subarray(0, cut), Buffer.from(bytes), json.subarray(cut)]);
      }),
  ),
  rpcBody.chain(({ envelope }) =>
    fc.nat().map((at) => {
      const json = toJsonText(envelope);
      return Buffer.from(json.slice(0, at % Math.max(1, json.length)));
    }),
  ),
  fc
    .constantFrom(
      '',
      ' ',
      'null',
      '{',
      '}',
      '[{}]',
      '{"jsonrpc":"2.0","id":1e400,"method":"GetTask"}',
      '\ufeff{}',
      'NaN',
      '{"a":1,"a":2}',
    )
    .map((text) => Buffer.from(text)),
  fc
    .integer({ min: 10_000, max: 200_000 })
    .map((depth) => Buffer.from(`${'['.repeat(depth)}${']'.repeat(depth)}`)),
);

/** A body of exactly `size` bytes: a SendMessage whose text is padded to it. */
const sizedBody = fc
  .tuple(
    fc.oneof(
      fc.integer({ min: appBodyCap - 64, max: appBodyCap + 64 }),
      fc.integer({ min: gatewayBodyCap - 16, max: gatewayBodyCap + 16 }),
      fc.integer({ min: 1_000, max: 300_000 }),
    ),
    fc.constantFrom('a', 'é', '€'),
  )
  .map(([size, unit]) => {
    const shell = (text: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
          configuration: { returnImmediately: true },
        },
      });
    const empty = Buffer.byteLength(shell(''));
    const units = Math.max(0, Math.floor((size - empty) / Buffer.byteLength(unit)));
    const body = Buffer.from(shell(unit.repeat(units)));
    // Pad to the exact size with spaces (JSON whitespace).
    return Buffer.concat([body, Buffer.from(' '.repeat(Math.max(0, size - body.length)))]);
  });

const reservedHeaders = new Set([
  'authorization',
  'x-api-key',
  'content-type',
  'content-length',
  'a2a-version',
  'a2a-extensions',
  'host',
  'transfer-encoding',
  'connection',
  'expect',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'content-encoding',
  'proxy-connection',
  'http2-settings',
]);
const headerName = fc
  .stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,30}$/)
  .filter((name) => !reservedHeaders.has(name.toLowerCase()));
const headerValue = fc.oneof(
  fc.stringMatching(/^[\x20-\x7e]{0,80}$/).map((value) => value.trim()),
  fc.constantFrom('', 'null', '1.0', '%ff', '\u00e9t\u00e9'),
);
const oddHeaders = fc.dictionary(headerName, headerValue, { maxKeys: 4 });

const contentType = fc.oneof(
  { weight: 16, arbitrary: fc.constant<string | undefined>('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom<string | undefined>(
      undefined,
      'application/json; charset=utf-8',
      'application/a2a+json',
      'APPLICATION/JSON',
      'application/json;charset=utf-16',
      'text/plain',
      'text/html',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'application/xml',
      'application/jsonx',
      'json',
      '*/*',
      ';',
      'application/json, text/plain',
    ),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^[\x20-\x7e]{0,40}$/).map((value) => value.trim()) },
);

const version = fc.oneof(
  { weight: 8, arbitrary: fc.constant<string | undefined>('1.0') },
  {
    weight: 2,
    arbitrary: fc.constantFrom<string | undefined>(
      undefined,
      '',
      '1.0.7',
      '0.3',
      '0.3.0',
      '2.0',
      '1',
      '1.0.0.0',
      'v1.0',
      ' 1.0 ',
    ),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^[\x20-\x7e]{0,20}$/).map((value) => value.trim()) },
);

const auth = fc.oneof(
  { weight: 19, arbitrary: fc.constant<Record<string, string>>({ Authorization: `Bearer ${token}` }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Record<string, string>>(
      {},
      { Authorization: `Bearer ${token}x` },
      { Authorization: token },
      { Authorization: 'Bearer ' },
      { 'X-API-Key': token },
    ),
  },
);

const path = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('/agents/default', '/agents/tck', '/', '/agents/default/') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/agents/nobody',
      '/agents/Default',
      '/admin',
      '/admin/purge',
      '/agents/default/admin',
      '/_admin/profiles',
      '/agents/default/.well-known/agent-card.json',
      '/.well-known/agent-card.json',
      '/agents/../admin',
      '/%2e%2e/admin',
      '/agents/default?A2A-Version=2.0',
      '/internal/inspect-runs',
      '/purge',
      '/profiles',
      '//',
      '/agents//default',
    ),
  },
);

const httpMethod = fc.oneof(
  { weight: 30, arbitrary: fc.constant('POST') },
  { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD') },
);

const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc
  .record({
    kind: fc.oneof(
      {
        weight: 10,
        arbitrary: rpcBody.map((built) => ({
          label: 'rpc',
          body: Buffer.from(toJsonText(built.envelope)),
          brokenParams: built.broken,
        })),
      },
      { weight: 3, arbitrary: rawBody.map((body) => ({ label: 'raw', body, brokenParams: false })) },
      {
        weight: 1,
        arbitrary: sizedBody.map((body) => ({ label: `sized ${body.length}`, body, brokenParams: false })),
      },
    ),
    contentType,
    version,
    auth,
    odd: oddHeaders,
    path,
    httpMethod,
  })
  .map(({ kind, contentType, version, auth, odd, path, httpMethod }) => ({
    [fc.toStringMethod]: function (this: FuzzRequest) {
      return describeRequest(this);
    },
    label: kind.label,
    httpMethod,
    path,
    headers: {
      ...odd,
      ...auth,
      ...(contentType === undefined ? {} : { 'Content-Type': contentType }),
      ...(version === undefined ? {} : { 'A2A-Version': version }),
    },
    body: kind.body,
    brokenParams: kind.brokenParams,
  }));

/** One line per request for failure messages: bodies cut short, never megabytes. */
const describeRequest = (request: FuzzRequest): string => {
  const text = request.body.toString('utf8');
  const body = text.length > 300 ? `${text.slice(0, 300)}… (${request.body.length} bytes)` : text;
  return `${request.httpMethod} ${request.path} ${JSON.stringify(request.headers)} [${request.label}] ${body}`;
};

// ---------------------------------------------------------------------------------------------
// The oracle
// ---------------------------------------------------------------------------------------------

type Expected =
  | { readonly kind: 'http'; readonly status: number }
  | { readonly kind: 'card' }
  | {
      readonly kind: 'rpc';
      /** Error codes allowed; `success` when a result may come back instead. */
      readonly codes: readonly number[];
      readonly success: boolean;
      /** The id the answer must echo. */
      readonly id: unknown;
      readonly stream: boolean;
      /** A body above the cap: the ErrorInfo reason that names the limit, with the BadRequest. */
      readonly limitReason?: string;
    };

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isRpcId = (value: unknown): boolean =>
  value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));

const isJsonMediaType = (value: string | undefined): boolean => {
  if (value === undefined) return true;
  const media = (value.split(';')[0] ?? '').trim().toLowerCase();
  return media === '' || media === 'application/json' || /^application\/[\w.+-]+\+json$/.test(media);
};

const headerOf = (request: FuzzRequest, name: string): string | undefined => {
  let found: string | undefined;
  for (const [key, value] of Object.entries(request.headers)) if (key.toLowerCase() === name) found = value;
  return found;
};

const expectedOf = (request: FuzzRequest): Expected => {
  if (request.body.length > gatewayBodyCap) return { kind: 'http', status: 413 };
  const url = new URL(`http://fuzz.invalid${request.path}`);
  let pathname = url.pathname;
  try {
    pathname = decodeURIComponent(pathname);
  } catch {}
  const isCard = /^\/(?:agents\/([a-z0-9][a-z0-9-]{0,62})\/)?\.well-known\/agent-card\.json$/.exec(pathname);
  const publicCard = isCard && (request.httpMethod === 'GET' || request.httpMethod === 'HEAD');
  if (!publicCard && headerOf(request, 'authorization') !== `Bearer ${token}`)
    return { kind: 'http', status: 401 };
  if (publicCard) return { kind: 'card' };
  const rpc = /^\/(?:agents\/([a-z0-9][a-z0-9-]{0,62}))?\/?$/.exec(pathname);
  if (isCard || (rpc && request.httpMethod !== 'POST')) return { kind: 'http', status: 405 };
  if (!rpc) return { kind: 'http', status: 404 };
  if (fuzzConfig.profiles[rpc[1] ?? 'default'] === undefined) return { kind: 'http', status: 404 };

  const rpcError = (code: number, id: unknown = null): Expected => ({
    kind: 'rpc',
    codes: [code],
    success: false,
    id,
    stream: false,
  });
  const text = request.body.toString('utf8');
  if (Buffer.byteLength(text) > appBodyCap)
    return {
      kind: 'rpc',
      codes: [-32600],
      success: false,
      id: null,
      stream: false,
      limitReason: 'REQUEST_BYTES_EXCEEDED',
    };
  if (!isJsonMediaType(headerOf(request, 'content-type'))) return rpcError(-32005);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return rpcError(-32700);
  }
  const id = isObject(body) && isRpcId(body.id) ? body.id : null;
  if (
    !isObject(body) ||
    body.jsonrpc !== '2.0' ||
    typeof body.method !== 'string' ||
    body.method === '' ||
    (body.id !== undefined && !isRpcId(body.id))
  ) {
    return rpcError(-32600, id);
  }
  const requested = headerOf(request, 'a2a-version') || url.searchParams.get('A2A-Version') || undefined;
  const wanted = requested?.trim() ?? '';
  const version =
    wanted === ''
      ? body.method.includes('/')
        ? '0.3'
        : '1.0'
      : /^1\.0(\.\d+)?$/.test(wanted)
        ? '1.0'
        : /^0\.3(\.\d+)?$/.test(wanted)
          ? '0.3'
          : undefined;
  if (version === undefined) return rpcError(-32009, id);
  if (version === '0.3') {
    // The v0.3 compatibility table (decision 0015): its own names, the same error table.
    if (!Object.hasOwn(v03ParamsSchemas, body.method)) return rpcError(-32601, id);
    return {
      kind: 'rpc',
      codes: [-32602, -32001, -32002, -32003, -32004, -32005, -32007],
      success: true,
      id,
      stream: body.method === 'message/stream' || body.method === 'tasks/resubscribe',
    };
  }
  if (!(a2aMethods as readonly string[]).includes(body.method)) return rpcError(-32601, id);
  const method = body.method as A2aMethod;
  if (request.brokenParams) return rpcError(-32602, id);
  return {
    kind: 'rpc',
    codes: [-32602, ...a2aCodesOf[method]],
    success: true,
    id,
    stream: streamingMethods.has(method),
  };
};

// ---------------------------------------------------------------------------------------------
// Sending and checking
// ---------------------------------------------------------------------------------------------

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
let baseUrl = '';

const send = (request: FuzzRequest): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const url = new URL(`${baseUrl}${request.path}`);
    const outgoing = httpRequest(
      url,
      {
        agent,
        method: request.httpMethod,
        headers: { ...request.headers, 'Content-Length': String(request.body.length) },
      },
      (response) => {
        const contentType = response.headers['content-type'] ?? '';
        const chunks: Buffer[] = [];
        const done = () =>
          resolve({
            status: response.statusCode ?? 0,
            contentType,
            text: Buffer.concat(chunks).toString('utf8'),
          });
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          // An SSE answer: the first event is enough; leaving closes the stream on the server.
          if (contentType.startsWith('text/event-stream') && Buffer.concat(chunks).includes('\n\n')) {
            response.destroy();
            done();
          }
        });
        response.on('end', done);
        response.on('error', reject);
      },
    );
    outgoing.setTimeout(60_000, () => outgoing.destroy(new Error('no answer within 60 s')));
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      // The gateway answers 413 and closes while a large body is still being written.
      if (error.code === 'EPIPE' || error.code === 'ECONNRESET') {
        if (request.body.length > gatewayBodyCap) {
          resolve({
            status: 413,
            contentType: 'application/json',
            text: '{"message":"Request Entity Too Large"}',
          });
          return;
        }
      }
      reject(error);
    });
    outgoing.end(request.body);
  });

const leakPatterns: readonly RegExp[] = [
  /\n\s+at [^\n]*:\d+:\d+/,
  /\bat (?:async )?[\w.<>]+ \([^)]*:\d+:\d+\)/,
  /node_modules/,
  /\/(?:shared|functions|infra)\/[\w/-]+\.ts/,
  /\b(?:TypeError|RangeError|ReferenceError|SyntaxError|ValidationException|ConditionalCheckFailed)\b/,
];
const cwd = process.cwd();

/** The failure message for one request, or undefined when the answer is what the oracle says. */
const check = (request: FuzzRequest, expected: Expected, answer: Answer): string | undefined => {
  if (answer.status >= 500) return `HTTP ${answer.status}: ${answer.text.slice(0, 300)}`;
  const requestText = request.body.toString('utf8');
  for (const pattern of leakPatterns) {
    if (pattern.test(answer.text) && !pattern.test(requestText))
      return `the body leaks ${pattern}: ${answer.text.slice(0, 300)}`;
  }
  if (answer.text.includes(cwd) && !requestText.includes(cwd)) return 'the body names the working directory';

  if (expected.kind === 'http') {
    if (answer.status !== expected.status)
      return `expected HTTP ${expected.status}, got ${answer.status}: ${answer.text.slice(0, 200)}`;
    if (request.httpMethod === 'HEAD') return undefined;
    try {
      if (!isObject(JSON.parse(answer.text))) return 'a non-JSON-RPC answer that is not a JSON object';
    } catch {
      return `a ${answer.status} whose body is not JSON: ${answer.text.slice(0, 200)}`;
    }
    return undefined;
  }
  if (expected.kind === 'card')
    return answer.status === 200 || answer.status === 304 ? undefined : `card: HTTP ${answer.status}`;

  if (answer.status !== 200) return `expected HTTP 200, got ${answer.status}: ${answer.text.slice(0, 200)}`;
  let envelope: unknown;
  if (answer.contentType.startsWith('text/event-stream')) {
    if (!expected.stream || !expected.success)
      return `an SSE stream where ${expected.codes.join('/')} was due`;
    const data = answer.text.split('\n').find((line) => line.startsWith('data: '));
    if (data === undefined) return `an SSE stream without a data line: ${answer.text.slice(0, 200)}`;
    envelope = JSON.parse(data.slice('data: '.length));
  } else {
    if (!answer.contentType.startsWith('application/json')) return `content type ${answer.contentType}`;
    try {
      envelope = JSON.parse(answer.text);
    } catch {
      return `a body that is not JSON: ${answer.text.slice(0, 200)}`;
    }
  }
  if (!isObject(envelope)) return 'an answer that is not an object';
  const keys = Object.keys(envelope).sort().join(',');
  if (keys !== 'error,id,jsonrpc' && keys !== 'id,jsonrpc,result') return `envelope keys ${keys}`;
  if (envelope.jsonrpc !== '2.0') return 'jsonrpc is not "2.0"';
  if (!Object.is(envelope.id, expected.id) && JSON.stringify(envelope.id) !== JSON.stringify(expected.id)) {
    return `id ${JSON.stringify(envelope.id)?.slice(0, 80)} instead of ${JSON.stringify(expected.id)?.slice(0, 80)}`;
  }
  if ('result' in envelope)
    return expected.success ? undefined : `a result where ${expected.codes.join('/')} was due`;

  const error = envelope.error;
  if (!isObject(error)) return 'error is not an object';
  if (!Object.keys(error).every((key) => ['code', 'message', 'data'].includes(key)))
    return `error keys ${Object.keys(error).join(',')}`;
  if (typeof error.code !== 'number' || typeof error.message !== 'string') return 'error code/message types';
  if (!expected.codes.includes(error.code))
    return `code ${error.code} (${error.message}) where ${expected.codes.join('/')}${expected.success ? ' or a result' : ''} was due`;
  const detail = detailByCode.get(error.code);
  const data = error.data;
  if (data !== undefined && !Array.isArray(data)) return 'error.data is not an array';
  const details = (data ?? []) as JsonObject[];
  if (expected.limitReason !== undefined) {
    const [info, ...rest] = details;
    if (
      info?.['@type'] !== 'type.googleapis.com/google.rpc.ErrorInfo' ||
      info.reason !== expected.limitReason
    )
      return `code ${error.code} without ErrorInfo ${expected.limitReason}`;
    if (!isObject(info.metadata) || Object.values(info.metadata).some((value) => typeof value !== 'string'))
      return 'ErrorInfo metadata is not a map of strings';
    return rest.length === 1
      ? badRequestProblem(error.code, rest)
      : `code ${error.code} without one BadRequest`;
  }
  switch (detail?.kind) {
    case 'errorInfo': {
      const info = details.find((item) => item['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
      if (!info && detail.orBadRequest) return badRequestProblem(error.code, details);
      if (!info) return `code ${error.code} without ErrorInfo`;
      if (!detail.reasons.has(info.reason as string) || !detail.domains.has(info.domain as string)) {
        return `ErrorInfo ${info.reason}@${info.domain} for code ${error.code}`;
      }
      if (
        !isObject(info.metadata) ||
        Object.values(info.metadata).some((value) => typeof value !== 'string')
      ) {
        return 'ErrorInfo metadata is not a map of strings';
      }
      return undefined;
    }
    case 'badRequest':
      return badRequestProblem(error.code, details);
    case 'none':
      return details.length === 0 ? undefined : `code ${error.code} with data`;
    default:
      return `code ${error.code} is not in the error table`;
  }
};

/** What is wrong with a validation error's details: each a BadRequest, and -32602 names the field. */
const badRequestProblem = (code: number, details: readonly JsonObject[]): string | undefined => {
  for (const item of details) {
    if (
      item['@type'] !== 'type.googleapis.com/google.rpc.BadRequest' ||
      !Array.isArray(item.fieldViolations)
    ) {
      return `code ${code} with a detail other than BadRequest`;
    }
  }
  if (code === -32602 && details.length === 0) return '-32602 without a BadRequest naming the field';
  return undefined;
};

/** How an answer is counted in the printed figures: a JSON-RPC code, `result`, `sse` or the HTTP status. */
const outcomeOf = (answer: Answer): string => {
  if (answer.contentType.startsWith('text/event-stream')) return 'sse';
  try {
    const parsed = JSON.parse(answer.text) as { jsonrpc?: unknown; error?: { code?: unknown } };
    if (parsed.jsonrpc === '2.0') return parsed.error ? String(parsed.error.code) : 'result';
  } catch {}
  return `HTTP ${answer.status}`;
};

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

let sut: ConformanceStack;
const rpcAs = (method: string, params: unknown) =>
  sut.rpc(method, params, { profile: 'default', headers: { Authorization: `Bearer ${token}` } });

beforeAll(async () => {
  sut = await startConformanceStack('conf-fuzz', fuzzConfig);
  baseUrl = sut.baseUrl;
  const task = taskOf(await rpcAs('SendMessage', { message: userMessage('fuzz-fixture') }));
  fixture.taskId = task.id;
  fixture.contextId = task.contextId;
  const push = await rpcAs('CreateTaskPushNotificationConfig', {
    taskId: task.id,
    url: 'http://127.0.0.1:9/fuzz-hook',
  });
  fixture.pushConfigId = (push.result.id as string | undefined) ?? 'none';
});
afterAll(async () => {
  agent.destroy();
  await sut?.stop();
});

describe(`the JSON-RPC edge under ${totalRequests} generated requests`, () => {
  it(
    'answers every one without a 5xx, with the error the request calls for, well formed, and leaks nothing',
    async () => {
      const seen = { requests: 0, statuses: new Map<string, number>() };
      await fc.assert(
        fc.asyncProperty(
          fc.array(fuzzRequest, { minLength: concurrency, maxLength: concurrency }),
          async (batch) => {
            const failures = await Promise.all(
              batch.map(async (request) => {
                const expected = expectedOf(request);
                const answer = await send(request);
                seen.requests += 1;
                const outcome = outcomeOf(answer);
                seen.statuses.set(outcome, (seen.statuses.get(outcome) ?? 0) + 1);
                const problem = check(request, expected, answer);
                return problem === undefined
                  ? undefined
                  : `${problem}\n  request: ${describeRequest(request)}`;
              }),
            );
            const failed = failures.filter((failure) => failure !== undefined);
            if (failed.length > 0) throw new Error(failed.join('\n'));
          },
        ),
        { numRuns, ...(seed === undefined ? {} : { seed }), endOnFailure: true },
      );
      // The figures, for the report and `npm run soak`.
      console.log(
        `edge fuzz: ${seen.requests} requests; outcomes ${JSON.stringify(Object.fromEntries([...seen.statuses].sort()))}`,
      );
      expect(seen.requests).toBeGreaterThanOrEqual(totalRequests);
    },
    Math.max(120_000, totalRequests * 150),
  );

  it('answers the hand-picked worst cases the same way (each found a bug or sits on a limit)', async () => {
    const headers = {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      'A2A-Version': '1.0',
    };
    const call = (method: string, params: unknown, extra: Partial<FuzzRequest> = {}): FuzzRequest => ({
      label: `worst ${method}`,
      httpMethod: 'POST',
      path: '/agents/default',
      headers,
      body: Buffer.from(toJsonText({ jsonrpc: '2.0', id: 7, method, params })),
      ...extra,
    });
    const send1 = (text: string) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] });
    const deepest = Math.floor((appBodyCap - 300) / 2);
    const cases: FuzzRequest[] = [
      call('SendMessage', { message: { ...send1('deep'), parts: [{ data: `__deep_${deepest}_a__` }] } }),
      call('SendMessage', { message: { ...send1('deep'), parts: [{ data: '__deep_10000_o__' }] } }),
      call('SendMessage', { message: { ...send1('deep'), metadata: { m: '__deep_10000_a__' } } }),
      call('SendMessage', {
        message: { ...send1('deep'), parts: [{ data: '__deep_40_o__' }] },
        metadata: { m: '__deep_40_o__' },
      }),
      call('GetTask', { id: 'i'.repeat(2_100) }),
      call('GetTask', { id: '\ud800\udfff\ud800' }),
      call('CreateTaskPushNotificationConfig', {
        taskId: 'fixture-task',
        id: 'c'.repeat(1_100),
        url: 'http://127.0.0.1:9/h',
      }),
      call('GetTaskPushNotificationConfig', { taskId: 'fixture-task', id: '𝔘'.repeat(300) }),
      call('SendMessage', { message: { ...send1('x'), contextId: 'c'.repeat(3_000) } }),
      call(
        'GetTask',
        { id: 'x' },
        { headers: { ...headers, toString: '', constructor: 'x', __defineGetter__: 'y' } },
      ),
      call(
        'tasks/pushNotificationConfig/get',
        { id: 'fixture-task', pushNotificationConfigId: 'c'.repeat(1_100) },
        { headers: { ...headers, 'A2A-Version': '0.3' } },
      ),
      call('GetTask', { id: 'x' }, { path: '//' }),
      call('GetTask', { id: 'x' }, { path: '//agents/default' }),
      call('GetTask', { id: 'x' }, { path: '/agents/default?toString=1&__proto__=2&A2A-Version=1.0' }),
      {
        ...call('GetTask', {}),
        body: Buffer.from('{"jsonrpc":"2.0","id":1e400,"method":"GetTask","params":{"id":"x"}}'),
      },
      { ...call('GetTask', {}), body: Buffer.from(`${'['.repeat(32_000)}${']'.repeat(32_000)}`) },
      // An answer of more than 16,384 UTF-16 units with a surrogate pair across unit 16,384 (one
      // of the two parities puts one there): middy wrote it in slices and split the pair (0084).
      ...['', 'x'].map((lead) => ({
        ...call('GetTask', {}),
        body: Buffer.from(
          toJsonText({
            jsonrpc: '2.0',
            id: `${lead}${'𝔘'.repeat(9_000)}`,
            method: 'GetTask',
            params: { id: 'x' },
          }),
        ),
      })),
    ];
    for (const size of [appBodyCap, appBodyCap + 1, gatewayBodyCap, gatewayBodyCap + 1]) {
      const sized = call('SendMessage', { message: send1(''), configuration: { returnImmediately: true } });
      const pad = size - sized.body.length;
      const text = sized.body.toString('utf8').replace('"text":""', `"text":"${'a'.repeat(pad)}"`);
      cases.push({ ...sized, label: `sized ${size}`, body: Buffer.from(text) });
      expect(Buffer.byteLength(text)).toBe(size);
    }
    const problems: string[] = [];
    for (const request of cases) {
      const resolved = {
        ...request,
        body: Buffer.from(request.body.toString('utf8').replaceAll('fixture-task', fixture.taskId)),
      };
      const problem = check(resolved, expectedOf(resolved), await send(resolved));
      if (problem !== undefined) problems.push(`${problem}\n  request: ${describeRequest(resolved)}`);
    }
    expect(problems).toEqual([]);
  });

  it('still serves a normal SendMessage afterwards', async () => {
    const reply = await rpcAs('SendMessage', { message: userMessage('after-fuzz') });
    const task = taskOf(reply);
    expect(stateOf(task)).toBe('TASK_STATE_COMPLETED');
    const read = await rpcAs('GetTask', { id: task.id });
    expect(read.error).toBeUndefined();
    expect(stateOf(read.result)).toBe('TASK_STATE_COMPLETED');
  });
});
