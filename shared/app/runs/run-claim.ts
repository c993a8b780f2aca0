import { VersionConflictError } from '../../domain/errors.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { runAloneWrite, taskAndRunWrite } from '../../domain/row-writes.ts';
import { advanceTask, giveBackRun, moveRun, type RunDelegation, type RunRecord } from '../../domain/task.ts';
import { commitRevision, type ExecuteRunResult, type RunDeps } from './run-context.ts';
import { reread } from './run-ending.ts';
import { claimLeaseUntil, leaseUntilFrom } from './run-lease.ts';

/**
 * The claim (I-ONCE) and the WORKING revision are one write (the task row holds its current
 * run), conditioned on the run version and the task revision read. A lost condition means
 * another delivery claimed the run, or a cancel ended it: the reread decides which.
 * A follow-up's task is WORKING from the message that queued its run (it never shows SUBMITTED
 * again): its claim changes the run only, conditioned on its version, and the task keeps its
 * revision, so no channel sees a second WORKING revision.
 */
export const claimRun = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
): Promise<{ run: RunRecord; task: StoredTask } | { ended: ExecuteRunResult }> => {
  const now = deps.clock.now();
  // A run waiting at a delegated call keeps its sealed state until the call returns: it may stop
  // and be queued again while it reads the remote task (docs/configuration.md `a2aAgents`). The
  // marks of its last wait go: this attempt reads the remote task itself (docs/reliability.md
  // "Delegated calls").
  const { parked: _left, settled: _noted, ...delegation } = run.delegation ?? {};
  const waitsAtCall = run.delegation !== undefined;
  const claimedRun = moveRun(run, 'RUNNING', {
    leaseUntil: claimLeaseUntil(deps, run, now),
    startBy: undefined,
    // A resumed run holds its opened state in memory; the sealed copy is not kept past the wait.
    ...(waitsAtCall ? { delegation: delegation as RunDelegation } : { sealedSuspension: undefined }),
  });
  // A follow-up's task is WORKING already, and so is the task of a run waiting at a delegated
  // call: only its run changes, no new revision.
  const alreadyWorking =
    task.state === 'TASK_STATE_WORKING' && (run.sealedSuspension === undefined || waitsAtCall);
  const workingTask = alreadyWorking
    ? task
    : advanceTask(task, 'TASK_STATE_WORKING', now, {
        // The "waiting for an approval" message ends with the wait.
        ...(run.sealedSuspension !== undefined && { sealedStatusMessage: undefined }),
      });
  try {
    if (alreadyWorking) await deps.tasks.commit(runAloneWrite(task, run, claimedRun));
    else await commitRevision(deps, { row: taskAndRunWrite(task, workingTask, run, claimedRun) });
    return { run: claimedRun, task: workingTask };
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    // Claimed by another delivery or settled (duplicate), or its task canceled (the run ends here).
    const fresh = await reread(deps, run, task, 'QUEUED');
    if (fresh.kind === 'ended') return { ended: fresh.result };
    // Still queued under a task that moved otherwise: let the queue deliver it again.
    throw error;
  }
};

/**
 * Gives a claimed run that never called its provider back to the queue: QUEUED again, with a
 * lease and start deadline from now, so the reaper queues it again if no delivery of its message
 * claims it first (I-ONCE). One read and one run-only write, only on this failure path; the task
 * keeps its WORKING revision. Best effort: if it fails too, the run's lease expires and the
 * reaper fails it (RUN_LEASE_EXPIRED).
 */
export const giveBack = async (deps: RunDeps, claimed: RunRecord): Promise<void> => {
  try {
    const { run, task } = await deps.tasks.getRunWithTask(claimed.taskId, claimed.runId);
    // Only a run still this executor's: RUNNING at the version it wrote last (the reaper may have
    // queued it again and another delivery claimed it since), not being canceled.
    if (run?.status !== 'RUNNING' || run.version !== claimed.version) return;
    if (run.cancelRequested || task?.currentRunId !== run.runId) return;
    const leaseUntil = leaseUntilFrom(deps, deps.clock.now());
    await deps.tasks.commit(runAloneWrite(task, run, giveBackRun(run, leaseUntil)));
    deps.logger?.info('run given back before its provider was called', {
      taskId: run.taskId,
      runId: run.runId,
    });
  } catch (error) {
    deps.logger?.info('run could not be given back; its lease will expire', {
      taskId: claimed.taskId,
      runId: claimed.runId,
      error: error instanceof Error ? error.name : 'unknown',
    });
  }
};
