import type { Config } from '../../config/config.ts';
import {
  type AuditEntry,
  type AuditStep,
  type AuditTrail,
  auditEntryAt,
  type RunStarts,
  type StartOutcome,
} from '../../domain/audit.ts';
import type { Logger } from '../../domain/logger.ts';
import type { AgentStep } from '../../domain/model.ts';
import type { Clock } from '../../domain/ports.ts';
import { isAtLeast, retentionExpiry } from '../../domain/privacy.ts';
import type { RunRecord } from '../../domain/task.ts';

export interface RecordAuditDeps {
  readonly audit?: AuditTrail;
  readonly clock: Clock;
  readonly config: Config;
  readonly logger?: Pick<Logger, 'info'>;
}

export type AuditStepInput = Omit<AuditStep, 'taskId' | 'runId' | 'at'>;

/**
 * Records one step of a run at the run's current audit ceiling (docs/data-model.md, "Audit table").
 *
 * Best effort, by decision: the audit trail is the operator's record, the result is the task's
 * promise, so an audit write that fails never fails the run. It is logged (ids and error name
 * only) so an alarm can catch it. It never writes above the ceiling: the entry is cut by
 * `auditEntryAt` before the port sees it, and when content cannot be written (sealing fails) the
 * fallback is the metadata-only entry, never more.
 *
 * An audit row expires with its run: a settled run's own expiry, else `max(run.expiresAt, now +
 * retention)`, which never passes the expiry the run gets when it ends (I-PURGE).
 */
export const recordAuditStep = async (
  deps: RecordAuditDeps,
  run: RunRecord,
  step: AuditStepInput,
): Promise<void> => {
  const audit = deps.audit;
  if (audit === undefined) return;
  let entry: AuditEntry | undefined;
  try {
    entry = entryOf(deps, run, step);
    if (entry === undefined) return;
    await audit.record(entry);
  } catch (error) {
    const fields = { taskId: run.taskId, runId: run.runId, kind: step.kind, error: errorName(error) };
    if (entry?.content === undefined) {
      deps.logger?.info('audit write failed', fields);
      return;
    }
    try {
      await audit.record(metadataOnly(entry));
      deps.logger?.info('audit content dropped', fields);
    } catch (retryError) {
      deps.logger?.info('audit write failed', { ...fields, error: errorName(retryError) });
    }
  }
};

/** The fallback when content cannot be written: the entry without it, at `metadata`. */
const metadataOnly = ({ content: _dropped, ...entry }: AuditEntry): AuditEntry => ({
  ...entry,
  level: 'metadata',
});

/** The entry for a step now, cut to the run's audit ceiling; `undefined` at `none`. */
const entryOf = (
  deps: Pick<RecordAuditDeps, 'clock' | 'config'>,
  run: RunRecord,
  step: AuditStepInput,
): AuditEntry | undefined => {
  const now = deps.clock.now();
  // A settled run already carries its final expiry; an unsettled one will end later than now.
  const expiresAt =
    run.endedAt !== undefined
      ? run.expiresAt
      : Math.max(run.expiresAt, retentionExpiry(deps.config.privacy.retention, 'agentRun', now));
  return auditEntryAt(
    run.auditCeiling,
    { ...step, taskId: run.taskId, runId: run.runId, at: now.toISOString() },
    expiresAt,
  );
};

/**
 * The run's start marker: its `claim` row (the message it answers, at the audit
 * ceiling), written right before its first provider call into the start slot of the run version
 * its executor wrote last — so the reaper, reading the run row, finds it or takes the slot first.
 * Not best effort: a marker that cannot be written is a fault before the call (the run is given
 * back). Content that cannot be sealed falls back to the metadata-only row, as
 * every audit row does. At audit `none` there is no row: such a run never calls its provider (its
 * answer is not retainable either, I-REFUSE), and the reaper never queues it again.
 */
export const recordStart = async (
  deps: RecordAuditDeps,
  run: RunRecord,
  step: AuditStepInput,
): Promise<StartOutcome> => {
  const entry = deps.audit === undefined ? undefined : entryOf(deps, run, step);
  if (deps.audit === undefined || entry === undefined) return 'recorded';
  try {
    return await deps.audit.recordStart(entry, run.version);
  } catch (error) {
    if (entry.content === undefined) throw error;
    const outcome = await deps.audit.recordStart(metadataOnly(entry), run.version);
    deps.logger?.info('audit content dropped', {
      taskId: run.taskId,
      runId: run.runId,
      kind: step.kind,
      error: errorName(error),
    });
    return outcome;
  }
};

/**
 * The reaper's side of a start slot: takes the slot of the run's version with a
 * `requeue` row (ids and reason only), so that a late executor's marker can no longer be written
 * there. False when a claim's marker is there, or no slot can be proven: no port, or audit `none`.
 */
export const takeStartSlot = async (
  deps: { readonly starts?: RunStarts; readonly clock: RecordAuditDeps['clock']; readonly config: Config },
  run: RunRecord,
  reason: string,
): Promise<boolean> => {
  const entry = deps.starts === undefined ? undefined : entryOf(deps, run, { kind: 'requeue', reason });
  if (deps.starts === undefined || entry === undefined) return false;
  return deps.starts.take(entry, run.version);
};

const errorName = (error: unknown): string => (error instanceof Error ? error.name : typeof error);

/**
 * Records a tightening, after cutting what the run already wrote to the audit trail down to the
 * new audit ceiling: the ceiling bounds everything stored of the run, not only what comes after.
 * A scrub that fails is logged and does not fail the run (the rows stay sealed and expire with
 * the run; the executor logs `audit scrub failed`, docs/operations.md).
 */
export const recordTightening = async (
  deps: RecordAuditDeps,
  run: RunRecord,
  step: AuditStepInput & { readonly from: { readonly audit: RunRecord['auditCeiling'] } },
): Promise<void> => {
  const audit = deps.audit;
  if (audit !== undefined && !isAtLeast(run.auditCeiling, step.from.audit)) {
    try {
      await audit.scrubRun(run.taskId, run.runId, run.auditCeiling);
    } catch (error) {
      deps.logger?.info('audit scrub failed', {
        taskId: run.taskId,
        runId: run.runId,
        ceiling: run.auditCeiling,
        error: errorName(error),
      });
    }
  }
  await recordAuditStep(deps, run, step);
};

/**
 * A model turn or a tool call of the tool loop (the `onStep` seam):
 * tool arguments and results go to the audit trail at the run's audit ceiling — content only at
 * `redacted` (redacted) and `full` — and nowhere else.
 */
export const recordAgentStep = (deps: RecordAuditDeps, run: RunRecord, step: AgentStep): Promise<void> =>
  step.kind === 'model-turn'
    ? recordAuditStep(deps, run, {
        kind: 'model-turn',
        providerId: step.providerId,
        outcome: step.stopReason,
        durationMs: step.durationMs,
        inputTokens: step.inputTokens,
        outputTokens: step.outputTokens,
        toolNames: step.toolCalls,
      })
    : recordAuditStep(deps, run, {
        kind: 'tool-call',
        providerId: step.providerId,
        outcome: step.result.isError ? 'error' : 'ok',
        durationMs: step.durationMs,
        toolNames: [step.call.name],
        effect: step.effect,
        content: {
          toolCall: {
            name: step.call.name,
            arguments: step.call.arguments,
            result: step.result.content,
            isError: step.result.isError,
          },
        },
      });
