import type { Config } from '../../config/config.ts';
import { isTerminal } from '../../domain/a2a.ts';
import type { RunStarts } from '../../domain/audit.ts';
import { VersionConflictError } from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import type { Clock, RunLeases, RunQueue, RunRef } from '../../domain/ports.ts';
import { answerOutcome, retentionExpiry } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { runAloneWrite } from '../../domain/row-writes.ts';
import { giveBackRun, type RunRecord, reviseRun, settleRun } from '../../domain/task.ts';
import { type CommitDeps, commitAndProject } from '../journal/write-through.ts';
import { defaultRunStartDeadlineMs } from '../tasks/create-task.ts';
import { endTask, type FixedEnd } from '../tasks/end-task.ts';
import type { TaskContentCodec } from '../tasks/task-content.ts';
import { takeStartSlot } from './record-audit.ts';

export interface ReapRunsDeps extends CommitDeps {
  /**
   * Where a run that was never started is queued again; absent: such a run fails
   * RUN_NOT_STARTED at its start deadline.
   */
  readonly requeue?: RunQueue;
  /** The start deadline a re-queued run gets (the rpc's `runStartDeadlineMs`). */
  readonly runStartDeadlineMs?: number;
  /**
   * The start slots of the audit table (docs/data-model.md, "Audit table"): a RUNNING run whose
   * claims wrote no start marker is queued again instead of failed RUN_LEASE_EXPIRED. Absent: such
   * a run fails RUN_LEASE_EXPIRED.
   * Only for a deployment whose executor writes start markers (it has the audit trail).
   */
  readonly starts?: RunStarts;
  readonly leases: RunLeases;
  readonly codec: TaskContentCodec;
  readonly clock: Clock;
  readonly config: Config;
  readonly logger?: Pick<Logger, 'info'>;
  /**
   * Runs the handling of one task's expired run in that task's trace (its id, and the traceparent
   * its creator sent, from the row): log lines and a re-queued run's message carry them.
   */
  readonly inTaskTrace?: <T>(
    task: { readonly taskId: string; readonly traceparent?: string },
    work: () => Promise<T>,
  ) => Promise<T>;
}

export const abandonedRunText = 'The agent stopped unexpectedly; the task was not completed.';
export const abandonedRunReason = 'RUN_LEASE_EXPIRED';
/** A RUNNING run whose row holds a fence (I-EFFECT): it stopped in or after a call that may have changed something. */
export const interruptedToolCallText =
  'The agent stopped during a tool call that may have changed something; the call was not sent again.';
export const interruptedToolCallReason = 'TOOL_CALL_INTERRUPTED';
/** A QUEUED run past its start deadline: its queue message was lost (a crash between commit and enqueue). */
export const unstartedRunText = 'The task could not be started; please try again.';
export const unstartedRunReason = 'RUN_NOT_STARTED';
/** How long a run waits for a delegated call's remote task before the reaper fails it. */
export const maxDelegationWaitMs = 24 * 3600_000;
/** How often the reaper queues a never-started run again before it fails it RUN_NOT_STARTED. */
export const maxRequeues = 3;

export interface ReapReport {
  /** Expired leases the index returned. */
  readonly found: number;
  /** Runs settled FAILED (with their task when it was theirs). */
  readonly reaped: number;
  /** Provably never called their provider (I-ONCE): queued again instead of failed. */
  readonly requeued: number;
  /** Renewed, settled or claimed by someone else in between: left alone. */
  readonly skipped: number;
}

/**
 * The reaper (docs/architecture.md, "Send a message"): settles RUNNING runs whose lease expired — their
 * executor crashed or timed out — FAILED, with their task FAILED and a fixed status message, in one
 * transaction fenced on the run version and on the lease still being over. It never executes a run again
 * (I-ONCE): a redelivered message finds the run settled, and no tool is ever retried. A QUEUED run carries
 * the lease its claim will keep and a start deadline (docs/reliability.md): once its lease is over it waits
 * until the deadline, past it its message is taken as lost and the run is settled the same way, so a crash
 * between commit and enqueue ends FAILED too. A run that provably never called its provider — never claimed,
 * or claimed without any claim writing its start marker — is queued again instead, a bounded number of times.
 */
export const reapExpiredRuns = async (deps: ReapRunsDeps, limit = 100): Promise<ReapReport> => {
  const now = deps.clock.now();
  const expired = await deps.leases.listExpired(now.getTime(), limit);
  const counts = { reaped: 0, requeued: 0 };
  for (const ref of expired) {
    const handled = await reapRun(deps, ref, now);
    if (handled !== 'skipped') counts[handled]++;
  }
  return { found: expired.length, ...counts, skipped: expired.length - counts.reaped - counts.requeued };
};

const reapRun = async (
  deps: ReapRunsDeps,
  ref: RunRef,
  now: Date,
): Promise<'reaped' | 'requeued' | 'skipped'> => {
  // The index is eventually consistent: the run row decides (read with its task: one request).
  const { run, task } = await deps.tasks.getRunWithTask(ref.taskId, ref.runId);
  const handle = () => handleExpired(deps, run, task, now);
  if (deps.inTaskTrace === undefined) return handle();
  return deps.inTaskTrace(
    { taskId: ref.taskId, ...(task?.traceparent !== undefined && { traceparent: task.traceparent }) },
    handle,
  );
};

const handleExpired = async (
  deps: ReapRunsDeps,
  run: RunRecord | undefined,
  task: StoredTask | undefined,
  now: Date,
): Promise<'reaped' | 'requeued' | 'skipped'> => {
  if (run === undefined || (run.status !== 'RUNNING' && run.status !== 'QUEUED')) return 'skipped';
  if (run.leaseUntil === undefined || run.leaseUntil >= now.getTime()) return 'skipped';
  if (run.status === 'QUEUED' && run.startBy !== undefined && run.startBy > now.getTime()) {
    // Held in the queue longer than the lease it was created with, but not past its start
    // deadline: wait until then. Fenced like a settle; never moves the version.
    await deferStart(deps, task, run, run.startBy, now);
    return 'skipped';
  }
  const ownsTask = task !== undefined && task.currentRunId === run.runId && !isTerminal(task.state);
  if (ownsTask && !run.cancelRequested && deps.requeue !== undefined) {
    // Provably never called its provider: QUEUED, so never claimed or given back before the call
    // (I-ONCE: the claim is the only way to a call) — its message was
    // lost (a crash between commit and enqueue), is late, or waits for redelivery; or RUNNING,
    // but no claim of it wrote its start marker (a crash between the claim and the
    // call). Queue it again, a bounded number of times; a late original and the new message
    // race for the one claim.
    const requeues = run.requeues ?? 0;
    if (requeues < maxRequeues && (run.status === 'QUEUED' || (await neverStarted(deps, run)))) {
      return (await requeue(deps, deps.requeue, task, run, requeues + 1, now)) ? 'requeued' : 'skipped';
    }
    // Waits at a delegated call whose remote task it recorded (I-EFFECT) — left waiting by its
    // executor, or stopped while it waited: queued again, it continues at that call and reads
    // the same remote task; the model and the calls before it are not called again. This is the
    // backstop of the remote task's push notification, once per lease, for `maxDelegationWaitMs`.
    if (waitsAtDelegation(run, now)) {
      return (await requeue(deps, deps.requeue, task, run, requeues, now, { waiting: true }))
        ? 'requeued'
        : 'skipped';
    }
  }
  const expiresAt = retentionExpiry(deps.config.privacy.retention, 'agentRun', now);
  // A task that moved on (canceled, or another run) keeps its state; only the run is settled.
  const status = !ownsTask && run.cancelRequested ? 'CANCELED' : 'FAILED';
  const fence = { leaseExpiredBefore: now.getTime() };
  try {
    // The reaper knows nothing of the journal: the revision it makes is projected after one read.
    if (ownsTask) {
      await endTask(deps, {
        task,
        end: failedEnd(run, expiresAt),
        run: { read: run, next: () => settleRun(run, 'FAILED', now, expiresAt) },
        expect: fence,
        now,
      });
    } else {
      await commitAndProject(deps, runAloneWrite(task, run, settleRun(run, status, now, expiresAt), fence));
    }
  } catch (error) {
    if (error instanceof VersionConflictError) return 'skipped';
    throw error;
  }
  deps.logger?.info('run reaped', {
    taskId: run.taskId,
    runId: run.runId,
    status,
    leaseExpiredMs: now.getTime() - run.leaseUntil,
  });
  return 'reaped';
};

/**
 * The run that provably never called its provider with a new start deadline, then its message
 * again; false if it moved meanwhile. A QUEUED run keeps its version; a claimed one goes back to
 * QUEUED with a new one.
 */
const requeue = async (
  deps: ReapRunsDeps,
  queue: RunQueue,
  task: StoredTask,
  run: RunRecord,
  requeues: number,
  now: Date,
  options: { readonly waiting?: boolean } = {},
): Promise<boolean> => {
  const startBy = now.getTime() + (deps.runStartDeadlineMs ?? defaultRunStartDeadlineMs);
  const moved =
    run.status === 'QUEUED'
      ? await deferStart(deps, task, { ...run, requeues }, startBy, now)
      : await takeBack(deps, task, { ...run, requeues }, startBy, now, options);
  if (!moved) return false;
  // Written first: if this send fails, the run waits for its new deadline and is queued again then.
  await queue.enqueue({ taskId: run.taskId, runId: run.runId });
  deps.logger?.info('run requeued', { taskId: run.taskId, runId: run.runId, requeues, from: run.status });
  return true;
};

/**
 * A claimed run provably never called its provider when no claim of it wrote a
 * start marker. Its attempts and approval are read first: a run that suspended for an approval,
 * or resumed from one, called its provider before (its claim consumed the sealed state it
 * continues from); and at audit `none` no marker can be written, so nothing is proven.
 */
const neverStarted = async (deps: ReapRunsDeps, run: RunRecord): Promise<boolean> =>
  deps.starts !== undefined &&
  run.attempts.length === 0 &&
  run.approval === undefined &&
  run.sealedSuspension === undefined &&
  run.fence === undefined &&
  run.auditCeiling !== 'none' &&
  !(await deps.starts.anyStarted(run.taskId, run.runId));

/**
 * A RUNNING run that waits at a delegated call with its remote task and its state recorded, and
 * holds no fence of a later call (docs/configuration.md `a2aAgents`).
 */
const waitsAtDelegation = (run: RunRecord, now: Date): boolean =>
  run.status === 'RUNNING' &&
  run.delegation !== undefined &&
  run.sealedSuspension !== undefined &&
  run.fence === undefined &&
  now.getTime() - Date.parse(run.delegation.at) < maxDelegationWaitMs;

/**
 * The claimed run that never called its provider taken back: first the start
 * slot of its version is taken, so a late executor's marker fails and it calls nothing; then the
 * run goes back to QUEUED with a new version (the next claim has a new slot), fenced like every
 * reaper write. A run that moved meanwhile (renewed by a live executor, canceled, settled) frees
 * the slot and is left alone (false). I-ONCE: the executor calls its provider only after its
 * marker is written, and the reaper takes a run back only after the slot of the same version is
 * its own — exactly one of the two writes wins. A run that `waiting` at a delegated call called
 * its provider before: no slot is taken, the write alone decides.
 */
const takeBack = async (
  deps: ReapRunsDeps,
  task: StoredTask,
  run: RunRecord,
  startBy: number,
  now: Date,
  options: { readonly waiting?: boolean } = {},
): Promise<boolean> => {
  if (!options.waiting && !(await takeStartSlot(deps, run, abandonedRunReason))) return false;
  try {
    await deps.tasks.commit(
      runAloneWrite(task, run, giveBackRun(run, startBy), { leaseExpiredBefore: now.getTime() }),
    );
    return true;
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    if (!options.waiting) await releaseSlot(deps, run);
    return false;
  }
};

/**
 * Frees the slot again: the run is still its executor's (it renewed its lease, or a cancel or
 * settle came first). Best effort: a slot left taken stops only an executor that then calls
 * nothing, whose lease expires, and the next tick finds the slot its own and queues the run.
 */
const releaseSlot = async (deps: ReapRunsDeps, run: RunRecord): Promise<void> => {
  try {
    await deps.starts?.release(run);
  } catch (error) {
    deps.logger?.info('start slot not freed', {
      taskId: run.taskId,
      runId: run.runId,
      error: error instanceof Error ? error.name : 'unknown',
    });
  }
};

/** The QUEUED run's lease moved to `startBy` (and its deadline there); false if it was claimed or settled meanwhile. */
const deferStart = async (
  deps: ReapRunsDeps,
  task: StoredTask | undefined,
  run: RunRecord,
  startBy: number,
  now: Date,
): Promise<boolean> => {
  try {
    const deferred = reviseRun(run, { leaseUntil: startBy, startBy }, { keepVersion: true });
    await deps.tasks.commit(runAloneWrite(task, run, deferred, { leaseExpiredBefore: now.getTime() }));
    return true;
  } catch (error) {
    // Claimed or settled in between: nothing to defer.
    if (!(error instanceof VersionConflictError)) throw error;
    return false;
  }
};

/** A reaped run's task ends FAILED with a reason that says whether the run ever started. */
const failedEnd = (run: RunRecord, expiresAt: number): FixedEnd => ({
  state: 'TASK_STATE_FAILED',
  messageId: `${run.runId}-failed`,
  text:
    run.status === 'QUEUED'
      ? unstartedRunText
      : run.fence !== undefined
        ? interruptedToolCallText
        : abandonedRunText,
  reason:
    run.status === 'QUEUED'
      ? unstartedRunReason
      : run.fence !== undefined
        ? interruptedToolCallReason
        : abandonedRunReason,
  dropContent: answerOutcome(run.answerCeiling) === 'not-retainable',
  expiresAt,
});
