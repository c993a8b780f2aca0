import type { Message } from '../../domain/a2a.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { advanceTask, appendHistory } from '../../domain/task.ts';
import type { TaskContentCodec } from './task-content.ts';
import { droppedHistory, historyFieldsFor } from './task-history.ts';

/** How a task is ended without an agent answer: a fixed status message that names no content. */
export interface FixedEnd {
  readonly state: 'TASK_STATE_FAILED' | 'TASK_STATE_CANCELED';
  /** Unique per ending (`<runId>-failed`, …): history entries are deduplicated by it. */
  readonly messageId: string;
  readonly text: string;
  /** The public `metadata.reason`, when the ending has one. */
  readonly reason?: string;
  /** The answer ceiling no longer allows keeping content: prior artifacts and history are dropped. */
  readonly dropContent?: boolean;
  /** The message also joins the task's history (a cancel's does). */
  readonly recordInHistory?: boolean;
  /** The task's new expiry (retention from the end, I-PURGE); unset keeps it. */
  readonly expiresAt?: number;
}

/**
 * The one way a task ends with a fixed message (a failure the agent did not answer, a reap, an
 * unqueued run, a cancel): its next revision, with the message sealed as its status message.
 */
export const endTaskWith = async (
  codec: TaskContentCodec,
  task: StoredTask,
  end: FixedEnd,
  now: Date,
): Promise<StoredTask> => {
  const revision = task.revision + 1;
  const statusMessage: Message = {
    messageId: end.messageId,
    role: 'ROLE_AGENT',
    taskId: task.taskId,
    contextId: task.contextId,
    parts: [{ text: end.text }],
  };
  // The row's own entries suffice: a fixed message changes none that it let go (docs/data-model.md, "History").
  const kept = end.recordInHistory ? await codec.openHistory(task.taskId, task.sealedHistory) : undefined;
  const history =
    kept &&
    (await historyFieldsFor(codec, task, kept, appendHistory(kept, revision, [statusMessage]), { revision }));
  const sealed = await codec.seal(task.taskId, { statusMessage });
  return advanceTask(task, end.state, now, {
    sealedStatusMessage: sealed.sealedStatusMessage,
    ...history,
    ...(end.dropContent && { sealedArtifacts: undefined, ...droppedHistory(revision) }),
    ...(end.reason !== undefined && { metadata: { ...task.metadata, reason: end.reason } }),
    ...(end.expiresAt !== undefined && { expiresAt: Math.max(task.expiresAt, end.expiresAt) }),
  });
};
