import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbExpiredItems } from '../../shared/adapters/dynamodb/dynamodb-expired-items.ts';
import { DynamoDbJournalWriter } from '../../shared/adapters/dynamodb/dynamodb-journal-writer.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import { purgeExpired } from '../../shared/app/operations/purge-expired.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { getTask, toTask } from '../../shared/app/tasks/read-task.ts';
import { loadHistory } from '../../shared/app/tasks/task-history.ts';
import type { Message } from '../../shared/domain/a2a.ts';
import { ProviderUnavailableError } from '../../shared/domain/errors.ts';
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
  const config = testConfig({
    privacy: { level: 'full' },
    providers: {
      first: { type: 'scripted', behavior: 'echo' },
      careful: { type: 'scripted', behavior: 'echo', privacyLevel: 'redacted' },
      strict: { type: 'scripted', behavior: 'echo', privacyLevel: 'metadata' },
    },
    profiles: {
      default: { name: 'Asks', description: 'x', providers: ['first'] },
      'to-careful': { name: 'Fallback redacted', description: 'x', providers: ['first', 'careful'] },
      'to-strict': { name: 'Fallback metadata', description: 'x', providers: ['first', 'strict'] },
    },
  });
  /** While set, the first provider of a chain is unavailable: the run falls back (and tightens). */
  let firstDown = false;
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
    providerFor: (providerId: string): AgentProvider => ({
      run: async (request) => {
        if (firstDown && providerId === 'first') throw new ProviderUnavailableError(providerId, 503);
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
  const turn = async (
    n: number,
    taskId?: string,
    options: { profileId?: string; expect?: string; text?: string } = {},
  ) => {
    const queued: RunMessage[] = [];
    meter.length = 0;
    const created = await createTask(deps(queued), {
      caller: alice,
      profileId: options.profileId ?? 'default',
      message: userMessage(options.text ?? text(n), taskId === undefined ? {} : { taskId }),
    });
    expect(await executeRun(deps(queued), queued.shift() as RunMessage)).toBe(
      options.expect ?? 'input-required',
    );
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
    expect(whole.history).toHaveLength(100);
    expect(whole.history?.[0]?.parts[0]).toEqual({ text: text(1) });
    expect(whole.history?.filter((message) => message.role === 'ROLE_USER').map((m) => m.parts[0])).toEqual(
      Array.from({ length: 50 }, (_, index) => ({ text: text(index + 1) })),
    );
    expect(recentReads).toBeLessThan(wholeReads / 10);

    // I-HISTORY: a view of an earlier revision gets the history as of that revision, from the newer row.
    const earlier = { ...viewOf(row!), revision: 10 };
    const asOf = await toTask(readDeps(), earlier, {}, row);
    const entries = await loadHistory(readDeps(), row!);
    expect(entries).toHaveLength(100);
    const expected = entries.filter((entry) => entry.revision <= 10).map((entry) => entry.message.messageId);
    expect(expected.length).toBeGreaterThan(2);
    expect(asOf.history?.map((message) => message.messageId)).toEqual(expected);
    const asOfLast = await toTask(readDeps(), earlier, { historyLength: 2 }, row);
    expect(asOfLast.history?.map((message) => message.messageId)).toEqual(expected.slice(-2));
  });

  /** The opened entries of every stored segment of a task. */
  const storedSegments = async (taskId: string) => {
    const row = await repositories.tasks.getTask(taskId);
    const segments = await repositories.tasks.readHistorySegments(taskId, row?.historyFrom ?? 1);
    return Promise.all(
      segments.map((segment) =>
        repositories.codec.openHistorySegment(taskId, segment.revision, segment.sealed),
      ),
    );
  };
  const secret = (n: number) => `turn ${n}: write to someone${n}@example.com `.padEnd(12 * 1024, 'y');

  it('a tightening to redacted scrubs the segments already stored; the next turns store redacted ones', async () => {
    firstDown = false;
    const { taskId } = await turn(1, undefined, { profileId: 'to-careful', text: secret(1) });
    for (let n = 2; n <= 4; n++) await turn(n, taskId, { profileId: 'to-careful', text: secret(n) });
    const before = JSON.stringify(await storedSegments(taskId));
    expect(before).toContain('someone1@example.com');
    firstDown = true;
    await turn(5, taskId, { profileId: 'to-careful', text: secret(5) });
    await turn(6, taskId, { profileId: 'to-careful', text: secret(6) });
    firstDown = false;
    const after = await storedSegments(taskId);
    expect(after.flat().length).toBeGreaterThan(6);
    expect(JSON.stringify(after)).not.toContain('@example.com');
    const whole = await getTask(readDeps(), { ...alice, profileId: 'to-careful' }, taskId);
    expect(whole.history).toHaveLength(12);
    expect(JSON.stringify(whole.history)).not.toContain('@example.com');
    expect(JSON.stringify(whole.history)).toContain('[REDACTED:EMAIL]');
  });

  it('a tightening to metadata drops every segment; the purge takes them with the task row', async () => {
    firstDown = false;
    const { taskId } = await turn(1, undefined, { profileId: 'to-strict' });
    for (let n = 2; n <= 3; n++) await turn(n, taskId, { profileId: 'to-strict' });
    expect((await segmentKeys(taskId)).length).toBeGreaterThan(0);
    firstDown = true;
    await turn(4, taskId, { profileId: 'to-strict', expect: 'not-retainable' });
    firstDown = false;
    expect(await segmentKeys(taskId)).toEqual([]);
    const row = await repositories.tasks.getTask(taskId);
    expect(row?.sealedHistory).toBeUndefined();
    expect(row?.historyFrom).toBeUndefined();

    // Another conversation, purged once its retention has passed: no segment outlives its row.
    const other = (await turn(1)).taskId;
    for (let n = 2; n <= 3; n++) await turn(n, other);
    const segments = await segmentKeys(other);
    expect(segments.length).toBeGreaterThan(0);
    const stored = await repositories.tasks.getTask(other);
    // Every segment expires no earlier than its row.
    expect(stored?.historyExpiresAt).toBeGreaterThanOrEqual(stored?.expiresAt ?? Number.POSITIVE_INFINITY);
    const tables = env.resources.tables;
    await purgeExpired(
      { stores: [new DynamoDbExpiredItems(env.clients.doc, tables.State.name, 'state')] },
      new Date(((stored?.expiresAt ?? 0) + 1) * 1000),
    );
    expect(await segmentKeys(other)).toEqual([]);
  });
});
