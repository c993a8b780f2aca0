import type { Config } from '../../config/config.ts';
import type { Task } from '../../domain/a2a.ts';
import { isTerminal } from '../../domain/a2a.ts';
import {
  TaskBusyError,
  TaskNotCancelableError,
  TaskNotFoundError,
  VersionConflictError,
} from '../../domain/errors.ts';
import { retentionExpiry } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import {
  type AgentCaller,
  isExpired,
  isOwnTask,
  isSettled,
  type RunRecord,
  reviseRun,
  settleRun,
} from '../../domain/task.ts';
import type { RemoteAgentTasks } from '../../domain/tools.ts';
import type { CommitDeps } from '../journal/write-through.ts';
import { endTask, type RunAtEnd } from './end-task.ts';
import {
  projectedWait,
  type ReadOptions,
  type ReadTaskDeps,
  taskFromCommittedRow,
  toTask,
  waitForView,
} from './read-task.ts';

export interface CancelTaskDeps extends ReadTaskDeps, CommitDeps {
  readonly config: Config;
  /**
   * The remote A2A agents' tasks: the remote task a canceled run waited for is canceled there too
   * (best effort). Absent: it is left to run.
   */
  readonly remoteTasks?: RemoteAgentTasks;
  readonly logger?: { warn(message: string, fields: Record<string, unknown>): void };
}

export interface CancelTaskInput {
  readonly caller: AgentCaller;
  readonly taskId: string;
}

/** The fixed status message of a canceled task; it names no content. */
export const canceledText = 'Task canceled by the client.';

/** How long the answer waits for the cancel's own revision to reach the journal (I-RYW). */
const projectionWaitMs = 10_000;

/** A conflict means a concurrent writer moved the task or run; each retry re-reads and decides anew. */
const maxAttempts = 5;

/**
 * CancelTask (docs/protocol.md §11): cooperative and race-safe. One transaction sets the task CANCELED
 * (conditioned on the revision read) and flags the current run (conditioned on its version,
 * I-LOCK); a run that is not executing (QUEUED, AWAITING_APPROVAL) is settled CANCELED at once,
 * a RUNNING one is settled by its executor, whose completing transaction now loses. A conflict
 * re-reads: a completion that won makes the cancel TaskNotCancelable, a cancel that won answers
 * the canceled task (idempotent on CANCELED); a task that keeps moving answers TaskBusy, never an
 * internal error.
 */
export const cancelTask = async (deps: CancelTaskDeps, input: CancelTaskInput): Promise<Task> => {
  for (let attempt = 1; ; attempt++) {
    const task = await deps.tasks.getTask(input.taskId);
    if (task === undefined || !isOwnTask(task, input.caller) || isExpired(task.expiresAt, deps.clock.now())) {
      throw new TaskNotFoundError(input.taskId);
    }
    if (task.state === 'TASK_STATE_CANCELED') return readAtRevision(deps, input.caller, task);
    if (isTerminal(task.state)) throw new TaskNotCancelableError(task.taskId, task.state);
    const run = await deps.tasks.getRun(task.taskId, task.currentRunId);
    try {
      const canceled = await commitCancel(deps, task, run);
      const [answer] = await Promise.all([
        readAtRevision(deps, input.caller, canceled),
        cancelRemoteTask(deps, run),
      ]);
      return answer;
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      if (attempt >= maxAttempts) throw new TaskBusyError(task.taskId);
    }
  }
};

const commitCancel = async (
  deps: CancelTaskDeps,
  task: StoredTask,
  run: RunRecord | undefined,
): Promise<StoredTask> => {
  const now = deps.clock.now();
  const { task: canceled } = await endTask(deps, {
    task,
    end: {
      state: 'TASK_STATE_CANCELED',
      messageId: `${task.currentRunId}-canceled`,
      text: canceledText,
      recordInHistory: true,
      // Retention runs from the end of the task (I-PURGE).
      expiresAt: retentionExpiry(deps.config.privacy.retention, 'agentRun', now),
    },
    run: runAtCancel(run, now),
    // The flag is for an executor that still waits in place: a parked run is settled here
    // instead, and a park keeps the version (docs/reliability.md "Delegated calls").
    ...(run?.status === 'RUNNING' && run.delegation?.parked !== true && run.delegation !== undefined
      ? { expect: { runNotParked: true } }
      : {}),
    // A cancel knows nothing of the journal: its revision is projected after one read.
    now,
  });
  return canceled;
};

/**
 * The remote task a canceled run waited for (docs/configuration.md `a2aAgents`), canceled at its
 * agent with A2A CancelTask: best effort, since the run no longer reads it; a failure is logged
 * and changes nothing here.
 */
const cancelRemoteTask = async (deps: CancelTaskDeps, run: RunRecord | undefined): Promise<void> => {
  const delegation = run?.status === 'RUNNING' ? run.delegation : undefined;
  if (delegation === undefined || deps.remoteTasks === undefined) return;
  try {
    await deps.remoteTasks.cancel(delegation.tool, delegation.remoteTaskId);
  } catch (error) {
    deps.logger?.warn('remote task not canceled', {
      taskId: run?.taskId,
      runId: run?.runId,
      tool: delegation.tool,
      error: error instanceof Error ? error.name : 'unknown',
    });
  }
};

/**
 * A RUNNING run only gets the cancel flag: its executor settles it (`reread` in
 * `runs/run-ending.ts`). Nothing executes a QUEUED or AWAITING_APPROVAL run right now, nor a
 * RUNNING one its executor left parked at a delegated call (docs/reliability.md "Delegated
 * calls"): it is settled CANCELED here, and a run waiting for an approval or a remote task never
 * resumes, so its sealed state goes (I-APPROVAL). A settled run, or none, is not written.
 */
const runAtCancel = (run: RunRecord | undefined, now: Date): RunAtEnd | undefined => {
  if (run === undefined || isSettled(run.status)) return undefined;
  if (run.status === 'RUNNING' && run.delegation?.parked !== true) {
    return {
      read: run,
      next: (ended) =>
        reviseRun(run, { cancelRequested: true, expiresAt: Math.max(run.expiresAt, ended.expiresAt) }),
    };
  }
  return {
    read: run,
    next: (ended) =>
      settleRun(run, 'CANCELED', now, ended.expiresAt, {
        cancelRequested: true,
        sealedSuspension: undefined,
      }),
  };
};

/** The task as the journal shows it at (or after) the row's revision (I-RYW). */
const readAtRevision = async (deps: ReadTaskDeps, caller: AgentCaller, row: StoredTask): Promise<Task> => {
  const options: ReadOptions = {};
  const view = await waitForView(deps, caller, row.taskId, {
    minRevision: row.revision,
    timeoutMs: projectionWaitMs,
    kind: projectedWait,
  });
  return view === undefined
    ? taskFromCommittedRow(deps, caller, row.taskId, options)
    : toTask(deps, view, options);
};
