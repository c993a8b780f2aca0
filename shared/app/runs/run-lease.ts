import type { Logger } from '../../domain/logger.ts';
import type { Clock, RunLeases } from '../../domain/ports.ts';
import type { RunRecord } from '../../domain/task.ts';

/**
 * Run leases. A claimed run holds a lease; the executor renews it while it
 * works, and the reaper settles a RUNNING run whose lease ended (a crashed executor) FAILED.
 * Renewal writes only `leaseUntil`, conditioned on the run still being RUNNING; it never moves
 * the run version, so the completing transaction's expected version stays valid (I-LOCK).
 */

/** Longer than the executor's Lambda timeout, so a live run is never reaped between renewals. */
export const defaultLeaseMs = 90_000;

export interface LeaseDeps {
  readonly leases?: RunLeases;
  readonly clock: Clock;
  readonly leaseMs?: number;
  /** @default leaseMs / 3: two renewals may fail before the lease runs out. */
  readonly leaseRenewMs?: number;
  /** How often a working run looks for a cancel between renewals (one cheap read). @default 5_000 */
  readonly cancelWatchMs?: number;
  readonly logger?: Pick<Logger, 'info'>;
}

/** Why a run's work was aborted: the reaper (or anything else) settled it while it worked. */
export class RunLeaseLostError extends Error {
  override readonly name = 'RunLeaseLostError';
  constructor() {
    super('The run is no longer RUNNING; its lease was lost');
  }
}

/** Why a run's work was aborted: a cancel was requested while it worked (docs/operations.md, "Approvals"). */
export class RunCanceledError extends Error {
  override readonly name = 'RunCanceledError';
  constructor() {
    super('The task was canceled while the run worked');
  }
}

export interface LeaseKeeper {
  /** Aborted when the lease is lost or a cancel is noticed: provider calls and tools stop. */
  readonly signal: AbortSignal;
  stop(): void;
}

export const leaseUntilFrom = (deps: Pick<LeaseDeps, 'leaseMs'>, now: Date): number =>
  now.getTime() + (deps.leaseMs ?? defaultLeaseMs);

const renewEvery = (deps: Pick<LeaseDeps, 'leaseMs' | 'leaseRenewMs'>): number =>
  deps.leaseRenewMs ?? Math.floor((deps.leaseMs ?? defaultLeaseMs) / 3);

/**
 * The lease a claim takes. A queued run already carries a lease from its
 * creation; when the claim comes soon enough that at most half a renewal interval of it has
 * passed, the claim keeps it, so the lease index entry written at creation is not moved (a key
 * change costs a delete and a put). Else a fresh lease from now.
 */
export const claimLeaseUntil = (
  deps: Pick<LeaseDeps, 'leaseMs' | 'leaseRenewMs'>,
  run: { readonly leaseUntil?: number },
  now: Date,
): number => {
  const fresh = leaseUntilFrom(deps, now);
  const kept = run.leaseUntil ?? 0;
  return kept <= fresh && kept >= fresh - renewEvery(deps) / 2 ? kept : fresh;
};

/** Renews the run's lease every `leaseRenewMs` until stopped. Without a lease port it only holds a signal. */
export const keepLease = (deps: LeaseDeps, run: RunRecord): LeaseKeeper => {
  const controller = new AbortController();
  const leases = deps.leases;
  if (leases === undefined) return { signal: controller.signal, stop: () => {} };
  const every = renewEvery(deps);
  const ref = { taskId: run.taskId, runId: run.runId };
  const stop = (): void => {
    clearInterval(renewTimer);
    clearInterval(watchTimer);
  };
  const end = (outcome: 'renewed' | 'running' | 'lost' | 'canceled'): void => {
    if (outcome === 'lost') {
      stop();
      deps.logger?.info('run lease lost', ref);
      controller.abort(new RunLeaseLostError());
    }
    if (outcome === 'canceled') {
      // The in-flight model or tool call stops; the executor settles the run CANCELED.
      stop();
      deps.logger?.info('run cancel noticed', ref);
      controller.abort(new RunCanceledError());
    }
  };
  /** One call at a time per kind; a failure is logged and the next tick tries again. */
  const ticker = (name: string, call: () => Promise<'renewed' | 'running' | 'lost' | 'canceled'>) => {
    let busy = false;
    return async (): Promise<void> => {
      if (busy || controller.signal.aborted) return;
      busy = true;
      try {
        end(await call());
      } catch (error) {
        // The lease outlasts two missed renewals; a missed watch only delays noticing a cancel.
        deps.logger?.info(`run lease ${name} failed`, {
          ...ref,
          error: error instanceof Error ? error.name : 'unknown',
        });
      } finally {
        busy = false;
      }
    };
  };
  const renew = ticker('renewal', () => leases.renew(ref, leaseUntilFrom(deps, deps.clock.now())));
  const watch = ticker('watch', () => leases.watch(ref));
  const renewTimer = setInterval(() => void renew(), every);
  const watchTimer = setInterval(() => void watch(), deps.cancelWatchMs ?? 5_000);
  renewTimer.unref?.();
  watchTimer.unref?.();
  return { signal: controller.signal, stop };
};
