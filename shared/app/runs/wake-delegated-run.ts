import { timingSafeEqual } from 'node:crypto';
import { isTerminal } from '../../domain/a2a.ts';
import { VersionConflictError } from '../../domain/errors.ts';
import type { Clock, RunQueue, TaskRepository } from '../../domain/ports.ts';
import { runAloneWrite } from '../../domain/row-writes.ts';
import { giveBackRun } from '../../domain/task.ts';
import { defaultRunStartDeadlineMs } from '../tasks/create-task.ts';
import { tokenHashOf } from './delegation-callback.ts';

/**
 * The push wake-up of a run that waits for a delegated task (docs/configuration.md `a2aAgents`,
 * `publicUrl`): the remote agent POSTs its task's notifications to the run's own callback URL
 * with the token this run made for the wait. A notification that says the remote task settled,
 * with the right token, for a run its executor left waiting (`parked`), puts the run back to
 * QUEUED (one write conditioned on its version, I-LOCK) and queues it; it continues at the call
 * and reads the remote task itself — the notification's content is never trusted or kept. One
 * that comes while the run still waits in place is recorded as `settled` on its delegation, so
 * that the park that follows queues the run at once instead of parking it (docs/reliability.md
 * "Delegated calls"). Anything else changes nothing; the reaper wakes a waiting run anyway.
 */

export { delegationCallbackPath, delegationCallbackPattern, tokenHashOf } from './delegation-callback.ts';

export interface WakeDelegatedRunDeps {
  readonly tasks: TaskRepository;
  readonly queue: RunQueue;
  readonly clock: Clock;
  readonly runStartDeadlineMs?: number;
}

export interface WakeInput {
  readonly taskId: string;
  readonly runId: string;
  /** The `X-A2A-Notification-Token` the notification carried. */
  readonly token: string | undefined;
  /** Whether the notification says the remote task settled (terminal, input or auth required). */
  readonly settled: boolean;
}

/**
 * `refused`: no such waiting run, or not its token (the same answer, so nothing is revealed);
 * `noted`: the run still waits in place, and its park will queue it.
 */
export type WakeOutcome = 'woken' | 'noted' | 'ignored' | 'refused';

export const wakeDelegatedRun = async (
  deps: WakeDelegatedRunDeps,
  input: WakeInput,
): Promise<WakeOutcome> => {
  const { run, task } = await deps.tasks.getRunWithTask(input.taskId, input.runId);
  const delegation = run?.delegation;
  if (
    run === undefined ||
    delegation?.tokenHash === undefined ||
    input.token === undefined ||
    !sameHash(delegation.tokenHash, tokenHashOf(input.token))
  )
    return 'refused';
  if (!input.settled || run.status !== 'RUNNING') return 'ignored';
  if (task === undefined || task.currentRunId !== run.runId || isTerminal(task.state)) return 'ignored';
  // A run still waiting in place: the mark, unless its executor parked it meanwhile (the two
  // marks exclude each other, so the notification is never lost between them).
  if (delegation.parked !== true) {
    const marked = await deps.tasks.markDelegation(run, 'settled');
    if (marked !== 'parked') return marked === 'marked' ? 'noted' : 'ignored';
  }
  const startBy = deps.clock.now().getTime() + (deps.runStartDeadlineMs ?? defaultRunStartDeadlineMs);
  try {
    await deps.tasks.commit(runAloneWrite(task, run, giveBackRun(run, startBy)));
  } catch (error) {
    // Woken already (by another notification or the reaper), or it moved on.
    if (error instanceof VersionConflictError) return 'ignored';
    throw error;
  }
  await deps.queue.enqueue({ taskId: run.taskId, runId: run.runId });
  return 'woken';
};

const sameHash = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
