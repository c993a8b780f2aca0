import { randomBytes } from 'node:crypto';
import type { Message } from '../../domain/a2a.ts';
import type { SuspendedRun } from '../../domain/approvals.ts';
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
import type { AgentSession, DelegationCallback } from '../../domain/model.ts';
import type { AgentOutcome, AgentProvider, AgentResult } from '../../domain/ports.ts';
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
import { delegationCallbackPath, tokenHashOf } from './delegation-callback.ts';
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
    try {
      const result = await callProvider(
        deps,
        provider,
        { run, task, profile, history, chunks, providerIndex: index, ledger },
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
        // push notification may queue it; best effort: the reaper wakes it anyway.
        await parkRun(deps, run);
        await recordAuditStep(deps, run, {
          kind: 'attempt',
          ...attemptOf(providerId, 'succeeded', startedAt, deps.clock.now()),
          reason: 'AWAITING_REMOTE_TASK',
        });
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
    providerIndex,
    ledger,
  }: {
    readonly run: RunRecord;
    readonly task: StoredTask;
    readonly profile: RunProfile;
    readonly history: readonly HistoryEntry[];
    /** The attempt's answer chunks, when it commits any: each moves the run's version. */
    readonly chunks: AnswerChunks | undefined;
    readonly providerIndex: number;
    /** What the attempt's delegated calls recorded on the run row. */
    readonly ledger: DelegationLedger;
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
    delegations: {
      // I-EFFECT: the remote task and the state to continue at its call, on the run row before the
      // call waits, in place of the call's fence; a run that stops while it waits is queued again.
      hold: async (step) => {
        const state: SuspendedRun = {
          nonce: crypto.randomUUID(),
          providerIndex,
          historyRevision: runtime.historyRevision,
          rounds: step.rounds,
          steps: step.steps,
          pending: step.turn,
          done: step.done,
          ...(step.verdict !== undefined && { verdict: step.verdict }),
          ...(step.reason !== undefined && { reason: step.reason }),
        };
        const callback = callbackOf(deps.config.publicUrl, run);
        const hold = {
          delegation: {
            callId: step.call.id,
            tool: step.call.name,
            remoteTaskId: step.remoteTaskId,
            at: deps.clock.now().toISOString(),
            ...(callback && { tokenHash: tokenHashOf(callback.token) }),
          },
          sealedSuspension: await deps.codec.sealSuspension(run.taskId, run.runId, state),
        };
        await holdOnRow(deps, run, chunks, hold);
        Object.assign(ledger, { touched: true, ...hold });
        failpoint('executor.afterDelegationHeld');
        return callback;
      },
      release: async () => {
        await holdOnRow(deps, run, chunks, undefined);
        Object.assign(ledger, { touched: true, delegation: undefined, sealedSuspension: undefined });
      },
    },
  });

/**
 * Where the remote task's push notifications wake this run (docs/configuration.md `publicUrl`):
 * the run's own callback URL and a token made for this one wait — never a credential of anyone.
 */
const callbackOf = (publicUrl: string | undefined, run: RunRecord): DelegationCallback | undefined =>
  publicUrl === undefined
    ? undefined
    : {
        url: `${publicUrl.replace(/\/+$/, '')}${delegationCallbackPath(run.taskId, run.runId)}`,
        token: randomBytes(32).toString('base64url'),
      };

/** What an attempt's delegated calls left on the run row: the run in memory follows it. */
interface DelegationLedger {
  touched: boolean;
  delegation?: RunDelegation;
  sealedSuspension?: SealedBlob;
}

const parkRun = async (deps: RunDeps, run: RunRecord): Promise<void> => {
  if (run.delegation === undefined || run.sealedSuspension === undefined) return;
  await deps.tasks
    .holdDelegation(run, {
      delegation: { ...run.delegation, parked: true },
      sealedSuspension: run.sealedSuspension,
    })
    .catch(() => undefined);
};

const withLedger = (run: RunRecord, ledger: DelegationLedger): RunRecord =>
  ledger.touched
    ? reviseRun(
        run,
        { delegation: ledger.delegation, sealedSuspension: ledger.sealedSuspension, fence: undefined },
        { keepVersion: true },
      )
    : run;

/**
 * The delegation write (`TaskRepository.holdDelegation`) at the version the run holds now,
 * between answer chunks as a fence is; the chunks after it write it on.
 */
const holdOnRow = async (
  deps: RunDeps,
  run: RunRecord,
  chunks: AnswerChunks | undefined,
  hold: { readonly delegation: RunDelegation; readonly sealedSuspension: SealedBlob } | undefined,
): Promise<void> => {
  const write = async (current: RunRecord) => {
    const outcome = await deps.tasks.holdDelegation(current, hold);
    return outcome === 'held' ? ('fenced' as const) : outcome;
  };
  const kept =
    hold === undefined
      ? { delegation: undefined, sealedSuspension: undefined }
      : { ...hold, fence: undefined };
  const outcome = chunks === undefined ? await write(run) : await chunks.between(write, kept);
  if (outcome !== 'fenced') throw new ToolFenceLostError(outcome);
};

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
