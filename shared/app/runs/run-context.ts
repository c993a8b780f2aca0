import type { Config } from '../../config/config.ts';
import type { AuditTrail } from '../../domain/audit.ts';
import type { Logger } from '../../domain/logger.ts';
import type { Metrics } from '../../domain/metrics.ts';
import type { AgentStep } from '../../domain/model.ts';
import type { AgentProvider, Clock, RunLeases, RunQueue, WritePlan } from '../../domain/ports.ts';
import { retentionExpiry } from '../../domain/privacy.ts';
import type { JournalEvent, StoredTask } from '../../domain/projection.ts';
import type { RunRecord } from '../../domain/task.ts';
import type { AgentToolSource, RemoteToolSource, ToolRegistry } from '../../domain/tools.ts';
import {
  type CommitDeps,
  commitAndProject,
  type JournaledRevision,
  type JournalPlace,
  type Projected,
  placeAfter,
} from '../journal/write-through.ts';
import type { TaskContentCodec } from '../tasks/task-content.ts';

/** What a run needs (docs/architecture.md "A run"). */
export interface ExecuteRunDeps extends CommitDeps {
  readonly codec: TaskContentCodec;
  readonly clock: Clock;
  readonly config: Config;
  readonly providerFor: (providerId: string) => AgentProvider;
  readonly leaseMs?: number;
  /** Renews the run lease while it works; absent = only the claim's lease. */
  readonly leases?: RunLeases;
  readonly leaseRenewMs?: number;
  /** How often a working run looks for a cancel between renewals. */
  readonly cancelWatchMs?: number;
  /** The tools profiles may enable, or how to load them when a run first needs them. */
  readonly tools?: ToolRegistry | (() => Promise<ToolRegistry>);
  /** The MCP servers' tools profiles may allow (`profiles.<id>.mcp`); absent: such a profile's runs fail TOOL_UNAVAILABLE. */
  readonly remoteTools?: RemoteToolSource;
  /** The remote A2A agents profiles may delegate to (`profiles.<id>.agents`); absent: such a profile's runs fail TOOL_UNAVAILABLE. */
  readonly agentTools?: AgentToolSource;
  /** The run's delegation steps (run-delegations.ts), loaded by a run whose profile may delegate. */
  readonly loadDelegations?: () => Promise<typeof import('./run-delegations.ts')>;
  /**
   * Where a run whose remote task settled before its executor could park it is queued again at
   * once (docs/reliability.md "Delegated calls"); absent: the reaper queues it when its lease is over.
   */
  readonly requeue?: RunQueue;
  /**
   * Observer of every model turn and tool call, arguments and results included; never journaled.
   * The audit trail records them itself (`recordAgentStep`, at the audit ceiling).
   */
  readonly onAgentStep?: (run: RunRecord, step: AgentStep) => Promise<void> | void;
  /** The audit trail of run steps at the audit ceiling; absent = not recorded. */
  readonly audit?: AuditTrail;
  readonly logger?: Pick<Logger, 'info'>;
  /** Counts tightenings (I-TIGHTEN). */
  readonly metrics?: Metrics;
}

/** How a run ended. */
export type ExecuteRunResult =
  | 'completed'
  | 'awaiting-approval'
  /** Waits for a delegated call's remote task (docs/configuration.md `a2aAgents`). */
  | 'awaiting-remote'
  | 'input-required'
  | 'rejected'
  | 'failed'
  | 'canceled'
  | 'not-retainable'
  | 'duplicate'
  | 'missing';

/** A step that either lets the run go on with its run and task as written, or ended it. */
export type Continued =
  | { readonly kind: 'ready'; readonly run: RunRecord; readonly task: StoredTask }
  | { readonly kind: 'ended'; readonly result: ExecuteRunResult };

/**
 * What one run knows of its task's journal, threaded from its caller through its commits: where
 * the task's newest revision is (so the next one is projected without a read), and the newest
 * revision it journaled (the blocking send's answer). One per run, never shared between runs.
 */
export interface RunJournal {
  place: JournalPlace | undefined;
  newest: JournaledRevision | undefined;
  /**
   * Called with each revision's event once this run journaled it (event and view in the
   * journal): a streaming send's stream beside the run (`RunFeed`, docs/how-a-task-flows.md §1).
   */
  readonly onJournaled?: (event: JournalEvent) => void;
}

/** The run's dependencies with its own journal knowledge. */
export type RunDeps = ExecuteRunDeps & { readonly runJournal: RunJournal };

export const withRunJournal = (
  deps: ExecuteRunDeps,
  place: JournalPlace | undefined,
  onJournaled?: (event: JournalEvent) => void,
): RunDeps => ({
  ...deps,
  runJournal: { place, newest: undefined, ...(onJournaled && { onJournaled }) },
});

/**
 * Commits one of this run's task revisions and projects it from where the run knows the journal
 * is (docs/architecture.md "The journal write"); what it projected moves that knowledge on.
 */
export const commitRevision = async (deps: RunDeps, plan: WritePlan): Promise<void> => {
  const { projected } = await commitAndProject(deps, plan, { after: deps.runJournal.place });
  noteProjected(deps.runJournal, projected);
};

/** Moves the run's journal knowledge past a revision it committed. */
export const noteProjected = (runJournal: RunJournal, projected: Projected): void => {
  runJournal.place = placeAfter(projected, runJournal.place);
  if (projected.kind !== 'journaled') return;
  runJournal.newest = projected.journaled;
  runJournal.onJournaled?.(projected.journaled.event);
};

/** What the executor knows in memory about its claim (I-ONCE). */
export interface Progress {
  /** Set just before the first provider call: until then the run provably called nothing. */
  providerCalled: boolean;
  /** The run as this executor last wrote it: its version names the start slot and fences the give-back. */
  run: RunRecord;
}

/** Fixed agent texts for failures; they name no content. */
export const failureTexts = {
  notRetainable: "The result could not be kept under the installation's privacy policy.",
  providerFailed: 'The agent could not produce a result.',
  notStorable: 'The result could not be stored.',
} as const;

/** Retention runs from the end of the run (I-PURGE). */
export const retentionFrom = (deps: Pick<ExecuteRunDeps, 'config'>, now: Date): number =>
  retentionExpiry(deps.config.privacy.retention, 'agentRun', now);
