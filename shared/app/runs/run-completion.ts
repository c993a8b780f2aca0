import type { Artifact, JsonObject, Message, TaskState } from '../../domain/a2a.ts';
import { ItemTooLargeError, SealingFailedError, VersionConflictError } from '../../domain/errors.ts';
import type { AgentOutcome } from '../../domain/ports.ts';
import { answerOutcome } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { redactArtifacts, redactMessage } from '../../domain/redaction.ts';
import { taskAndRunWrite } from '../../domain/row-writes.ts';
import {
  advanceTask,
  appendHistory,
  type HistoryEntry,
  type RunRecord,
  settleRun,
} from '../../domain/task.ts';
import { failpoint } from '../operations/failpoints.ts';
import { historyFieldsFor, loadHistory } from '../tasks/task-history.ts';
import {
  commitRevision,
  type ExecuteRunResult,
  failureTexts,
  type RunDeps,
  retentionFrom,
} from './run-context.ts';
import { fail, failNotRetainable, reread } from './run-ending.ts';
import { redactHistory } from './run-tightening.ts';

interface FinalContent {
  readonly state: TaskState;
  readonly runStatus: 'COMPLETED' | 'FAILED';
  readonly statusMessage?: Message;
  readonly artifacts?: readonly Artifact[];
  readonly result: ExecuteRunResult;
  /** Public, content-free task metadata this outcome adds (e.g. `responseKind`). */
  readonly metadata?: JsonObject;
}

const finalStates = {
  completed: 'TASK_STATE_COMPLETED',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  rejected: 'TASK_STATE_REJECTED',
  failed: 'TASK_STATE_FAILED',
} as const;

const finalContentOf = (outcome: AgentOutcome): FinalContent =>
  outcome.kind === 'message'
    ? // A direct Message answer still completes the durable task: the message is its final status
      // message, there are no artifacts, and the marker tells the blocking SendMessage to answer
      // `{"message": …}` (docs/protocol.md).
      {
        state: 'TASK_STATE_COMPLETED',
        runStatus: 'COMPLETED',
        statusMessage: outcome.message,
        artifacts: [],
        result: 'completed',
        metadata: { responseKind: 'message' },
      }
    : {
        state: finalStates[outcome.kind],
        // A failed outcome fails the run; every other outcome completes it (its task may wait for input).
        runStatus: outcome.kind === 'failed' ? 'FAILED' : 'COMPLETED',
        statusMessage: outcome.message,
        // Only completed and input-required outcomes carry artifacts.
        artifacts: 'artifacts' in outcome ? outcome.artifacts : undefined,
        result: outcome.kind,
      };

const maxCompleteAttempts = 3;

/**
 * The completing write (I-RESULT): run settled with version + 1 conditioned on the version read,
 * task in its new state with its sealed result, all or nothing (one write of the task row that
 * holds its run). The answer ceiling is read again under the lock: a concurrent tightening makes
 * the version check fail, and the completion tries again with it.
 */
export const completeRun = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  outcome: AgentOutcome,
  /** Opened once at the run's start: redaction is idempotent, so a scrubbed row needs no reopening. */
  history: readonly HistoryEntry[],
): Promise<ExecuteRunResult> => {
  let currentRun = run;
  let currentTask = task;
  let currentHistory = history;
  for (let attempt = 1; ; attempt++) {
    const decision = answerOutcome(currentRun.answerCeiling);
    if (decision === 'not-retainable')
      return failNotRetainable(deps, currentRun, currentTask, currentRun.version);
    const content = finalContentOf(outcome);
    const keep = decision === 'keep-redacted' ? redactContent(content) : content;
    const keptHistory = decision === 'keep-redacted' ? redactHistory(currentHistory) : currentHistory;
    try {
      await commitFinal(deps, currentRun, currentTask, { stored: currentHistory, kept: keptHistory }, keep);
      return keep.result;
    } catch (error) {
      if (error instanceof SealingFailedError)
        return fail(deps, currentRun, currentTask, failureTexts.notStorable, 'SEALING_FAILED');
      if (!(error instanceof VersionConflictError)) {
        if (error instanceof ItemTooLargeError)
          return fail(deps, currentRun, currentTask, failureTexts.notStorable, 'RESULT_NOT_STORABLE');
        throw error;
      }
      const fresh = await reread(deps, currentRun, currentTask);
      if (fresh.kind === 'ended') return fresh.result;
      if (attempt >= maxCompleteAttempts) throw error;
      currentRun = { ...fresh.run, attempts: currentRun.attempts };
      currentTask = fresh.task;
      currentHistory = await loadHistory(deps, currentTask);
    }
  }
};

const redactContent = (content: FinalContent): FinalContent => ({
  ...content,
  statusMessage: content.statusMessage ? redactMessage(content.statusMessage) : undefined,
  artifacts: content.artifacts ? redactArtifacts([...content.artifacts]) : undefined,
});

const commitFinal = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  /** The history as stored and as this write keeps it (redacted at `redacted`), before its new entry. */
  history: { readonly stored: readonly HistoryEntry[]; readonly kept: readonly HistoryEntry[] },
  content: FinalContent,
): Promise<void> => {
  const now = deps.clock.now();
  const revision = task.revision + 1;
  const [sealed, historyFields] = await Promise.all([
    deps.codec.seal(task.taskId, { statusMessage: content.statusMessage, artifacts: content.artifacts }),
    // The turn writes what it adds, and the segments redaction changed (docs/data-model.md, "History").
    historyFieldsFor(
      deps.codec,
      task,
      history.stored,
      appendHistory(history.kept, revision, [content.statusMessage]),
      { revision },
    ),
  ]);
  const finalTask = advanceTask(task, content.state, now, {
    sealedStatusMessage: sealed.sealedStatusMessage,
    sealedArtifacts: sealed.sealedArtifacts ?? task.sealedArtifacts,
    artifactCount: content.artifacts?.length ?? task.artifactCount,
    ...historyFields,
    ...(content.metadata && { metadata: { ...task.metadata, ...content.metadata } }),
    expiresAt: Math.max(task.expiresAt, retentionFrom(deps, now)),
  });
  const settledRun = settleRun(run, content.runStatus, now, finalTask.expiresAt);
  failpoint('executor.beforeSettle');
  await commitRevision(deps, { row: taskAndRunWrite(task, finalTask, run, settledRun) });
  // No audit row for the completion: the run record holds its status and end.
  failpoint('executor.insideSettle');
};
