import { MessageIdReusedError, type VersionConflictError } from '../../domain/errors.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { isExpired, isOwnTask } from '../../domain/task.ts';
import type { CreatedTask, CreateTaskDeps, CreateTaskInput } from './create-task.ts';
import { senderOf } from './message-identity.ts';

/**
 * Retry detection (I-RETRY, docs/invariants.md): a message accepted before derives the same task
 * and run ids (`message-identity.ts`), so its retry finds what its first send created or continued
 * and creates and runs nothing.
 */

/** The message was accepted before (I-RETRY): the task it created or continued, as read now. */
export interface Earlier {
  readonly earlier: StoredTask;
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
 * A new task's derived id is taken (its create lost the "only if absent" condition): by an earlier
 * send of this message, which is then answered, or of another one with the same messageId, refused.
 */
export const earlierCreate = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  planned: StoredTask,
  runId: string,
  conflict: VersionConflictError,
): Promise<Earlier> => {
  const current = await deps.tasks.getTask(planned.taskId);
  // The id is derived from the sender and the messageId: a row of someone else's cannot hold it.
  if (current === undefined || !isOwnTask(current, senderOf(input))) throw conflict;
  if (!isExpired(current.expiresAt, deps.clock.now()) && (await sentBefore(deps, current, runId))) {
    return { earlier: current };
  }
  // Other content, or a task of this messageId whose retention has passed (I-PURGE).
  throw new MessageIdReusedError(input.message.messageId);
};
