import type { Message } from '../../domain/a2a.ts';
import type { RowExpectation, TaskRowWrite } from '../../domain/ports.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { taskAndRunWrite } from '../../domain/row-writes.ts';
import { advanceTask, appendHistory, type RunRecord } from '../../domain/task.ts';
import {
  type CommitDeps,
  commitAndProject,
  type JournalPlace,
  type Projected,
} from '../journal/write-through.ts';
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

/** The task's current run in the ending write. */
export interface RunAtEnd {
  /** The run as read: its version conditions the write. */
  readonly read: RunRecord;
  /** The run as the ending writes it (settled with its task, or flagged for its executor). */
  readonly next: (ended: StoredTask) => RunRecord;
}

export interface TaskEnding {
  /** The task as read: its revision conditions the write (I-LOCK). */
  readonly task: StoredTask;
  readonly end: FixedEnd;
  /** Absent: the task has no run left to change (none, or settled already), and its row alone is written. */
  readonly run?: RunAtEnd;
  /** Conditions beyond the revision and the run version (the reaper's lease fence). */
  readonly expect?: Omit<RowExpectation, 'revision' | 'runVersion'>;
  /** Where the caller knows the task's journal is (`commitAndProject`); unknown: one read first. */
  readonly after?: JournalPlace;
  readonly now: Date;
}

export interface EndTaskDeps extends CommitDeps {
  readonly codec: TaskContentCodec;
}

/**
 * The one way a task ends without an agent answer (a failure the agent did not answer, a reap, an
 * unqueued run, a cancel): the fixed message sealed as its status message, the task's next
 * revision and its run's end in one conditional write of the task row (I-LOCK), then its journal
 * write (docs/architecture.md "The journal write"). A lost condition throws
 * `VersionConflictError`; each caller decides what that means for it.
 */
export const endTask = async (
  deps: EndTaskDeps,
  ending: TaskEnding,
): Promise<{ readonly task: StoredTask; readonly projected: Projected }> => {
  const { task, run, now } = ending;
  const ended = await endedTask(deps.codec, task, ending.end, now);
  const row: TaskRowWrite =
    run === undefined
      ? {
          taskId: task.taskId,
          task: ended,
          expect: { ...ending.expect, revision: task.revision },
          before: task,
        }
      : taskAndRunWrite(task, ended, run.read, run.next(ended), ending.expect);
  const { projected } = await commitAndProject(deps, { row }, { after: ending.after });
  return { task: ended, projected };
};

/** The task's next revision, with the fixed message sealed as its status message. */
const endedTask = async (
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
