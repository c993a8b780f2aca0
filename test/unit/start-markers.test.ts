import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { armFailpoints, disarmFailpoints } from '../../shared/app/operations/failpoints.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { maxRequeues, type ReapRunsDeps, reapExpiredRuns } from '../../shared/app/runs/reap-runs.ts';
import type { RunMessage, SealContext } from '../../shared/domain/ports.ts';
import {
  answerOutcome,
  ceilingsForAttempt,
  privacyLevels,
  resolveCeilings,
} from '../../shared/domain/privacy.ts';
import { createCore } from '../support/core-fixture.ts';
import { gate, holdBefore } from '../support/hold-before.ts';
import { InMemoryAuditTrail } from '../support/in-memory-audit-trail.ts';

/**
 * Decision 0072: the start marker (the run's `claim` audit row in a slot per run version) and the
 * reaper, which queues a claimed run again only when no claim of it wrote a marker, after taking
 * the slot itself. I-ONCE: whichever order the late executor and the reaper take, one provider
 * call at most per run. The interleavings are forced with gates on the in-memory audit trail.
 */

afterEach(disarmFailpoints);

const setup = (options: Parameters<typeof createCore>[0] = {}) => {
  const core = createCore(options);
  const audit = new InMemoryAuditTrail();
  const executor = { ...core.deps, audit, leaseMs: 4_000 };
  const requeued: RunMessage[] = [];
  /** The reaper one minute later: every lease taken now is over. */
  const reaper = (): ReapRunsDeps => ({
    tasks: core.tasks,
    codec: core.codec,
    config: core.deps.config,
    clock: { now: () => new Date(Date.now() + 60_000) },
    starts: audit,
    requeue: { enqueue: async (message) => void requeued.push(message) },
    leases: {
      listExpired: async () =>
        [...core.tasks.runs.values()]
          .filter((run) => run.status === 'RUNNING' || run.status === 'QUEUED')
          .map((run) => ({ taskId: run.taskId, runId: run.runId })),
    } as unknown as ReapRunsDeps['leases'],
  });
  const runOf = (taskId: string) => core.tasks.runs.get(core.tasks.tasks.get(taskId)!.currentRunId)!;
  return { core, audit, executor, reaper, requeued, runOf };
};

describe('a claimed run that never called its provider is queued again (decision 0072)', () => {
  it('a crash between the claim and the provider call: queued again with a new version, then called once', async () => {
    const { core, audit, executor, reaper, requeued, runOf } = setup();
    const { taskId } = await core.send('crashes after its claim');
    const message = core.queued.shift()!;
    armFailpoints('executor.afterClaim=#1');
    await expect(executeRun(executor, message)).rejects.toThrow('executor.afterClaim');
    expect(runOf(taskId)).toMatchObject({ status: 'RUNNING', version: 2 });

    expect(await reapExpiredRuns(reaper())).toMatchObject({ found: 1, requeued: 1, reaped: 0 });
    expect(runOf(taskId)).toMatchObject({ status: 'QUEUED', version: 3, requeues: 1 });
    expect(core.tasks.tasks.get(taskId)).toMatchObject({ state: 'TASK_STATE_WORKING' });
    expect(requeued).toEqual([{ taskId, runId: message.runId }]);

    // The redelivered original finds the run QUEUED too: the two messages race for one claim.
    expect(await executeRun(executor, requeued[0]!)).toBe('completed');
    expect(await executeRun(executor, message)).toBe('duplicate');
    expect(core.calls.get(message.runId)).toBe(1);
    expect(runOf(taskId)).toMatchObject({ status: 'COMPLETED', requeues: 1 });
    // The reaper's row holds the first claim's slot (version 2); the marker of the second is its own (4).
    expect(audit.entries.map((entry) => entry.kind)).toEqual(['requeue', 'claim', 'attempt']);
  });

  it('race, the reaper first: it takes the slot, and the late executor calls nothing', async () => {
    const { core, audit, executor, reaper, requeued, runOf } = setup();
    const { taskId } = await core.send('late executor');
    const message = core.queued.shift()!;
    // The executor is held right before writing its marker (after the claim and the history).
    const held = holdBefore(audit, 'recordStart');
    const late = executeRun(executor, message);
    await held.reachedAt;
    expect(await reapExpiredRuns(reaper())).toMatchObject({ requeued: 1 });
    held.open();
    expect(await late).toBe('duplicate');
    expect(core.calls.get(message.runId) ?? 0).toBe(0);
    expect(runOf(taskId)).toMatchObject({ status: 'QUEUED', version: 3, requeues: 1 });

    held.restore();
    expect(await executeRun(executor, requeued[0]!)).toBe('completed');
    expect(core.calls.get(message.runId)).toBe(1);
  });

  it('race, the executor first: its marker wins the slot, and the reaper neither re-queues nor fails the run', async () => {
    const { core, audit, executor, reaper, requeued, runOf } = setup();
    const { taskId } = await core.send('live executor');
    const message = core.queued.shift()!;
    // The reaper reads "no marker", then is held before taking the slot.
    const held = holdBefore(audit, 'take');
    // The executor is held right after its claim, so the reaper sees it RUNNING without a marker.
    const claimed = holdBefore(audit, 'recordStart');
    const live = executeRun(executor, message);
    await claimed.reachedAt;
    const reaping = reapExpiredRuns(reaper());
    await held.reachedAt;
    claimed.open();
    expect(await live).toBe('completed');
    held.open();
    expect(await reaping).toMatchObject({ requeued: 0, reaped: 0, skipped: 1 });
    expect(core.calls.get(message.runId)).toBe(1);
    expect(runOf(taskId)).toMatchObject({ status: 'COMPLETED' });
    expect(requeued).toEqual([]);
    expect(audit.entries.map((entry) => entry.kind)).toEqual(['claim', 'attempt']);
  });

  it('a run whose marker is written may have called its provider: it fails RUN_LEASE_EXPIRED as before', async () => {
    const { core, executor, reaper, requeued, runOf } = setup();
    const { taskId } = await core.send('crashes after its call');
    armFailpoints('executor.beforeSettle=#1');
    await expect(executeRun(executor, core.queued.shift()!)).rejects.toThrow('executor.beforeSettle');
    expect(await reapExpiredRuns(reaper())).toMatchObject({ requeued: 0, reaped: 1 });
    expect(runOf(taskId)).toMatchObject({ status: 'FAILED' });
    expect(core.tasks.tasks.get(taskId)?.metadata).toEqual({ reason: 'RUN_LEASE_EXPIRED' });
    expect(requeued).toEqual([]);
  });

  it(`is queued again at most ${maxRequeues} times, then fails RUN_LEASE_EXPIRED`, async () => {
    const { core, executor, reaper, runOf } = setup();
    const { taskId } = await core.send('keeps crashing');
    const message = core.queued.shift()!;
    armFailpoints('executor.afterClaim=1');
    for (let requeues = 1; requeues <= maxRequeues + 1; requeues++) {
      await expect(executeRun(executor, message)).rejects.toThrow('executor.afterClaim');
      await reapExpiredRuns(reaper());
      if (requeues <= maxRequeues) expect(runOf(taskId)).toMatchObject({ status: 'QUEUED', requeues });
    }
    expect(runOf(taskId)).toMatchObject({ status: 'FAILED', requeues: maxRequeues });
    expect(core.tasks.tasks.get(taskId)?.metadata).toEqual({ reason: 'RUN_LEASE_EXPIRED' });
    expect(core.calls.get(message.runId) ?? 0).toBe(0);
  });

  it('without start slots (no `starts`) a claimed run whose lease expired fails as before', async () => {
    const { core, executor, reaper, runOf } = setup();
    const { taskId } = await core.send('old reaper');
    armFailpoints('executor.afterClaim=#1');
    await expect(executeRun(executor, core.queued.shift()!)).rejects.toThrow('executor.afterClaim');
    const { starts: _none, ...withoutStarts } = reaper();
    expect(await reapExpiredRuns(withoutStarts)).toMatchObject({ reaped: 1 });
    expect(core.tasks.tasks.get(taskId)?.metadata).toEqual({ reason: 'RUN_LEASE_EXPIRED' });
    expect(runOf(taskId).status).toBe('FAILED');
  });
});

describe('the give-back after a queued-again claim (decisions 0069, 0072)', () => {
  it('a late executor whose pre-call step fails never gives back the claim that followed the re-queue', async () => {
    const held = gate();
    let opens = 0;
    // The first executor's history open waits, then fails (KMS); every later open works.
    class SlowThenFailingSealer extends FakeSealer {
      override async open(blob: Uint8Array, context: SealContext): Promise<Uint8Array> {
        if (context.field === 'history' && ++opens === 1) {
          held.reached();
          await held.opened;
          throw Object.assign(new Error('kms unavailable'), { name: 'KMSInternalException' });
        }
        return super.open(blob, context);
      }
    }
    const calling = gate();
    const { core, executor, reaper, requeued } = setup({
      sealer: new SlowThenFailingSealer(),
      providers: {
        local: {
          run: async () => {
            calling.reached();
            await calling.opened;
            return { outcome: { kind: 'completed', artifacts: [] } };
          },
        },
      },
    });
    const { taskId } = await core.send('slow first executor');
    const message = core.queued.shift()!;
    const first = executeRun(executor, message);
    await held.reachedAt;
    await reapExpiredRuns(reaper());
    // The second claim is in its provider call when the first executor's fault comes.
    const second = executeRun(executor, requeued[0]!);
    await calling.reachedAt;
    held.open();
    await expect(first).rejects.toThrow('kms unavailable');
    const run = core.tasks.runs.get(core.tasks.tasks.get(taskId)!.currentRunId)!;
    expect(run).toMatchObject({ status: 'RUNNING', version: 4 });
    calling.open();
    expect(await second).toBe('completed');
    expect(core.calls.get(message.runId)).toBe(1);
  });
});

describe('no start marker at audit none (decision 0072)', () => {
  it('an audit ceiling of none always comes with an answer that may not be kept, through every tightening (property)', () => {
    const level = fc.option(fc.constantFrom(...privacyLevels), { nil: undefined });
    fc.assert(
      fc.property(
        level,
        level,
        level,
        fc.array(level, { maxLength: 3 }),
        (globalLevel, providerLevel, taskLevel, fallbacks) => {
          let ceilings = resolveCeilings({ globalLevel, providerLevel, taskLevel });
          for (const next of [undefined, ...fallbacks]) {
            ceilings = ceilingsForAttempt(ceilings, next);
            if (ceilings.audit === 'none') expect(answerOutcome(ceilings.answer)).toBe('not-retainable');
          }
        },
      ),
    );
  });
});
