import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbStreamSlots } from '../../shared/adapters/dynamodb/dynamodb-stream-slots.ts';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { createPushConfig, PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { toJsonRpcError } from '../../shared/app/rpc/errors-table.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { withBlockingSlot, withStreamSlot } from '../../shared/app/tasks/limits.ts';
import { sendMessage } from '../../shared/app/tasks/send-message.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { LimitExceededError } from '../../shared/domain/errors.ts';
import type { RunMessage, TaskRepository } from '../../shared/domain/ports.ts';
import { webhookPolicyFor } from '../../shared/domain/webhook-address.ts';
import { alice, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { stateRepositories } from '../support/state-repositories.ts';

/**
 * Issue #19 item 3 against DynamoDB Local: push configs per task, parts per message, metadata
 * size and open streams per caller, each refused with an ErrorInfo reason naming the limit,
 * before anything is stored.
 */
describe('limits', () => {
  let env: TestResources;
  let repositories: ReturnType<typeof stateRepositories>;
  let pushConfigs: DynamoDbPushConfigRepository;
  const mapping = { errorDomain: 'errors.example.test', now: () => new Date('2026-12-01T00:00:00Z') };
  const config = parseConfig({
    providers: { tck: { type: 'scripted', behavior: 'tck' } },
    profiles: { default: { name: 'TCK', description: 'tck', providers: ['tck'], privacyLevel: 'full' } },
    limits: { pushConfigsPerTask: 3, partsPerMessage: 3, metadataBytes: 256, streamsPerCaller: 2 },
  });

  beforeAll(async () => {
    env = await createTestResources('limits');
    repositories = stateRepositories(env);
    pushConfigs = new DynamoDbPushConfigRepository(env.clients.doc, env.resources.tables.State.name);
  });
  afterAll(() => env?.destroy());

  const deps = (queued: RunMessage[], tasks: TaskRepository = repositories.tasks) => ({
    tasks,
    codec: repositories.codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    pushConfigs,
    pushCodec: new PushConfigCodec(new FakeSealer()),
    webhookPolicy: webhookPolicyFor(true, true),
    journal: repositories.journal,
    providerFor: (providerId: string) => new ScriptedProvider(providerId, 'tck'),
  });

  /** The repository, counting the commits that reach it. */
  const counting = () => {
    const counter = { commits: 0 };
    const tasks: TaskRepository = {
      ...repositories.tasks,
      commit: (plan) => {
        counter.commits += 1;
        return repositories.tasks.commit(plan);
      },
      getTask: (taskId) => repositories.tasks.getTask(taskId),
      getRun: (taskId, runId) => repositories.tasks.getRun(taskId, runId),
      getRunWithTask: (taskId, runId) => repositories.tasks.getRunWithTask(taskId, runId),
      markPushConfigured: (taskId) => repositories.tasks.markPushConfigured(taskId),
      readHistorySegments: (taskId, below, last) =>
        repositories.tasks.readHistorySegments(taskId, below, last),
      fenceRun: (run, fence) => repositories.tasks.fenceRun(run, fence),
      holdDelegation: (run, hold) => repositories.tasks.holdDelegation(run, hold),
      markDelegation: (run, mark) => repositories.tasks.markDelegation(run, mark),
    };
    return { tasks, counter };
  };

  const errorInfo = (error: unknown) => toJsonRpcError(error, mapping);

  it('refuses the config above pushConfigsPerTask (-32602 PUSH_CONFIGS_PER_TASK_EXCEEDED); a replacement or a freed place is fine', async () => {
    const queued: RunMessage[] = [];
    const { taskId } = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage('ask me', { messageId: `tck-input-required-${crypto.randomUUID()}` }),
    });
    for (const id of ['a', 'b', 'c']) {
      await createPushConfig(deps(queued), alice, taskId, { id, url: `https://hooks.example/${id}` });
    }
    const refused = await createPushConfig(deps(queued), alice, taskId, {
      id: 'd',
      url: 'https://hooks.example/d',
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LimitExceededError);
    expect(errorInfo(refused)).toEqual({
      code: -32602,
      message: 'Invalid parameters: a limit is exceeded',
      data: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'PUSH_CONFIGS_PER_TASK_EXCEEDED',
          domain: 'errors.example.test',
          metadata: { limit: 'limits.pushConfigsPerTask', max: '3', timestamp: '2026-12-01T00:00:00.000Z' },
        },
        {
          '@type': 'type.googleapis.com/google.rpc.BadRequest',
          fieldViolations: [{ field: 'id', description: 'At most 3 push notification configs per task' }],
        },
      ],
    });
    expect((await pushConfigs.list(taskId, { limit: 10 })).configs.map((c) => c.configId)).toEqual([
      'a',
      'b',
      'c',
    ]);
    // Replacing one of them stays within the limit.
    await createPushConfig(deps(queued), alice, taskId, { id: 'b', url: 'https://hooks.example/b2' });
    // An inline config on a follow-up counts too, and nothing of the follow-up is stored.
    expect(await executeRun(deps(queued), queued.shift()!)).toBe('input-required');
    const before = (await repositories.tasks.getTask(taskId))!;
    const inline = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage('more', { taskId }),
      configuration: { taskPushNotificationConfig: { url: 'https://hooks.example/inline' } },
    }).catch((error: unknown) => error);
    expect(inline).toBeInstanceOf(LimitExceededError);
    expect((await repositories.tasks.getTask(taskId))!.revision).toBe(before.revision);
    expect(queued).toHaveLength(0);
    // A freed place takes a new one.
    await pushConfigs.delete(taskId, 'a');
    await createPushConfig(deps(queued), alice, taskId, { id: 'd', url: 'https://hooks.example/d' });
  });

  it.each([
    [
      'parts per message',
      userMessage('x', { parts: [{ text: '1' }, { text: '2' }, { text: '3' }, { text: '4' }] }),
      'PARTS_PER_MESSAGE_EXCEEDED',
      { limit: 'limits.partsPerMessage', max: '3' },
      'message.parts',
    ],
    [
      'metadata bytes (the message and its parts together)',
      userMessage('x', {
        metadata: { note: 'm'.repeat(150) },
        parts: [{ text: 'p', metadata: { note: 'p'.repeat(150) } }],
      }),
      'METADATA_BYTES_EXCEEDED',
      { limit: 'limits.metadataBytes', max: '256' },
      'message.metadata',
    ],
  ])(
    'refuses a message above %s with -32602 naming the limit; nothing is written',
    async (_, message, reason, metadata, field) => {
      const { tasks, counter } = counting();
      const refused = await createTask(deps([], tasks), {
        caller: alice,
        profileId: 'default',
        message,
      }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(LimitExceededError);
      const wire = errorInfo(refused);
      expect(wire.code).toBe(-32602);
      expect(wire.data?.[0]).toMatchObject({ reason, metadata });
      expect(wire.data?.[1]).toMatchObject({ fieldViolations: [{ field }] });
      expect(counter.commits).toBe(0);
    },
  );

  it('refuses a message that would grow the history past historyBytes (-32602 HISTORY_BYTES_EXCEEDED): first or follow-up, nothing is written', async () => {
    const small = parseConfig({ ...config, limits: { ...config.limits, historyBytes: 65_536 } });
    const queued: RunMessage[] = [];
    const { tasks, counter } = counting();
    const using = () => ({ ...deps(queued, tasks), config: small });
    const turn = (text: string, taskId?: string) =>
      createTask(using(), {
        caller: alice,
        profileId: 'default',
        message: userMessage(text, { messageId: `tck-input-required-${crypto.randomUUID()}`, taskId }),
      });
    // Alone over the limit: refused before the task exists.
    const first = await turn('f'.repeat(70_000)).catch((error: unknown) => error);
    expect(first).toBeInstanceOf(LimitExceededError);
    expect(counter.commits).toBe(0);
    // Within it, then a follow-up that would pass it: refused, the task as it was.
    const { taskId } = await turn('a'.repeat(40_000));
    expect(await executeRun(using(), queued.shift()!)).toBe('input-required');
    const before = (await repositories.tasks.getTask(taskId))!;
    const commits = counter.commits;
    const refused = await turn('b'.repeat(40_000), taskId).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LimitExceededError);
    const wire = errorInfo(refused);
    expect(wire.code).toBe(-32602);
    expect(wire.data?.[0]).toMatchObject({
      reason: 'HISTORY_BYTES_EXCEEDED',
      metadata: { limit: 'limits.historyBytes', max: '65536' },
    });
    expect(wire.data?.[1]).toMatchObject({ fieldViolations: [{ field: 'message' }] });
    expect(counter.commits).toBe(commits);
    expect((await repositories.tasks.getTask(taskId))!.revision).toBe(before.revision);
    expect(queued).toHaveLength(0);
    // A shorter follow-up still fits.
    await turn('c'.repeat(10_000), taskId);
    expect((await repositories.tasks.getTask(taskId))!.revision).toBe(before.revision + 1);
  });

  it('counts open streams per caller across instances: at the limit the next is refused (-32004 STREAMS_PER_CALLER_EXCEEDED) until one closes or its lease lapses', async () => {
    let now = Date.parse('2026-12-01T10:00:00Z');
    const clock = { now: () => new Date(now) };
    const table = env.resources.tables.State.name;
    // Two rpc instances: two adapters over the same table.
    const one = new DynamoDbStreamSlots(env.clients.doc, table, clock);
    const two = new DynamoDbStreamSlots(env.clients.doc, table, clock);
    const caller = { tenant: 't1', principal: `streams-${crypto.randomUUID()}` };
    const options = { max: 2, leaseMs: 900_000 };
    const first = await one.acquire(caller, 's1', options);
    const second = await two.acquire(caller, 's2', options);
    expect([first?.index, second?.index].sort()).toEqual([0, 1]);
    expect(await one.acquire(caller, 's3', options)).toBeUndefined();
    // Another caller has its own slots.
    expect(
      await one.acquire({ tenant: 't1', principal: `other-${crypto.randomUUID()}` }, 's4', options),
    ).toBeDefined();

    await two.release(caller, second!);
    const third = await one.acquire(caller, 's3', options);
    expect(third?.index).toBe(second?.index);

    // An instance that died with s1 open: its slot lapses with its lease, and its late release
    // leaves the stream that took the slot over alone.
    now += options.leaseMs + 1;
    const fourth = await two.acquire(caller, 's5', options);
    expect(fourth).toBeDefined();
    await one.release(caller, first!);
    await one.release(caller, third!);
    expect(await one.acquire(caller, 's6', options)).toBeDefined();
    expect(await one.acquire(caller, 's7', options)).toBeUndefined();

    // Through the use case: the refusal's wire form, and a stream that releases its slot when closed.
    const fresh = { tenant: 't1', principal: `use-case-${crypto.randomUUID()}` };
    const limited = {
      streamSlots: one,
      config: { limits: { ...config.limits, streamsPerCaller: 1 }, streaming: config.streaming },
    };
    async function* items() {
      yield 1;
      yield 2;
    }
    const stream = await withStreamSlot(limited, fresh, 'a', async () => items());
    expect((await stream.next()).value).toBe(1);
    const refused = await withStreamSlot(limited, fresh, 'b', async () => items()).catch((e: unknown) => e);
    expect(errorInfo(refused)).toMatchObject({
      code: -32004,
      data: [
        { reason: 'STREAMS_PER_CALLER_EXCEEDED', metadata: { limit: 'limits.streamsPerCaller', max: '1' } },
      ],
    });
    await stream.return(undefined);
    // An open that fails (the task cannot be created) gives its slot back at once.
    const failing = await withStreamSlot(limited, fresh, 'c', async () => {
      throw new Error('refused');
    }).catch((e: unknown) => e);
    expect(failing).toBeInstanceOf(Error);
    const again = await withStreamSlot(limited, fresh, 'd', async () => items());
    expect((await again.next()).value).toBe(1);
  });

  it('counts blocking sends per caller across instances (-32004 BLOCKING_SENDS_PER_CALLER_EXCEEDED), refused before a task exists, apart from the streams', async () => {
    const table = env.resources.tables.State.name;
    const clock = { now: () => new Date() };
    const one = new DynamoDbStreamSlots(env.clients.doc, table, clock, 'BLOCKING');
    const two = new DynamoDbStreamSlots(env.clients.doc, table, clock, 'BLOCKING');
    const streams = new DynamoDbStreamSlots(env.clients.doc, table, clock);
    const caller = { ...alice, principal: `blocking-${crypto.randomUUID()}` };
    const limited = { ...config, limits: { ...config.limits, blockingSendsPerCaller: 1 } };
    // Another instance holds the caller's one blocking send.
    const held = await two.acquire(caller, 'held', { max: 1, leaseMs: 60_000 });
    expect(held).toBeDefined();
    // Its streams are counted apart.
    expect(await streams.acquire(caller, 'stream', { max: 1, leaseMs: 60_000 })).toBeDefined();

    const { tasks, counter } = counting();
    const refused = await sendMessage(
      { ...deps([], tasks), config: limited, blockingSlots: one },
      { caller, profileId: 'default', message: userMessage('one too many') },
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LimitExceededError);
    expect(errorInfo(refused)).toMatchObject({
      code: -32004,
      data: [
        {
          reason: 'BLOCKING_SENDS_PER_CALLER_EXCEEDED',
          metadata: { limit: 'limits.blockingSendsPerCaller', max: '1' },
        },
      ],
    });
    expect(counter.commits).toBe(0);

    // Freed, the next send takes the slot, and gives it back when it answers (or fails).
    await two.release(caller, held!);
    const blockingDeps = { blockingSlots: one, config: limited };
    expect(await withBlockingSlot(blockingDeps, caller, 'a', 25_000, async () => 'answered')).toBe(
      'answered',
    );
    await expect(
      withBlockingSlot(blockingDeps, caller, 'b', 25_000, async () => {
        throw new Error('the run failed');
      }),
    ).rejects.toThrow('the run failed');
    const during = withBlockingSlot(blockingDeps, caller, 'c', 25_000, async () =>
      withBlockingSlot(blockingDeps, caller, 'd', 25_000, async () => 'nested').catch(
        (error: unknown) => error,
      ),
    );
    expect(await during).toBeInstanceOf(LimitExceededError);
  });
});
