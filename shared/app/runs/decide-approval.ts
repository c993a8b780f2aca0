import {
  type ApprovalRecord,
  ApprovalRefusedError,
  type ApprovalRepository,
} from '../../domain/approvals.ts';
import { VersionConflictError } from '../../domain/errors.ts';
import type { ApprovalVerdict } from '../../domain/model.ts';
import type { Clock, RunQueue, TaskRepository } from '../../domain/ports.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { runAloneWrite } from '../../domain/row-writes.ts';
import { isExpired, moveRun, type RunRecord } from '../../domain/task.ts';
import { truncateText } from '../../domain/text.ts';

export interface DecideApprovalDeps {
  readonly tasks: TaskRepository;
  readonly approvals: ApprovalRepository;
  readonly queue: RunQueue;
  readonly clock: Clock;
}

export interface DecideApprovalInput {
  readonly approvalId: string;
  readonly verdict: ApprovalVerdict;
  /** Who decided (the operator's name), recorded with the decision. */
  readonly decidedBy: string;
  /** The digest the operator saw; a decision for other calls than the pending ones is refused. */
  readonly digest?: string;
  /** For a denial: told to the model. */
  readonly reason?: string;
}

/** A denial reason reaches the model and, through it, possibly the answer: kept short. */
export const maxReasonLength = 500;

/**
 * An operator approves or denies a suspended run's pending calls (I-APPROVAL, docs/operations.md,
 * "Approvals"). One transaction records the decision on the approval record — only if it is still PENDING for
 * the same digest — and puts the run back in QUEUED with its verdict (conditioned on the run version,
 * I-LOCK); then the run is queued. Two decisions never both win; a decision never applies to calls it was not
 * made for. A run that cannot be queued gets its wait back (the decision is undone), so the operator can
 * decide again.
 */
export const decideApproval = async (
  deps: DecideApprovalDeps,
  input: DecideApprovalInput,
): Promise<ApprovalRecord> => {
  const now = deps.clock.now();
  const approval = await deps.approvals.get(input.approvalId);
  if (approval === undefined || isExpired(approval.expiresAt, now))
    throw refused('NOT_FOUND', input.approvalId, 'No such approval (never existed, or purged).');
  if (approval.decision !== 'PENDING')
    throw refused('ALREADY_DECIDED', approval.approvalId, `Already decided: ${approval.decision}.`);
  if (input.digest !== undefined && input.digest !== approval.digest)
    throw refused('DIGEST_MISMATCH', approval.approvalId, 'The digest does not match the pending calls.');
  const { run, task } = await deps.tasks.getRunWithTask(approval.taskId, approval.runId);
  if (!waitsFor(run, approval)) throw notAwaiting(approval);

  const reason =
    input.verdict === 'denied' && input.reason !== undefined
      ? truncateText(input.reason, maxReasonLength)
      : undefined;
  const decided: ApprovalRecord = {
    ...approval,
    decision: input.verdict === 'approved' ? 'APPROVED' : 'DENIED',
    decidedBy: input.decidedBy,
    decidedAt: now.toISOString(),
    ...(reason !== undefined && { reason }),
  };
  const queuedRun = moveRun(run, 'QUEUED', {
    approval: { ...run.approval, verdict: input.verdict, ...(reason !== undefined && { reason }) },
  });
  const runWrite = runAloneWrite(task, run, queuedRun);
  try {
    await deps.tasks.commit({
      ...runWrite,
      items: [
        { entity: 'approval', item: decided, expect: { decision: 'PENDING', digest: approval.digest } },
        ...(runWrite.items ?? []),
      ],
    });
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    const fresh = await deps.approvals.get(approval.approvalId);
    if (fresh !== undefined && fresh.decision !== 'PENDING')
      throw refused('ALREADY_DECIDED', approval.approvalId, `Already decided: ${fresh.decision}.`);
    throw notAwaiting(approval);
  }
  try {
    await deps.queue.enqueue({ taskId: run.taskId, runId: run.runId });
  } catch (error) {
    await undoDecision(deps, approval, decided, run, queuedRun, task);
    throw error;
  }
  return decided;
};

/** The run still waits for exactly this approval (not canceled, not waiting for other calls). */
const waitsFor = (
  run: RunRecord | undefined,
  approval: ApprovalRecord,
): run is RunRecord & { approval: NonNullable<RunRecord['approval']> } =>
  run !== undefined &&
  run.status === 'AWAITING_APPROVAL' &&
  run.approval?.approvalId === approval.approvalId &&
  run.approval.digest === approval.digest;

/** Best effort: if the queue refused, the run waits again (unless something moved it meanwhile). */
const undoDecision = async (
  deps: DecideApprovalDeps,
  pending: ApprovalRecord,
  decided: ApprovalRecord,
  waiting: RunRecord,
  queued: RunRecord,
  task: StoredTask | undefined,
): Promise<void> => {
  const runWrite = runAloneWrite(
    task,
    queued,
    moveRun(queued, 'AWAITING_APPROVAL', { approval: waiting.approval }),
  );
  try {
    await deps.tasks.commit({
      ...runWrite,
      items: [
        { entity: 'approval', item: pending, expect: { decision: decided.decision, digest: decided.digest } },
        ...(runWrite.items ?? []),
      ],
    });
  } catch (error) {
    // The run moved on (canceled meanwhile): nothing to undo.
    if (!(error instanceof VersionConflictError)) throw error;
  }
};

const refused = (refusal: ApprovalRefusedError['refusal'], approvalId: string, message: string) =>
  new ApprovalRefusedError(refusal, approvalId, message);

const notAwaiting = (approval: ApprovalRecord) =>
  refused(
    'NOT_AWAITING',
    approval.approvalId,
    'The run no longer waits for this approval (canceled or ended).',
  );

/**
 * Pending approvals for the operator, oldest first; expired ones are gone (I-PURGE). A record whose
 * run no longer waits for it (the task was canceled) is marked WITHDRAWN on the way and left out.
 */
export const listPendingApprovals = async (
  deps: Pick<DecideApprovalDeps, 'approvals' | 'clock' | 'tasks'>,
  limit = 100,
): Promise<ApprovalRecord[]> => {
  const now = deps.clock.now();
  const pending = (await deps.approvals.listPending(limit)).filter(
    (approval) => !isExpired(approval.expiresAt, now),
  );
  const waiting = await Promise.all(
    pending.map(async (approval) => {
      if (waitsFor(await deps.tasks.getRun(approval.taskId, approval.runId), approval)) return true;
      await withdraw(deps, approval);
      return false;
    }),
  );
  return pending.filter((_, index) => waiting[index]);
};

const withdraw = async (deps: Pick<DecideApprovalDeps, 'tasks'>, approval: ApprovalRecord): Promise<void> => {
  try {
    await deps.tasks.commit({
      items: [
        {
          entity: 'approval',
          item: { ...approval, decision: 'WITHDRAWN' },
          expect: { decision: 'PENDING', digest: approval.digest },
        },
      ],
    });
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
  }
};
