import type { AuditRowSummary, AuditTrail } from '../../domain/audit.ts';
import { TaskNotFoundError } from '../../domain/errors.ts';
import type { RunCatalog } from '../../domain/operations.ts';
import type { TaskRepository } from '../../domain/ports.ts';
import { isExpired, type RunRecord, type TaskRecord } from '../../domain/task.ts';

/**
 * Run inspection for operators (`admin runs show <taskId>`): metadata only — the task's state,
 * its runs (status, version, ceilings, attempts, how they ended) and its audit rows without
 * content. Nothing here opens a sealed field; the use case holds no sealer. Expired tasks are
 * shown with `expired: true` (operators may look at what the purge is about to delete; remote
 * callers never can).
 *
 * How a run ended is read from the run record (status, `endedAt`) and, for the failure reason,
 * from its task: the audit trail has no row for a run's end.
 */

export interface RunInspection {
  readonly task: Omit<TaskRecord, 'owner'> & { readonly tenant: string; readonly principal: string };
  readonly expired: boolean;
  readonly runs: readonly InspectedRun[];
  readonly audit: readonly AuditRowSummary[];
}

/** A run as stored, with the public reason it failed for when its task holds it. */
export type InspectedRun = RunRecord & { readonly reason?: string };

export interface InspectRunsDeps {
  readonly tasks: Pick<TaskRepository, 'getTask'>;
  readonly runs: RunCatalog;
  readonly audit: Pick<AuditTrail, 'listForTask'>;
}

export const inspectRuns = async (
  deps: InspectRunsDeps,
  taskId: string,
  now: Date,
): Promise<RunInspection> => {
  const [stored, runs, audit] = await Promise.all([
    deps.tasks.getTask(taskId),
    deps.runs.listRuns(taskId),
    deps.audit.listForTask(taskId),
  ]);
  if (stored === undefined) throw new TaskNotFoundError(taskId);
  // Copied field by field: the stored row also holds sealed blobs, which never leave here.
  const task = {
    taskId: stored.taskId,
    contextId: stored.contextId,
    tenant: stored.owner.tenant,
    principal: stored.owner.principal,
    profileId: stored.profileId,
    state: stored.state,
    revision: stored.revision,
    currentRunId: stored.currentRunId,
    statusTimestamp: stored.statusTimestamp,
    createdAt: stored.createdAt,
    ...(stored.metadata !== undefined ? { metadata: stored.metadata } : {}),
    expiresAt: stored.expiresAt,
  };
  return {
    task,
    expired: isExpired(stored.expiresAt, now),
    runs: runs.map((run) => withReason(run, stored)),
    audit,
  };
};

/**
 * A task's `metadata.reason` is written by the one commit that ends the task FAILED with its
 * current run (executor, reaper, enqueue failure): a failed task takes no follow-up, so the reason
 * belongs to that run and to no other.
 */
const withReason = (run: RunRecord, task: TaskRecord): InspectedRun => {
  const reason = task.metadata?.reason;
  const endedIt =
    run.runId === task.currentRunId && run.status === 'FAILED' && task.state === 'TASK_STATE_FAILED';
  return endedIt && typeof reason === 'string' ? { ...run, reason } : run;
};
