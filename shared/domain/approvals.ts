import type { ApprovalVerdict, PendingToolTurn, ToolResult, TranscriptEntry } from './model.ts';

/**
 * Approvals (I-APPROVAL, docs/operations.md, "Approvals"). A tool with `requiresApproval` suspends its run:
 * the transcript so far and the pending calls are sealed on the run row, the run waits in
 * AWAITING_APPROVAL, and an approval record (metadata only) waits for an operator. The decision
 * is bound to the exact pending calls by a digest; the resumed run continues from the sealed
 * state without calling the model again for finished steps.
 */

/** What a suspended run must remember to continue exactly where it stopped. Sealed, never plain. */
export interface SuspendedRun {
  /** Random, so the digest of small arguments cannot be guessed from the plain record. */
  readonly nonce: string;
  /** The provider of the chain (0 = primary) whose attempt suspended; the resume continues on it. */
  readonly providerIndex: number;
  /** The task revision whose history the run answered: the resumed transcript starts identical. */
  readonly historyRevision: number;
  readonly rounds: number;
  readonly steps: readonly TranscriptEntry[];
  readonly pending: PendingToolTurn;
  /**
   * A run that waits at a delegated call (docs/configuration.md `a2aAgents`): the results of the
   * turn's calls before it, and the turn's decision when it was a decided one.
   */
  readonly done?: readonly ToolResult[];
  readonly verdict?: ApprovalVerdict;
  readonly reason?: string;
}

export const approvalDecisions = ['PENDING', 'APPROVED', 'DENIED', 'WITHDRAWN'] as const;
export type ApprovalDecision = (typeof approvalDecisions)[number];

/**
 * The operator's record of one suspension: metadata only (ids, tool names, a digest, times, who
 * decided). It never holds a tool argument; retention `privacy.retention.approval` (I-PURGE).
 */
export interface ApprovalRecord {
  /** `<taskId>.<revision>`: the task revision that said the task waits (unique per suspension). */
  readonly approvalId: string;
  readonly taskId: string;
  readonly runId: string;
  /** Digest of the exact pending calls (and the sealed nonce); a decision is bound to it. */
  readonly digest: string;
  readonly toolNames: readonly string[];
  readonly requestedAt: string;
  /** WITHDRAWN: the task was canceled (or the run ended) before anyone decided. */
  readonly decision: ApprovalDecision;
  readonly decidedBy?: string;
  readonly decidedAt?: string;
  /** An operator's reason for a denial; told to the model. */
  readonly reason?: string;
  /** Epoch seconds (I-PURGE). */
  readonly expiresAt: number;
}

/**
 * A new approval, PENDING, for the suspension that the task's `revision` announces: its id is
 * `<taskId>.<revision>`, its tool names the distinct ones of the pending calls.
 */
export const newApproval = (
  run: Pick<ApprovalRecord, 'taskId' | 'runId'>,
  revision: number,
  digest: string,
  toolNames: readonly string[],
  now: Date,
  expiresAt: number,
): ApprovalRecord => ({
  approvalId: approvalIdOf(run.taskId, revision),
  taskId: run.taskId,
  runId: run.runId,
  digest,
  toolNames: [...new Set(toolNames)],
  requestedAt: now.toISOString(),
  decision: 'PENDING',
  expiresAt,
});

/** The approval a run waits for (or was decided), as the run row carries it: metadata only. */
export interface RunApproval {
  readonly approvalId: string;
  readonly digest: string;
  readonly verdict?: 'approved' | 'denied';
  readonly reason?: string;
}

export const approvalIdOf = (taskId: string, revision: number): string => `${taskId}.${revision}`;

/** The task id inside an approval id, or undefined when the id has not the `<taskId>.<revision>` shape. */
export const taskIdOfApproval = (approvalId: string): string | undefined => {
  const match = /^(.+)\.(\d+)$/.exec(approvalId);
  return match?.[1];
};

/** The fixed status message of a task whose run waits; it names no tool and no argument. */
export const awaitingApprovalText = 'The agent is waiting for an operator to approve a tool call.';

/** What the model reads for a call the operator denied. */
export const deniedCallText = 'An operator denied this tool call; it was not run.';

/** Reasons the approval store is read by: pending ones for the list, one by id for a decision. */
export interface ApprovalRepository {
  get(approvalId: string): Promise<ApprovalRecord | undefined>;
  /** Pending approvals, oldest first, from a sparse index (never a scan). */
  listPending(limit: number): Promise<ApprovalRecord[]>;
}

export type ApprovalRefusal =
  | 'NOT_FOUND'
  | 'ALREADY_DECIDED'
  | 'DIGEST_MISMATCH'
  /** The run no longer waits (canceled, expired) or waits for other calls. */
  | 'NOT_AWAITING';

/** A decision the store refused; nothing was recorded or queued. */
export class ApprovalRefusedError extends Error {
  override readonly name = 'ApprovalRefusedError';
  constructor(
    readonly refusal: ApprovalRefusal,
    readonly approvalId: string,
    message: string,
  ) {
    super(message);
  }
}
