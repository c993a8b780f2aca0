import { isTerminal } from '../../domain/a2a.ts';
import { VersionConflictError } from '../../domain/errors.ts';
import { answerOutcome } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { runAloneWrite } from '../../domain/row-writes.ts';
import { type RunRecord, type RunStatus, settleRun } from '../../domain/task.ts';
import { endTask } from '../tasks/end-task.ts';
import {
  type ExecuteRunResult,
  failureTexts,
  noteProjected,
  type RunDeps,
  retentionFrom,
} from './run-context.ts';

/**
 * The ways a run ends without an answer: its task FAILED (`fail`, `failNotRetainable`), or the run
 * alone settled because a cancel or another run took its task (`reread`, `settleRunAlone`).
 */

/** I-TIGHTEN: nothing of the content is stored; the task says FAILED with the reason. */
export const failNotRetainable = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  expectedVersion: number,
): Promise<ExecuteRunResult> => {
  await fail(deps, run, task, failureTexts.notRetainable, 'RESULT_NOT_RETAINABLE', expectedVersion);
  return 'not-retainable';
};

/**
 * Ends run and task FAILED with a fixed status message and a public reason (`endTask`). Prior
 * artifacts and history are dropped when the answer ceiling no longer allows keeping them.
 * `expectedVersion` is the run version read, when a change of the run not yet committed (a
 * tightening) rides on this write.
 */
export const fail = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  text: string,
  reason: string,
  expectedVersion = run.version,
): Promise<'failed'> => {
  const now = deps.clock.now();
  // The run as it was read: a tightening not yet committed rides on this write (`expectedVersion`).
  const read: RunRecord = { ...run, version: expectedVersion };
  try {
    const { projected } = await endTask(deps, {
      task,
      end: {
        state: 'TASK_STATE_FAILED',
        messageId: `${run.runId}-failed`,
        text,
        reason,
        dropContent: answerOutcome(run.answerCeiling) === 'not-retainable',
        // Retention runs from the end of the run, failed ones included (I-PURGE).
        expiresAt: retentionFrom(deps, now),
      },
      run: { read, next: (ended) => settleRun(read, 'FAILED', now, ended.expiresAt) },
      after: deps.runJournal.place,
      now,
    });
    noteProjected(deps.runJournal, projected);
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    // A cancel won the race: the task is already terminal; the run only needs settling.
    const fresh = await deps.tasks.getRunWithTask(run.taskId, run.runId);
    if (fresh.run?.status === 'RUNNING') await settleRunAlone(deps, fresh.task, fresh.run, 'CANCELED');
  }
  return 'failed';
};

/**
 * After a lost version check: did a cancel end the task, or did a tightening change the ceiling?
 * `status` is the one the run must still have to be this executor's (QUEUED at the claim).
 */
export const reread = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  status: RunStatus = 'RUNNING',
): Promise<
  { kind: 'retry'; run: RunRecord; task: StoredTask } | { kind: 'ended'; result: ExecuteRunResult }
> => {
  const { run: freshRun, task: freshTask } = await deps.tasks.getRunWithTask(task.taskId, run.runId);
  if (freshRun === undefined || freshTask === undefined) return { kind: 'ended', result: 'missing' };
  if (freshRun.status !== status) return { kind: 'ended', result: 'duplicate' };
  if (freshRun.cancelRequested || isTerminal(freshTask.state) || freshTask.currentRunId !== run.runId) {
    await settleRunAlone(deps, freshTask, freshRun, 'CANCELED');
    return { kind: 'ended', result: 'canceled' };
  }
  return { kind: 'retry', run: freshRun, task: freshTask };
};

/** Settles a run that no longer owns its task (canceled, or the task moved on): the run alone. */
export const settleRunAlone = async (
  deps: RunDeps,
  task: StoredTask | undefined,
  run: RunRecord,
  status: 'CANCELED' | 'FAILED',
): Promise<void> => {
  const now = deps.clock.now();
  const settledRun = settleRun(run, status, now, retentionFrom(deps, now));
  try {
    await deps.tasks.commit(runAloneWrite(task, run, settledRun));
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
  }
};
