import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../functions/rpc/http-app.ts';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { buildAgentCard, pushDeliveriesExtension } from '../../shared/app/profiles/agent-card.ts';
import { deliverPush, WebhookDeliveryFailedError } from '../../shared/app/push/deliver-push.ts';
import { fanOutEvents } from '../../shared/app/push/fan-out-events.ts';
import { buildPushConfig, createPushConfig, PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { listPushDeliveries } from '../../shared/app/push/push-deliveries.ts';
import { createExtensionMethods } from '../../shared/app/rpc/a2a-methods.ts';
import { createDispatcher } from '../../shared/app/rpc/dispatcher.ts';
import { InvalidParamsError, TaskNotFoundError } from '../../shared/domain/errors.ts';
import type { PushConfigRepository, WebhookResult } from '../../shared/domain/ports.ts';
import {
  type AttemptContext,
  deliveryBackoffSeconds,
  describeAttempt,
  type StoredPushConfig,
} from '../../shared/domain/push.ts';
import { webhookPolicyFor } from '../../shared/domain/webhook-address.ts';
import { alice, createCore, testConfig } from '../support/core-fixture.ts';
import { InMemoryPushDeliveryLog } from '../support/in-memory-repositories.ts';

/** Delivery records and their caller-readable extension method (decision 0025). */

const bob = { tenant: 't1', principal: 'bob', profileId: 'default' } as const;
const now = new Date('2026-11-30T12:00:00.000Z');
const context = (attempt: number, maxAttempts = 10): AttemptContext => ({
  attempt,
  maxAttempts,
  retryBaseSeconds: 2,
  attemptId: `m-1#${attempt}`,
});

describe('describeAttempt: one attempt, metadata only', () => {
  it('a delivered attempt keeps the last 2xx status and the number of POSTs', () => {
    expect(describeAttempt({ kind: 'delivered', status: 204, posts: 2 }, context(1), now)).toEqual({
      attempt: { attempt: 1, at: now.toISOString(), outcome: 'DELIVERED', httpStatus: 204, posts: 2 },
      state: 'DELIVERED',
    });
  });

  it('a failed attempt says when the next one is due, by the queue’s own backoff', () => {
    const { attempt, state } = describeAttempt(
      { kind: 'failed', reason: 'http status', status: 503 },
      context(3),
      now,
    );
    expect(state).toBe('RETRYING');
    expect(attempt).toEqual({
      attempt: 3,
      at: now.toISOString(),
      outcome: 'HTTP_ERROR',
      httpStatus: 503,
      nextAttemptAt: new Date(now.getTime() + deliveryBackoffSeconds(3, 2) * 1000).toISOString(),
    });
  });

  it('classes failures below HTTP, refusals and internal errors; the last failure gives up', () => {
    expect(
      describeAttempt({ kind: 'failed', reason: 'network: ECONNREFUSED' }, context(1), now).attempt,
    ).toMatchObject({
      outcome: 'NETWORK_ERROR',
      error: 'network: ECONNREFUSED',
    });
    expect(
      describeAttempt({ kind: 'failed', reason: 'redirect not followed', status: 302 }, context(1), now)
        .attempt,
    ).toMatchObject({ outcome: 'NETWORK_ERROR', error: 'redirect not followed', httpStatus: 302 });
    expect(
      describeAttempt({ kind: 'refused', reason: 'forbidden-address: private' }, context(1), now),
    ).toMatchObject({
      attempt: { outcome: 'REFUSED', error: 'forbidden-address: private' },
      state: 'REFUSED',
    });
    const last = describeAttempt({ kind: 'error' }, context(10, 10), now);
    expect(last).toEqual({
      attempt: { attempt: 10, at: now.toISOString(), outcome: 'INTERNAL_ERROR' },
      state: 'GAVE_UP',
    });
    expect(last.attempt).not.toHaveProperty('nextAttemptAt');
  });

  it('never copies a reason that is not a short error code (no URL, no text)', () => {
    const leaky = 'network: https://user:secret@hooks.example/path?token=abc';
    expect(describeAttempt({ kind: 'failed', reason: leaky }, context(1), now).attempt.error).toBe('error');
    expect(describeAttempt({ kind: 'failed', reason: 'x'.repeat(65) }, context(1), now).attempt.error).toBe(
      'error',
    );
  });
});

/** A task, a config and the journal, wired as the deliverer sees them. */
const deliveryFixture = async (answers: WebhookResult[]) => {
  const core = createCore();
  const { taskId } = await core.send('hello');
  await core.projectAll();
  const pushCodec = new PushConfigCodec(new FakeSealer());
  const task = core.tasks.tasks.get(taskId)!;
  const config = await buildPushConfig(
    { pushCodec, clock: { now: () => new Date() }, ids: { newId: () => 'hook-1' } },
    task,
    { url: 'https://hooks.example/in?token=s3cret', token: 'notification-token' },
    0,
  );
  const configs: PushConfigRepository = {
    get: async () => config,
    list: async () => ({ configs: [config], more: false }),
    put: async () => {},
    delete: async () => {},
  };
  const posts: string[] = [];
  const deliveryLog = new InMemoryPushDeliveryLog();
  const warnings: Record<string, unknown>[] = [];
  const deps = {
    pushConfigs: configs,
    journal: core.journal,
    codec: core.codec,
    pushCodec,
    sender: {
      post: async (request: { body: string }): Promise<WebhookResult> => {
        posts.push(request.body);
        return answers.shift() ?? { kind: 'delivered', status: 200 };
      },
    },
    clock: { now: () => new Date() },
    deliveryLog,
    logger: { warn: (_message: string, fields: Record<string, unknown>) => void warnings.push(fields) },
  };
  return { core, taskId, task, config, deps, posts, deliveryLog, warnings };
};

describe('deliverPush records each attempt', () => {
  it('a 503 and then a 2xx make one record with two attempts, expiring with the task', async () => {
    const f = await deliveryFixture([{ kind: 'failed', reason: 'http status', status: 503 }]);
    const delivery = { taskId: f.taskId, configId: 'hook-1', revision: 1 };
    await expect(deliverPush(f.deps, delivery, context(1))).rejects.toBeInstanceOf(
      WebhookDeliveryFailedError,
    );
    expect(await deliverPush(f.deps, delivery, context(2))).toEqual({ kind: 'delivered', posts: 1 });
    const [record] = f.deliveryLog.records.values();
    expect(record).toMatchObject({ taskId: f.taskId, configId: 'hook-1', revision: 1, state: 'DELIVERED' });
    expect(record?.attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.httpStatus])).toEqual(
      [
        [1, 'HTTP_ERROR', 503],
        [2, 'DELIVERED', 200],
      ],
    );
    // I-PURGE: the record carries the task's expiry (the event's), nothing of the URL or secrets.
    expect(record?.expiresAt).toBe(f.task.expiresAt);
    const stored = JSON.stringify([...f.deliveryLog.records.values()]);
    for (const secret of ['hooks.example', 's3cret', 'notification-token', 'hello']) {
      expect(stored).not.toContain(secret);
    }
  });

  it('a record that cannot be written is logged and neither fails nor repeats the delivery', async () => {
    const f = await deliveryFixture([]);
    // DynamoDB refusing the write is also proven against the emulator (integration test).
    const failing = {
      ...f.deps,
      deliveryLog: {
        append: async () => Promise.reject(new Error('throttled')),
        list: f.deliveryLog.list,
        finalThrough: f.deliveryLog.finalThrough.bind(f.deliveryLog),
      },
    };
    const delivery = { taskId: f.taskId, configId: 'hook-1', revision: 1 };
    expect(await deliverPush(failing, delivery, context(1))).toEqual({ kind: 'delivered', posts: 1 });
    expect(f.posts).toHaveLength(1);
    expect(f.warnings).toEqual([{ ...delivery, attempt: 1, error: 'Error' }]);
  });

  it('records nothing without an attempt context or when the config is gone', async () => {
    const f = await deliveryFixture([]);
    await deliverPush(f.deps, { taskId: f.taskId, configId: 'hook-1', revision: 1 });
    const gone = { ...f.deps, pushConfigs: { ...f.deps.pushConfigs, get: async () => undefined } };
    expect(
      await deliverPush(gone, { taskId: f.taskId, configId: 'hook-1', revision: 1 }, context(1)),
    ).toEqual({
      kind: 'config-gone',
    });
    expect(f.deliveryLog.records.size).toBe(0);
  });

  it('an appended attempt id is not appended twice (an SDK retry of the same write)', async () => {
    const log = new InMemoryPushDeliveryLog();
    const entry = {
      taskId: 't',
      configId: 'c',
      revision: 1,
      state: 'DELIVERED' as const,
      attempt: { attempt: 1, at: now.toISOString(), outcome: 'DELIVERED' as const, httpStatus: 200 },
      attemptId: 'm#1',
      expiresAt: 2_000_000_000,
    };
    expect(await log.append(entry)).toBe('recorded');
    expect(await log.append(entry)).toBe('duplicate');
    expect([...log.records.values()][0]?.attempts).toHaveLength(1);
  });
});

describe('listPushDeliveries (ListTaskPushDeliveries)', () => {
  const seeded = async () => {
    const core = createCore();
    const { taskId } = await core.send('hello');
    const task = core.tasks.tasks.get(taskId)!;
    const deliveryLog = new InMemoryPushDeliveryLog();
    const append = (configId: string, revision: number, expiresAt = task.expiresAt) =>
      deliveryLog.append({
        taskId,
        configId,
        revision,
        state: 'DELIVERED',
        attempt: { attempt: 1, at: now.toISOString(), outcome: 'DELIVERED', httpStatus: 200, posts: 1 },
        attemptId: `${configId}-${revision}#1`,
        expiresAt,
      });
    await append('a', 1);
    await append('a', 2);
    await append('b', 1);
    await append('b', 2, Math.floor(Date.now() / 1000) - 1); // expired: never shown
    const deps = { tasks: core.tasks, clock: { now: () => new Date() }, deliveryLog };
    return { core, taskId, task, deps };
  };

  it('answers the owner in (config, revision) order, pages with a token, and leaves expired records out', async () => {
    const { taskId, deps } = await seeded();
    const all = await listPushDeliveries(deps, alice, taskId);
    expect(all.deliveries.map((d) => `${d.configId}/${d.revision}`)).toEqual(['a/1', 'a/2', 'b/1']);
    expect(all.nextPageToken).toBe('');
    expect(all.deliveries[0]).toEqual({
      taskId,
      configId: 'a',
      revision: 1,
      state: 'DELIVERED',
      attempts: [
        { attempt: 1, timestamp: now.toISOString(), outcome: 'DELIVERED', httpStatus: 200, posts: 1 },
      ],
      updateTimestamp: now.toISOString(),
    });
    const first = await listPushDeliveries(deps, alice, taskId, { pageSize: 2 });
    expect(first.deliveries.map((d) => `${d.configId}/${d.revision}`)).toEqual(['a/1', 'a/2']);
    const second = await listPushDeliveries(deps, alice, taskId, {
      pageSize: 2,
      pageToken: first.nextPageToken,
    });
    expect(second.deliveries.map((d) => `${d.configId}/${d.revision}`)).toEqual(['b/1']);
    const onlyB = await listPushDeliveries(deps, alice, taskId, { configId: 'b' });
    expect(onlyB.deliveries.map((d) => d.revision)).toEqual([1]);
  });

  it('another caller, an unknown task and an expired task are TaskNotFound (I-OWNER, I-PURGE)', async () => {
    const { core, taskId, task, deps } = await seeded();
    await expect(listPushDeliveries(deps, bob, taskId)).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(listPushDeliveries(deps, alice, 'no-such-task')).rejects.toBeInstanceOf(TaskNotFoundError);
    core.tasks.tasks.set(taskId, { ...task, expiresAt: Math.floor(Date.now() / 1000) });
    await expect(listPushDeliveries(deps, alice, taskId)).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it('refuses a page token it did not issue', async () => {
    const { taskId, deps } = await seeded();
    for (const pageToken of [
      'nope',
      Buffer.from('d1:a#0').toString('base64url'),
      Buffer.from('p1:a').toString('base64url'),
    ]) {
      await expect(listPushDeliveries(deps, alice, taskId, { pageToken })).rejects.toBeInstanceOf(
        InvalidParamsError,
      );
    }
  });
});

describe('the extension method on the JSON-RPC edge', () => {
  const dispatch = async (params: unknown, principal = 'alice') => {
    const { taskId, deps } = await (async () => {
      const core = createCore();
      const sent = await core.send('hello');
      return {
        taskId: sent.taskId,
        deps: {
          tasks: core.tasks,
          clock: { now: () => new Date() },
          deliveryLog: new InMemoryPushDeliveryLog(),
        },
      };
    })();
    const dispatcher = createDispatcher(createExtensionMethods(deps), {
      errorDomain: 'a2a-serverless.test',
      logger: { error: () => {} },
    });
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'ListTaskPushDeliveries',
      params: typeof params === 'function' ? params(taskId) : params,
    });
    const result = await dispatcher.dispatch(
      body,
      { 'content-type': 'application/json', 'a2a-version': '1.0' },
      {
        caller: { tenant: 't1', principal },
      },
    );
    if (result.kind !== 'json') throw new Error('expected a JSON answer');
    return result;
  };

  it('answers the owner; another caller gets -32001 with its ErrorInfo', async () => {
    const ok = await dispatch((taskId: string) => ({ taskId }));
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ result: { deliveries: [], nextPageToken: '' } });
    const foreign = await dispatch((taskId: string) => ({ task_id: taskId }), 'bob');
    expect(foreign.body).toMatchObject({
      error: {
        code: -32001,
        data: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'TASK_NOT_FOUND',
            domain: 'a2a-protocol.org',
          },
        ],
      },
    });
  });

  it('invalid params are -32602 naming the field, never a 5xx or -32603', async () => {
    for (const [params, field] of [
      [{}, 'taskId'],
      [(taskId: string) => ({ taskId, pageSize: 0 }), 'pageSize'],
      [(taskId: string) => ({ taskId, pageSize: 101 }), 'pageSize'],
      [(taskId: string) => ({ taskId, pageToken: '%%' }), 'pageToken'],
      [{ taskId: 'x'.repeat(300) }, 'taskId'],
    ] as const) {
      const answer = await dispatch(params);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({
        error: {
          code: -32602,
          data: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field }] }],
        },
      });
    }
  });

  it('every card declares the extension, optional, under capabilities.extensions', () => {
    const card = buildAgentCard(testConfig(), 'default', 'http://127.0.0.1:1')!;
    expect(card.capabilities.extensions).toEqual([pushDeliveriesExtension]);
    expect(pushDeliveriesExtension).toMatchObject({
      uri: 'urn:a2a-serverless:ext:push-deliveries:v1',
      required: false,
    });
  });
});

describe('activating the extension', () => {
  const app = createHttpApp({
    config: testConfig(),
    dispatcher: {
      dispatch: async () =>
        ({ kind: 'json', status: 200, body: { jsonrpc: '2.0', id: 1, result: {} } }) as const,
      invoke: async () => ({ kind: 'value', value: {} }) as const,
    },
  });
  const post = (headers: Record<string, string>) =>
    app({
      method: 'POST',
      path: '/agents/default',
      headers: { 'content-type': 'application/json', ...headers },
      query: {},
      body: '{"jsonrpc":"2.0","id":1,"method":"ListTaskPushDeliveries","params":{"taskId":"t"}}',
      caller: null,
      requestId: 'r1',
      baseUrl: 'http://127.0.0.1:1',
    } as Parameters<typeof app>[0]);

  it('echoes the activated extension in the header spelling the client used; unknown ones are ignored', async () => {
    const { uri } = pushDeliveriesExtension;
    expect((await post({ 'a2a-extensions': `urn:other, ${uri}` })).headers).toMatchObject({
      'A2A-Extensions': uri,
    });
    expect((await post({ 'x-a2a-extensions': uri })).headers).toMatchObject({ 'X-A2A-Extensions': uri });
    const plain = (await post({ 'a2a-extensions': 'urn:other' })).headers;
    expect(plain).not.toHaveProperty('A2A-Extensions');
    expect((await post({})).headers).not.toHaveProperty('A2A-Extensions');
  });
});

describe('fanOutEvents: a config gets the revisions committed after it existed (decision 0031)', () => {
  const pushCodec = new PushConfigCodec(new FakeSealer());
  const stored = (configId: string, afterRevision: number | undefined) =>
    buildPushConfig(
      { pushCodec, clock: { now: () => now }, ids: { newId: () => configId } },
      { taskId: 't-1', expiresAt: now.getTime() / 1000 + 3600 },
      { url: 'https://hooks.example/in' },
      afterRevision ?? 0,
    ).then((config) => {
      if (afterRevision !== undefined) return config;
      const { afterRevision: _absent, ...legacy } = config;
      return legacy;
    });

  it('a lagging pusher does not send a later config the revisions before it; an inline or older config gets all', async () => {
    const configs = [await stored('inline', 0), await stored('later', 3), await stored('legacy', undefined)];
    const queued: unknown[] = [];
    const events = [1, 2, 3, 4, 5].map((revision) => ({
      taskId: 't-1',
      revision,
      expiresAt: now.getTime() / 1000 + 3600,
      pushConfigured: true as const,
    }));
    const count = await fanOutEvents(
      {
        pushConfigs: {
          get: async () => undefined,
          list: async () => ({ configs, more: false }),
          put: async () => {},
          delete: async () => {},
        },
        deliveries: { enqueue: async (deliveries) => void queued.push(...deliveries) },
        clock: { now: () => now },
      },
      events,
    );
    const revisionsOf = (configId: string) =>
      (queued as { configId: string; revision: number }[])
        .filter((delivery) => delivery.configId === configId)
        .map((delivery) => delivery.revision);
    expect(revisionsOf('inline')).toEqual([1, 2, 3, 4, 5]);
    expect(revisionsOf('later')).toEqual([4, 5]);
    expect(revisionsOf('legacy')).toEqual([1, 2, 3, 4, 5]);
    expect(count).toBe(12);
  });
});

describe('fanOutEvents reads push configs only for events that carry the push mark (decision 0041)', () => {
  const pushCodec = new PushConfigCodec(new FakeSealer());
  const expiresAt = now.getTime() / 1000 + 3600;
  const fanOut = async (events: readonly { revision: number; pushConfigured?: true }[]) => {
    const config = await buildPushConfig(
      { pushCodec, clock: { now: () => now }, ids: { newId: () => 'hook' } },
      { taskId: 't-1', expiresAt },
      { url: 'https://hooks.example/in' },
      0,
    );
    let lists = 0;
    const queued: { revision: number }[] = [];
    const count = await fanOutEvents(
      {
        pushConfigs: {
          get: async () => undefined,
          list: async () => {
            lists++;
            return { configs: [config], more: false };
          },
          put: async () => {},
          delete: async () => {},
        },
        deliveries: { enqueue: async (deliveries) => void queued.push(...deliveries) },
        clock: { now: () => now },
      },
      events.map((event) => ({ taskId: 't-1', expiresAt, ...event })),
    );
    return { lists, count, revisions: queued.map((delivery) => delivery.revision) };
  };

  it('a group of unmarked events (a task that never had a config) reads no config and queues nothing', async () => {
    expect(await fanOut([{ revision: 1 }, { revision: 2 }, { revision: 3 }])).toEqual({
      lists: 0,
      count: 0,
      revisions: [],
    });
  });

  it('one marked event in the group reads the configs once; the configs decide the revisions', async () => {
    expect(await fanOut([{ revision: 1 }, { revision: 2, pushConfigured: true }])).toEqual({
      lists: 1,
      count: 2,
      revisions: [1, 2],
    });
    expect(await fanOut([{ revision: 3, pushConfigured: true }])).toEqual({
      lists: 1,
      count: 1,
      revisions: [3],
    });
  });

  it('CreateTaskPushNotificationConfig marks the row, then stores the revision the mark left: a revision committed in between is not the config’s', async () => {
    const core = createCore();
    const { taskId } = await core.send('hello');
    const read = core.tasks.tasks.get(taskId)!;
    const stored = new Map<string, StoredPushConfig>();
    let marks = 0;
    const tasks = Object.create(core.tasks) as typeof core.tasks;
    tasks.markPushConfigured = async (id) => {
      marks++;
      // A writer that read before the config request commits the next revision, unmarked.
      if (marks === 1)
        await core.tasks.commit({
          row: {
            taskId: read.taskId,
            task: { ...read, revision: read.revision + 1 },
            expect: { revision: read.revision },
          },
        });
      return core.tasks.markPushConfigured(id);
    };
    const deps = {
      tasks,
      pushConfigs: {
        get: async (_taskId: string, configId: string) => stored.get(configId),
        list: async () => ({ configs: [...stored.values()], more: false }),
        put: async (config: StoredPushConfig) => void stored.set(config.configId, config),
        delete: async () => {},
      },
      pushCodec,
      webhookPolicy: webhookPolicyFor(true, true),
      clock: { now: () => new Date() },
      ids: { newId: () => 'unused' },
    };
    await createPushConfig(deps, alice, taskId, { id: 'one', url: 'https://hooks.example/one' });
    // That revision's event carries no mark, so the config must not want it.
    expect(stored.get('one')?.afterRevision).toBe(read.revision + 1);
    expect(core.tasks.tasks.get(taskId)?.pushConfigured).toBe(true);
    // A row read with the mark needs no second mark; its revision was committed after the mark.
    await createPushConfig(deps, alice, taskId, { id: 'two', url: 'https://hooks.example/two' });
    expect(marks).toBe(1);
    expect(stored.get('two')?.afterRevision).toBe(read.revision + 1);
  });
});
