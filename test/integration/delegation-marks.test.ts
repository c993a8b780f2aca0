import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type HttpRequest } from '../../functions/rpc/http-app.ts';
import { DynamoDbJournalWriter } from '../../shared/adapters/dynamodb/dynamodb-journal-writer.ts';
import { DynamoDbRunLeases } from '../../shared/adapters/dynamodb/dynamodb-run-leases.ts';
import type { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import type { Dispatcher } from '../../shared/app/rpc/dispatcher.ts';
import { abandonedRunReason, maxDelegationWaitMs, reapExpiredRuns } from '../../shared/app/runs/reap-runs.ts';
import { AnswerChunks } from '../../shared/app/runs/run-chunks.ts';
import { claimRun } from '../../shared/app/runs/run-claim.ts';
import { withRunJournal } from '../../shared/app/runs/run-context.ts';
import { parkRun } from '../../shared/app/runs/run-delegations.ts';
import { reread } from '../../shared/app/runs/run-ending.ts';
import {
  delegationCallbackPath,
  tokenHashOf,
  type WakeInput,
  wakeDelegatedRun,
} from '../../shared/app/runs/wake-delegated-run.ts';
import { cancelTask } from '../../shared/app/tasks/cancel-task.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import type { SuspendedRun } from '../../shared/domain/approvals.ts';
import type { RunMessage, TaskRepository } from '../../shared/domain/ports.ts';
import type { RunRecord } from '../../shared/domain/task.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { InMemoryTaskRepository } from '../support/in-memory-repositories.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { stateRepositories } from '../support/state-repositories.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The marks of a delegated wait against DynamoDB Local (docs/reliability.md "Delegated calls"):
 * a push notification that comes while the run still waits in place is recorded `settled`, and
 * the park that follows queues the run at once; a park that comes first is woken by the
 * notification; the two conditional writes exclude each other, so the notification is never lost.
 * A wrong token changes nothing (401); a cancel settles a parked run CANCELED in its own write; the
 * reaper fails a run that waited past `maxDelegationWaitMs` RUN_LEASE_EXPIRED.
 */
describe('a delegated wait’s marks in DynamoDB', () => {
  let env: TestResources;
  let repositories: ReturnType<typeof stateRepositories>;
  let tasks: DynamoDbTaskRepository;
  const config = testConfig({ privacy: { level: 'full' } });
  const queued: RunMessage[] = [];
  const queue = { enqueue: async (message: RunMessage) => void queued.push(message) };

  beforeAll(async () => {
    env = await createTestResources('delegation-marks');
    repositories = stateRepositories(env);
    tasks = repositories.tasks;
  });
  afterAll(() => env?.destroy());

  const deps = (using: TaskRepository = tasks) => ({
    tasks: using,
    writeThrough: new WriteThrough(
      using,
      new DynamoDbJournalWriter(env.clients.doc, env.resources.tables.Journal.name),
    ),
    journal: repositories.journal,
    codec: repositories.codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue,
    requeue: queue,
    providerFor: () => {
      throw new Error('no provider in this test');
    },
  });
  const runDeps = (using?: TaskRepository) => withRunJournal(deps(using), undefined);
  const wakeDeps = (using: TaskRepository = tasks) => ({
    tasks: using,
    queue,
    clock: { now: () => new Date() },
  });

  /**
   * A claimed run whose delegated call recorded its remote task (`holdDelegation`), with the
   * hash of the wait's token: what the executor holds while the call waits in place.
   */
  const waiting = async (using: TaskRepository = tasks): Promise<{ run: RunRecord; token: string }> => {
    const created: RunMessage[] = [];
    await createTask(
      { ...deps(using), queue: { enqueue: async (message: RunMessage) => void created.push(message) } },
      { caller: alice, profileId: 'default', message: userMessage('delegate this') },
    );
    const message = created.shift() as RunMessage;
    const read = await using.getRunWithTask(message.taskId, message.runId);
    const outcome = await claimRun(runDeps(using), read.run!, read.task!);
    if (!('run' in outcome)) throw new Error(`not claimed: ${JSON.stringify(outcome)}`);
    const token = `token-${crypto.randomUUID()}`;
    const state = {
      nonce: crypto.randomUUID(),
      providerIndex: 0,
      historyRevision: 1,
      rounds: 1,
      steps: [],
      pending: { calls: [] },
    } as unknown as SuspendedRun;
    const hold = {
      delegation: {
        callId: 'call-1',
        tool: 'a2a__helper',
        remoteTaskId: `remote-${crypto.randomUUID()}`,
        at: new Date().toISOString(),
        tokenHash: tokenHashOf(token),
      },
      sealedSuspension: await repositories.codec.sealSuspension(message.taskId, message.runId, state),
    };
    expect(await using.holdDelegation(outcome.run, hold)).toBe('held');
    return { run: { ...outcome.run, ...hold }, token };
  };

  const stored = async (run: RunRecord) => tasks.getRunWithTask(run.taskId, run.runId);
  const taskOf = async (run: RunRecord) => (await tasks.getTask(run.taskId))!;
  const notify = (run: RunRecord, token: string | undefined, settled = true): WakeInput => ({
    taskId: run.taskId,
    runId: run.runId,
    token,
    settled,
  });
  const queuedFor = (run: RunRecord) => queued.filter((message) => message.runId === run.runId);

  it('notify, then park: the notification is recorded settled, and the park queues the run at once instead of parking', async () => {
    const { run, token } = await waiting();
    expect(await wakeDelegatedRun(wakeDeps(), notify(run, token))).toBe('noted');
    const noted = (await stored(run)).run!;
    expect(noted).toMatchObject({ status: 'RUNNING', version: run.version });
    expect(noted.delegation).toMatchObject({ remoteTaskId: run.delegation!.remoteTaskId, settled: true });
    expect(noted.delegation?.parked).toBeUndefined();
    expect(queuedFor(run)).toEqual([]);

    // The executor's park meets the mark: the run is QUEUED with a new version and queued.
    expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('requeued');
    const requeued = (await stored(run)).run!;
    expect(requeued).toMatchObject({ status: 'QUEUED', version: run.version + 1 });
    expect(requeued.delegation?.remoteTaskId).toBe(run.delegation!.remoteTaskId);
    expect(requeued.sealedSuspension).toBeDefined();
    expect(requeued.delegation?.parked).toBeUndefined();
    expect(queuedFor(run)).toEqual([{ taskId: run.taskId, runId: run.runId }]);
    expect((await taskOf(run)).state).toBe('TASK_STATE_WORKING');

    // A late notification of the same wait finds the run queued: nothing more.
    expect(await wakeDelegatedRun(wakeDeps(), notify(run, token))).toBe('ignored');
    // The claim takes the run with its delegation and state, without the last wait's marks.
    const read = await stored(run);
    const claimed = await claimRun(runDeps(), read.run!, read.task!);
    if (!('run' in claimed)) throw new Error('not claimed');
    const row = (await stored(run)).run!;
    expect(row.status).toBe('RUNNING');
    expect(row.delegation?.remoteTaskId).toBe(run.delegation!.remoteTaskId);
    expect(row.delegation?.settled).toBeUndefined();
    expect(queuedFor(run)).toHaveLength(1);
  });

  it.each([
    ['DynamoDB', () => tasks],
    ['the in-memory repository', () => new InMemoryTaskRepository()],
  ])(
    'notify, chunk, then park (%s): an answer chunk committed in between keeps the settled mark, and the park queues the run at once',
    async (_name, repository) => {
      const using: TaskRepository = repository();
      const { run, token } = await waiting(using);
      expect(await wakeDelegatedRun(wakeDeps(using), notify(run, token))).toBe('noted');

      // Progressive output around the delegated call: the answer so far is committed while the run
      // waits in place, after the notification's mark (a cadence of one byte flushes at once).
      const task = (await using.getTask(run.taskId))!;
      const chunks = new AnswerChunks(runDeps(using), { run, task }, { ms: 60_000, bytes: 1 }, 'full');
      chunks.onAnswer({ kind: 'text', text: 'Asking the helper.' });
      await waitFor(() => chunks.committed === 1, { what: 'the chunk committed' });
      const chunked = await chunks.close();
      const stored = (await using.getRunWithTask(run.taskId, run.runId)).run!;
      expect(stored).toMatchObject({ status: 'RUNNING', version: run.version + 1 });
      expect(stored.delegation).toMatchObject({ remoteTaskId: run.delegation!.remoteTaskId, settled: true });

      // The park meets the mark as in "notify, then park": the run is QUEUED and queued at once.
      expect(await parkRun(runDeps(using), chunked.run, chunked.task)).toBe('requeued');
      expect((await using.getRunWithTask(run.taskId, run.runId)).run).toMatchObject({
        status: 'QUEUED',
        version: run.version + 2,
      });
      expect(queuedFor(run)).toEqual([{ taskId: run.taskId, runId: run.runId }]);
    },
  );

  it('park, then notify: the run is parked (version kept), and the notification wakes it once', async () => {
    const { run, token } = await waiting();
    expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('parked');
    const parked = (await stored(run)).run!;
    expect(parked).toMatchObject({ status: 'RUNNING', version: run.version });
    expect(parked.delegation).toMatchObject({ parked: true });
    expect(parked.delegation?.settled).toBeUndefined();
    expect(queuedFor(run)).toEqual([]);
    // The settled mark cannot be written beside the park: the repository says who won.
    expect(await tasks.markDelegation(run, 'settled')).toBe('parked');
    expect((await stored(run)).run?.delegation?.settled).toBeUndefined();

    expect(await wakeDelegatedRun(wakeDeps(), notify(run, token))).toBe('woken');
    expect((await stored(run)).run).toMatchObject({ status: 'QUEUED', version: run.version + 1 });
    expect(queuedFor(run)).toEqual([{ taskId: run.taskId, runId: run.runId }]);
    expect(await wakeDelegatedRun(wakeDeps(), notify(run, token))).toBe('ignored');
    expect(queuedFor(run)).toHaveLength(1);
  });

  it('a notification that does not say the task settled changes nothing; the park then parks', async () => {
    const { run, token } = await waiting();
    expect(await wakeDelegatedRun(wakeDeps(), notify(run, token, false))).toBe('ignored');
    expect((await stored(run)).run?.delegation?.settled).toBeUndefined();
    expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('parked');
  });

  it('a wrong token: 401 from the callback path, and neither a waiting nor a parked run changes', async () => {
    const app = createHttpApp({
      config,
      dispatcher: {} as Dispatcher,
      wakeDelegated: (input) => wakeDelegatedRun(wakeDeps(), input),
    });
    const post = (run: RunRecord, token: string | undefined) =>
      app({
        method: 'POST',
        path: delegationCallbackPath(run.taskId, run.runId),
        headers: {
          'content-type': 'application/a2a+json',
          ...(token !== undefined && { 'x-a2a-notification-token': token }),
        },
        query: {},
        body: JSON.stringify({
          task: { id: run.delegation!.remoteTaskId, status: { state: 'TASK_STATE_COMPLETED' } },
        }),
        caller: null,
        requestId: crypto.randomUUID(),
        baseUrl: 'http://127.0.0.1',
      } satisfies HttpRequest);

    const { run, token } = await waiting();
    const before = await stored(run);
    expect((await post(run, 'guess')).status).toBe(401);
    expect((await post(run, undefined)).status).toBe(401);
    expect(await stored(run)).toEqual(before);

    expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('parked');
    const parked = await stored(run);
    expect((await post(run, `${token}x`)).status).toBe(401);
    expect(await stored(run)).toEqual(parked);
    expect(queuedFor(run)).toEqual([]);
    // The wait's own token wakes it.
    expect((await post(run, token)).status).toBe(204);
    expect((await stored(run)).run?.status).toBe('QUEUED');
    expect(queuedFor(run)).toHaveLength(1);
  });

  it('a cancel of a parked run settles it CANCELED in the cancel’s own write', async () => {
    const { run } = await waiting();
    expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('parked');
    const answer = await cancelTask(deps(), { caller: alice, taskId: run.taskId });
    expect(answer.status.state).toBe('TASK_STATE_CANCELED');
    const row = await stored(run);
    expect(row.task?.state).toBe('TASK_STATE_CANCELED');
    expect(row.run).toMatchObject({ status: 'CANCELED', cancelRequested: true });
    expect(row.run?.sealedSuspension).toBeUndefined();
    expect(row.run?.leaseUntil).toBeUndefined();
  });

  it('a cancel that read the run waiting in place loses to a park in between; read again, it settles the parked run', async () => {
    const { run } = await waiting();
    let parkedBetween = false;
    // The cancel reads the run before the park, and writes after it.
    const racing: TaskRepository = Object.assign(Object.create(tasks) as DynamoDbTaskRepository, {
      getRun: async (taskId: string, runId: string) => {
        const read = await tasks.getRun(taskId, runId);
        if (!parkedBetween) {
          parkedBetween = true;
          expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('parked');
        }
        return read;
      },
    });
    const answer = await cancelTask(deps(racing), { caller: alice, taskId: run.taskId });
    expect(parkedBetween).toBe(true);
    expect(answer.status.state).toBe('TASK_STATE_CANCELED');
    expect((await stored(run)).run).toMatchObject({ status: 'CANCELED', cancelRequested: true });
  });

  it('a cancel while the run waits in place flags it; the park then fails and the executor settles it CANCELED', async () => {
    const { run } = await waiting();
    await cancelTask(deps(), { caller: alice, taskId: run.taskId });
    expect((await stored(run)).run).toMatchObject({ status: 'RUNNING', cancelRequested: true });
    expect(await tasks.markDelegation(run, 'parked')).toBe('canceled');
    expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('moved');
    const fresh = await reread(runDeps(), run, await taskOf(run));
    expect(fresh).toEqual({ kind: 'ended', result: 'canceled' });
    expect((await stored(run)).run?.status).toBe('CANCELED');
  });

  it('the 24 h bound: a parked run the reaper finds past maxDelegationWaitMs ends FAILED RUN_LEASE_EXPIRED, not queued', async () => {
    const { run } = await waiting();
    expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('parked');
    const since = Date.parse(run.delegation!.at);
    const reaperAt = (ms: number) => ({
      ...deps(),
      leases: new DynamoDbRunLeases(env.clients.doc, env.resources.tables.State.name),
      requeue: queue,
      clock: { now: () => new Date(since + ms) },
    });
    await reapExpiredRuns(reaperAt(maxDelegationWaitMs + 1_000), 100);
    const row = await stored(run);
    expect(row.run?.status).toBe('FAILED');
    expect(row.task?.state).toBe('TASK_STATE_FAILED');
    expect(row.task?.metadata?.reason).toBe(abandonedRunReason);
    expect(abandonedRunReason).toBe('RUN_LEASE_EXPIRED');
    expect(queuedFor(run)).toEqual([]);
  });

  it('within the bound the reaper queues a parked run again (the backstop of the notification)', async () => {
    const { run } = await waiting();
    expect(await parkRun(runDeps(), run, await taskOf(run))).toBe('parked');
    const since = Date.parse(run.delegation!.at);
    await reapExpiredRuns(
      {
        ...deps(),
        leases: new DynamoDbRunLeases(env.clients.doc, env.resources.tables.State.name),
        requeue: queue,
        clock: { now: () => new Date(since + maxDelegationWaitMs - 60_000) },
      },
      100,
    );
    expect((await stored(run)).run).toMatchObject({ status: 'QUEUED', version: run.version + 1 });
    expect(queuedFor(run)).toHaveLength(1);
  });
});
