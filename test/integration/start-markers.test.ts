import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbAuditTrail } from '../../shared/adapters/dynamodb/dynamodb-audit-trail.ts';
import { DynamoDbRunLeases } from '../../shared/adapters/dynamodb/dynamodb-run-leases.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { type ExecuteRunDeps, executeRun } from '../../shared/app/runs/execute-run.ts';
import { abandonedRunReason, reapExpiredRuns } from '../../shared/app/runs/reap-runs.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { parseConfig } from '../../shared/config/config.ts';
import type { AgentProvider, RunMessage } from '../../shared/domain/ports.ts';
import { alice, userMessage } from '../support/core-fixture.ts';
import { holdBefore } from '../support/hold-before.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';

/**
 * Start markers against DynamoDB Local (decision 0072): the executor's conditional put of its
 * `claim` row and the reaper's of its `requeue` row into the same slot, real condition failures,
 * strongly consistent reads. The interleavings are forced by holding one side at a gate in front
 * of the real adapter; both orders end with at most one provider call.
 */
describe('start markers and the reaper against DynamoDB Local', () => {
  let env: TestResources;
  let tasks: DynamoDbTaskRepository;
  let leases: DynamoDbRunLeases;
  let codec: TaskContentCodec;
  let audit: DynamoDbAuditTrail;
  const calls = new Map<string, number>();
  let hold: Promise<void> | undefined;
  const config = parseConfig({
    privacy: { level: 'full' },
    providers: { local: { type: 'scripted', behavior: 'echo' } },
    profiles: { default: { name: 'Echo', description: 'x', providers: ['local'] } },
  });
  const echo = new ScriptedProvider('local', 'echo');
  const provider: AgentProvider = {
    run: async (request) => {
      calls.set(request.runId, (calls.get(request.runId) ?? 0) + 1);
      await hold;
      return echo.run(request);
    },
  };

  beforeAll(async () => {
    env = await createTestResources('starts');
    tasks = new DynamoDbTaskRepository(env.clients.doc, env.resources.tables.State.name);
    leases = new DynamoDbRunLeases(env.clients.doc, env.resources.tables.State.name);
    const sealer = new KmsSealer({
      kms: env.clients.kms,
      keyId: env.resources.key.keyId,
      installation: 'test',
    });
    codec = new TaskContentCodec(sealer);
    audit = new DynamoDbAuditTrail(env.clients.doc, env.resources.tables.Audit.name, sealer);
  });
  afterAll(() => env?.destroy());

  const queued: RunMessage[] = [];
  const requeued: RunMessage[] = [];
  const executorDeps = (trail = audit): ExecuteRunDeps & Parameters<typeof createTask>[0] => ({
    tasks,
    codec,
    config,
    audit: trail,
    leaseMs: 4_000,
    runLeaseMs: 4_000,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    providerFor: () => provider,
  });
  /** One tick a minute from now: every lease taken in this test is over. */
  const reap = (starts = audit) =>
    reapExpiredRuns({
      tasks,
      leases,
      codec,
      config,
      starts,
      requeue: { enqueue: async (message) => void requeued.push(message) },
      clock: { now: () => new Date(Date.now() + 60_000) },
    });
  const sendOne = async (text: string) => {
    await createTask(executorDeps(), { caller: alice, profileId: 'default', message: userMessage(text) });
    return queued.shift()!;
  };
  const auditRows = async (taskId: string) => {
    const { Items = [] } = await env.clients.doc.send(
      new QueryCommand({
        TableName: env.resources.tables.Audit.name,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `TASK#${taskId}` },
        ConsistentRead: true,
      }),
    );
    return Items.map((item) => [item.sk, item.kind]);
  };

  it('the reaper first: it takes the slot and queues the run again; the late executor calls nothing', async () => {
    const message = await sendOne('late executor');
    // The real adapter, entered only once the gate opens: the executor stands right before its marker.
    const gated = Object.create(audit) as DynamoDbAuditTrail;
    const held = holdBefore(gated, 'recordStart');
    const late = executeRun(executorDeps(gated), message);
    await held.reachedAt;
    expect(await reap()).toMatchObject({ requeued: 1, reaped: 0 });
    held.open();
    expect(await late).toBe('duplicate');
    expect(calls.get(message.runId) ?? 0).toBe(0);
    expect(await tasks.getRun(message.taskId, message.runId)).toMatchObject({
      status: 'QUEUED',
      version: 3,
      requeues: 1,
    });

    const again = requeued.shift()!;
    expect(again).toEqual({ taskId: message.taskId, runId: message.runId });
    expect(await executeRun(executorDeps(), again)).toBe('completed');
    expect(calls.get(message.runId)).toBe(1);
    // Slot of version 2 holds the reaper's row; the second claim's marker sits in slot 4, and
    // both come before the time-keyed attempt in key order.
    expect(await auditRows(message.taskId)).toEqual([
      [`AUDIT#${message.runId}#0#00000002`, 'requeue'],
      [`AUDIT#${message.runId}#0#00000004`, 'claim'],
      [expect.stringMatching(new RegExp(`^AUDIT#${message.runId}#20`)), 'attempt'],
    ]);
    // The listing is in time order: the reaper's clock runs a minute ahead in this test.
    expect((await audit.listForTask(message.taskId)).map((row) => row.kind)).toEqual([
      'claim',
      'attempt',
      'requeue',
    ]);
  });

  it('the executor first, while the reaper is between its read and its take: the reaper leaves the run alone', async () => {
    const message = await sendOne('live executor');
    const gatedReaper = Object.create(audit) as DynamoDbAuditTrail;
    const reaperHeld = holdBefore(gatedReaper, 'take');
    const gatedExecutor = Object.create(audit) as DynamoDbAuditTrail;
    const claimed = holdBefore(gatedExecutor, 'recordStart');
    const live = executeRun(executorDeps(gatedExecutor), message);
    await claimed.reachedAt;
    const reaping = reap(gatedReaper);
    await reaperHeld.reachedAt;
    claimed.open();
    expect(await live).toBe('completed');
    reaperHeld.open();
    expect(await reaping).toMatchObject({ requeued: 0, reaped: 0 });
    expect(calls.get(message.runId)).toBe(1);
    expect(requeued).toEqual([]);
    expect((await auditRows(message.taskId)).map(([, kind]) => kind)).toEqual(['claim', 'attempt']);
  });

  it('a run its create claimed, whose rpc died before running it, is queued again by the reaper (decision 0096)', async () => {
    // The rpc commits the run RUNNING and then dies: nothing was queued and no marker written.
    const created = await createTask(
      executorDeps(),
      { caller: alice, profileId: 'default', message: userMessage('rpc dies after its create') },
      { handOver: true },
    );
    const run = created.handedOver!.run;
    expect(queued).toEqual([]);
    expect(created.handedOver?.task).toMatchObject({ state: 'TASK_STATE_WORKING', revision: 1 });
    expect(await tasks.getRun(created.taskId, run.runId)).toMatchObject({ status: 'RUNNING', version: 1 });
    expect(await reap()).toMatchObject({ requeued: 1, reaped: 0 });
    const again = requeued.shift()!;
    expect(again).toEqual({ taskId: created.taskId, runId: run.runId });
    expect(await executeRun(executorDeps(), again)).toBe('completed');
    expect(calls.get(run.runId)).toBe(1);
    // The reaper took the slot of version 1; the executor's claim (version 3) wrote its marker.
    expect((await auditRows(created.taskId)).slice(0, 2)).toEqual([
      [`AUDIT#${run.runId}#0#00000001`, 'requeue'],
      [`AUDIT#${run.runId}#0#00000003`, 'claim'],
    ]);
  });

  it('a run whose marker is written fails RUN_LEASE_EXPIRED when its lease expires (it may have called)', async () => {
    let release = () => {};
    hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const message = await sendOne('crashes during the call');
    const crashed = executeRun(executorDeps(), message);
    while ((calls.get(message.runId) ?? 0) === 0) await new Promise((wake) => setTimeout(wake, 10));
    expect(await reap()).toMatchObject({ requeued: 0, reaped: 1 });
    expect((await tasks.getTask(message.taskId))?.metadata).toEqual({ reason: abandonedRunReason });
    hold = undefined;
    release();
    expect(await crashed).not.toBe('completed');
    expect(calls.get(message.runId)).toBe(1);
    expect(requeued).toEqual([]);
  });
});
