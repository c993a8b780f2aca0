import type { VersionConflictError } from '../../domain/errors.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { isExpired, isOwnTask } from '../../domain/task.ts';
import type { CreatedTask, CreateTaskDeps, CreateTaskInput } from './create-task.ts';
import { actedOn, senderOf } from './message-identity.ts';

/**
 * Retry detection (I-RETRY, docs/invariants.md): a message accepted before derives the same task
 * and run ids (`message-identity.ts`), so its retry finds what its first send created or continued
 * and creates and runs nothing.
 */

/** The message was accepted before (I-RETRY): the task it created or continued, as read now, and its run. */
export interface Earlier {
  readonly earlier: StoredTask;
  readonly runId: string;
}

/**
 * A retry answers from the task as it is now (I-RYW: at its current revision or later). Its run
 * still QUEUED may be one whose first send crashed between its commit and its enqueue: it is
 * queued again — a duplicate wake-up is harmless, the claim is one conditional write (I-ONCE).
 * A run its create claimed is RUNNING: its first send may still be running it,
 * so only its lease tells, and the reaper queues it again once that is over (no start marker).
 */
export const answerRetry = async (
  deps: CreateTaskDeps,
  task: StoredTask,
  runId: string,
): Promise<CreatedTask> => {
  const run = await deps.tasks.getRun(task.taskId, runId);
  if (run?.status === 'QUEUED') await deps.queue.enqueue({ taskId: task.taskId, runId });
  return { taskId: task.taskId, revision: task.revision };
};

/** Whether the run this message derives exists in the task: then the message was accepted before. */
export const sentBefore = async (deps: CreateTaskDeps, task: StoredTask, runId: string): Promise<boolean> =>
  task.currentRunId === runId || (await deps.tasks.getRun(task.taskId, runId)) !== undefined;

/**
 * The task a new task's derived id names, when this send is a retry of the one that created it:
 * the caller has not acted on it since and its retention has not passed. Undefined: the send is a
 * new message, for the next level (I-RETRY).
 */
export const earlierCreate = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  planned: StoredTask,
  runId: string,
  conflict: VersionConflictError,
): Promise<Earlier | undefined> => {
  const current = await deps.tasks.getTask(planned.taskId);
  // The id is derived from the sender and the whole send: a row of someone else's cannot hold it.
  if (current === undefined || !isOwnTask(current, senderOf(input))) throw conflict;
  // A task whose retention has passed is gone for its caller (I-PURGE): the send is new.
  if (isExpired(current.expiresAt, deps.clock.now()) || actedOn(current, runId)) return undefined;
  return { earlier: current, runId };
};
