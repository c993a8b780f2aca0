import type { Artifact, Message, TaskState } from './a2a.ts';
import type { ApprovalDecision, ApprovalRecord } from './approvals.ts';
import type { AgentSession, AgentStep, DelegatedStep, DelegationCallback, ToolCall } from './model.ts';
import type {
  HistorySegment,
  JournalEvent,
  JournalView,
  Projection,
  SealedBlob,
  StoredTask,
} from './projection.ts';
import type { DeliveryAttemptEntry, PushDelivery, PushDeliveryRecord, StoredPushConfig } from './push.ts';
import type { AgentCaller, Owner, RunDelegation, RunFence, RunRecord } from './task.ts';
import type { EnabledTool } from './tools.ts';

/**
 * Ports: what the use cases need from the outside world, in domain nouns, one section per
 * subdomain. Adapters (shared/adapters) implement them with a technology; tests use fakes. A
 * port whose subdomain has a module of its own is declared there and listed in its section here,
 * so this file names every port.
 */

// ── Infrastructure: time, ids, sealing, logs, metrics

export interface Clock {
  now(): Date;
}

export interface IdGenerator {
  newId(): string;
}

/** Which stored field a sealed blob belongs to. Bound into the AEAD so a moved blob fails to open. */
export interface SealContext {
  readonly taskId: string;
  readonly field: string;
}

/** Envelope encryption behind two methods (docs/data-model.md "Sealing"). Failures reject: callers fail closed. */
export interface Sealer {
  seal(plaintext: Uint8Array, context: SealContext): Promise<Uint8Array>;
  open(blob: Uint8Array, context: SealContext): Promise<Uint8Array>;
}

export type { Logger } from './logger.ts';
export type { Metrics } from './metrics.ts';

// ── Tasks and runs: the state table, the run queue, leases (docs/data-model.md "State table")

/** What a task-row write expects of the row its writer read (I-RESULT, I-LOCK). */
export interface RowExpectation {
  /** The task revision read; `'absent'` creates the row. Unset for a write of the current run alone. */
  readonly revision?: number | 'absent';
  /** The version of the current run read (the written run's id is the row's run id). */
  readonly runVersion?: number;
  /** Also require the stored lease to end before it (the reaper's fence: renewals keep the version). */
  readonly leaseExpiredBefore?: number;
  /**
   * Also require the current run not to be parked at a delegated call (a cancel that only flags
   * the run for its executor: the park write keeps the version, docs/reliability.md "Delegated calls").
   */
  readonly runNotParked?: boolean;
}

/**
 * The one write of a task row. The row holds the task and its current run (docs/data-model.md,
 * "State table"), so a use case states here what the database writes: the task as it leaves it
 * (a new revision, or an in-place scrub), the current run as it leaves it, both conditioned on
 * what it read. Built as a pure value by the transition builders of `task.ts`.
 */
export interface TaskRowWrite {
  readonly taskId: string;
  /** The task after this write; unset when only the current run changes (no new revision). */
  readonly task?: StoredTask;
  /** The current run after this write; unset when the run stays as it is. */
  readonly run?: RunRecord;
  /**
   * What of the current run the write changes: unset, all of it (`run` replaces the row's run);
   * `'version-and-lease'`, only those (an answer chunk), so what another writer put beside the
   * run lock without moving it — a delegated wait's `settled` mark — stays on the row
   * (docs/reliability.md "Delegated calls").
   */
  readonly runChanges?: 'version-and-lease';
  readonly expect: RowExpectation;
  /**
   * The task row as its writer read it (the "before" image): the old image the journal write
   * projects against. Unset for a new task.
   */
  readonly before?: StoredTask;
  /**
   * A follow-up gives the task a new current run: the run it replaces, copied to its own `RUN#`
   * row before the write, which is conditioned on the row still holding it unchanged; `'none'`
   * when the row holds no run.
   */
  readonly archive?: RunRecord | 'none';
}

/** A write of an item of its own beside (or instead of) the task row. */
export type ItemWrite =
  | {
      /** A run that is not its task's current one, in its own `RUN#` row. */
      readonly entity: 'run';
      readonly item: RunRecord;
      readonly expect: 'absent' | { readonly version: number; readonly leaseExpiredBefore?: number };
    }
  | {
      /**
       * An approval record (I-APPROVAL). A decision is conditioned on the record still being
       * PENDING for the same digest, so two decisions never both win.
       */
      readonly entity: 'approval';
      readonly item: ApprovalRecord;
      readonly expect: 'absent' | { readonly decision: ApprovalDecision; readonly digest: string };
    }
  | {
      /**
       * A push config, committed with its task's row write, which sets the row's push mark
       * (docs/data-model.md, "State table"); a config id given again replaces the earlier one (as a2a-js
       * does).
       */
      readonly entity: 'push';
      readonly item: StoredPushConfig;
      readonly expect: 'any';
    };

/**
 * A write plan: what a use case commits together, all or nothing. At most one task row and items
 * of their own; the adapter sends a plan of one write as one conditional write, more as one
 * transaction.
 */
export interface WritePlan {
  readonly row?: TaskRowWrite;
  readonly items?: readonly ItemWrite[];
}

/** What a commit knows of the row it wrote. */
export interface CommitResult {
  /**
   * The task row as committed, push mark included: as a single UpdateItem returned it (`ALL_NEW`),
   * or, for a transaction (which returns nothing), the task it wrote when its push mark is
   * certain — set by this plan or the row it read, or absent from a row this plan created. Unset
   * otherwise, and for a plan without a row.
   */
  readonly committed?: StoredTask;
}

/** The state table: tasks and runs. Rejects with VersionConflictError when an expectation fails. */
export interface TaskRepository {
  commit(plan: WritePlan): Promise<CommitResult>;
  getTask(taskId: string): Promise<StoredTask | undefined>;
  /**
   * Sets the push mark on an existing task row, one write that no task write
   * undoes; the task as the mark left it, or undefined when the row does not exist.
   */
  markPushConfigured(taskId: string): Promise<StoredTask | undefined>;
  getRun(taskId: string, runId: string): Promise<RunRecord | undefined>;
  /**
   * The task's history segments of revisions before `below` (docs/data-model.md, "History"), in
   * revision order; with `last`, only the newest that hold at least `last` messages.
   */
  readHistorySegments(taskId: string, below: number, last?: number): Promise<readonly HistorySegment[]>;
  /** The run and its task, strongly consistent, read together (one Query of the task's partition). */
  getRunWithTask(
    taskId: string,
    runId: string,
  ): Promise<{ readonly run: RunRecord | undefined; readonly task: StoredTask | undefined }>;
  /**
   * Records that a fenced tool call starts (I-EFFECT) on a RUNNING run at the version its
   * executor holds, not asked to cancel: one conditional write that does not move the version
   * (like a lease renewal). 'lost' when the run moved (settled, reaped, another version),
   * 'canceled' when a cancel was asked: then the call is not sent.
   */
  fenceRun(run: RunRecord, fence: RunFence): Promise<'fenced' | 'lost' | 'canceled'>;
  /**
   * Records the delegated call a RUNNING run waits at (I-EFFECT, docs/configuration.md
   * `a2aAgents`), as `fenceRun` does — at the version its executor holds, not asked to cancel, the
   * version not moved — with the sealed state to continue at it, in place of the call's fence (the
   * remote task is known: the send's outcome is no longer open). `undefined`: the call returned,
   * delegation and state are removed. 'lost' / 'canceled' as for `fenceRun`.
   */
  holdDelegation(
    run: RunRecord,
    hold: { readonly delegation: RunDelegation; readonly sealedSuspension: SealedBlob } | undefined,
  ): Promise<'held' | 'lost' | 'canceled'>;
  /**
   * Marks the delegation a RUNNING run waits at (docs/reliability.md "Delegated calls"); the two
   * marks exclude each other, each one conditional write that keeps the version:
   * - `parked`: its executor leaves it — at the version it holds, not asked to cancel, the same
   *   remote task, not `settled`. 'settled' when the notification came first (the run is to be
   *   queued again at once), 'canceled' when a cancel was asked, 'lost' when the run moved.
   * - `settled`: the remote task's push notification says it settled — the wait whose token hash
   *   `run.delegation` holds, not `parked`. 'parked' when the park came first (the run is to be
   *   woken), 'lost' when the run no longer waits there.
   */
  markDelegation(run: RunRecord, mark: 'parked' | 'settled'): Promise<DelegationMarkOutcome>;
}

/** What `TaskRepository.markDelegation` found: its mark written, or what stood in its way. */
export type DelegationMarkOutcome = 'marked' | 'parked' | 'settled' | 'canceled' | 'lost';

/** Wakes an executor for a run. The run row is the state; the message carries only ids. */
export interface RunQueue {
  enqueue(message: RunMessage): Promise<void>;
}

export interface RunMessage {
  readonly taskId: string;
  readonly runId: string;
  /**
   * The task revision the sender projected in full (event, then view), when it did: the claim's
   * journal write then need not read the journal to know it (docs/architecture.md "The journal write").
   */
  readonly journaled?: number;
}

export interface RunRef {
  readonly taskId: string;
  readonly runId: string;
}

/**
 * Run leases (docs/architecture.md, "Send a message"). Renewing moves only the lease, never the run version,
 * so the completing transaction's expected version stays valid (I-LOCK).
 */
export interface RunLeases {
  /**
   * Extends a RUNNING run's lease; 'lost' when the run is no longer RUNNING (settled or reaped),
   * 'canceled' when it is RUNNING with a cancel request (its executor should stop now).
   */
  renew(run: RunRef, leaseUntil: number): Promise<'renewed' | 'lost' | 'canceled'>;
  /**
   * A cheap read between renewals: has the run been canceled or settled? Lets a
   * run in a long model or tool call stop within seconds of a CancelTask, not at the next renewal.
   */
  watch(run: RunRef): Promise<'running' | 'lost' | 'canceled'>;
  /** RUNNING runs whose lease ended before `now` (epoch ms), from the lease index — never a scan. */
  listExpired(now: number, limit: number): Promise<RunRef[]>;
}

export type { ApprovalRepository } from './approvals.ts';

// ── The journal: what remote parties read (docs/architecture.md "The journal write")

/**
 * The journal's writes (I-COMMITTED): from committed state only, after the commit — by the
 * writer's write-through and by the projector, its backstop. Every writer puts a
 * revision's event before its view, so a view at revision N means events 1…N are there.
 */
export interface JournalWriter {
  /**
   * The backstop's write, in stream order: the event (only if absent), then the view where the
   * old image says it is; a view already at or past the revision stays. Idempotent per revision.
   */
  putRevision(projection: Projection): Promise<'written' | 'duplicate'>;
  /**
   * Whether a revision's event is there, and where the view is: one cheap read, possibly stale
   * (what it shows is there; what it misses may just have been written).
   */
  projected(taskId: string, revision: number): Promise<JournalState>;
  /** The event of a revision, only if absent: true when written now, false when it was there. */
  putEvent(event: JournalEvent): Promise<boolean>;
  /**
   * The view of a revision, only where `projection.previous` says the view is (absent for a new
   * task), with the owner's counters: 'moved' when it is not there (another writer moved it).
   */
  putView(projection: Projection): Promise<'written' | 'moved'>;
}

/** The stream projector's journal: a writer that can also read a whole stream batch's places at once. */
export interface BackstopJournal extends JournalWriter {
  /**
   * For many tasks at once (the backstop's read per stream batch): which of the
   * given revisions' events are there, and where each task's view is. Possibly stale like
   * `projected`. A task none of whose items is there has a ledger with no events and no view.
   */
  projectedAll(revisions: readonly TaskRevision[]): Promise<ReadonlyMap<string, JournalLedger>>;
}

/** A revision's place in the journal (`JournalWriter.projected`). */
export interface JournalState {
  readonly event: boolean;
  readonly viewRevision?: number;
}

/** One revision of one task. */
export interface TaskRevision {
  readonly taskId: string;
  readonly revision: number;
}

/** A task's revisions' places in the journal (`BackstopJournal.projectedAll`). */
export interface JournalLedger {
  /** The revisions asked about whose event is there. */
  readonly events: ReadonlySet<number>;
  readonly viewRevision?: number;
}

/** The journal: what remote parties read (I-COMMITTED, I-ORDER), and its writes. */
export interface JournalRepository extends JournalWriter {
  /**
   * The task's view; strongly consistent unless `consistent: false` (half the read units, and
   * may be stale: still a committed view, since views are written only after commit).
   */
  getView(taskId: string, options?: { readonly consistent?: boolean }): Promise<JournalView | undefined>;
  listEvents(taskId: string, afterRevision: number): Promise<JournalEvent[]>;
  /** One owner's views, newest status timestamp first, from the owner index (never a scan). */
  listViews(query: ViewQuery): Promise<ViewPage>;
  /** How many of the owner's views match (expired ones excluded; docs/protocol.md §6 gives the bound). */
  countViews(filter: ViewFilter): Promise<number>;
}

/** What ListTasks filters on; every filter is optional except the owner and its agent (I-OWNER). */
export interface ViewFilter {
  readonly owner: AgentCaller;
  readonly contextId?: string;
  readonly state?: TaskState;
  /** Inclusive lower bound on the status timestamp, `YYYY-MM-DDTHH:mm:ss.sssZ`. */
  readonly statusTimestampAfter?: string;
  /** Views whose `expiresAt` is at or before this instant read as absent (I-PURGE). */
  readonly now: Date;
}

/** A position in the owner's views: the last view a previous page returned. */
export interface ViewPosition {
  readonly statusTimestamp: string;
  readonly taskId: string;
}

export interface ViewQuery extends ViewFilter {
  /** Continue strictly after this position (exclusive). */
  readonly after?: ViewPosition;
  readonly limit: number;
}

export interface ViewPage {
  /** At most `limit` views, newest first. */
  readonly views: readonly JournalView[];
  /** True when more matching views follow the last one. */
  readonly more: boolean;
}

// ── Agents: providers, models, tools (docs/architecture.md "A run")

/** What a provider is asked: the profile's instructions and the conversation so far. */
export interface AgentRequest {
  readonly runId: string;
  readonly taskId: string;
  readonly contextId: string;
  readonly instructions: string;
  /** The whole conversation, oldest first; the last entry is the message this run answers. */
  readonly history: readonly Message[];
  readonly signal?: AbortSignal;
  /** The profile's enabled tools; providers without tool use ignore them. */
  readonly tools?: readonly EnabledTool[];
  /** Model → tools → model rounds allowed in this run (all attempts together). */
  readonly maxToolRounds?: number;
  /** The run's model turns and tool results so far, carried from a failed provider to its fallback. */
  readonly session?: AgentSession;
  /**
   * Seam for the audit trail: every model turn and tool call (tool arguments and results
   * included). What it receives must never reach the journal or a log (I-LEAVE).
   */
  readonly onStep?: (step: AgentStep) => Promise<void> | void;
  /**
   * The fence of a call that may change something outside this server (a `write` effect,
   * I-EFFECT): resolves once the run recorded, under its lock, that the call starts; the call is
   * sent only after it. A rejection (the run was canceled, or taken back) means it is not sent.
   */
  readonly fence?: (call: ToolCall) => Promise<void>;
  /**
   * Delegation (I-EFFECT): `hold` records on the run, under its lock, the remote task a delegated
   * call started and the state to continue at that call, before the call waits for it; `release`
   * says the call returned. A rejection means the run moved (canceled, taken back): the call's
   * result is not used.
   */
  readonly delegations?: {
    /** Resolves with where the remote task's push notifications should go, when this server has a public URL. */
    hold(step: DelegatedStep): Promise<DelegationCallback | undefined>;
    release(call: ToolCall): Promise<void>;
  };
  /**
   * Progressive output (docs/configuration.md, profile `output`): given, the provider streams its model calls and reports
   * the answer as it grows; absent, it calls its models without streaming. `run` resolves with
   * the same result either way. Called synchronously, in order, between model events: a
   * consumer that writes buffers and never holds the stream up.
   */
  readonly onAnswer?: (progress: AnswerProgress) => void;
}

/**
 * The answer so far, as a provider reports it (`AgentRequest.onAnswer`). The text reported since
 * the last `reset` (or since the start) is the answer's text so far; when `run` completes with
 * an answer artifact, that artifact's text is this text, whole. A `reset` voids what came
 * before it: a model turn that wrote text and then asked for tools (its text was a preamble, not
 * the answer), so the next turn's text starts the answer again.
 */
export type AnswerProgress = { readonly kind: 'text'; readonly text: string } | { readonly kind: 'reset' };

/** What a run ends with, before the answer ceiling decides what may be stored. */
export type AgentOutcome =
  | { readonly kind: 'completed'; readonly artifacts: readonly Artifact[]; readonly message?: Message }
  | { readonly kind: 'input-required'; readonly message: Message; readonly artifacts?: readonly Artifact[] }
  | { readonly kind: 'rejected'; readonly message: Message }
  /** The agent answers with a Message instead of a task result (docs/protocol.md §4 "Message vs Task"). */
  | { readonly kind: 'message'; readonly message: Message }
  | { readonly kind: 'failed'; readonly message: Message };

export interface AgentResult {
  readonly outcome: AgentOutcome;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
}

/**
 * An LLM endpoint (or the scripted stand-in). Throws ProviderUnavailableError for
 * fallback-worthy failures, also when a streamed answer breaks off after `onAnswer` saw part
 * of it.
 */
export interface AgentProvider {
  run(request: AgentRequest): Promise<AgentResult>;
}

export type { ChatModel } from './model.ts';
export type { ToolRegistry } from './tools.ts';

// ── Audit: the run steps at the audit ceiling (docs/data-model.md "Audit table")

export type { AuditRowSummary, AuditTrail, RunStarts } from './audit.ts';

// ── Push notifications (docs/protocol.md §7)

/** Push configs in the state table, in their task's partition (docs/protocol.md §7). */
export interface PushConfigRepository {
  get(taskId: string, configId: string): Promise<StoredPushConfig | undefined>;
  /** One page in configId order, after `afterConfigId` when given. */
  list(
    taskId: string,
    page: { readonly limit: number; readonly afterConfigId?: string },
  ): Promise<{ readonly configs: StoredPushConfig[]; readonly more: boolean }>;
  put(config: StoredPushConfig): Promise<void>;
  /** Idempotent: deleting a missing config is not an error. */
  delete(taskId: string, configId: string): Promise<void>;
}

/** A page of a task's delivery records: at most `limit`, one config's only when given, after `after`. */
export interface PushDeliveryPage {
  readonly limit: number;
  readonly configId?: string;
  readonly after?: { readonly configId: string; readonly revision: number };
}

/**
 * The caller-readable record of webhook deliveries (docs/protocol.md §7): one item per (task, config,
 * revision) in the task's partition, one attempt appended per delivery attempt.
 */
export interface PushDeliveryLog {
  /** Appends the attempt; 'duplicate' when an attempt with the same id was appended already. */
  append(entry: DeliveryAttemptEntry): Promise<'recorded' | 'duplicate'>;
  /**
   * The highest revision whose delivery to the config is final (delivered, refused or given
   * up), read strongly consistent: the watermark that keeps a webhook's revisions in order and
   * delivers none twice after SQS's deduplication window (I-ORDER). Undefined: none yet.
   */
  finalThrough(taskId: string, configId: string): Promise<number | undefined>;
  /** One page in (configId, revision) order, after `after` when given; expired records included. */
  list(
    taskId: string,
    page: PushDeliveryPage,
  ): Promise<{ readonly records: PushDeliveryRecord[]; readonly more: boolean }>;
}

/** Hands deliveries to the webhook workers, ordered per (task, config). */
export interface DeliveryQueue {
  enqueue(deliveries: readonly PushDelivery[]): Promise<void>;
}

export interface WebhookRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The outcome of one POST: delivered (2xx), failed (worth a retry), or refused by the SSRF policy. */
export type WebhookResult =
  | { readonly kind: 'delivered'; readonly status: number }
  | { readonly kind: 'failed'; readonly reason: string; readonly status?: number }
  | { readonly kind: 'refused'; readonly reason: string };

/** POSTs to a webhook. Never throws for network or HTTP failures: they are results. */
export interface WebhookSender {
  post(request: WebhookRequest): Promise<WebhookResult>;
}

// ── Access: bearer tokens and stream slots (docs/security.md)

/** Why a bearer token was not accepted; content-free, for logs (docs/security.md). */
export type TokenRejection = 'malformed' | 'algorithm' | 'signature' | 'unknown-key' | 'expired' | 'claims';

export type TokenVerification =
  | { readonly ok: true; readonly claims: Readonly<Record<string, unknown>> }
  | { readonly ok: false; readonly reason: TokenRejection };

/**
 * Verifies a bearer token's signature, algorithm, issuer, audience and lifetime. A token that
 * fails any check is a result (`ok: false`); it rejects only when verification cannot be done
 * at all (the key set is unreachable), which is an outage, not a bad caller.
 */
export interface TokenVerifier {
  verify(token: string): Promise<TokenVerification>;
}

/** One of a caller's stream slots, held by one open stream. */
export interface StreamSlot {
  readonly index: number;
  readonly streamId: string;
}

/**
 * The caller's open streams, counted across every rpc instance (`limits.streamsPerCaller`): a stream holds a
 * slot of the caller's `max`, leased for `leaseMs` (its longest life), released when it ends.
 */
export interface StreamSlots {
  /** A free (or lapsed) slot, now the stream's; undefined when all `max` are held. */
  acquire(
    owner: Owner,
    streamId: string,
    options: { readonly max: number; readonly leaseMs: number },
  ): Promise<StreamSlot | undefined>;
  /** Idempotent; a slot that another stream took over after its lease is left alone. */
  release(owner: Owner, slot: StreamSlot): Promise<void>;
}

// ── Operations: the admin command's stores and queues (docs/operations.md)

export type {
  DeadLetter,
  DeadLetterQueue,
  ExpiredItemStore,
  ItemKey,
  ProfileStore,
  RunCatalog,
  SavedProfiles,
  StreamBatchRange,
  StreamRangeReader,
} from './operations.ts';
