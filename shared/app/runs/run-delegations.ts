import { randomBytes } from 'node:crypto';
import type { SuspendedRun } from '../../domain/approvals.ts';
import { ToolFenceLostError, VersionConflictError } from '../../domain/errors.ts';
import type { DelegationCallback } from '../../domain/model.ts';
import type { AgentRequest, RunQueue } from '../../domain/ports.ts';
import type { SealedBlob, StoredTask } from '../../domain/projection.ts';
import { runAloneWrite } from '../../domain/row-writes.ts';
import { giveBackRun, type RunDelegation, type RunRecord } from '../../domain/task.ts';
import { failpoint } from '../operations/failpoints.ts';
import { delegationCallbackPath, tokenHashOf } from './delegation-callback.ts';
import type { DelegationLedger } from './run-attempts.ts';
import type { AnswerChunks } from './run-chunks.ts';
import type { RunDeps } from './run-context.ts';
import { leaseUntilFrom } from './run-lease.ts';

/**
 * A run's delegated calls on its row (docs/configuration.md `a2aAgents`, I-EFFECT): loaded only by
 * a run whose profile may delegate — deployed, from the tool sources' bundle file beside the
 * function's (infra/bundling.ts), so the function bundles stay within their size limit.
 */

export interface DelegationPlace {
  readonly run: RunRecord;
  readonly chunks: AnswerChunks | undefined;
  readonly ledger: DelegationLedger;
  readonly providerIndex: number;
  readonly historyRevision: number;
}

/**
 * `hold` puts the remote task and the state to continue at its call on the run row before the
 * call waits, in place of the call's fence; `release` removes both when the call returns. A run
 * that stops while it waits is queued again (reap-runs.ts).
 */
export const runDelegations = (
  deps: RunDeps,
  { run, chunks, ledger, providerIndex, historyRevision }: DelegationPlace,
): NonNullable<AgentRequest['delegations']> => ({
  hold: async (step) => {
    const state: SuspendedRun = {
      nonce: crypto.randomUUID(),
      providerIndex,
      historyRevision,
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
});

/**
 * Marks a run its executor leaves waiting for a remote task `parked`, so that the task's push
 * notification may queue it (wake-delegated-run.ts). The mark is conditional on no notification
 * having marked the wait `settled` first (`TaskRepository.markDelegation`): then the run is put
 * back to QUEUED (conditioned on its version, I-LOCK, with a lease and start deadline from now, as
 * a run given back) and queued at once, since no notification will come again. `moved`: a cancel
 * was asked meanwhile, or someone else moved the run — the caller reads the row (`reread`). Without
 * a queue, or when a write fails, the run stays RUNNING (`waiting`) and the reaper wakes it when its
 * lease is over.
 */
export const parkRun = async (
  deps: RunDeps,
  run: RunRecord,
  task: StoredTask,
): Promise<'parked' | 'requeued' | 'waiting' | 'moved'> => {
  if (run.delegation === undefined || run.sealedSuspension === undefined) return 'waiting';
  try {
    const outcome = await deps.tasks.markDelegation(run, 'parked');
    if (outcome === 'marked') return 'parked';
    if (outcome === 'settled' && deps.requeue !== undefined)
      return await requeueSettled(deps, deps.requeue, run, task);
    if (outcome === 'settled') return 'waiting';
  } catch (error) {
    logLeftWaiting(deps, run, error);
    return 'waiting';
  }
  return 'moved';
};

/** The run whose remote task settled before it parked, back to QUEUED and queued again. */
const requeueSettled = async (
  deps: RunDeps,
  queue: RunQueue,
  run: RunRecord,
  task: StoredTask,
): Promise<'requeued' | 'moved'> => {
  const leaseUntil = leaseUntilFrom(deps, deps.clock.now());
  try {
    await deps.tasks.commit(runAloneWrite(task, run, giveBackRun(run, leaseUntil)));
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    // A cancel flagged it in between, or someone else moved it.
    return 'moved';
  }
  // Written first: if this send fails, the reaper queues the run at its start deadline.
  await queue.enqueue({ taskId: run.taskId, runId: run.runId }).catch((error: unknown) => {
    logLeftWaiting(deps, run, error);
  });
  return 'requeued';
};

const logLeftWaiting = (deps: RunDeps, run: RunRecord, error: unknown): void => {
  deps.logger?.info('delegated run left to the reaper', {
    taskId: run.taskId,
    runId: run.runId,
    error: error instanceof Error ? error.name : 'unknown',
  });
};

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
