import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemSize } from '../../bench/lib/meter.ts';
import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { unpackSealedHeaders } from '../../shared/adapters/dynamodb/sealed-headers.ts';
import { parseTaskImage } from '../../shared/adapters/dynamodb/stream-images.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { ItemTooLargeError, VersionConflictError } from '../../shared/domain/errors.ts';
import type { AgentProvider, RunMessage } from '../../shared/domain/ports.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { taskRowRecords } from '../support/state-stream.ts';

/**
 * The core path against DynamoDB Local and the KMS endpoint: real conditional writes,
 * transactions, streams and envelope encryption.
 */
describe('core path against the emulators', () => {
  let env: TestResources;
  let tasks: DynamoDbTaskRepository;
  let journal: DynamoDbJournalRepository;
  let codec: TaskContentCodec;
  const queued: RunMessage[] = [];
  const calls = new Map<string, number>();
  const config = testConfig();

  beforeAll(async () => {
    env = await createTestResources('core');
    tasks = new DynamoDbTaskRepository(env.clients.doc, env.resources.tables.State.name);
    journal = new DynamoDbJournalRepository(env.clients.doc, env.resources.tables.Journal.name);
    codec = new TaskContentCodec(
      new KmsSealer({ kms: env.clients.kms, keyId: env.resources.key.keyId, installation: 'test' }),
    );
  });
  afterAll(() => env?.destroy());

  const countingProvider = (providerId: string): AgentProvider => {
    const scripted = new ScriptedProvider(providerId, 'echo');
    return {
      run: async (request) => {
        calls.set(request.runId, (calls.get(request.runId) ?? 0) + 1);
        // Widen the window in which a concurrent duplicate could slip through.
        await new Promise((resolve) => setTimeout(resolve, 20));
        return scripted.run(request);
      },
    };
  };

  const deps = () => ({
    tasks,
    journal,
    codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    providerFor: countingProvider,
  });

  it('stores the run, then the task row with its sealed history, with no plaintext in the item', async () => {
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('plain words 4711'),
    });
    const { Item } = await env.clients.doc.send(
      new GetCommand({ TableName: env.resources.tables.State.name, Key: keys.task(taskId) }),
    );
    expect(Item).toMatchObject({ state: 'TASK_STATE_SUBMITTED', revision: 1 });
    expect(Item?.history).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(JSON.stringify(Item)).includes('plain words 4711')).toBe(false);
    expect(Buffer.from(Item?.history as Uint8Array).includes(Buffer.from('plain words'))).toBe(false);
  });

  it('refuses the completing write on a stale run version and applies nothing (I-LOCK, I-RESULT)', async () => {
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('stale'),
    });
    const task = (await tasks.getTask(taskId))!;
    const run = (await tasks.getRun(taskId, task.currentRunId))!;
    // A concurrent writer moves the run on (e.g. a tightening): version 1 → 2.
    await tasks.commit({ row: { taskId, run: { ...run, version: 2 }, expect: { runVersion: 1 } } });

    const completion = tasks.commit({
      row: {
        taskId,
        task: { ...task, state: 'TASK_STATE_COMPLETED', revision: 2 },
        run: { ...run, status: 'COMPLETED', version: 2 },
        expect: { revision: 1, runVersion: 1 },
      },
    });
    await expect(completion).rejects.toBeInstanceOf(VersionConflictError);
    expect((await tasks.getTask(taskId))!).toMatchObject({ state: 'TASK_STATE_SUBMITTED', revision: 1 });
    expect((await tasks.getRun(taskId, run.runId))!).toMatchObject({ status: 'QUEUED', version: 2 });
  });

  it('claims a run with one conditional write: of two concurrent claims exactly one wins (I-ONCE, I-LOCK)', async () => {
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('claim once'),
    });
    const task = (await tasks.getTask(taskId))!;
    const run = (await tasks.getRun(taskId, task.currentRunId))!;
    const claim = (leaseUntil: number) =>
      tasks.commit({
        row: {
          taskId,
          run: { ...run, status: 'RUNNING', version: 2, leaseUntil },
          expect: { runVersion: 1 },
        },
      });
    const outcomes = await Promise.allSettled([claim(1), claim(2)]);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const lost = outcomes.find((outcome) => outcome.status === 'rejected');
    expect((lost as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
    expect((await tasks.getRun(taskId, run.runId))!).toMatchObject({ status: 'RUNNING', version: 2 });
    // A stale single write applies nothing.
    await expect(
      tasks.commit({
        row: { taskId, run: { ...run, status: 'FAILED', version: 2 }, expect: { runVersion: 1 } },
      }),
    ).rejects.toBeInstanceOf(VersionConflictError);
    expect((await tasks.getRun(taskId, run.runId))!.status).toBe('RUNNING');
  });

  it('reads the current run with its task in one strongly consistent read of the task row, one read unit; earlier runs from their own rows (0036, 0038)', async () => {
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('read together'),
    });
    const task = (await tasks.getTask(taskId))!;
    const run = (await tasks.getRun(taskId, task.currentRunId))!;
    // Neighbours in the partition: earlier runs in rows of their own (settled), whose ids sort
    // after and before this one, and a push config.
    const other = (runId: string) => ({ ...run, runId, status: 'COMPLETED' as const, version: 3 });
    const after = other('ffffffff-ffff-4fff-bfff-ffffffffffff');
    const before = other('00000000-0000-4000-8000-000000000000');
    await tasks.commit({ items: [{ entity: 'run', item: after, expect: 'absent' }] });
    await tasks.commit({ items: [{ entity: 'run', item: before, expect: 'absent' }] });
    await env.clients.doc.send(
      new PutCommand({
        TableName: env.resources.tables.State.name,
        Item: { ...keys.push(taskId, 'c1'), taskId, configId: 'c1', url: 'https://example.com/hook' },
      }),
    );

    const reads: { command?: string; consistent?: boolean; units?: number }[] = [];
    env.clients.doc.middlewareStack.add(
      // biome-ignore lint/suspicious/noExplicitAny: the SDK's handler types differ per command.
      (next: any, context: { commandName?: string }) => async (args: any) => {
        args.input.ReturnConsumedCapacity = 'TOTAL';
        const result = await next(args);
        reads.push({
          command: context.commandName,
          consistent: args.input.ConsistentRead,
          units: result.output.ConsumedCapacity?.CapacityUnits,
        });
        return result;
      },
      { step: 'initialize', name: 'countReads' },
    );
    try {
      const together = await tasks.getRunWithTask(taskId, run.runId);
      expect(together.run).toEqual(run);
      expect(together.task).toEqual(task);
    } finally {
      env.clients.doc.middlewareStack.remove('countReads');
    }
    // The task row holds its current run (decision 0038): one GetItem, 1 RRU under 4 KB.
    expect(reads).toEqual([{ command: 'GetItemCommand', consistent: true, units: 1 }]);

    expect(await tasks.getRunWithTask(taskId, after.runId)).toEqual({ run: after, task });
    expect(await tasks.getRunWithTask(taskId, 'no-such-run')).toEqual({ run: undefined, task });
    expect(await tasks.getRunWithTask('no-such-task', run.runId)).toEqual({
      run: undefined,
      task: undefined,
    });
  });

  it('commits a task with its run in single-item writes of the task row: create, claim, complete; a follow-up moves the run it replaces to its own row (0038)', async () => {
    const tck = (providerId: string) => new ScriptedProvider(providerId, 'tck');
    const writes: { command?: string; table?: string; units?: number; indexUnits?: number }[] = [];
    env.clients.doc.middlewareStack.add(
      // biome-ignore lint/suspicious/noExplicitAny: the SDK's handler types differ per command.
      (next: any, context: { commandName?: string }) => async (args: any) => {
        if (!/Put|Update|Transact|Delete/.test(context.commandName ?? '')) return next(args);
        args.input.ReturnConsumedCapacity = 'INDEXES';
        const result = await next(args);
        const [consumed] = [result.output.ConsumedCapacity].flat();
        writes.push({
          command: context.commandName,
          table: args.input.TableName,
          units: consumed?.Table?.CapacityUnits,
          indexUnits: Object.values(consumed?.GlobalSecondaryIndexes ?? {}).reduce(
            (total: number, index) => total + ((index as { CapacityUnits?: number }).CapacityUnits ?? 0),
            0,
          ),
        });
        return result;
      },
      { step: 'initialize', name: 'countWrites' },
    );
    const stateWrites = () => writes.filter((write) => write.table === env.resources.tables.State.name);
    try {
      const first = await createTask(deps(), {
        caller: alice,
        profileId: 'default',
        message: userMessage('ask me', { messageId: 'tck-input-required-1' }),
      });
      const firstRunId = (await tasks.getTask(first.taskId))!.currentRunId;
      expect(
        await executeRun({ ...deps(), providerFor: tck }, { taskId: first.taskId, runId: firstRunId }),
      ).toBe('input-required');
      // Create, claim (WORKING), complete: one UpdateItem each, no transaction, and the lease index
      // is written at the create and at the settle only (the claim keeps the lease, 0027).
      expect(stateWrites().map((write) => write.command)).toEqual([
        'UpdateItemCommand',
        'UpdateItemCommand',
        'UpdateItemCommand',
      ]);
      expect(stateWrites().map((write) => write.indexUnits)).toEqual([1, 0, 1]);

      writes.length = 0;
      const second = await createTask(deps(), {
        caller: alice,
        profileId: 'default',
        message: userMessage('here it is', { messageId: 'tck-artifact-text-2', taskId: first.taskId }),
      });
      const task = (await tasks.getTask(first.taskId))!;
      expect(second.taskId).toBe(first.taskId);
      expect(task.currentRunId).not.toBe(firstRunId);
      // The replaced run, settled, went to its own row before the task row took the new one.
      expect(stateWrites().map((write) => write.command)).toEqual(['PutItemCommand', 'UpdateItemCommand']);
      const { Item: archived } = await env.clients.doc.send(
        new GetCommand({
          TableName: env.resources.tables.State.name,
          Key: keys.run(first.taskId, firstRunId),
        }),
      );
      expect(archived).toMatchObject({ status: 'COMPLETED', version: 3, taskId: first.taskId });
      expect(await tasks.getRun(first.taskId, firstRunId)).toMatchObject({ status: 'COMPLETED', version: 3 });
      expect(await tasks.getRun(first.taskId, task.currentRunId)).toMatchObject({
        status: 'QUEUED',
        version: 1,
      });
      expect(
        await executeRun({ ...deps(), providerFor: tck }, { taskId: first.taskId, runId: task.currentRunId }),
      ).toBe('completed');
      expect((await tasks.getRun(first.taskId, firstRunId))!.status).toBe('COMPLETED');
      expect((await tasks.getTask(first.taskId))!.state).toBe('TASK_STATE_COMPLETED');
    } finally {
      env.clients.doc.middlewareStack.remove('countWrites');
    }
  });

  it('refuses to open a sealed blob moved to another task or another field', async () => {
    const a = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('from a'),
    });
    const b = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('from b'),
    });
    const taskA = (await tasks.getTask(a.taskId))!;
    const taskB = (await tasks.getTask(b.taskId))!;
    await expect(codec.openHistory(a.taskId, taskA.sealedHistory)).resolves.toHaveLength(1);

    // Move A's history blob onto B's row, as an attacker with table access might.
    await env.clients.doc.send(
      new PutCommand({
        TableName: env.resources.tables.State.name,
        Item: { ...(await getRaw(b.taskId)), history: taskA.sealedHistory },
      }),
    );
    const moved = (await tasks.getTask(b.taskId))!;
    await expect(codec.openHistory(b.taskId, moved.sealedHistory)).rejects.toThrow();
    // Same task, other field.
    await expect(codec.openArtifacts(a.taskId, taskA.sealedHistory)).rejects.toThrow();
    expect(taskB.sealedHistory).toBeDefined();
  });

  it('runs the provider once for a duplicated SQS message, even when both deliveries race (I-ONCE)', async () => {
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('once only'),
    });
    const message = queued.at(-1)!;
    expect(message.taskId).toBe(taskId);
    const results = await Promise.all([executeRun(deps(), message), executeRun(deps(), message)]);
    expect(results.sort()).toEqual(['completed', 'duplicate']);
    expect(await executeRun(deps(), message)).toBe('duplicate');
    expect(calls.get(message.runId)).toBe(1);

    const task = (await tasks.getTask(taskId))!;
    expect(task).toMatchObject({ state: 'TASK_STATE_COMPLETED', revision: 3 });
    expect(await codec.openArtifacts(taskId, task.sealedArtifacts)).toEqual([
      expect.objectContaining({ parts: [{ text: 'once only' }] }),
    ]);
  });

  it('ends run and task FAILED when the result is over what one write can store: the adapter says ItemTooLargeError (I-RESULT)', async () => {
    // Over one transaction's 4 MB even in chunk items (decision 0065); below it a result is stored.
    const huge = 'x'.repeat(4 * 1024 * 1024);
    const hugeResult: AgentProvider = {
      run: async (request) => {
        const result = await new ScriptedProvider('huge', 'echo').run(request);
        if (result.outcome.kind !== 'completed') throw new Error('echo completes');
        return {
          ...result,
          outcome: { ...result.outcome, artifacts: [{ artifactId: 'a', parts: [{ text: huge }] }] },
        };
      },
    };
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('big'),
    });
    const task = (await tasks.getTask(taskId))!;
    const run = (await tasks.getRun(taskId, task.currentRunId))!;
    // The adapter refuses it as the domain's error before sending anything.
    const sealed = await codec.seal(taskId, {
      statusMessage: undefined,
      artifacts: [{ artifactId: 'a', parts: [{ text: huge }] }],
      history: [],
    });
    await expect(
      tasks.commit({
        row: {
          taskId,
          task: { ...task, revision: 2, sealedArtifacts: sealed.sealedArtifacts },
          run,
          expect: { revision: 1, runVersion: run.version },
        },
      }),
    ).rejects.toBeInstanceOf(ItemTooLargeError);
    // The use case stores nothing of it and ends the run FAILED with the reason.
    await executeRun({ ...deps(), providerFor: () => hugeResult }, queued.at(-1)!);
    const ended = (await tasks.getTask(taskId))!;
    expect(ended).toMatchObject({ state: 'TASK_STATE_FAILED', metadata: { reason: 'RESULT_NOT_STORABLE' } });
    expect((await tasks.getRun(taskId, run.runId))!).toMatchObject({ status: 'FAILED' });
  });

  it('projects the same stream records twice and yields each revision once (I-ORDER)', async () => {
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('project me'),
    });
    const message = queued.at(-1)!;
    await executeRun(deps(), message);

    const records = await taskRowRecords(env, taskId);
    expect(records.map((record) => record.eventName)).toEqual(['INSERT', 'MODIFY', 'MODIFY']);
    for (const pass of [1, 2]) {
      for (const record of records) {
        const result = await projectRecord(
          journal,
          parseTaskImage(record.dynamodb?.OldImage as Record<string, unknown> | undefined),
          parseTaskImage(record.dynamodb?.NewImage as Record<string, unknown> | undefined),
        );
        expect(result).toBe(pass === 1 ? 'written' : 'duplicate');
      }
    }
    const events = await journal.listEvents(taskId, 0);
    expect(events.map((event) => [event.revision, event.state])).toEqual([
      [1, 'TASK_STATE_SUBMITTED'],
      [2, 'TASK_STATE_WORKING'],
      [3, 'TASK_STATE_COMPLETED'],
    ]);
    const view = (await journal.getView(taskId))!;
    expect(view).toMatchObject({ revision: 3, state: 'TASK_STATE_COMPLETED' });
    // The projector copied the sealed blob as it is: it opens with the key holder's codec.
    expect(await codec.openArtifacts(taskId, view.sealedArtifacts)).toHaveLength(1);
    expect(events[2]?.sealedArtifacts).toBeDefined();
    expect(events[1]?.sealedArtifacts).toBeUndefined();
  });

  it('never moves a view backwards when an older revision is replayed late', async () => {
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('late'),
    });
    await executeRun(deps(), queued.at(-1)!);
    const final = (await tasks.getTask(taskId))!;
    expect(await projectRecord(journal, undefined, final)).toBe('written');
    const first = { ...final, revision: 1, state: 'TASK_STATE_SUBMITTED' as const };
    expect(await projectRecord(journal, undefined, first)).toBe('written');
    expect((await journal.getView(taskId))!.revision).toBe(3);
    expect((await journal.listEvents(taskId, 0)).map((event) => event.revision)).toEqual([1, 3]);
  });

  it('stores a completed task’s shared blob header once, smaller, and reads it back through the repository (0039)', async () => {
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage('pack me'),
    });
    await executeRun(deps(), queued.at(-1)!);
    const raw = await getRaw(taskId);
    const headers = raw.sealHeaders as Uint8Array[];
    expect(headers).toHaveLength(1);
    const header = headers[0]!;
    const fields = ['statusMessage', 'artifacts', 'history'].filter((field) => raw[field] !== undefined);
    expect(fields.length).toBeGreaterThanOrEqual(2);
    for (const field of fields) expect([...(raw[field] as Uint8Array).subarray(0, 2)]).toEqual([0, 0]);
    // The same item as stored before this change: every blob whole.
    const before = unpackSealedHeaders(raw);
    const saved = (fields.length - 1) * header.length - 2 * fields.length - ('sealHeaders'.length + 3 + 1);
    expect(itemSize(marshall(raw))).toBe(itemSize(marshall(before)) - saved);
    expect(saved).toBeGreaterThan(100);

    // Read back through the repository and opened by a reader with no cached data key (KMS Decrypt).
    const fresh = () =>
      new TaskContentCodec(
        new KmsSealer({ kms: env.clients.kms, keyId: env.resources.key.keyId, installation: 'test' }),
      );
    const task = (await tasks.getTask(taskId))!;
    expect(Buffer.from(task.sealedArtifacts!).subarray(0, header.length)).toEqual(Buffer.from(header));
    expect(await fresh().openArtifacts(taskId, task.sealedArtifacts)).toEqual([
      expect.objectContaining({ parts: [{ text: 'pack me' }] }),
    ]);
    expect(await fresh().openHistory(taskId, task.sealedHistory)).toHaveLength(2);

    // Projected: the view and event are packed too, and read back (also through the owner index) they open.
    expect(await projectRecord(journal, undefined, task)).toBe('written');
    const { Item: rawView } = await env.clients.doc.send(
      new GetCommand({ TableName: env.resources.tables.Journal.name, Key: keys.view(taskId) }),
    );
    expect(rawView?.sealHeaders).toHaveLength(1);
    const view = (await journal.getView(taskId))!;
    expect(await fresh().openArtifacts(taskId, view.sealedArtifacts)).toHaveLength(1);
    const page = await journal.listViews({ owner: alice, now: new Date(), limit: 100 });
    const listed = page.views.find((candidate) => candidate.taskId === taskId);
    expect(await fresh().openArtifacts(taskId, listed?.sealedArtifacts)).toHaveLength(1);
    const [event] = await journal.listEvents(taskId, 2);
    expect(await fresh().openArtifacts(taskId, event?.sealedArtifacts)).toHaveLength(1);

    // An item written before this change (no header list, every blob whole) reads as before: no migration.
    await env.clients.doc.send(new PutCommand({ TableName: env.resources.tables.State.name, Item: before }));
    const legacy = (await tasks.getTask(taskId))!;
    expect(Buffer.from(legacy.sealedArtifacts!)).toEqual(Buffer.from(task.sealedArtifacts!));
    expect(await fresh().openArtifacts(taskId, legacy.sealedArtifacts)).toHaveLength(1);
  });

  const getRaw = async (taskId: string) =>
    (
      await env.clients.doc.send(
        new GetCommand({ TableName: env.resources.tables.State.name, Key: keys.task(taskId) }),
      )
    ).Item!;
});
