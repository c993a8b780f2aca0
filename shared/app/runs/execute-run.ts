import type { Config } from '../../config/config.ts';
import type { Artifact, JsonObject, Message, TaskState } from '../../domain/a2a.ts';
import { isTerminal } from '../../domain/a2a.ts';
import type { AuditContent, AuditTrail } from '../../domain/audit.ts';
import {
  AgentStoppedError,
  ApprovalRequiredError,
  ItemTooLargeError,
  ProviderUnavailableError,
  SealingFailedError,
  VersionConflictError,
} from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import type { Metrics } from '../../domain/metrics.ts';
import { type AgentSession, type AgentStep, newAgentSession } from '../../domain/model.ts';
import type {
  AgentOutcome,
  AgentProvider,
  Clock,
  RunLeases,
  RunMessage,
  WritePlan,
} from '../../domain/ports.ts';
import { answerOutcome, ceilingsForAttempt, retentionExpiry } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { redactArtifacts, redactMessage } from '../../domain/redaction.ts';
import { runAloneWrite, taskAndRunWrite } from '../../domain/row-writes.ts';
import {
  advanceTask,
  appendHistory,
  giveBackRun,
  type HistoryEntry,
  historyAsOf,
  moveRun,
  type ProviderAttempt,
  type RunRecord,
  type RunStatus,
  reviseRun,
  settleRun,
} from '../../domain/task.ts';
import type { ToolRegistry } from '../../domain/tools.ts';
import {
  type CommitDeps,
  commitAndProject,
  type JournaledRevision,
  type JournalPlace,
  type Projected,
  placeAfter,
} from '../journal/write-through.ts';
import { failpoint } from '../operations/failpoints.ts';
import { endTaskWith } from '../tasks/end-task.ts';
import type { TaskContentCodec } from '../tasks/task-content.ts';
import { recordAgentStep, recordAuditStep, recordStart, recordTightening } from './record-audit.ts';
import { claimLeaseUntil, keepLease, leaseUntilFrom } from './run-lease.ts';
import { enabledToolsOf } from './run-tools.ts';
import { resumptionOf, suspendRun } from './suspend-run.ts';

export interface ExecuteRunDeps extends CommitDeps {
  readonly codec: TaskContentCodec;
  readonly clock: Clock;
  readonly config: Config;
  readonly providerFor: (providerId: string) => AgentProvider;
  readonly leaseMs?: number;
  /** Renews the run lease while it works (decision 0011); absent = only the claim's lease. */
  readonly leases?: RunLeases;
  readonly leaseRenewMs?: number;
  /** How often a working run looks for a cancel between renewals (decision 0013). */
  readonly cancelWatchMs?: number;
  /** The tools profiles may enable. */
  readonly tools?: ToolRegistry;
  /**
   * Observer of every model turn and tool call, arguments and results included; never journaled.
   * The audit trail records them itself (`recordAgentStep`, at the audit ceiling).
   */
  readonly onAgentStep?: (run: RunRecord, step: AgentStep) => Promise<void> | void;
  /** The audit trail of run steps at the audit ceiling (decision 0010); absent = not recorded. */
  readonly audit?: AuditTrail;
  readonly logger?: Pick<Logger, 'info'>;
  /** Counts tightenings (decision 0020). */
  readonly metrics?: Metrics;
}

export type ExecuteRunResult =
  | 'completed'
  | 'awaiting-approval'
  | 'input-required'
  | 'rejected'
  | 'failed'
  | 'canceled'
  | 'not-retainable'
  | 'duplicate'
  | 'missing';

/** How a run ended, and the newest revision it committed with its event and view in the journal. */
export interface RunEnd {
  readonly result: ExecuteRunResult;
  /** Absent when the run committed none, or left its last one to the backstop. */
  readonly journaled?: JournaledRevision;
}

/**
 * What one run knows of its task's journal, threaded from its caller through its commits: where
 * the task's newest revision is (so the next one is projected without a read), and the newest
 * revision it journaled (the blocking send's answer). One per run, never shared between runs.
 */
interface RunJournal {
  place: JournalPlace | undefined;
  newest: JournaledRevision | undefined;
}

/** The run's dependencies with its own journal knowledge. */
type RunDeps = ExecuteRunDeps & { readonly runJournal: RunJournal };

const withRunJournal = (deps: ExecuteRunDeps, place: JournalPlace | undefined): RunDeps => ({
  ...deps,
  runJournal: { place, newest: undefined },
});

/**
 * Commits one of this run's task revisions and projects it from where the run knows the journal
 * is (docs/architecture.md "The journal write"); what it projected moves that knowledge on.
 */
const commitRevision = async (deps: RunDeps, plan: WritePlan): Promise<void> => {
  const { projected } = await commitAndProject(deps, plan, { after: deps.runJournal.place });
  noteProjected(deps.runJournal, projected);
};

const noteProjected = (runJournal: RunJournal, projected: Projected): void => {
  runJournal.place = placeAfter(projected, runJournal.place);
  if (projected.kind === 'journaled') runJournal.newest = projected.journaled;
};

/** Fixed agent texts for failures; they name no content. */
const texts = {
  notRetainable: "The result could not be kept under the installation's privacy policy.",
  providerFailed: 'The agent could not produce a result.',
  notStorable: 'The result could not be stored.',
} as const;

/**
 * Runs one queued run to its end (docs/architecture.md). Claimed by one conditional write (I-ONCE),
 * ceilings tightened per provider attempt under the run lock (I-LOCK, I-TIGHTEN), and completed
 * in one atomic commit with the task's sealed result (I-RESULT). Any failure to store the result
 * ends the run and the task FAILED.
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
    await settleRunOnly(deps, task, run, 'CANCELED');
    return 'canceled';
  }

  const claimed = await claim(deps, run, task);
  if ('ended' in claimed) return claimed.ended;
  failpoint('executor.afterClaim');
  return runClaimed(deps, claimed, run);
};

/**
 * Runs a run its caller's own create committed RUNNING (decision 0096: a blocking send's run in
 * the rpc): that conditional create was the claim (I-ONCE), so nothing is read or written before
 * the run's work, and the image is the one the create's commit returned.
 */
export const executeClaimedRun = async (
  deps: ExecuteRunDeps,
  claimed: { readonly run: RunRecord; readonly task: StoredTask; readonly journaled?: JournalPlace },
): Promise<RunEnd> => {
  const runDeps = withRunJournal(deps, claimed.journaled);
  const result = await runClaimed(runDeps, claimed, claimed.run);
  const journaled = runDeps.runJournal.newest;
  return { result, ...(journaled && { journaled }) };
};

/** A claimed run's work, from its lease to its settle; `read` is the run as it was before its claim. */
const runClaimed = async (
  deps: RunDeps,
  claimed: { readonly run: RunRecord; readonly task: StoredTask },
  read: RunRecord,
): Promise<ExecuteRunResult> => {
  const lease = keepLease(deps, claimed.run);
  // `providerCalled` is set just before the first provider call: until then the run provably
  // called nothing (decision 0069). `run` is the run as this executor last wrote it.
  const progress: Progress = { providerCalled: false, run: claimed.run };
  try {
    // A run decided by an operator continues from its sealed state (I-APPROVAL, decision 0013).
    const resumption = read.sealedSuspension === undefined ? undefined : await resumptionOf(deps, read);
    if (resumption?.kind === 'refused')
      return await fail(deps, claimed.run, claimed.task, texts.providerFailed, resumption.reason);
    if (resumption)
      await recordAuditStep(deps, claimed.run, { kind: 'resume', outcome: read.approval?.verdict });
    return await work(deps, claimed.run, claimed.task, {
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

/**
 * Gives a claimed run that never called its provider back to the queue (decision 0069): QUEUED
 * again, with a lease and start deadline from now, so the reaper queues it again (decision 0053)
 * if no delivery of its message claims it first. One read and one run-only write, only on this
 * failure path; the task keeps its WORKING revision. Best effort: if it fails too, the run's
 * lease expires and the reaper fails it (RUN_LEASE_EXPIRED), as before.
 */
const giveBack = async (deps: RunDeps, claimed: RunRecord): Promise<void> => {
  try {
    const { run, task } = await deps.tasks.getRunWithTask(claimed.taskId, claimed.runId);
    // Only a run still this executor's: RUNNING at the version it wrote last (the reaper may have
    // queued it again and another delivery claimed it since, decision 0072), not being canceled.
    if (run?.status !== 'RUNNING' || run.version !== claimed.version) return;
    if (run.cancelRequested || task?.currentRunId !== run.runId) return;
    const leaseUntil = leaseUntilFrom(deps, deps.clock.now());
    await deps.tasks.commit(runAloneWrite(task, run, giveBackRun(run, leaseUntil)));
    deps.logger?.info('run given back before its provider was called', {
      taskId: run.taskId,
      runId: run.runId,
    });
  } catch (error) {
    deps.logger?.info('run could not be given back; its lease will expire', {
      taskId: claimed.taskId,
      runId: claimed.runId,
      error: error instanceof Error ? error.name : 'unknown',
    });
  }
};

/**
 * The claim (I-ONCE) and the WORKING revision are one write (decision 0038: the task row holds
 * its current run), conditioned on the run version and the task revision read. A lost condition
 * means another delivery claimed the run, or a cancel ended it: the reread decides which.
 * A follow-up's task is WORKING from the message that queued its run (it never shows SUBMITTED
 * again, decision 0050): its claim changes the run only, conditioned on its version, and the task
 * keeps its revision, so no channel sees a second WORKING revision.
 */
const claim = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
): Promise<{ run: RunRecord; task: StoredTask } | { ended: ExecuteRunResult }> => {
  const now = deps.clock.now();
  const claimedRun = moveRun(run, 'RUNNING', {
    leaseUntil: claimLeaseUntil(deps, run, now),
    startBy: undefined,
    // A resumed run holds its opened state in memory; the sealed copy is not kept past the wait.
    sealedSuspension: undefined,
  });
  // A follow-up's task is WORKING already: only its run changes, no new revision.
  const alreadyWorking = task.state === 'TASK_STATE_WORKING' && run.sealedSuspension === undefined;
  const workingTask = alreadyWorking
    ? task
    : advanceTask(task, 'TASK_STATE_WORKING', now, {
        // The "waiting for an approval" message ends with the wait.
        ...(run.sealedSuspension !== undefined && { sealedStatusMessage: undefined }),
      });
  try {
    if (alreadyWorking) await deps.tasks.commit(runAloneWrite(task, run, claimedRun));
    else await commitRevision(deps, { row: taskAndRunWrite(task, workingTask, run, claimedRun) });
    return { run: claimedRun, task: workingTask };
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    // Claimed by another delivery or settled (duplicate), or its task canceled (the run ends here).
    const fresh = await reread(deps, run, task, 'QUEUED');
    if (fresh.kind === 'ended') return { ended: fresh.result };
    // Still queued under a task that moved otherwise: let the queue deliver it again.
    throw error;
  }
};

/** What the executor knows in memory about its claim (decisions 0069, 0072). */
interface Progress {
  providerCalled: boolean;
  /** The run as this executor last wrote it: its version names the start slot and fences the give-back. */
  run: RunRecord;
}

const work = async (
  deps: RunDeps,
  startRun: RunRecord,
  task: StoredTask,
  runtime: {
    readonly signal: AbortSignal;
    readonly session: AgentSession;
    /** The provider of the chain to start with: a resumed run continues on the one that suspended. */
    readonly firstProvider: number;
    /** The task revision whose history the run answers (kept across a suspension). */
    readonly historyRevision: number;
    /** Marked before the first provider call (in memory only). */
    readonly progress: Progress;
  },
): Promise<ExecuteRunResult> => {
  // A saved profile's run carries its settings from its create; a deployment one reads them here.
  const profile = startRun.profile ?? deps.config.profiles[startRun.profileId];
  if (profile === undefined) return fail(deps, startRun, task, texts.providerFailed, 'PROFILE_MISSING');
  const history = await deps.codec.openHistory(task.taskId, task.sealedHistory);
  // One level of fallback: the primary and at most one further provider.
  const chain = profile.providers.slice(0, 2);
  let run = startRun;
  let current = task;
  for (const [index, providerId] of chain.entries()) {
    if (index < runtime.firstProvider) continue;
    if (index > runtime.firstProvider) {
      // Between attempts is where a cancel is noticed (cooperative; the flag is on the run row).
      const fresh = await reread(deps, run, current);
      if (fresh.kind === 'ended') return fresh.result;
      run = { ...fresh.run, attempts: run.attempts };
      current = fresh.task;
    }
    const tightened = await tightenForAttempt(deps, run, current, providerId, history);
    if (tightened.kind === 'ended') return tightened.result;
    run = tightened.run;
    current = tightened.task;
    runtime.progress.run = run;
    if (!runtime.progress.providerCalled) {
      const started = await start(deps, run, current, historyAsOf(history, runtime.historyRevision).at(-1));
      if (started !== 'recorded') return started;
    }
    const startedAt = deps.clock.now();
    const provider = deps.providerFor(providerId);
    runtime.progress.providerCalled = true;
    try {
      const result = await provider.run({
        runId: run.runId,
        taskId: task.taskId,
        contextId: task.contextId,
        instructions: profile.instructions,
        history: historyAsOf(history, runtime.historyRevision),
        signal: runtime.signal,
        tools: enabledToolsOf(profile, deps.tools),
        maxToolRounds: profile.maxToolRounds,
        session: runtime.session,
        onStep: async (step) => {
          await recordAgentStep(deps, run, step);
          await deps.onAgentStep?.(run, step);
        },
      });
      const attempt = attemptOf(providerId, 'succeeded', startedAt, deps.clock.now(), result);
      // The attempt's own fields (provider, outcome, duration, tokens); auditEntryAt keeps only those it lists.
      await recordAuditStep(deps, run, {
        kind: 'attempt',
        ...attempt,
        content: auditContentOf(result.outcome),
      });
      return settle(deps, { ...run, attempts: [...run.attempts, attempt] }, current, result.outcome, history);
    } catch (error) {
      if (error instanceof ApprovalRequiredError) {
        const attempt = attemptOf(providerId, 'succeeded', startedAt, deps.clock.now(), error.tokens);
        await recordAuditStep(deps, run, { kind: 'attempt', ...attempt, reason: 'AWAITING_APPROVAL' });
        return suspend(deps, { ...run, attempts: [...run.attempts, attempt] }, current, {
          history,
          session: runtime.session,
          pending: error.pending,
          providerIndex: index,
          historyRevision: runtime.historyRevision,
        });
      }
      const attempt = attemptOf(providerId, 'failed', startedAt, deps.clock.now());
      run = { ...run, attempts: [...run.attempts, attempt] };
      await recordAuditStep(deps, run, {
        kind: 'attempt',
        ...attempt,
        reason: error instanceof ProviderUnavailableError ? 'PROVIDER_UNAVAILABLE' : 'PROVIDER_ERROR',
      });
      if (runtime.signal.aborted) {
        // The lease keeper aborted the call: the run was canceled, or settled by someone else.
        const fresh = await reread(deps, run, current);
        if (fresh.kind === 'ended') return fresh.result;
      }
      if (error instanceof AgentStoppedError) return fail(deps, run, current, error.publicText, error.reason);
      const canFallBack = error instanceof ProviderUnavailableError && index < chain.length - 1;
      if (!canFallBack) return fail(deps, run, current, texts.providerFailed, 'PROVIDER_FAILED');
    }
  }
  return fail(deps, run, current, texts.providerFailed, 'PROVIDER_FAILED');
};

/**
 * The last step before the first provider call (decision 0072): the start marker, the run's
 * `claim` audit row, in the start slot of the version this executor wrote last. A slot the reaper
 * took means the run was queued again: this claim calls nothing (`duplicate`). A run whose answer
 * may not be kept calls nothing either — at audit `none` (which implies an answer of `none`) no
 * marker could be written — and ends FAILED RESULT_NOT_RETAINABLE, as its settle would have.
 */
const start = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  message: Message | undefined,
): Promise<'recorded' | ExecuteRunResult> => {
  if (answerOutcome(run.answerCeiling) === 'not-retainable' || run.auditCeiling === 'none')
    return failNotRetainable(deps, run, task, run.version);
  const outcome = await recordStart(deps, run, { kind: 'claim', content: { message } });
  if (outcome === 'recorded') return outcome;
  deps.logger?.info('run taken back by the reaper before its provider call', {
    taskId: run.taskId,
    runId: run.runId,
  });
  return 'duplicate';
};

/** Suspends the run for an approval; a cancel that won the race ends it instead. */
const suspend = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  input: Omit<Parameters<typeof suspendRun>[1], 'run' | 'task'>,
): Promise<ExecuteRunResult> => {
  try {
    const { committed } = await suspendRun(deps, { ...input, run, task, journaled: deps.runJournal.place });
    noteProjected(deps.runJournal, committed.projected);
    return 'awaiting-approval';
  } catch (error) {
    if (error instanceof SealingFailedError)
      return fail(deps, run, task, texts.notStorable, 'SEALING_FAILED');
    if (!(error instanceof VersionConflictError)) throw error;
    const fresh = await reread(deps, run, task);
    if (fresh.kind === 'ended') return fresh.result;
    throw error;
  }
};

/** What an attempt produced, for the audit trail (cut to the audit ceiling before it is written). */
const auditContentOf = (outcome: AgentOutcome): AuditContent => {
  const artifacts = 'artifacts' in outcome ? outcome.artifacts : undefined;
  return {
    ...(outcome.message ? { message: outcome.message } : {}),
    ...(artifacts ? { artifacts } : {}),
  };
};

const attemptOf = (
  providerId: string,
  outcome: ProviderAttempt['outcome'],
  startedAt: Date,
  endedAt: Date,
  tokens?: { inputTokens?: number; outputTokens?: number },
): ProviderAttempt => ({
  providerId,
  outcome,
  startedAt: startedAt.toISOString(),
  durationMs: endedAt.getTime() - startedAt.getTime(),
  ...(tokens?.inputTokens !== undefined ? { inputTokens: tokens.inputTokens } : {}),
  ...(tokens?.outputTokens !== undefined ? { outputTokens: tokens.outputTokens } : {}),
});

/**
 * Before each provider attempt the run's ceilings take that provider's level, in one
 * conditional write on the run version (I-LOCK). A tightening to metadata/none ends the task
 * FAILED with RESULT_NOT_RETAINABLE (I-TIGHTEN); one to redacted scrubs the stored history.
 */
const tightenForAttempt = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  providerId: string,
  /** The history this run opened at its start; only this run rewrites it while it works. */
  history: readonly HistoryEntry[],
): Promise<
  { kind: 'ready'; run: RunRecord; task: StoredTask } | { kind: 'ended'; result: ExecuteRunResult }
> => {
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
    // Settled before the scrub: a scrub to `none` deletes the run's start markers, and only a
    // settled run can no longer be queued again by the reaper (decision 0072).
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
  // Scrubbing rewrites the row in place; the revision stays, so there is nothing to project.
  const sealed = await deps.codec.seal(task.taskId, { history: redactHistory(history) });
  const scrubbedTask: StoredTask = { ...task, sealedHistory: sealed.sealedHistory };
  await deps.tasks.commit({ row: taskAndRunWrite(task, scrubbedTask, run, tightenedRun) });
  await recordTightening(deps, tightenedRun, tightening);
  return { kind: 'ready', run: tightenedRun, task: scrubbedTask };
};

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
    ? // A direct Message answer still completes the durable task (decision 0006): the message is
      // its final status message, there are no artifacts, and the marker tells the blocking
      // SendMessage to answer `{"message": …}`.
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

const maxSettleAttempts = 3;

/**
 * The completing commit (I-RESULT): run settled with version + 1 conditioned on the version read,
 * task in its new state with its sealed result, all or nothing (one write of the task row that
 * holds its run, decision 0038). The answer ceiling is re-read under the
 * lock: a concurrent tightening makes the version check fail, and the settle retries with it.
 */
const settle = async (
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
      await commitFinal(deps, currentRun, currentTask, keptHistory, keep);
      return keep.result;
    } catch (error) {
      if (error instanceof SealingFailedError)
        return fail(deps, currentRun, currentTask, texts.notStorable, 'SEALING_FAILED');
      if (!(error instanceof VersionConflictError)) {
        if (error instanceof ItemTooLargeError)
          return fail(deps, currentRun, currentTask, texts.notStorable, 'RESULT_NOT_STORABLE');
        throw error;
      }
      const fresh = await reread(deps, currentRun, currentTask);
      if (fresh.kind === 'ended') return fresh.result;
      if (attempt >= maxSettleAttempts) throw error;
      currentRun = { ...fresh.run, attempts: currentRun.attempts };
      currentTask = fresh.task;
      currentHistory = await deps.codec.openHistory(currentTask.taskId, currentTask.sealedHistory);
    }
  }
};

/** Redaction is idempotent, so already-scrubbed entries pass through unchanged. */
const redactHistory = (history: readonly HistoryEntry[]): HistoryEntry[] =>
  history.map((entry) => ({ ...entry, message: redactMessage(entry.message) }));

const redactContent = (content: FinalContent): FinalContent => ({
  ...content,
  statusMessage: content.statusMessage ? redactMessage(content.statusMessage) : undefined,
  artifacts: content.artifacts ? redactArtifacts([...content.artifacts]) : undefined,
});

const commitFinal = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  history: readonly HistoryEntry[],
  content: FinalContent,
): Promise<void> => {
  const now = deps.clock.now();
  const revision = task.revision + 1;
  const sealed = await deps.codec.seal(task.taskId, {
    statusMessage: content.statusMessage,
    artifacts: content.artifacts,
    history: appendHistory(history, revision, [content.statusMessage]),
  });
  const finalTask = advanceTask(task, content.state, now, {
    sealedStatusMessage: sealed.sealedStatusMessage,
    sealedArtifacts: sealed.sealedArtifacts ?? task.sealedArtifacts,
    sealedHistory: sealed.sealedHistory,
    ...(content.metadata && { metadata: { ...task.metadata, ...content.metadata } }),
    expiresAt: Math.max(task.expiresAt, retentionFrom(deps, now)),
  });
  const settledRun = settleRun(run, content.runStatus, now, finalTask.expiresAt);
  failpoint('executor.beforeSettle');
  await commitRevision(deps, { row: taskAndRunWrite(task, finalTask, run, settledRun) });
  // No audit row for the settle (decision 0040): the run record holds its status and end.
  failpoint('executor.insideSettle');
};

/** Retention runs from the end of the run (I-PURGE). */
const retentionFrom = (deps: Pick<ExecuteRunDeps, 'config'>, now: Date): number =>
  retentionExpiry(deps.config.privacy.retention, 'agentRun', now);

/**
 * After a lost version check: did a cancel end the task, or did a tightening change the ceiling?
 * `status` is the one the run must still have to be this executor's (QUEUED at the claim).
 */
const reread = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  status: RunStatus = 'RUNNING',
): Promise<
  { kind: 'retry'; run: RunRecord; task: StoredTask } | { kind: 'ended'; result: ExecuteRunResult }
> => {
  const { run: freshRun, task: freshTask } = await deps.tasks.getRunWithTask(task.taskId, run.runId);
  if (freshRun === undefined || freshTask === undefined) return { kind: 'ended', result: 'missing' };
  if (freshRun.status !== status) return { kind: 'ended', result: 'duplicate' };
  if (freshRun.cancelRequested || isTerminal(freshTask.state) || freshTask.currentRunId !== run.runId) {
    await settleRunOnly(deps, freshTask, freshRun, 'CANCELED');
    return { kind: 'ended', result: 'canceled' };
  }
  return { kind: 'retry', run: freshRun, task: freshTask };
};

const fail = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  text: string,
  reason: string,
): Promise<ExecuteRunResult> => {
  await settleWithoutContent(deps, run, task, text, reason, run.version);
  return 'failed';
};

/** I-TIGHTEN: nothing of the content is stored; the task says FAILED with the reason. */
const failNotRetainable = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  expectedVersion: number,
): Promise<ExecuteRunResult> => {
  await settleWithoutContent(deps, run, task, texts.notRetainable, 'RESULT_NOT_RETAINABLE', expectedVersion);
  return 'not-retainable';
};

/**
 * Ends run and task FAILED with a fixed status message and a public reason. Prior artifacts and
 * history are dropped when the answer ceiling no longer allows keeping them.
 */
const settleWithoutContent = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
  text: string,
  reason: string,
  expectedVersion: number,
): Promise<void> => {
  const now = deps.clock.now();
  const dropContent = answerOutcome(run.answerCeiling) === 'not-retainable';
  const failedTask = await endTaskWith(
    deps.codec,
    task,
    {
      state: 'TASK_STATE_FAILED',
      messageId: `${run.runId}-failed`,
      text,
      reason,
      dropContent,
      // Retention runs from the end of the run, failed ones included (I-PURGE).
      expiresAt: retentionFrom(deps, now),
    },
    now,
  );
  // The run as it was read: a tightening not yet committed rides on this write (`expectedVersion`).
  const read: RunRecord = { ...run, version: expectedVersion };
  const failedRun = settleRun(read, 'FAILED', now, failedTask.expiresAt);
  try {
    await commitRevision(deps, { row: taskAndRunWrite(task, failedTask, read, failedRun) });
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    // A cancel won the race: the task is already terminal; the run only needs settling.
    const fresh = await deps.tasks.getRunWithTask(run.taskId, run.runId);
    if (fresh.run?.status === 'RUNNING') await settleRunOnly(deps, fresh.task, fresh.run, 'CANCELED');
  }
};

/** Settles a run that no longer owns its task (canceled, or the task moved on): the run alone. */
const settleRunOnly = async (
  deps: RunDeps,
  task: StoredTask | undefined,
  run: RunRecord,
  status: 'CANCELED' | 'FAILED',
): Promise<void> => {
  const now = deps.clock.now();
  const settledRun = settleRun(run, status, now, retentionFrom(deps, now));
  try {
    await deps.tasks.commit(runAloneWrite(task, run, settledRun));
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
  }
};
