import { isTerminal } from '../../domain/a2a.ts';
import { newAgentSession } from '../../domain/model.ts';
import type { RunMessage } from '../../domain/ports.ts';
import type { JournalEvent, StoredTask } from '../../domain/projection.ts';
import type { RunRecord } from '../../domain/task.ts';
import type { JournaledRevision, JournalPlace } from '../journal/write-through.ts';
import { failpoint } from '../operations/failpoints.ts';
import { recordAuditStep } from './record-audit.ts';
import { runAttempts } from './run-attempts.ts';
import { claimRun, giveBack } from './run-claim.ts';
import {
  type ExecuteRunDeps,
  type ExecuteRunResult,
  failureTexts,
  type Progress,
  type RunDeps,
  withRunJournal,
} from './run-context.ts';
import { fail, settleRunAlone } from './run-ending.ts';
import { keepLease } from './run-lease.ts';
import { resumptionOf } from './suspend-run.ts';

export type { ExecuteRunDeps, ExecuteRunResult } from './run-context.ts';

/** How a run ended, and the newest revision it committed with its event and view in the journal. */
export interface RunEnd {
  readonly result: ExecuteRunResult;
  /** Absent when the run committed none, or left its last one to the backstop. */
  readonly journaled?: JournaledRevision;
}

/**
 * Runs one queued run to its end (docs/architecture.md "A run"). Claimed by one conditional write
 * (I-ONCE, `run-claim.ts`), ceilings tightened per provider attempt under the run lock (I-LOCK,
 * I-TIGHTEN, `run-tightening.ts`), the attempts (`run-attempts.ts`), and completed in one atomic
 * commit with the task's sealed result (I-RESULT, `run-completion.ts`). Any failure to store the
 * result ends the run and the task FAILED (`run-ending.ts`).
 */
export const executeRun = async (deps: ExecuteRunDeps, message: RunMessage): Promise<ExecuteRunResult> => {
  // The sender projected this revision in full (`RunMessage.journaled`): the claim need not read it.
  const place = message.journaled === undefined ? undefined : { revision: message.journaled, view: true };
  const image = await deps.tasks.getRunWithTask(message.taskId, message.runId);
  return executeRunFrom(withRunJournal(deps, place), image);
};

/**
 * `executeRun` from an image of the run and its task read just now. The claim is conditioned on
 * that image's revision and run version, so an image that is no longer current loses it and the
 * reread decides, as for a duplicate message.
 */
const executeRunFrom = async (
  deps: RunDeps,
  { run, task }: { readonly run: RunRecord | undefined; readonly task: StoredTask | undefined },
): Promise<ExecuteRunResult> => {
  if (run === undefined) return 'missing';
  if (run.status !== 'QUEUED') return 'duplicate';
  if (task === undefined) return 'missing';
  if (task.currentRunId !== run.runId || isTerminal(task.state)) {
    await settleRunAlone(deps, task, run, 'CANCELED');
    return 'canceled';
  }

  const claimed = await claimRun(deps, run, task);
  if ('ended' in claimed) return claimed.ended;
  failpoint('executor.afterClaim');
  return runClaimed(deps, claimed, run);
};

/**
 * Runs a run its caller's own create committed RUNNING (a blocking or streaming send's run in the
 * rpc, docs/how-a-task-flows.md): that conditional create was the claim (I-ONCE), so nothing is
 * read or written before the run's work, and the image is the one the create's commit returned.
 * `onJournaled` receives each revision's event once the run journaled it (a stream beside the run).
 */
export const executeClaimedRun = async (
  deps: ExecuteRunDeps,
  claimed: { readonly run: RunRecord; readonly task: StoredTask; readonly journaled?: JournalPlace },
  onJournaled?: (event: JournalEvent) => void,
): Promise<RunEnd> => {
  const runDeps = withRunJournal(deps, claimed.journaled, onJournaled);
  const result = await runClaimed(runDeps, claimed, claimed.run);
  const journaled = runDeps.runJournal.newest;
  return { result, ...(journaled && { journaled }) };
};

/** A claimed run's work, from its lease to its end; `read` is the run as it was before its claim. */
const runClaimed = async (
  deps: RunDeps,
  claimed: { readonly run: RunRecord; readonly task: StoredTask },
  read: RunRecord,
): Promise<ExecuteRunResult> => {
  const lease = keepLease(deps, claimed.run);
  // `providerCalled` is set just before the first provider call: until then the run provably
  // called nothing. `run` is the run as this executor last wrote it.
  const progress: Progress = { providerCalled: false, run: claimed.run };
  try {
    // A run decided by an operator continues from its sealed state (I-APPROVAL).
    const resumption = read.sealedSuspension === undefined ? undefined : await resumptionOf(deps, read);
    if (resumption?.kind === 'refused')
      return await fail(deps, claimed.run, claimed.task, failureTexts.providerFailed, resumption.reason);
    if (resumption)
      await recordAuditStep(deps, claimed.run, { kind: 'resume', outcome: read.approval?.verdict });
    return await runAttempts(deps, claimed.run, claimed.task, {
      signal: lease.signal,
      session: resumption?.session ?? newAgentSession(),
      firstProvider: resumption?.providerIndex ?? 0,
      historyRevision: resumption?.historyRevision ?? claimed.task.revision,
      progress,
    });
  } catch (error) {
    // A fault before the provider was called (KMS, DynamoDB, the audit write) costs time, not the
    // task: the run goes back to QUEUED for the next delivery. A resumed run is not given back:
    // its claim consumed the sealed state it continues from.
    if (!progress.providerCalled && read.sealedSuspension === undefined) await giveBack(deps, progress.run);
    throw error;
  } finally {
    lease.stop();
  }
};
