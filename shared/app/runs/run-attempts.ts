import type { Message } from '../../domain/a2a.ts';
import type { AuditContent } from '../../domain/audit.ts';
import {
  AgentStoppedError,
  ApprovalRequiredError,
  ProviderUnavailableError,
  RemoteTaskPendingError,
  SealingFailedError,
  ToolFenceLostError,
  VersionConflictError,
} from '../../domain/errors.ts';
import type { AgentSession } from '../../domain/model.ts';
import type { AgentOutcome, AgentProvider, AgentRequest, AgentResult } from '../../domain/ports.ts';
import { answerOutcome } from '../../domain/privacy.ts';
import type { SealedBlob, StoredTask } from '../../domain/projection.ts';
import {
  type HistoryEntry,
  historyAsOf,
  type ProviderAttempt,
  type RunDelegation,
  type RunOutput,
  type RunProfile,
  type RunRecord,
  reviseRun,
} from '../../domain/task.ts';
import { failpoint, isInjectedFault } from '../operations/failpoints.ts';
import { loadHistory } from '../tasks/task-history.ts';
import { recordAgentStep, recordAuditStep, recordStart } from './record-audit.ts';
import { AnswerChunks, chunkLevelOf } from './run-chunks.ts';
import { completeRun } from './run-completion.ts';
import {
  type ExecuteRunResult,
  failureTexts,
  noteProjected,
  type Progress,
  type RunDeps,
} from './run-context.ts';
import { fail, failNotRetainable, reread } from './run-ending.ts';
import { tightenForAttempt } from './run-tightening.ts';
import { runToolsOf } from './run-tools.ts';
import { suspendRun } from './suspend-run.ts';

/** How a claimed run works: where it starts in its provider chain and what it answers. */
export interface AttemptsRuntime {
  readonly signal: AbortSignal;
  readonly session: AgentSession;
  /** The provider of the chain to start with: a resumed run continues on the one that suspended. */
  readonly firstProvider: number;
  /** The task revision whose history the run answers (kept across a suspension). */
  readonly historyRevision: number;
  /** Marked before the first provider call (in memory only). */
  readonly progress: Progress;
}

/**
 * The attempt loop: the profile's provider chain (the primary and at most one fallback), each
 * attempt after the run's ceilings took that provider's level (I-TIGHTEN), the first one after
 * the start marker. A provider's answer goes to the completing write; an approval request
 * suspends the run; an unavailable provider falls back to the next; anything else fails the run.
 */
export const runAttempts = async (
  deps: RunDeps,
  startRun: RunRecord,
  task: StoredTask,
  runtime: AttemptsRuntime,
): Promise<ExecuteRunResult> => {
  // A saved profile's run carries its settings from its create; a deployment one reads them here.
  const profile = startRun.profile ?? deps.config.profiles[startRun.profileId];
  if (profile === undefined)
    return fail(deps, startRun, task, failureTexts.providerFailed, 'PROFILE_MISSING');
  // The whole history, its segments included (docs/data-model.md, "History").
  const history = await loadHistory(deps, task);
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
      const started = await markStart(
        deps,
        run,
        current,
        historyAsOf(history, runtime.historyRevision).at(-1),
      );
      if (started !== 'recorded') return started;
    }
    const startedAt = deps.clock.now();
    const provider = deps.providerFor(providerId);
    runtime.progress.providerCalled = true;
    const chunks = answerChunksFor(deps, { run, task: current, output: profile.output }, chain.slice(index));
    const ledger: DelegationLedger = { touched: false };
    // Loaded only for a profile that may delegate (the module lives in the tool sources' bundle).
    const delegating =
      Object.keys(profile.agents ?? {}).length > 0 ? await deps.loadDelegations?.() : undefined;
    const delegations = delegating?.runDelegations(deps, {
      run,
      chunks,
      ledger,
      providerIndex: index,
      historyRevision: runtime.historyRevision,
    });
    try {
      const result = await callProvider(
        deps,
        provider,
        { run, task, profile, history, chunks, delegations },
        runtime,
      );
      if (chunks !== undefined) ({ run, task: current } = await chunks.close());
      run = withLedger(run, ledger);
      const attempt = attemptOf(providerId, 'succeeded', startedAt, deps.clock.now(), result);
      // The attempt's own fields (provider, outcome, duration, tokens); auditEntryAt keeps only those it lists.
      await recordAuditStep(deps, run, {
        kind: 'attempt',
        ...attempt,
        content: auditContentOf(result.outcome),
      });
      return completeRun(
        deps,
        { ...run, attempts: [...run.attempts, attempt] },
        current,
        result.outcome,
        history,
      );
    } catch (error) {
      // An injected crash (docs/reliability.md) is a crash: nothing after it runs in this executor.
      if (isInjectedFault(error)) throw error;
      if (chunks !== undefined) ({ run, task: current } = await chunks.close());
      run = withLedger(run, ledger);
      if (error instanceof RemoteTaskPendingError) {
        // The remote task and the state to continue at its call are on the run row: the run
        // waits, RUNNING, until the remote task's push notification or the reaper (its lease
        // over) queues it again (docs/configuration.md `a2aAgents`). Marked as left, so that a
        // push notification may queue it — or queued again at once when a notification said the
        // remote task settled first (docs/reliability.md "Delegated calls").
        const parked = (await delegating?.parkRun(deps, run, current)) ?? 'waiting';
        await recordAuditStep(deps, run, {
          kind: 'attempt',
          ...attemptOf(providerId, 'succeeded', startedAt, deps.clock.now()),
          reason: 'AWAITING_REMOTE_TASK',
        });
        if (parked === 'moved') {
          // A cancel was asked while it waited (the task is CANCELED already): the run ends here.
          const fresh = await reread(deps, run, current);
          if (fresh.kind === 'ended') return fresh.result;
        }
        return 'awaiting-remote';
      }
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
      if (runtime.signal.aborted || error instanceof ToolFenceLostError) {
        // The lease keeper aborted the call, or a fence found the run moved: it was canceled, or
        // settled by someone else.
        const fresh = await reread(deps, run, current);
        if (fresh.kind === 'ended') return fresh.result;
      }
      if (error instanceof AgentStoppedError) return fail(deps, run, current, error.publicText, error.reason);
      const canFallBack = error instanceof ProviderUnavailableError && index < chain.length - 1;
      if (!canFallBack) return fail(deps, run, current, failureTexts.providerFailed, 'PROVIDER_FAILED');
    }
  }
  return fail(deps, run, current, failureTexts.providerFailed, 'PROVIDER_FAILED');
};

/** The one place a run calls its provider: the history it answers, its tools, its step observers, its fence. */
const callProvider = async (
  deps: RunDeps,
  provider: AgentProvider,
  {
    run,
    task,
    profile,
    history,
    chunks,
    delegations,
  }: {
    readonly run: RunRecord;
    readonly task: StoredTask;
    readonly profile: RunProfile;
    readonly history: readonly HistoryEntry[];
    /** The attempt's answer chunks, when it commits any: each moves the run's version. */
    readonly chunks: AnswerChunks | undefined;
    /** The attempt's delegated calls' records on the run row (run-delegations.ts), when it may delegate. */
    readonly delegations: AgentRequest['delegations'];
  },
  runtime: AttemptsRuntime,
): Promise<AgentResult> =>
  provider.run({
    runId: run.runId,
    taskId: task.taskId,
    contextId: task.contextId,
    instructions: profile.instructions,
    history: historyAsOf(history, runtime.historyRevision),
    signal: runtime.signal,
    tools: await runToolsOf(profile, deps, runtime.signal),
    maxToolRounds: profile.maxToolRounds,
    session: runtime.session,
    ...(chunks !== undefined && { onAnswer: chunks.onAnswer }),
    onStep: async (step) => {
      await recordAgentStep(deps, run, step);
      await deps.onAgentStep?.(run, step);
    },
    // I-EFFECT: the run row records the call before it is sent, at the version the run holds now:
    // an answer chunk committed during the attempt moved it, so the fence goes between chunk writes,
    // at the version the last one left, and the chunks after it keep the fence.
    fence: async (call) => {
      const fence = { callId: call.id, tool: call.name, at: deps.clock.now().toISOString() };
      const outcome =
        chunks === undefined
          ? await deps.tasks.fenceRun(run, fence)
          : await chunks.between((current) => deps.tasks.fenceRun(current, fence), { fence });
      if (outcome !== 'fenced') throw new ToolFenceLostError(outcome);
      failpoint('executor.afterFence');
    },
    ...(delegations && { delegations }),
  });

/** What an attempt's delegated calls left on the run row: the run in memory follows it. */
export interface DelegationLedger {
  touched: boolean;
  delegation?: RunDelegation;
  sealedSuspension?: SealedBlob;
}

const withLedger = (run: RunRecord, ledger: DelegationLedger): RunRecord =>
  ledger.touched
    ? reviseRun(
        run,
        { delegation: ledger.delegation, sealedSuspension: ledger.sealedSuspension, fence: undefined },
        { keepVersion: true },
      )
    : run;

/**
 * The chunks of an attempt whose profile asks for progressive output, when its ceilings allow
 * them (docs/architecture.md, "Progressive output"); none otherwise, and the provider does not stream.
 */
const answerChunksFor = (
  deps: RunDeps,
  {
    run,
    task,
    output,
  }: { readonly run: RunRecord; readonly task: StoredTask; readonly output: RunOutput | undefined },
  providersLeft: readonly string[],
): AnswerChunks | undefined => {
  const level = output?.progressive === true ? chunkLevelOf(deps, run, providersLeft) : undefined;
  return output === undefined || level === undefined
    ? undefined
    : new AnswerChunks(deps, { run, task }, output.cadence, level);
};

/**
 * The last step before the first provider call: the start marker, the run's `claim` audit row, in
 * the start slot of the version this executor wrote last (docs/data-model.md, "Audit table"). A
 * slot the reaper took means the run was queued again: this claim calls nothing (`duplicate`). A
 * run whose answer may not be kept calls nothing either — at audit `none` (which implies an answer
 * of `none`) no marker could be written — and ends FAILED RESULT_NOT_RETAINABLE, as its
 * completion would have.
 */
const markStart = async (
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

/** Suspends the run for an approval (I-APPROVAL); a cancel that won the race ends it instead. */
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
      return fail(deps, run, task, failureTexts.notStorable, 'SEALING_FAILED');
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
