import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbJournalWriter } from '../../shared/adapters/dynamodb/dynamodb-journal-writer.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { getTask, toTask } from '../../shared/app/tasks/read-task.ts';
import { loadHistory } from '../../shared/app/tasks/task-history.ts';
import type { Message } from '../../shared/domain/a2a.ts';
import type { AgentProvider, RunMessage } from '../../shared/domain/ports.ts';
import { viewOf } from '../../shared/domain/projection.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { stateRepositories } from '../support/state-repositories.ts';

/**
 * History in segments (docs/data-model.md, "History") against DynamoDB Local and the KMS endpoint:
 * a conversation's turn costs what it adds, whatever came before (write units as DynamoDB Local
 * reports them, `ReturnConsumedCapacity`, as the benchmark meters), GetTask with `historyLength`
 * reads only the segments it needs, the model sees the whole history, history is never newer than
 * the view it comes with (I-HISTORY), and a drop and the purge leave no segment behind.
 * `npx vitest run test/integration/history-segments.test.ts` prints the figures.
 */
describe('history in segments', () => {
  let env: TestResources;
  let repositories: ReturnType<typeof stateRepositories>;
  const config = testConfig({ privacy: { level: 'full' } });
  const meter: { command: string; units: number; read: boolean }[] = [];
  /** What the model was given, per turn: the number of messages and the first one's id. */
  const prompts: { messages: number; first?: string }[] = [];

  beforeAll(async () => {
    env = await createTestResources('history');
    repositories = stateRepositories(env);
    env.clients.doc.middlewareStack.add(
      // biome-ignore lint/suspicious/noExplicitAny: the SDK's handler types differ per command.
      (next: any, context: { commandName?: string }) => async (args: any) => {
        const command = context.commandName ?? '';
        if (!/Put|Update|Transact|Delete|Get|Query/.test(command)) return next(args);
        if (args.input.TableName !== undefined && args.input.TableName !== env.resources.tables.State.name)
          return next(args);
        args.input.ReturnConsumedCapacity = 'TOTAL';
        const result = await next(args);
        for (const consumed of [result.output.ConsumedCapacity ?? []].flat())
          if (consumed.TableName === env.resources.tables.State.name)
            meter.push({ command, units: consumed.CapacityUnits ?? 0, read: /Get|Query/.test(command) });
        return result;
      },
      { step: 'initialize', name: 'meterStateTable' },
    );
  });
  afterAll(() => env?.destroy());

  const deps = (queued: RunMessage[]) => ({
    tasks: repositories.tasks,
    writeThrough: new WriteThrough(
      repositories.tasks,
      new DynamoDbJournalWriter(env.clients.doc, env.resources.tables.Journal.name),
    ),
    journal: repositories.journal,
    codec: repositories.codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    // An agent that asks for more each turn, with a short answer, and notes what it was given.
    providerFor: (): AgentProvider => ({
      run: async (request) => {
        prompts.push({ messages: request.history.length, first: request.history[0]?.messageId });
        return {
          outcome: {
            kind: 'input-required',
            message: {
              messageId: `${request.runId}-answer`,
              role: 'ROLE_AGENT',
              parts: [{ text: `noted ${request.history.length}` }],
            } satisfies Message,
          },
        };
      },
    }),
  });
  const readDeps = () => ({
    tasks: repositories.tasks,
    journal: repositories.journal,
    codec: repositories.codec,
    clock: { now: () => new Date() },
  });

  const text = (turn: number) => `turn ${turn} `.padEnd(20 * 1024, 'x');
  const sum = (read: boolean) =>
    meter.filter((entry) => entry.read === read).reduce((total, entry) => total + entry.units, 0);

  const segmentKeys = async (taskId: string) => {
    const page = await env.clients.doc.send(
      new QueryCommand({
        TableName: env.resources.tables.State.name,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :hist)',
        ExpressionAttributeValues: { ':pk': `TASK#${taskId}`, ':hist': 'HIST#' },
        ProjectionExpression: 'sk',
      }),
    );
    return (page.Items ?? []).map((item) => String(item.sk));
  };

  /** One turn: the message (a new task or a follow-up) and its run; the state table's write units. */
  const turn = async (n: number, taskId?: string) => {
    const queued: RunMessage[] = [];
    meter.length = 0;
    const created = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage(text(n), taskId === undefined ? {} : { taskId }),
    });
    expect(await executeRun(deps(queued), queued.shift() as RunMessage)).toBe('input-required');
    return { taskId: created.taskId, writeUnits: sum(false) };
  };

  it('turn 50 of a conversation of 20 KB messages writes what turn 2 writes; the model sees all of it', async () => {
    const { taskId } = await turn(1);
    const units: number[] = [];
    for (let n = 2; n <= 50; n++) units.push((await turn(n, taskId)).writeUnits);
    const [turn2, turn50] = [units[0] as number, units.at(-1) as number];
    console.log(
      `history segments: write units per turn (state table) turn 2 = ${turn2}, turn 50 = ${turn50}`,
    );
    // The history at turn 50 is 99 messages of 1 MB; a turn that rewrote it would cost ~2,000 units.
    expect(turn50).toBeLessThanOrEqual(turn2 + 2);
    expect(Math.max(...units)).toBeLessThan(3 * turn2);
    // Each run's prompt held every message of the conversation so far, the first one included.
    expect(prompts.at(-1)?.messages).toBe(99);
    expect(new Set(prompts.map((prompt) => prompt.first)).size).toBe(1);
    // The row keeps its newest entries; every earlier revision is one segment.
    const row = await repositories.tasks.getTask(taskId);
    expect(row?.historyFrom).toBeGreaterThan(90);
    expect((await segmentKeys(taskId)).length).toBeGreaterThan(90);

    // GetTask with historyLength reads only what it returns; the whole history comes in order.
    meter.length = 0;
    const recent = await getTask(readDeps(), alice, taskId, { historyLength: 3 });
    const recentReads = sum(true);
    meter.length = 0;
    const whole = await getTask(readDeps(), alice, taskId);
    const wholeReads = sum(true);
    console.log(
      `history segments: GetTask read units, historyLength 3 = ${recentReads}, whole = ${wholeReads}`,
    );
    expect(recent.history?.map((message) => message.messageId)).toEqual(
      whole.history?.slice(-3).map((message) => message.messageId),
    );
    expect(whole.history).toHaveLength(99);
    expect(whole.history?.[0]?.parts[0]).toEqual({ text: text(1) });
    expect(whole.history?.filter((message) => message.role === 'ROLE_USER').map((m) => m.parts[0])).toEqual(
      Array.from({ length: 50 }, (_, index) => ({ text: text(index + 1) })),
    );
    expect(recentReads).toBeLessThan(wholeReads / 10);

    // I-HISTORY: a view of an earlier revision gets the history as of that revision, from the newer row.
    const earlier = { ...viewOf(row!), revision: 10 };
    const asOf = await toTask(readDeps(), earlier, {}, row);
    const entries = await loadHistory(readDeps(), row!);
    expect(entries).toHaveLength(99);
    const expected = entries.filter((entry) => entry.revision <= 10).map((entry) => entry.message.messageId);
    expect(expected.length).toBeGreaterThan(2);
    expect(asOf.history?.map((message) => message.messageId)).toEqual(expected);
    const asOfLast = await toTask(readDeps(), earlier, { historyLength: 2 }, row);
    expect(asOfLast.history?.map((message) => message.messageId)).toEqual(expected.slice(-2));
  });
});
