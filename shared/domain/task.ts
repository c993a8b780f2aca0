import type { Artifact, JsonObject, Message, TaskState } from './a2a.ts';
import { isTerminal } from './a2a.ts';
import type { RunApproval } from './approvals.ts';
import { eventsOfRevision, type SealedBlob, type StoredTask } from './projection.ts';
import type { AgentGrants, RemoteToolGrants } from './tools.ts';

/**
 * Tasks and runs as the state table holds them (docs/invariants.md "Vocabulary"; docs/data-model.md). Content fields (status
 * message, artifacts, history) travel separately as plaintext `TaskContent` inside use cases
 * and as sealed blobs in storage.
 */

export interface Owner {
  readonly tenant: string;
  readonly principal: string;
}

export const sameOwner = (a: Owner, b: Owner): boolean =>
  a.tenant === b.tenant && a.principal === b.principal;

/** The agent (profile) the installation's root endpoint serves. */
export const rootAgent = 'default';

/**
 * Who asks: an owner at the endpoint of one agent (`/agents/<profileId>`, the root serves
 * `rootAgent`). Each published profile is its own agent (I-OWNER).
 */
export interface AgentCaller extends Owner {
  readonly profileId: string;
}

/**
 * I-OWNER: a task (row or view) is the caller's only when it belongs to the caller's (tenant,
 * principal) and to the agent whose endpoint is asked. Everything else reads as absent.
 */
export const isOwnTask = (
  task: { readonly owner: Owner; readonly profileId: string },
  caller: AgentCaller,
): boolean => sameOwner(task.owner, caller) && task.profileId === caller.profileId;

export interface TaskRecord {
  readonly taskId: string;
  readonly contextId: string;
  readonly owner: Owner;
  readonly profileId: string;
  readonly state: TaskState;
  /** Increments on every committed change of the task row; the journal is ordered by it. */
  readonly revision: number;
  readonly currentRunId: string;
  readonly statusTimestamp: string;
  readonly createdAt: string;
  /** Public, content-free metadata (e.g. `reason`). */
  readonly metadata?: JsonObject;
  /** Epoch seconds after which the task and everything of it is gone (I-PURGE). */
  readonly expiresAt: number;
  /**
   * The update events the task's revisions have shown so far (A2A 1.1 `generation`, docs/protocol.md
   * §16): 1 at creation, and each revision adds the events it shows (`eventsOfRevision`). Unset on a
   * task created before generations were kept: it has none ("unknown" to 1.1 clients).
   */
  readonly generation?: number;
}

/** A history entry remembers the revision that added it, so reads never show newer history than their view. */
export interface HistoryEntry {
  readonly revision: number;
  readonly message: Message;
}

export interface TaskContent {
  readonly statusMessage?: Message;
  readonly artifacts: readonly Artifact[];
  readonly history: readonly HistoryEntry[];
}

export const runStatuses = [
  'QUEUED',
  'RUNNING',
  'AWAITING_APPROVAL',
  'COMPLETED',
  'FAILED',
  'CANCELED',
] as const;
export type RunStatus = (typeof runStatuses)[number];

export const settledRunStatuses: readonly RunStatus[] = ['COMPLETED', 'FAILED', 'CANCELED'];
export const isSettled = (status: RunStatus): boolean => settledRunStatuses.includes(status);

export type CeilingLevel = 'none' | 'metadata' | 'redacted' | 'full';

export interface ProviderAttempt {
  readonly providerId: string;
  readonly outcome: 'succeeded' | 'failed' | 'refused';
  readonly startedAt: string;
  readonly durationMs: number;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
}

export interface RunRecord {
  readonly runId: string;
  readonly taskId: string;
  readonly profileId: string;
  readonly status: RunStatus;
  /** The run-row lock (I-LOCK): every status/ceiling/answer write is conditioned on it and increments it. */
  readonly version: number;
  readonly answerCeiling: CeilingLevel;
  readonly auditCeiling: CeilingLevel;
  readonly attempts: readonly ProviderAttempt[];
  readonly leaseUntil?: number;
  /**
   * A QUEUED run's start deadline (ms): a run not claimed by then is taken as never queued. Its
   * `leaseUntil` is the lease the claim will take over (written once); the reaper moves it to
   * this deadline when the queue holds the run longer.
   */
  readonly startBy?: number;
  /**
   * Times the reaper queued this run again because it was provably never started (never claimed,
   * or given back by its executor before the provider call: no provider was called): bounded,
   * after which it fails RUN_NOT_STARTED (docs/reliability.md, "Faults, behaviour, proof").
   */
  readonly requeues?: number;
  readonly cancelRequested: boolean;
  readonly createdAt: string;
  readonly endedAt?: string;
  readonly expiresAt: number;
  /** While AWAITING_APPROVAL and until the resumed run settles: the sealed `SuspendedRun`. */
  readonly sealedSuspension?: SealedBlob;
  /** The approval the run waits for, or its decision once made (metadata only). */
  readonly approval?: RunApproval;
  /**
   * A saved profile's settings, taken when the run's message was accepted (docs/operations.md, "Saved
   * profiles"): the executor runs with these, whatever the profile has become since. Absent for a profile of
   * the deployment configuration, which the executor reads itself.
   */
  readonly profile?: RunProfile;
  /**
   * The last tool call of a `write` effect this run started (I-EFFECT): written under the run
   * lock before the call is sent, never its arguments. A run found with it after a crash ends
   * FAILED `TOOL_CALL_INTERRUPTED`; nothing sends the call again.
   */
  readonly fence?: RunFence;
  /**
   * The delegated call this run waits at (docs/configuration.md `a2aAgents`) and its remote task,
   * recorded under the run lock before the call waits, with the state to continue at it in
   * `sealedSuspension` (I-EFFECT): a run that stopped while waiting is queued again and reads the
   * same remote task, never sends the message again. Removed when the call returns.
   */
  readonly delegation?: RunDelegation;
}

/** A delegated call as the run row records it: which call, which tool, which remote task, since when. */
export interface RunDelegation {
  readonly callId: string;
  readonly tool: string;
  readonly remoteTaskId: string;
  readonly at: string;
  /** SHA-256 (hex) of the token the remote task's push notifications carry (never the token). */
  readonly tokenHash?: string;
  /** Its executor left it waiting: a push notification of the remote task may queue it again. */
  readonly parked?: boolean;
  /**
   * The remote task's push notification said it settled while the run still waited in place: the
   * park write, which never succeeds beside it, queues the run again at once instead of parking.
   */
  readonly settled?: boolean;
}

/** A fenced tool call as the run row records it: which call, which tool, when it started. */
export interface RunFence {
  readonly callId: string;
  readonly tool: string;
  readonly at: string;
}

/** What the executor needs of a profile to run it. */
export interface RunProfile {
  readonly providers: readonly string[];
  readonly instructions: string;
  readonly tools: readonly { readonly name: string; readonly requiresApproval: boolean }[];
  /** The MCP tools the profile allows (config `profiles.<id>.mcp`); absent: none. */
  readonly mcp?: RemoteToolGrants;
  /** The remote A2A agents the profile may delegate to (config `profiles.<id>.agents`); absent: none. */
  readonly agents?: AgentGrants;
  readonly maxToolRounds: number;
  /**
   * Progressive output (config `profiles.<id>.output`, docs/architecture.md "Progressive output"):
   * absent, the run commits no chunk.
   */
  readonly output?: RunOutput;
}

/** A profile's progressive output: whether the run commits chunks, and at what cadence. */
export interface RunOutput {
  readonly progressive: boolean;
  readonly cadence: { readonly ms: number; readonly bytes: number };
}

const runTransitions: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  // AWAITING_APPROVAL only when a queued run's approval decision is undone (decide-approval.ts).
  QUEUED: ['RUNNING', 'AWAITING_APPROVAL', 'FAILED', 'CANCELED'],
  RUNNING: ['AWAITING_APPROVAL', 'COMPLETED', 'FAILED', 'CANCELED'],
  // QUEUED: an operator decided; the run is queued again to continue (docs/operations.md, "Approvals").
  AWAITING_APPROVAL: ['QUEUED', 'RUNNING', 'FAILED', 'CANCELED'],
  COMPLETED: [],
  FAILED: [],
  CANCELED: [],
};

export const canTransitionRun = (from: RunStatus, to: RunStatus): boolean =>
  runTransitions[from].includes(to);

const taskTransitions: Readonly<Record<TaskState, readonly TaskState[]>> = {
  TASK_STATE_SUBMITTED: [
    'TASK_STATE_WORKING',
    'TASK_STATE_COMPLETED',
    'TASK_STATE_FAILED',
    'TASK_STATE_CANCELED',
    'TASK_STATE_REJECTED',
    'TASK_STATE_INPUT_REQUIRED',
    'TASK_STATE_AUTH_REQUIRED',
  ],
  TASK_STATE_WORKING: [
    'TASK_STATE_WORKING',
    'TASK_STATE_COMPLETED',
    'TASK_STATE_FAILED',
    'TASK_STATE_CANCELED',
    'TASK_STATE_REJECTED',
    'TASK_STATE_INPUT_REQUIRED',
    'TASK_STATE_AUTH_REQUIRED',
  ],
  // SUBMITTED is only a new task's first state: a follow-up moves an interrupted task to WORKING.
  TASK_STATE_INPUT_REQUIRED: ['TASK_STATE_WORKING', 'TASK_STATE_CANCELED', 'TASK_STATE_FAILED'],
  TASK_STATE_AUTH_REQUIRED: ['TASK_STATE_WORKING', 'TASK_STATE_CANCELED', 'TASK_STATE_FAILED'],
  TASK_STATE_COMPLETED: [],
  TASK_STATE_FAILED: [],
  TASK_STATE_CANCELED: [],
  TASK_STATE_REJECTED: [],
};

/** Terminal task states are immutable: no transition leaves them. */
export const canTransitionTask = (from: TaskState, to: TaskState): boolean =>
  !isTerminal(from) && taskTransitions[from].includes(to);

/** The task state a settled run leads to. */
export const taskStateForRun = (status: 'COMPLETED' | 'FAILED' | 'CANCELED'): TaskState => {
  switch (status) {
    case 'COMPLETED':
      return 'TASK_STATE_COMPLETED';
    case 'FAILED':
      return 'TASK_STATE_FAILED';
    case 'CANCELED':
      return 'TASK_STATE_CANCELED';
    default:
      return assertNever(status);
  }
};

/** A status change the transition tables do not allow: a bug in the caller, never a caller's input. */
export class IllegalTransitionError extends Error {
  override readonly name = 'IllegalTransitionError';
  constructor(entity: 'task' | 'run', from: string, to: string) {
    super(`Illegal ${entity} transition ${from} → ${to}`);
  }
}

/** Epoch seconds of an instant: the unit of every `expiresAt` (the TTL attribute). */
export const epochSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);

/**
 * A new task at its first revision: SUBMITTED for a run that waits in the queue, WORKING for a run
 * its create claimed (no channel shows a SUBMITTED revision no one waits in). Its sealed first
 * message is its history.
 */
export const newTask = ({
  run,
  now,
  owner,
  ...fields
}: Pick<StoredTask, 'taskId' | 'contextId' | 'profileId' | 'expiresAt' | 'sealedHistory' | 'traceparent'> & {
  readonly owner: Owner;
  readonly run: Pick<RunRecord, 'runId' | 'status'>;
  readonly now: Date;
}): StoredTask => ({
  ...fields,
  owner: { tenant: owner.tenant, principal: owner.principal },
  state: run.status === 'RUNNING' ? 'TASK_STATE_WORKING' : 'TASK_STATE_SUBMITTED',
  revision: 1,
  // Its first revision shows one event, its status.
  generation: 1,
  currentRunId: run.runId,
  statusTimestamp: now.toISOString(),
  createdAt: now.toISOString(),
});

/**
 * A new run at version 1 with no attempts: QUEUED for an executor to claim, or RUNNING when its
 * create is its claim (I-ONCE). `leaseUntil` is the lease its claim keeps; a QUEUED run has a
 * start deadline `startBy`.
 */
export const newRun = ({
  ceilings,
  now,
  ...fields
}: Pick<RunRecord, 'runId' | 'taskId' | 'profileId' | 'expiresAt' | 'leaseUntil' | 'startBy' | 'profile'> & {
  readonly status: 'QUEUED' | 'RUNNING';
  readonly ceilings: { readonly answer: CeilingLevel; readonly audit: CeilingLevel };
  readonly now: Date;
}): RunRecord => ({
  ...fields,
  version: 1,
  answerCeiling: ceilings.answer,
  auditCeiling: ceilings.audit,
  attempts: [],
  cancelRequested: false,
  createdAt: now.toISOString(),
});

/**
 * The task's next revision in `state` at `now`: the only way a task's state
 * changes. Checks the task table (terminal states never move); `changes` are the other fields
 * the revision sets (sealed content, metadata, expiry).
 */
export const advanceTask = <T extends TaskRecord>(
  task: T,
  state: TaskState,
  now: Date,
  changes: Partial<Omit<T, 'state' | 'revision' | 'statusTimestamp'>> = {},
): T => {
  if (!canTransitionTask(task.state, state)) throw new IllegalTransitionError('task', task.state, state);
  // A revision is a chunk of the answer only when its writer says so (`AnswerChunk`).
  const next: T = {
    ...task,
    answerChunk: undefined,
    ...changes,
    state,
    revision: task.revision + 1,
    statusTimestamp: now.toISOString(),
  };
  if (task.generation === undefined) return next;
  // Rows carry their sealed content: what this revision shows depends on its artifacts.
  const content = (row: T) => row as T & Pick<StoredTask, 'sealedArtifacts' | 'artifactCount'>;
  return { ...next, generation: task.generation + eventsOfRevision(content(task), content(next)) };
};

/**
 * The run in `status`, its version incremented (I-LOCK): the only way a run's status changes.
 * Checks the run table; `changes` are the other fields the write sets (lease, suspension …).
 */
export const moveRun = (
  run: RunRecord,
  status: RunStatus,
  changes: Partial<Omit<RunRecord, 'status' | 'version'>> = {},
): RunRecord => {
  if (!canTransitionRun(run.status, status)) throw new IllegalTransitionError('run', run.status, status);
  return { ...run, ...changes, status, version: run.version + 1 };
};

/**
 * The one way back from RUNNING, outside the state machine above, for a run that provably called
 * no provider (I-ONCE is about provider calls): the executor that claimed it gives it back because
 * it failed before the call (it knows that in memory), or the reaper takes it back because no
 * claim wrote its start marker and the reaper took the slot (docs/data-model.md, "Audit table");
 * and for a run that stopped while it waited at a delegated call whose remote task and state it
 * recorded (`delegation`): it continues at that call without calling its provider for the steps
 * before. Its lease and start deadline are `leaseUntil`, so the reaper queues it again if no
 * delivery claims it first.
 */
export const giveBackRun = (run: RunRecord, leaseUntil: number): RunRecord => {
  if (run.status !== 'RUNNING') throw new IllegalTransitionError('run', run.status, 'QUEUED');
  return { ...run, status: 'QUEUED', version: run.version + 1, leaseUntil, startBy: leaseUntil };
};

/** The run ended at `now`: settled, without a lease (its lease index entry goes), kept at least until `expiresAt`. */
export const settleRun = (
  run: RunRecord,
  status: 'COMPLETED' | 'FAILED' | 'CANCELED',
  now: Date,
  expiresAt: number,
  changes: Partial<Omit<RunRecord, 'status' | 'version'>> = {},
): RunRecord =>
  moveRun(run, status, {
    ...changes,
    endedAt: now.toISOString(),
    leaseUntil: undefined,
    expiresAt: Math.max(run.expiresAt, expiresAt),
  });

/**
 * A change of a run that keeps its status (ceilings, cancel flag, lease): version incremented
 * (I-LOCK) except for lease-only moves, which pass `keepVersion`.
 */
export const reviseRun = (
  run: RunRecord,
  changes: Partial<Omit<RunRecord, 'status' | 'version' | 'runId' | 'taskId'>>,
  options: { readonly keepVersion?: boolean } = {},
): RunRecord => ({ ...run, ...changes, version: options.keepVersion ? run.version : run.version + 1 });

export function assertNever(value: never): never {
  throw new Error(`Unexpected value: ${String(value)}`);
}

/** Appends messages to a history at a revision, deduplicated by messageId (a2a-js does the same). */
export const appendHistory = (
  history: readonly HistoryEntry[],
  revision: number,
  messages: readonly (Message | undefined)[],
): HistoryEntry[] => {
  const seen = new Set(history.map((entry) => entry.message.messageId));
  const added: HistoryEntry[] = [];
  for (const message of messages) {
    if (message && !seen.has(message.messageId)) {
      seen.add(message.messageId);
      added.push({ revision, message });
    }
  }
  return [...history, ...added];
};

/** History as of a revision: what a reader of that revision's view may see (I-HISTORY). */
export const historyAsOf = (history: readonly HistoryEntry[], revision: number): Message[] =>
  history.filter((entry) => entry.revision <= revision).map((entry) => entry.message);

/**
 * Whether an item with this `expiresAt` (epoch seconds, the TTL attribute) is gone for readers
 * (I-PURGE). DynamoDB TTL deletes items up to days late, so every read path treats an item as
 * absent from the second its retention has passed: `expiresAt <= now`. Use it on every read of
 * a task, run, view, event, push config or audit row.
 */
export const isExpired = (expiresAt: number, now: Date): boolean => expiresAt <= epochSeconds(now);
