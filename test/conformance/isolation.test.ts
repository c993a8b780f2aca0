import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeInvocations } from '../../infra/local/lambda-invocation.ts';
import { parseConfig } from '../../shared/config/config.ts';
import {
  type ConformanceStack,
  conformanceConfig,
  errorInfoOf,
  type JsonObject,
  type RpcReply,
  startConformanceStack,
  stateOf,
  taskOf,
  userMessage,
} from './support.ts';

/**
 * I-OWNER (docs/invariants.md; docs/security.md; docs/protocol.md §12; decision 0007): every task belongs to one (tenant,
 * principal). Any other caller — another tenant, another principal of the same tenant, or the
 * same principal name in another tenant — gets TaskNotFound (-32001, indistinguishable from a
 * task that does not exist) from every method that names a task, and never sees it in
 * ListTasks; nothing it does changes the task. Unauthenticated requests are a 401 from the
 * gateway and never reach the rpc function. Static bearer tokens, local stack, raw HTTP.
 */

const callers = {
  alice: { token: 'token-alice-7f3e', tenant: 't1', principal: 'alice' },
  bob: { token: 'token-bob-2c9a', tenant: 't2', principal: 'bob' },
  carol: { token: 'token-carol-51d0', tenant: 't1', principal: 'carol' },
  aliceElsewhere: { token: 'token-alice-t2-88b4', tenant: 't2', principal: 'alice' },
} as const;
type Who = keyof typeof callers;

const isolationConfig = parseConfig({
  ...conformanceConfig,
  auth: {
    tokens: Object.fromEntries(
      Object.values(callers).map(({ token, tenant, principal }) => [token, { tenant, principal }]),
    ),
  },
  profiles: {
    ...conformanceConfig.profiles,
    // Two published agents of the same installation (decision 0049): each is its own.
    alpha: { ...conformanceConfig.profiles.tck, name: 'Alpha', privacyLevel: 'full' },
    beta: { ...conformanceConfig.profiles.tck, name: 'Beta', privacyLevel: 'redacted' },
    tck: {
      ...conformanceConfig.profiles.tck,
      extendedCard: {
        description: 'The TCK system under test, as partners see it',
        skills: [
          { id: 'partner', name: 'Partner skill', description: 'Only for callers', tags: ['partner'] },
        ],
      },
    },
  },
});

let sut: ConformanceStack;
/** alice's tasks: one COMPLETED (with a push config), one INPUT_REQUIRED. */
let completed: { id: string; contextId: string };
let waiting: { id: string; contextId: string };
let pushConfigId: string;

const as = (who: Who) => ({ headers: { Authorization: `Bearer ${callers[who].token}` } });
const call = (who: Who, method: string, params: unknown): Promise<RpcReply> =>
  sut.rpc(method, params, as(who));

const pushUrl = 'http://127.0.0.1:9/isolation-webhook';

beforeAll(async () => {
  sut = await startConformanceStack('conf-isolation', isolationConfig);
  const done = taskOf(await call('alice', 'SendMessage', { message: userMessage('tck-complete-task') }));
  expect(stateOf(done)).toBe('TASK_STATE_COMPLETED');
  completed = { id: done.id, contextId: done.contextId };
  const open = taskOf(await call('alice', 'SendMessage', { message: userMessage('tck-input-required') }));
  expect(stateOf(open)).toBe('TASK_STATE_INPUT_REQUIRED');
  waiting = { id: open.id, contextId: open.contextId };
  const created = await call('alice', 'CreateTaskPushNotificationConfig', {
    taskId: completed.id,
    url: pushUrl,
  });
  expect(created.error).toBeUndefined();
  pushConfigId = created.result.id as string;
  expect(pushConfigId).toEqual(expect.any(String));
});
afterAll(async () => {
  await sut?.stop();
});

/** A v0.3 message continuing a task, as v0.3 clients send it. */
const v03Message = (taskId: string) => ({
  kind: 'message',
  messageId: `tck-complete-task-${randomUUID()}`,
  role: 'user',
  parts: [{ kind: 'text', text: 'hi' }],
  taskId,
});

/** Every v0.3 method that names a task, with its params for a task id (and a push config id). */
const v03TaskCases = (configId: string): [string, (id: string) => JsonObject][] => [
  ['tasks/get', (id) => ({ id })],
  ['tasks/cancel', (id) => ({ id })],
  ['tasks/resubscribe', (id) => ({ id })],
  ['message/send', (id) => ({ message: v03Message(id) })],
  ['message/stream', (id) => ({ message: v03Message(id) })],
  ['tasks/pushNotificationConfig/set', (id) => ({ taskId: id, pushNotificationConfig: { url: pushUrl } })],
  ['tasks/pushNotificationConfig/get', (id) => ({ id, pushNotificationConfigId: configId })],
  ['tasks/pushNotificationConfig/get', (id) => ({ id })],
  ['tasks/pushNotificationConfig/list', (id) => ({ id })],
  ['tasks/pushNotificationConfig/delete', (id) => ({ id, pushNotificationConfigId: configId })],
];

/** What an unknown task id gets: the intruder's answer must be the same, field for field. */
const expectNotFound = async (reply: RpcReply, probe: () => Promise<RpcReply>) => {
  expect(reply.status).toBe(200);
  expect(reply.contentType).toMatch(/^application\/json/);
  expect(reply.result).toEqual({});
  expect(reply.error?.code).toBe(-32001);
  expect(errorInfoOf(reply.error)).toMatchObject({ reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' });
  const missing = await probe();
  expect(reply.error?.message).toBe(missing.error?.message);
  expect(Object.keys(errorInfoOf(reply.error)?.metadata as JsonObject).sort()).toEqual(
    Object.keys(errorInfoOf(missing.error)?.metadata as JsonObject).sort(),
  );
};

describe('unauthenticated requests', () => {
  it('are a 401 with a challenge and never reach the rpc function', async () => {
    let rpcCalls = 0;
    const stop = observeInvocations((record) => {
      if (record.functionName === 'rpc') rpcCalls += 1;
    });
    try {
      const attempts: Record<string, string>[] = [
        {},
        { Authorization: 'Bearer token-mallory' },
        { Authorization: `Bearer ${callers.alice.token}x` },
        { Authorization: `Basic ${Buffer.from(`alice:${callers.alice.token}`).toString('base64')}` },
        { Authorization: callers.alice.token },
        // No API keys are configured: a static token in X-API-Key is not a credential.
        { 'X-API-Key': callers.alice.token },
        // Two credentials are refused rather than one of them picked.
        { Authorization: `Bearer ${callers.alice.token}`, 'X-API-Key': 'anything' },
      ];
      for (const path of ['/', '/agents/tck', '/agents/default']) {
        for (const headers of attempts) {
          const response = await fetch(`${sut.baseUrl}${path}`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: completed.id } }),
          });
          expect(response.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
          expect(response.headers.get('www-authenticate')).toBe('Bearer');
          expect(await response.json()).toEqual({ message: 'Unauthorized' });
        }
      }
      expect(rpcCalls).toBe(0);
    } finally {
      stop();
    }
  });

  it('over HTTP+JSON too: a 401 without an identity; another caller’s task is not found (I-OWNER)', async () => {
    for (const path of [`/tasks/${completed.id}`, `/agents/tck/tasks/${completed.id}`]) {
      const anonymous = await fetch(`${sut.baseUrl}${path}`, { headers: { 'A2A-Version': '1.0' } });
      expect(anonymous.status).toBe(401);
    }
    const own = await fetch(`${sut.baseUrl}/agents/tck/tasks/${completed.id}`, {
      headers: { 'A2A-Version': '1.0', ...as('alice').headers },
    });
    const bobs = await fetch(`${sut.baseUrl}/agents/tck/tasks/${completed.id}`, {
      headers: { 'A2A-Version': '1.0', ...as('bob').headers },
    });
    expect([own.status, bobs.status]).toEqual([200, 404]);
    expect(((await bobs.json()) as { error: { status: string } }).error.status).toBe('NOT_FOUND');
  });

  it('still read the public agent cards, which declare the bearer scheme', async () => {
    for (const path of ['/.well-known/agent-card.json', '/agents/tck/.well-known/agent-card.json']) {
      const response = await fetch(`${sut.baseUrl}${path}`);
      expect(response.status).toBe(200);
      const card = (await response.json()) as JsonObject;
      // The v1.0 scheme only (docs/protocol.md §9: the v1.0 card is pure v1.0).
      expect(card.securitySchemes).toEqual({ bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } });
      expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
      // The v0.3 card spells it both ways for v0.3 clients.
      const v03 = (await (await fetch(`${sut.baseUrl}${path}?A2A-Version=0.3`)).json()) as JsonObject;
      expect(v03.securitySchemes).toEqual({
        bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' }, type: 'http', scheme: 'Bearer' },
      });
    }
  });
});

describe.each([
  ['bob', 'another tenant'],
  ['carol', 'another principal of the same tenant'],
  ['aliceElsewhere', 'the same principal name in another tenant'],
] as const)('I-OWNER: %s (%s) and alice’s tasks', (intruder, _relation) => {
  const unknownId = () => randomUUID();

  it('GetTask → -32001, exactly as for a task that does not exist', async () => {
    for (const id of [completed.id, waiting.id]) {
      await expectNotFound(await call(intruder, 'GetTask', { id }), () =>
        call(intruder, 'GetTask', { id: unknownId() }),
      );
    }
  });

  it('SendMessage with alice’s taskId → -32001 (not -32004 for the terminal one), nothing appended', async () => {
    for (const id of [waiting.id, completed.id]) {
      await expectNotFound(
        await call(intruder, 'SendMessage', { message: userMessage('tck-complete-task', { taskId: id }) }),
        () =>
          call(intruder, 'SendMessage', {
            message: userMessage('tck-complete-task', { taskId: unknownId() }),
          }),
      );
    }
    await expectNotFound(
      await call(intruder, 'SendMessage', {
        message: userMessage('tck-complete-task', { taskId: waiting.id, contextId: waiting.contextId }),
      }),
      () =>
        call(intruder, 'SendMessage', { message: userMessage('tck-complete-task', { taskId: unknownId() }) }),
    );
  });

  it('SendStreamingMessage with alice’s taskId → -32001 as JSON, before any stream', async () => {
    await expectNotFound(
      await call(intruder, 'SendStreamingMessage', {
        message: userMessage('tck-complete-task', { taskId: waiting.id }),
      }),
      () =>
        call(intruder, 'SendStreamingMessage', {
          message: userMessage('tck-complete-task', { taskId: unknownId() }),
        }),
    );
  });

  it('CancelTask → -32001 (not -32002 for the completed one), and nothing is canceled', async () => {
    for (const id of [waiting.id, completed.id]) {
      await expectNotFound(await call(intruder, 'CancelTask', { id }), () =>
        call(intruder, 'CancelTask', { id: unknownId() }),
      );
    }
  });

  it('SubscribeToTask → -32001 as JSON, before any stream', async () => {
    await expectNotFound(await call(intruder, 'SubscribeToTask', { id: waiting.id }), () =>
      call(intruder, 'SubscribeToTask', { id: unknownId() }),
    );
  });

  it('push config Create/Get/List/Delete and ListTaskPushDeliveries on alice’s task → -32001', async () => {
    const probeId = unknownId();
    const cases: [string, JsonObject, JsonObject][] = [
      [
        'CreateTaskPushNotificationConfig',
        { taskId: completed.id, url: pushUrl },
        { taskId: probeId, url: pushUrl },
      ],
      [
        'GetTaskPushNotificationConfig',
        { taskId: completed.id, id: pushConfigId },
        { taskId: probeId, id: 'x' },
      ],
      ['ListTaskPushNotificationConfigs', { taskId: completed.id }, { taskId: probeId }],
      // The push-deliveries extension (decision 0025) holds to I-OWNER like the core methods.
      ['ListTaskPushDeliveries', { taskId: completed.id }, { taskId: probeId }],
      [
        'DeleteTaskPushNotificationConfig',
        { taskId: completed.id, id: pushConfigId },
        { taskId: probeId, id: 'x' },
      ],
    ];
    for (const [method, params, probe] of cases) {
      await expectNotFound(await call(intruder, method, params), () => call(intruder, method, probe));
    }
  });

  it('ListTasks never shows alice’s tasks, while it shows the intruder’s own', async () => {
    const own = taskOf(await call(intruder, 'SendMessage', { message: userMessage('tck-complete-task') }));
    const listed = await call(intruder, 'ListTasks', { pageSize: 100 });
    expect(listed.error).toBeUndefined();
    const ids = (listed.result.tasks as { id: string }[]).map((task) => task.id);
    expect(ids).toContain(own.id);
    expect(ids).not.toContain(completed.id);
    expect(ids).not.toContain(waiting.id);
    expect(listed.result.totalSize).toBe(ids.length);
    for (const filter of [{ contextId: completed.contextId }, { contextId: waiting.contextId }]) {
      const filtered = await call(intruder, 'ListTasks', filter);
      expect(filtered.result.tasks, JSON.stringify(filter)).toEqual([]);
      expect(filtered.result.totalSize).toBe(0);
    }
    // alice, in turn, does not see the intruder's task.
    const aliceIds = (
      (await call('alice', 'ListTasks', { pageSize: 100 })).result.tasks as { id: string }[]
    ).map((task) => task.id);
    expect(aliceIds).not.toContain(own.id);
  });
});

describe.each([
  ['bob', 'another tenant'],
  ['carol', 'another principal of the same tenant'],
] as const)('I-OWNER over the v0.3 compatibility methods and page tokens: %s (%s)', (intruder, _relation) => {
  /** A v0.3 call as v0.3 clients make it: no A2A-Version, v0.3 method names and shapes. */
  const v03 = (who: Who, method: string, params: unknown) =>
    sut.rpc(method, params, { headers: { ...as(who).headers, 'A2A-Version': '' } });
  it('every v0.3 method that names alice’s task → -32001, exactly as for a task that does not exist', async () => {
    const cases = v03TaskCases(pushConfigId);
    for (const [method, params] of cases) {
      for (const id of [completed.id, waiting.id]) {
        const reply = await v03(intruder, method, params(id));
        expect(reply.error?.code, `${method} ${id === completed.id ? 'completed' : 'waiting'}`).toBe(-32001);
        await expectNotFound(reply, () => v03(intruder, method, params(randomUUID())));
      }
    }
  });

  it('alice’s ListTasks page token shows the intruder only the intruder’s own tasks', async () => {
    // Two tasks of alice's own, so her first page of one has a next page.
    const page = await call('alice', 'ListTasks', { pageSize: 1 });
    const token = page.result.nextPageToken as string;
    expect(token).not.toBe('');
    const own = taskOf(await call(intruder, 'SendMessage', { message: userMessage('tck-complete-task') }));
    const replayed = await call(intruder, 'ListTasks', { pageSize: 100, pageToken: token });
    expect(replayed.error).toBeUndefined();
    const ids = (replayed.result.tasks as { id: string }[]).map((task) => task.id);
    expect(ids).not.toContain(completed.id);
    expect(ids).not.toContain(waiting.id);
    // A forged token naming alice's task as the position changes nothing either.
    const forged = Buffer.from(
      JSON.stringify({ v: 1, t: '9999-12-31T23:59:59.999Z', id: completed.id }),
    ).toString('base64url');
    const fromForged = await call(intruder, 'ListTasks', { pageSize: 100, pageToken: forged });
    const forgedIds = (fromForged.result.tasks as { id: string }[]).map((task) => task.id);
    expect(forgedIds).toContain(own.id);
    expect(forgedIds).not.toContain(completed.id);
    expect(forgedIds).not.toContain(waiting.id);
  });

  it('alice’s push config id under the intruder’s own task → -32001, and alice’s config is untouched', async () => {
    const own = taskOf(await call(intruder, 'SendMessage', { message: userMessage('tck-complete-task') }));
    for (const method of ['GetTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig']) {
      const reply = await call(intruder, method, { taskId: own.id, id: pushConfigId });
      if (method === 'DeleteTaskPushNotificationConfig' && reply.error === undefined) continue; // idempotent delete of nothing
      expect(reply.error?.code, method).toBe(-32001);
    }
    const still = await call('alice', 'GetTaskPushNotificationConfig', {
      taskId: completed.id,
      id: pushConfigId,
    });
    expect(still.error).toBeUndefined();
    expect(still.result.url).toBe(pushUrl);
  });
});

/**
 * I-OWNER with the agent: a task belongs to the agent whose endpoint created it.
 * alice herself, at another agent's endpoint (another profile, or the root's `default`), gets
 * exactly what an unknown id gets from every method, and never sees the task listed.
 */
describe.each([
  ['/agents/beta', 'another profile (redacted)'],
  ['/', 'the root endpoint (default)'],
  ['/agents/tck', 'another profile (full)'],
] as const)('I-OWNER across agents: alice at %s (%s) and her tasks at /agents/alpha', (path, _relation) => {
  let alphaDone: { id: string; contextId: string };
  let alphaWaiting: { id: string; contextId: string };
  let alphaConfigId: string;
  /** One JSON-RPC call as alice at an endpoint path; v0.3 without A2A-Version. */
  const at = (endpoint: string, method: string, params: unknown, version = '1.0') =>
    sut.post(JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }), {
      path: endpoint,
      headers: { 'Content-Type': 'application/json', 'A2A-Version': version, ...as('alice').headers },
    });
  const atPath = (method: string, params: unknown, version = '1.0') => at(path, method, params, version);

  beforeAll(async () => {
    const done = taskOf(
      await at('/agents/alpha', 'SendMessage', { message: userMessage('tck-complete-task') }),
    );
    alphaDone = { id: done.id, contextId: done.contextId };
    const open = taskOf(
      await at('/agents/alpha', 'SendMessage', { message: userMessage('tck-input-required') }),
    );
    expect(stateOf(open)).toBe('TASK_STATE_INPUT_REQUIRED');
    alphaWaiting = { id: open.id, contextId: open.contextId };
    const created = await at('/agents/alpha', 'CreateTaskPushNotificationConfig', {
      taskId: alphaDone.id,
      url: pushUrl,
    });
    expect(created.error).toBeUndefined();
    alphaConfigId = created.result.id as string;
  });

  it('every v1.0 method that names the task → -32001, exactly as for a task that does not exist', async () => {
    const cases: [string, (id: string) => JsonObject][] = [
      ['GetTask', (id) => ({ id })],
      ['CancelTask', (id) => ({ id })],
      ['SubscribeToTask', (id) => ({ id })],
      ['SendMessage', (id) => ({ message: userMessage('tck-complete-task', { taskId: id }) })],
      ['SendStreamingMessage', (id) => ({ message: userMessage('tck-complete-task', { taskId: id }) })],
      ['CreateTaskPushNotificationConfig', (id) => ({ taskId: id, url: pushUrl })],
      ['GetTaskPushNotificationConfig', (id) => ({ taskId: id, id: alphaConfigId })],
      ['ListTaskPushNotificationConfigs', (id) => ({ taskId: id })],
      ['DeleteTaskPushNotificationConfig', (id) => ({ taskId: id, id: alphaConfigId })],
      ['ListTaskPushDeliveries', (id) => ({ taskId: id })],
    ];
    for (const [method, params] of cases) {
      for (const task of [alphaDone, alphaWaiting]) {
        const reply = await atPath(method, params(task.id));
        expect(reply.error?.code, `${method} ${task === alphaDone ? 'completed' : 'waiting'}`).toBe(-32001);
        await expectNotFound(reply, () => atPath(method, params(randomUUID())));
      }
    }
  });

  it('every v0.3 method that names the task → -32001', async () => {
    const cases = v03TaskCases(alphaConfigId);
    for (const [method, params] of cases) {
      for (const task of [alphaDone, alphaWaiting]) {
        const reply = await atPath(method, params(task.id), '');
        expect(reply.error?.code, `${method} ${task === alphaDone ? 'completed' : 'waiting'}`).toBe(-32001);
        await expectNotFound(reply, () => atPath(method, params(randomUUID()), ''));
      }
    }
  });

  it('ListTasks there never shows the task (nor counts it), while alpha lists it', async () => {
    const listed = await atPath('ListTasks', { pageSize: 100 });
    expect(listed.error).toBeUndefined();
    const ids = (listed.result.tasks as { id: string }[]).map((task) => task.id);
    expect(ids).not.toContain(alphaDone.id);
    expect(ids).not.toContain(alphaWaiting.id);
    expect(listed.result.totalSize).toBe(ids.length);
    const filtered = await atPath('ListTasks', { contextId: alphaDone.contextId });
    expect(filtered.result.tasks).toEqual([]);
    expect(filtered.result.totalSize).toBe(0);
    const atAlpha = await at('/agents/alpha', 'ListTasks', { pageSize: 100 });
    const alphaIds = (atAlpha.result.tasks as { id: string }[]).map((task) => task.id);
    expect(alphaIds).toEqual(expect.arrayContaining([alphaDone.id, alphaWaiting.id]));
  });

  it('leaves the task as it was: still waiting, its push config kept, nothing appended', async () => {
    const open = await at('/agents/alpha', 'GetTask', { id: alphaWaiting.id, historyLength: 100 });
    expect(stateOf(open.result)).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(
      (open.result.history as JsonObject[]).filter((message) => message.role === 'ROLE_USER'),
    ).toHaveLength(1);
    const config = await at('/agents/alpha', 'GetTaskPushNotificationConfig', {
      taskId: alphaDone.id,
      id: alphaConfigId,
    });
    expect(config.error).toBeUndefined();
  });
});

describe('after every intrusion attempt', () => {
  it('alice still has both tasks as she left them, and her push config', async () => {
    const open = await call('alice', 'GetTask', { id: waiting.id, historyLength: 100 });
    expect(stateOf(open.result)).toBe('TASK_STATE_INPUT_REQUIRED');
    // Her message and the agent's question only: no intruder's message was appended.
    expect(
      (open.result.history as JsonObject[]).filter((message) => message.role === 'ROLE_USER'),
    ).toHaveLength(1);
    const done = await call('alice', 'GetTask', { id: completed.id });
    expect(stateOf(done.result)).toBe('TASK_STATE_COMPLETED');
    const configs = await call('alice', 'ListTaskPushNotificationConfigs', { taskId: completed.id });
    expect(configs.error).toBeUndefined();
    expect(JSON.stringify(configs.result)).toContain(pushConfigId);
    const listed = await call('alice', 'ListTasks', { pageSize: 100 });
    const ids = (listed.result.tasks as { id: string }[]).map((task) => task.id);
    expect(ids).toEqual(expect.arrayContaining([completed.id, waiting.id]));
  });

  it('alice can continue and cancel her own tasks (the positive control)', async () => {
    const own = taskOf(await call('alice', 'SendMessage', { message: userMessage('tck-input-required') }));
    const canceled = await call('alice', 'CancelTask', { id: own.id });
    expect(canceled.error).toBeUndefined();
    expect(stateOf(canceled.result)).toBe('TASK_STATE_CANCELED');
    const stream = await fetch(sut.agentUrl('tck'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...as('alice').headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: waiting.id } }),
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await stream.body?.cancel();
  });
});

describe('GetExtendedAgentCard (docs/protocol.md §9: requires authentication)', () => {
  it('is declared on the tck card and served to an authenticated caller', async () => {
    const card = (await (await fetch(`${sut.baseUrl}/agents/tck/.well-known/agent-card.json`)).json()) as {
      capabilities: JsonObject;
    };
    expect(card.capabilities.extendedAgentCard).toBe(true);
    const reply = await call('bob', 'GetExtendedAgentCard', {});
    expect(reply.error).toBeUndefined();
    expect(reply.result).toMatchObject({ description: 'The TCK system under test, as partners see it' });
    expect((reply.result.skills as { id: string }[]).map((skill) => skill.id)).toContain('partner');
  });

  it('is a 401 without credentials, and -32004 on a profile that does not declare it', async () => {
    const response = await fetch(sut.agentUrl('tck'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }),
    });
    expect(response.status).toBe(401);
    const reply = await sut.rpc('GetExtendedAgentCard', {}, { ...as('alice'), profile: 'default' });
    expect(reply.error?.code).toBe(-32004);
  });
});
