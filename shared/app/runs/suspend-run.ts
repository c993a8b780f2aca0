import { createHash } from 'node:crypto';
import type { Config } from '../../config/config.ts';
import type { Message } from '../../domain/a2a.ts';
import {
  type ApprovalRecord,
  awaitingApprovalText,
  newApproval,
  type SuspendedRun,
} from '../../domain/approvals.ts';
import type { AgentSession, DecidedToolTurn, PendingToolTurn } from '../../domain/model.ts';
import type { Clock } from '../../domain/ports.ts';
import { retentionExpiry } from '../../domain/privacy.ts';
import type { SealedBlob, StoredTask } from '../../domain/projection.ts';
import { taskAndRunWrite } from '../../domain/row-writes.ts';
import {
  advanceTask,
  appendHistory,
  type HistoryEntry,
  moveRun,
  type RunDelegation,
  type RunRecord,
} from '../../domain/task.ts';
import {
  type CommitDeps,
  type Committed,
  commitAndProject,
  type JournalPlace,
} from '../journal/write-through.ts';
import type { TaskContentCodec } from '../tasks/task-content.ts';
import { historyFieldsFor } from '../tasks/task-history.ts';
import { type RecordAuditDeps, recordAuditStep } from './record-audit.ts';

/**
 * Suspending a run for an approval and resuming it (I-APPROVAL, docs/operations.md, "Approvals"). The
 * transcript so far and the pending calls are sealed on the run row (bound to task and run);
 * the run waits in AWAITING_APPROVAL without a lease, the task stays WORKING with a fixed status
 * message, and a metadata-only approval record waits for an operator — all in one transaction
 * on the version and revision the executor holds (I-LOCK).
 */

export interface SuspendDeps extends RecordAuditDeps, CommitDeps {
  readonly codec: TaskContentCodec;
  readonly clock: Clock;
  readonly config: Config;
}

/**
 * Binds a decision to the exact pending calls: ids, names and arguments, with the run and the
 * sealed nonce (so the plain digest reveals nothing about small arguments).
 */
export const approvalDigest = (runId: string, state: Pick<SuspendedRun, 'nonce' | 'pending'>): string =>
  createHash('sha256')
    .update(JSON.stringify({ runId, nonce: state.nonce, calls: state.pending.toolCalls }))
    .digest('hex');

export interface SuspendInput {
  readonly run: RunRecord;
  readonly task: StoredTask;
  /** The task history as the run opened it. */
  readonly history: readonly HistoryEntry[];
  readonly session: AgentSession;
  readonly pending: PendingToolTurn;
  readonly providerIndex: number;
  readonly historyRevision: number;
  /** Where the run knows the task's revision before this one is in the journal. */
  readonly journaled?: JournalPlace;
}

/**
 * Commits the suspension and projects its revision: the approval waiting, and what the journal
 * write did. Rejects with VersionConflictError when a cancel (or anything) moved run or task.
 */
export const suspendRun = async (
  deps: SuspendDeps,
  input: SuspendInput,
): Promise<{ readonly approval: ApprovalRecord; readonly committed: Committed }> => {
  const { run, task } = input;
  const now = deps.clock.now();
  const state: SuspendedRun = {
    nonce: crypto.randomUUID(),
    providerIndex: input.providerIndex,
    historyRevision: input.historyRevision,
    rounds: input.session.rounds,
    steps: [...input.session.steps],
    pending: input.pending,
  };
  const revision = task.revision + 1;
  const statusMessage: Message = {
    messageId: `${run.runId}-approval-${revision}`,
    role: 'ROLE_AGENT',
    taskId: task.taskId,
    contextId: task.contextId,
    parts: [{ text: awaitingApprovalText }],
  };
  const [sealedSuspension, sealed] = await Promise.all([
    deps.codec.sealSuspension(task.taskId, run.runId, state),
    deps.codec.seal(task.taskId, { statusMessage }),
  ]);
  const history = await historyFieldsFor(
    deps.codec,
    task,
    input.history,
    appendHistory(input.history, revision, [statusMessage]),
    { revision },
  );
  // Runs waiting for an approval are kept for `privacy.retention.approval` (I-PURGE).
  const expiresAt = retentionExpiry(deps.config.privacy.retention, 'approval', now);
  const approval = newApproval(
    run,
    revision,
    approvalDigest(run.runId, state),
    input.pending.toolCalls.map((call) => call.name),
    now,
    expiresAt,
  );
  const waitingRun = moveRun(run, 'AWAITING_APPROVAL', {
    leaseUntil: undefined,
    sealedSuspension,
    approval: { approvalId: approval.approvalId, digest: approval.digest },
    expiresAt,
  });
  const waitingTask = advanceTask(task, 'TASK_STATE_WORKING', now, {
    sealedStatusMessage: sealed.sealedStatusMessage,
    ...history,
    expiresAt,
  });
  const committed = await commitAndProject(
    deps,
    {
      row: taskAndRunWrite(task, waitingTask, run, waitingRun),
      items: [{ entity: 'approval', item: approval, expect: 'absent' }],
    },
    { after: input.journaled },
  );
  await recordAuditStep(deps, waitingRun, {
    kind: 'suspend',
    reason: 'AWAITING_APPROVAL',
    toolNames: approval.toolNames,
  });
  return { approval, committed };
};

export type Resumption =
  | {
      readonly kind: 'resume';
      readonly session: AgentSession;
      readonly providerIndex: number;
      readonly historyRevision: number;
    }
  /** The sealed state does not match the decision's digest, or no decision was recorded. */
  | { readonly kind: 'refused'; readonly reason: 'APPROVAL_MISMATCH' | 'APPROVAL_MISSING' };

/**
 * Opens a decided run's sealed state. The decision applies only if the calls about to run are the
 * ones it was made for: the digest is recomputed from the opened state and compared.
 */
export const resumptionOf = async (deps: Pick<SuspendDeps, 'codec'>, run: RunRecord): Promise<Resumption> => {
  if (run.delegation !== undefined && run.sealedSuspension !== undefined)
    return delegationResumption(deps, run, run.delegation, run.sealedSuspension);
  const verdict = run.approval?.verdict;
  if (run.sealedSuspension === undefined || verdict === undefined)
    return { kind: 'refused', reason: 'APPROVAL_MISSING' };
  const state = await deps.codec.openSuspension(run.taskId, run.runId, run.sealedSuspension);
  if (approvalDigest(run.runId, state) !== run.approval?.digest)
    return { kind: 'refused', reason: 'APPROVAL_MISMATCH' };
  return resumeAt(state, {
    turn: state.pending,
    verdict,
    ...(run.approval.reason !== undefined && { reason: run.approval.reason }),
  });
};

/** The run continued from its sealed state, settling `decided` first. */
const resumeAt = (state: SuspendedRun, decided: DecidedToolTurn): Resumption => ({
  kind: 'resume',
  session: { steps: [...state.steps], rounds: state.rounds, decided },
  providerIndex: state.providerIndex,
  historyRevision: state.historyRevision,
});

/**
 * A run queued again while it waited at a delegated call (docs/configuration.md `a2aAgents`):
 * it continues at that call's turn — the results of the calls before it kept, the delegated call
 * reading its recorded remote task instead of sending again (I-EFFECT), the calls after it made.
 */
const delegationResumption = async (
  deps: Pick<SuspendDeps, 'codec'>,
  run: RunRecord,
  delegation: RunDelegation,
  sealed: SealedBlob,
): Promise<Resumption> => {
  const state = await deps.codec.openSuspension(run.taskId, run.runId, sealed);
  return resumeAt(state, {
    turn: state.pending,
    // A turn that was not decided had no gated call: its calls all run.
    verdict: state.verdict ?? 'approved',
    ...(state.reason !== undefined && { reason: state.reason }),
    done: state.done ?? [],
    remoteTask: { callId: delegation.callId, remoteTaskId: delegation.remoteTaskId },
  });
};
