import { answerOutcome, ceilingsForAttempt } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { redactMessage } from '../../domain/redaction.ts';
import { taskAndRunWrite } from '../../domain/row-writes.ts';
import { type HistoryEntry, type RunRecord, reviseRun } from '../../domain/task.ts';
import { historyFieldsFor } from '../tasks/task-history.ts';
import { recordTightening } from './record-audit.ts';
import type { Continued, RunDeps } from './run-context.ts';
import { failNotRetainable } from './run-ending.ts';
import { leaseUntilFrom } from './run-lease.ts';

/**
 * Before each provider attempt the run's ceilings take that provider's level, in one
 * conditional write on the run version (I-LOCK). A tightening to metadata/none ends the task
 * FAILED with RESULT_NOT_RETAINABLE (I-TIGHTEN); one to redacted scrubs the stored history.
 */
export const tightenForAttempt = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  providerId: string,
  /** The history this run opened at its start; only this run rewrites it while it works. */
  history: readonly HistoryEntry[],
): Promise<Continued> => {
  const providerLevel = deps.config.providers[providerId]?.privacyLevel;
  const next = ceilingsForAttempt({ audit: run.auditCeiling, answer: run.answerCeiling }, providerLevel);
  if (next.audit === run.auditCeiling && next.answer === run.answerCeiling)
    return { kind: 'ready', run, task };
  deps.metrics?.add('Tightenings');
  const tightenedRun = reviseRun(run, {
    auditCeiling: next.audit,
    answerCeiling: next.answer,
    // A write of the live executor carries its lease forward: renewals do not move the version.
    leaseUntil: leaseUntilFrom(deps, deps.clock.now()),
  });
  const tightening = {
    kind: 'tighten',
    providerId,
    from: { audit: run.auditCeiling, answer: run.answerCeiling },
    to: next,
  } as const;
  if (answerOutcome(next.answer) === 'not-retainable') {
    // Ended before the scrub: a scrub to `none` deletes the run's start markers, and only a
    // settled run can no longer be queued again by the reaper.
    const result = await failNotRetainable(deps, tightenedRun, task, run.version);
    await recordTightening(deps, tightenedRun, tightening);
    return { kind: 'ended', result };
  }
  if (answerOutcome(next.answer) !== 'keep-redacted' || run.answerCeiling !== 'full') {
    await deps.tasks.commit({
      row: { taskId: task.taskId, run: tightenedRun, expect: { runVersion: run.version } },
    });
    await recordTightening(deps, tightenedRun, tightening);
    return { kind: 'ready', run: tightenedRun, task };
  }
  // Scrubbing rewrites the row and the segments in place; the revision stays, so there is nothing to project.
  const scrubbedTask: StoredTask = {
    ...task,
    ...(await historyFieldsFor(deps.codec, task, history, redactHistory(history), {
      revision: task.revision,
      inPlace: true,
    })),
  };
  await deps.tasks.commit({ row: taskAndRunWrite(task, scrubbedTask, run, tightenedRun) });
  await recordTightening(deps, tightenedRun, tightening);
  return { kind: 'ready', run: tightenedRun, task: scrubbedTask };
};

/** Redaction is idempotent, so already-scrubbed entries pass through unchanged. */
export const redactHistory = (history: readonly HistoryEntry[]): HistoryEntry[] =>
  history.map((entry) => ({ ...entry, message: redactMessage(entry.message) }));
