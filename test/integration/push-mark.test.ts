import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { pushMark } from '../../shared/adapters/dynamodb/entities.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { parseTaskImage } from '../../shared/adapters/dynamodb/stream-images.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { fanOutEvents } from '../../shared/app/push/fan-out-events.ts';
import { buildPushConfig, createPushConfig, PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
import type { PushDelivery } from '../../shared/domain/push.ts';
import { webhookPolicyFor } from '../../shared/domain/webhook-address.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { taskRowRecords } from '../support/state-stream.ts';

/**
 * The push mark on the task row (decision 0041) against DynamoDB Local: set with an inline
 * config in the create's own write, set by CreateTaskPushNotificationConfig before the revision
 * its config is stored with, kept by a task write from a read older than the mark, and carried
 * by the stream images of every later revision into the journal events the pusher reads.
 */
describe('the push mark against the emulators', () => {
  let env: TestResources;
  let tasks: DynamoDbTaskRepository;
  let pushConfigs: DynamoDbPushConfigRepository;
  let journal: DynamoDbJournalRepository;
  let pushCodec: PushConfigCodec;
  let codec: TaskContentCodec;
  const clock = { now: () => new Date() };
  const ids = { newId: () => crypto.randomUUID() };

  beforeAll(async () => {
    env = await createTestResources('push-mark');
    const state = env.resources.tables.State.name;
    const sealer = new KmsSealer({
      kms: env.clients.kms,
      keyId: env.resources.key.keyId,
      installation: 'test',
    });
    tasks = new DynamoDbTaskRepository(env.clients.doc, state);
    pushConfigs = new DynamoDbPushConfigRepository(env.clients.doc, state);
    journal = new DynamoDbJournalRepository(env.clients.doc, env.resources.tables.Journal.name);
    pushCodec = new PushConfigCodec(sealer);
    codec = new TaskContentCodec(sealer);
  });
  afterAll(() => env?.destroy());

  const createDeps = () => ({
    tasks,
    codec,
    clock,
    ids,
    config: testConfig(),
    queue: { enqueue: async () => {} },
    pushCodec,
    pushConfigs,
    webhookPolicy: webhookPolicyFor(true, true),
  });
  const rawRow = async (taskId: string) =>
    (
      await env.clients.doc.send(
        new GetCommand({ TableName: env.resources.tables.State.name, Key: keys.task(taskId) }),
      )
    ).Item;

  it('a task created with an inline push config is marked in the write that creates it; one without is not', async () => {
    const withConfig = await createTask(createDeps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('with a webhook'),
      configuration: { taskPushNotificationConfig: { id: 'inline', url: 'https://hooks.example/in' } },
    });
    const without = await createTask(createDeps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('without a webhook'),
    });
    expect(await rawRow(withConfig.taskId)).toMatchObject({ revision: 1, [pushMark]: true });
    expect(await rawRow(without.taskId)).not.toHaveProperty(pushMark);
    expect(await pushConfigs.get(withConfig.taskId, 'inline')).toMatchObject({ afterRevision: 0 });

    // Their first revisions, as the projector gets them from the stream: marked and unmarked.
    const firstEvent = async (taskId: string) => {
      const [record] = await taskRowRecords(env, taskId);
      await projectRecord(journal, undefined, parseTaskImage(record?.dynamodb?.NewImage));
      return (await journal.listEvents(taskId, 0))[0];
    };
    expect((await firstEvent(withConfig.taskId))?.pushConfigured).toBe(true);
    expect(await firstEvent(without.taskId)).not.toHaveProperty('pushConfigured');
  });

  it('a config created later marks the row first; a task write from a read before the mark keeps it, and the revision the config wants carries it to the pusher', async () => {
    const { taskId } = await createTask(createDeps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('a webhook added later'),
    });
    // The executor's read, before any config exists.
    const stale = (await tasks.getTask(taskId))!;
    expect(stale.pushConfigured).toBeUndefined();

    await createPushConfig(createDeps(), alice, taskId, { id: 'later', url: 'https://hooks.example/later' });
    expect(await rawRow(taskId)).toMatchObject({ revision: 1, [pushMark]: true });
    expect(await pushConfigs.get(taskId, 'later')).toMatchObject({ afterRevision: 1 });

    // The stale writer commits revision 2 with the task as it read it (no mark): the row keeps it.
    await tasks.commit({
      row: {
        taskId,
        task: {
          ...stale,
          state: 'TASK_STATE_WORKING',
          revision: 2,
          statusTimestamp: new Date().toISOString(),
        },
        expect: { revision: 1 },
      },
    });
    expect(await rawRow(taskId)).toMatchObject({ revision: 2, [pushMark]: true });
    expect((await tasks.getTask(taskId))?.pushConfigured).toBe(true);

    // The stream, in order: the create (unmarked), the mark alone (same revision: not projected),
    // revision 2 (marked). The pusher reads the configs for revision 2 and queues it.
    const records = await taskRowRecords(env, taskId);
    expect(records.map((record) => parseTaskImage(record.dynamodb?.NewImage)?.pushConfigured)).toEqual([
      undefined,
      true,
      true,
    ]);
    for (const record of records)
      await projectRecord(
        journal,
        parseTaskImage(record.dynamodb?.OldImage),
        parseTaskImage(record.dynamodb?.NewImage),
      );
    const events = await journal.listEvents(taskId, 0);
    expect(events.map((event) => [event.revision, event.pushConfigured])).toEqual([
      [1, undefined],
      [2, true],
    ]);
    const queued: PushDelivery[] = [];
    const fanOutDeps = {
      pushConfigs,
      clock,
      deliveries: { enqueue: async (d: readonly PushDelivery[]) => void queued.push(...d) },
    };
    expect(await fanOutEvents(fanOutDeps, events)).toBe(1);
    expect(queued).toEqual([{ taskId, configId: 'later', revision: 2 }]);
  });

  it('a transaction returns the row it wrote when its mark is certain, and no image when a mark could have come meanwhile', async () => {
    // A new task with a push config: one transaction, its mark set by it. The image it returns
    // (decision 0093) is the row as a read returns it.
    const { taskId: model } = await createTask(createDeps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('a model row'),
    });
    const { pushConfigured: _none, ...planned } = {
      ...(await tasks.getTask(model))!,
      taskId: `t-${ids.newId()}`,
    };
    const config = await buildPushConfig(
      { pushCodec, clock, ids },
      planned,
      { id: 'inline', url: 'https://hooks.example/in' },
      0,
    );
    const created = await tasks.commit({
      row: { taskId: planned.taskId, task: planned, expect: { revision: 'absent' } },
      items: [{ entity: 'push', item: config, expect: 'any' }],
    });
    // Compared as values: the SDK reads binary as Uint8Array, the write kept the sealer's Buffer.
    const asValue = (task: StoredTask | undefined) =>
      task && { ...task, sealedHistory: Buffer.from(task.sealedHistory ?? []).toString('base64') };
    expect(asValue(created.committed)).toEqual(asValue(await tasks.getTask(planned.taskId)));
    expect(created.committed?.pushConfigured).toBe(true);

    // A task write read before a mark, committed as a transaction (with a run row of its own):
    // the row has the mark the writer never saw, so the commit claims no image.
    const { taskId } = await createTask(createDeps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('a transaction after a mark'),
    });
    const read = (await tasks.getTask(taskId))!;
    const current = (await tasks.getRun(taskId, read.currentRunId))!;
    await createPushConfig(createDeps(), alice, taskId, { id: 'meanwhile', url: 'https://hooks.example/m' });
    const result = await tasks.commit({
      row: {
        taskId,
        task: {
          ...read,
          state: 'TASK_STATE_WORKING',
          revision: 2,
          statusTimestamp: new Date().toISOString(),
        },
        expect: { revision: 1 },
        before: read,
      },
      items: [{ entity: 'run', item: { ...current, runId: `${current.runId}-other` }, expect: 'absent' }],
    });
    expect(result.committed).toBeUndefined();
    expect((await tasks.getTask(taskId))?.pushConfigured).toBe(true);
  });

  it('the mark alone is set only on an existing row, and a second config needs no second mark', async () => {
    expect(await tasks.markPushConfigured(`missing-${crypto.randomUUID()}`)).toBeUndefined();
    const { taskId } = await createTask(createDeps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('two webhooks'),
    });
    await createPushConfig(createDeps(), alice, taskId, { id: 'one', url: 'https://hooks.example/one' });
    const rowRecords = (await taskRowRecords(env, taskId)).length;
    await createPushConfig(createDeps(), alice, taskId, { id: 'two', url: 'https://hooks.example/two' });
    // The row read with its mark needs none: the stream saw no new record of the row.
    expect(await taskRowRecords(env, taskId)).toHaveLength(rowRecords);
    expect(await pushConfigs.get(taskId, 'two')).toMatchObject({ afterRevision: 1 });
  });
});
