import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbJournalWriter } from '../../shared/adapters/dynamodb/dynamodb-journal-writer.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import {
  armFailpoints,
  disarmFailpoints,
  InjectedFaultError,
} from '../../shared/app/operations/failpoints.ts';
import { executeClaimedRun, executeRun } from '../../shared/app/runs/execute-run.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { getTask } from '../../shared/app/tasks/read-task.ts';
import { SealingFailedError, VersionConflictError } from '../../shared/domain/errors.ts';
import type { AgentProvider, RunMessage } from '../../shared/domain/ports.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { stateRepositories } from '../support/state-repositories.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Large content against DynamoDB Local and the KMS endpoint (decision 0065): what a task's writes
 * cost in write units with and without chunks (`npx vitest run test/integration/large-content.test.ts`
 * prints both), and that a result in several items is all or nothing — a settle that fails
 * before its transaction or loses its condition leaves no chunk and no partial result visible.
 */
describe('large content in chunk items (0065)', () => {
  let env: TestResources;
  let repositories: ReturnType<typeof stateRepositories>;
  const config = testConfig({ privacy: { level: 'full' } });
  const writes: { table: string; command: string; units: number }[] = [];

  beforeAll(async () => {
    env = await createTestResources('large');
    repositories = stateRepositories(env);
    env.clients.doc.middlewareStack.add(
      // biome-ignore lint/suspicious/noExplicitAny: the SDK's handler types differ per command.
      (next: any, context: { commandName?: string }) => async (args: any) => {
        if (!/Put|Update|Transact|Delete/.test(context.commandName ?? '')) return next(args);
        args.input.ReturnConsumedCapacity = 'TOTAL';
        const result = await next(args);
        for (const consumed of [result.output.ConsumedCapacity ?? []].flat())
          writes.push({
            table: consumed.TableName,
            command: context.commandName ?? '',
            units: consumed.CapacityUnits ?? 0,
          });
        return result;
      },
      { step: 'initialize', name: 'countWrites' },
    );
  });
  afterAll(() => env?.destroy());
  afterEach(() => disarmFailpoints());

  const writeThrough = () =>
    new WriteThrough(
      repositories.tasks,
      new DynamoDbJournalWriter(env.clients.doc, env.resources.tables.Journal.name),
    );
  const deps = (queued: RunMessage[]) => ({
    tasks: repositories.tasks,
    writeThrough: writeThrough(),
    journal: repositories.journal,
    codec: repositories.codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    // An agent whose artifact is the message it answers: as large as the message.
    providerFor: (): AgentProvider => ({
      run: async (request) => ({
        outcome: {
          kind: 'completed',
          artifacts: [
            { artifactId: `${request.runId}-a`, parts: [...(request.history.at(-1)?.parts ?? [])] },
          ],
        },
      }),
    }),
  });

  const readDeps = () => ({
    tasks: repositories.tasks,
    journal: repositories.journal,
    codec: repositories.codec,
    clock: { now: () => new Date() },
  });

  /** The sort keys of a task's chunk items (paged: a query reads at most 1 MB). */
  const chunks = async (taskId: string) => {
    const keys: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await env.clients.doc.send(
        new QueryCommand({
          TableName: env.resources.tables.State.name,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :chunk)',
          ExpressionAttributeValues: { ':pk': `TASK#${taskId}`, ':chunk': 'CHUNK#' },
          ProjectionExpression: 'sk',
          ExclusiveStartKey: start,
        }),
      );
      keys.push(...(page.Items ?? []).map((item) => String(item.sk)));
      start = page.LastEvaluatedKey;
    } while (start);
    return keys;
  };

  const single = async (text: string) => {
    const queued: RunMessage[] = [];
    writes.length = 0;
    const { taskId } = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage(text),
    });
    expect(await executeRun(deps(queued), queued.shift() as RunMessage)).toBe('completed');
    const units = (table: string) =>
      writes.filter((write) => write.table === table).reduce((total, write) => total + write.units, 0);
    return {
      taskId,
      state: units(env.resources.tables.State.name),
      journal: units(env.resources.tables.Journal.name),
      commands: writes
        .filter((write) => write.table === env.resources.tables.State.name)
        .map((w) => w.command),
    };
  };

  it('a small task writes as before: three single-item writes of its row, no chunk; a 900 KB one uses chunks', async () => {
    const small = await single('hello, durable world');
    expect(small.commands).toEqual(['UpdateItemCommand', 'UpdateItemCommand', 'UpdateItemCommand']);
    expect(await chunks(small.taskId)).toEqual([]);

    const large = await single(`big ${'y'.repeat(900_000)}`);
    // Create (row + history chunks) and settle (row + history and artifact chunks): transactions.
    expect(large.commands).toEqual([
      'TransactWriteItemsCommand',
      'UpdateItemCommand',
      'TransactWriteItemsCommand',
    ]);
    expect((await chunks(large.taskId)).length).toBe(6);
    const task = await getTask(
      {
        tasks: repositories.tasks,
        journal: repositories.journal,
        codec: repositories.codec,
        clock: { now: () => new Date() },
      },
      alice,
      large.taskId,
    );
    expect(task.artifacts?.[0]?.parts[0]).toEqual({ text: `big ${'y'.repeat(900_000)}` });
    console.info(
      `write units per single-turn task — small: state ${small.state} + journal ${small.journal} = ${small.state + small.journal}; ` +
        `900 KB: state ${large.state} + journal ${large.journal} = ${large.state + large.journal}`,
    );
  }, 60_000);

  it('a chunked create is handed over with the row it wrote: the run works from it without a read (decisions 0093, 0096)', async () => {
    const queued: RunMessage[] = [];
    const text = `handed ${'h'.repeat(600_000)}`;
    // One container creates and runs it, as the rpc does: its first view comes with the settle (decision 0097).
    const here = deps(queued);
    const created = await createTask(
      here,
      { caller: alice, profileId: 'default', message: userMessage(text) },
      { handOver: true },
    );
    expect(queued).toEqual([]);
    expect(created.handedOver?.task.revision).toBe(1);
    expect((await executeClaimedRun(here, created.handedOver!)).result).toBe('completed');
    const task = await getTask(readDeps(), alice, created.taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.[0]?.parts[0]).toEqual({ text });
  }, 60_000);

  it('a settle that fails before its transaction leaves no result and no chunk of it', async () => {
    const queued: RunMessage[] = [];
    const text = `fault ${'z'.repeat(600_000)}`;
    const { taskId } = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage(text),
    });
    const message = queued.shift() as RunMessage;
    const created = await chunks(taskId);
    armFailpoints('executor.beforeSettle=#1');
    await expect(executeRun(deps(queued), message)).rejects.toBeInstanceOf(InjectedFaultError);
    expect(await chunks(taskId)).toEqual(created);
    const row = await repositories.tasks.getTask(taskId);
    expect(row?.state).toBe('TASK_STATE_WORKING');
    expect(row?.sealedArtifacts).toBeUndefined();
    const visible = await getTask(readDeps(), alice, taskId);
    expect(visible.status?.state).toBe('TASK_STATE_WORKING');
    expect(visible.artifacts ?? []).toEqual([]);
  }, 60_000);

  it('a transaction whose row condition fails stores none of its chunks', async () => {
    const queued: RunMessage[] = [];
    const { taskId } = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage('small first'),
    });
    const task = (await repositories.tasks.getTask(taskId))!;
    const sealArtifacts = () =>
      repositories.codec.seal(taskId, {
        artifacts: [{ artifactId: 'a', parts: [{ text: 'q'.repeat(800_000) }] }],
      });
    const big = await sealArtifacts();
    const other = await sealArtifacts();
    // A writer that read revision 1 after another moved the row on: its write must not land.
    const stale = { ...task, revision: task.revision + 1, sealedArtifacts: big.sealedArtifacts };
    await repositories.tasks.commit({
      row: { taskId, task: stale, expect: { revision: task.revision }, before: task },
    });
    const conflicting = { ...stale, revision: stale.revision + 1 };
    await expect(
      repositories.tasks.commit({
        row: {
          taskId,
          task: { ...conflicting, sealedArtifacts: other.sealedArtifacts },
          expect: { revision: task.revision },
          before: task,
        },
      }),
    ).rejects.toBeInstanceOf(VersionConflictError);
    // Only the first write's artifact chunks: the refused one's were never stored.
    expect((await chunks(taskId)).length).toBe(3);
  }, 60_000);

  it('opens chunked content only as its own task and field, and only whole', async () => {
    const queued: RunMessage[] = [];
    const { taskId } = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage(`sealed ${'s'.repeat(500_000)}`),
    });
    const row = (await repositories.tasks.getTask(taskId))!;
    const reference = row.sealedHistory!;
    expect(reference).toHaveLength(40);
    expect(await repositories.codec.openHistory(taskId, reference)).toHaveLength(1);
    // Moved to another task: its chunks are not in that partition.
    await expect(repositories.codec.openHistory(crypto.randomUUID(), reference)).rejects.toBeInstanceOf(
      SealingFailedError,
    );
    // Opened as another field: the AAD binds the field.
    await expect(repositories.codec.openArtifacts(taskId, reference)).rejects.toThrow();
    // One chunk edited: the hash no longer matches.
    const [first] = await chunks(taskId);
    const { Item } = await env.clients.doc.send(
      new GetCommand({
        TableName: env.resources.tables.State.name,
        Key: { pk: `TASK#${taskId}`, sk: first },
      }),
    );
    const edited = Uint8Array.from(Item!.data as Uint8Array);
    edited[100] = (edited[100] ?? 0) ^ 1;
    await env.clients.doc.send(
      new PutCommand({ TableName: env.resources.tables.State.name, Item: { ...Item, data: edited } }),
    );
    await expect(repositories.codec.openHistory(taskId, reference)).rejects.toBeInstanceOf(
      SealingFailedError,
    );
  }, 60_000);
});
