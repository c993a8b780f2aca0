import type { Message } from '../../domain/a2a.ts';
import { isInterrupted, isTerminal } from '../../domain/a2a.ts';
import {
  InvalidParamsError,
  TaskAlreadyWorkingError,
  TaskGenerationMismatchError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '../../domain/errors.ts';
import type { TaskRowWrite } from '../../domain/ports.ts';
import type { StoredTask } from '../../domain/projection.ts';
import {
  advanceTask,
  appendHistory,
  type HistoryEntry,
  isExpired,
  isOwnTask,
  newTask,
  type RunRecord,
} from '../../domain/task.ts';
import type { JournalPlace } from '../journal/write-through.ts';
import type { CreateTaskDeps, CreateTaskInput } from './create-task.ts';
import { checkHistoryLimit, limitsOf } from './limits.ts';
import { senderOf } from './message-identity.ts';
import { type Earlier, sentBefore } from './retry-detection.ts';
import { historyFieldsFor, loadHistory } from './task-history.ts';

/** The task write a send plans: a new task, or the next revision of an interrupted one. */
export interface Plan {
  readonly task: StoredTask;
  readonly run: RunRecord;
  readonly row: TaskRowWrite;
  /** A new task whose run this call runs at once: its first revision's event only is projected. */
  readonly eventOnly?: boolean;
  /** The row as its commit returned it (`CommitResult.committed`). */
  readonly committed?: StoredTask;
  /** Where its journal write left the revision this call committed. */
  readonly journaled?: JournalPlace;
}

export const planNewTask = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  run: RunRecord,
  now: Date,
  expiresAt: number,
): Promise<Plan> => {
  const { taskId } = run;
  const contextId = input.message.contextId ?? deps.ids.newId();
  const message: Message = { ...input.message, taskId, contextId };
  const history = appendHistory([], 1, [message]);
  checkHistoryLimit(history, limitsOf(deps.config));
  const sealed = await deps.codec.seal(taskId, { history });
  const traceparent = deps.callerTraceparent?.();
  const task = newTask({
    taskId,
    contextId,
    owner: input.caller,
    profileId: input.profileId,
    run,
    now,
    expiresAt,
    sealedHistory: sealed.sealedHistory,
    ...(traceparent !== undefined && { traceparent }),
  });
  const taskRun: RunRecord = { ...run, taskId };
  return {
    task,
    run: taskRun,
    row: { taskId, task, run: taskRun, expect: { revision: 'absent' } },
    // Its run runs here at once: its view waits for the run's next revision.
    eventOnly: run.status === 'RUNNING',
  };
};

/**
 * A 1.1 follow-up with `ifGenerationMatch` applies only to the task at that generation
 * (docs/protocol.md §16). Checked on the row this plan's conditional write expects, after the retry
 * checks (a retry answers from the task its first send moved on); a task without generations has
 * none to match. A new task ignores the field (it has no generation yet).
 */
const checkGenerationMatch = (input: CreateTaskInput, current: StoredTask): void => {
  const expected = input.configuration?.ifGenerationMatch;
  if (expected === undefined) return;
  const generation = current.generation ?? 0;
  if (generation !== expected) throw new TaskGenerationMismatchError(current.taskId, expected, generation);
};

/**
 * A follow-up message continues an interrupted task as a new run (multi-turn, docs/protocol.md §10). The task moves on
 * to WORKING at once: SUBMITTED is only a new task's first state, and no channel ever shows a task
 * going back to it. The run's claim then leaves the task as it is.
 */
export const planFollowUp = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  run: RunRecord,
  now: Date,
  expiresAt: number,
): Promise<Plan | Earlier> => {
  const { taskId } = run;
  const current = await deps.tasks.getTask(taskId);
  if (current === undefined || !isOwnTask(current, senderOf(input)) || isExpired(current.expiresAt, now)) {
    throw new TaskNotFoundError(taskId);
  }
  if (input.message.contextId !== undefined && input.message.contextId !== current.contextId) {
    throw new InvalidParamsError([
      { field: 'message.contextId', description: 'contextId does not match the task identified by taskId' },
    ]);
  }
  // A retry of this follow-up (I-RETRY): the run it derives is there already. Only
  // looked up when the task would refuse a new message, so a first follow-up costs no extra read.
  if (current.currentRunId === run.runId) return { earlier: current, runId: run.runId };
  if (!isInterrupted(current.state)) {
    if (await sentBefore(deps, current, run.runId)) return { earlier: current, runId: run.runId };
    checkGenerationMatch(input, current);
    if (isTerminal(current.state)) {
      throw new UnsupportedOperationError('Task is in a terminal state and cannot accept messages', {
        taskId,
        state: current.state,
      });
    }
    throw new TaskAlreadyWorkingError(taskId, current.state);
  }
  const message: Message = { ...input.message, taskId, contextId: current.contextId };
  const history = await loadHistory(deps, current);
  // This messageId is in the task already: a retry whose turn has come back to input, or another
  // message under a reused messageId, which is a new message (I-RETRY).
  if (
    history.some((entry) => entry.message.messageId === input.message.messageId) &&
    (await sentBefore(deps, current, run.runId))
  ) {
    return { earlier: current, runId: run.runId };
  }
  checkGenerationMatch(input, current);
  const revision = current.revision + 1;
  // Appended as it is: a reused messageId already in the history is another message (above).
  const extended: HistoryEntry[] = [...history, { revision, message }];
  checkHistoryLimit(extended, limitsOf(deps.config));
  const task = advanceTask(current, 'TASK_STATE_WORKING', now, {
    currentRunId: run.runId,
    sealedStatusMessage: undefined,
    // The turn writes what it adds: the row lets its older entries go as segments (docs/data-model.md, "History").
    ...(await historyFieldsFor(deps.codec, current, history, extended, { revision })),
    expiresAt: Math.max(current.expiresAt, expiresAt),
  });
  // The new run replaces the row's run, which moves to its own row.
  const replaced = (await deps.tasks.getRunWithTask(taskId, current.currentRunId)).run;
  const taskRun: RunRecord = { ...run, taskId };
  return {
    task,
    run: taskRun,
    row: {
      taskId,
      task,
      run: taskRun,
      expect: { revision: current.revision },
      before: current,
      archive: replaced ?? 'none',
    },
  };
};
