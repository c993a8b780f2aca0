import type { Message, Task, TaskState } from '../../domain/a2a.ts';
import { SealingFailedError, TaskNotFoundError } from '../../domain/errors.ts';
import type { Clock, JournalRepository, TaskRepository } from '../../domain/ports.ts';
import { type JournalView, type StoredTask, viewOf } from '../../domain/projection.ts';
import { type AgentCaller, historyAsOf, isExpired, isOwnTask } from '../../domain/task.ts';
import type { TaskContentCodec } from './task-content.ts';

export interface ReadTaskDeps {
  readonly journal: JournalRepository;
  readonly tasks: TaskRepository;
  readonly codec: TaskContentCodec;
  readonly clock: Clock;
  /** Sleeps between journal polls; injected so tests and benchmarks can observe it. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** What recent waits took, per instance: defers a wait's first poll (decision 0035). */
  readonly waitHistory?: WaitHistory;
}

export interface ReadOptions {
  /** undefined = all history; 0 = none (the field is omitted). */
  readonly historyLength?: number;
  readonly includeArtifacts?: boolean;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The caller's view of a task, or TaskNotFound for a missing, foreign or expired one, or one of
 * another agent (I-OWNER, I-PURGE).
 */
export const getVisibleView = async (
  deps: ReadTaskDeps,
  caller: AgentCaller,
  taskId: string,
): Promise<JournalView> => {
  const view = await deps.journal.getView(taskId);
  if (view === undefined || !isOwnTask(view, caller) || isExpired(view.expiresAt, deps.clock.now())) {
    throw new TaskNotFoundError(taskId);
  }
  return view;
};

/**
 * Builds the A2A Task of a journal view (I-COMMITTED). History is the one read outside the
 * journal: it lives only on the task row, and is cut at the view's revision (I-HISTORY).
 */
export const toTask = async (
  deps: ReadTaskDeps,
  view: JournalView,
  options: ReadOptions = {},
  /** The task row when the caller has read it already; otherwise history is read from the table. */
  row?: StoredTask,
): Promise<Task> => {
  const includeArtifacts = options.includeArtifacts ?? true;
  const wantsHistory = options.historyLength === undefined || options.historyLength > 0;
  const [statusMessage, artifacts, history] = await Promise.all([
    deps.codec.openStatusMessage(view.taskId, view.sealedStatusMessage),
    includeArtifacts ? deps.codec.openArtifacts(view.taskId, view.sealedArtifacts) : undefined,
    wantsHistory ? readHistory(deps, view, row) : undefined,
  ]);
  const task: Task = {
    id: view.taskId,
    contextId: view.contextId,
    status: {
      state: view.state,
      timestamp: view.statusTimestamp,
      ...(statusMessage ? { message: statusMessage } : {}),
    },
  };
  if (artifacts !== undefined) task.artifacts = artifacts;
  if (history !== undefined) {
    task.history = options.historyLength === undefined ? history : history.slice(-options.historyLength);
  }
  if (view.metadata !== undefined) task.metadata = view.metadata;
  return task;
};

const readHistory = async (
  deps: ReadTaskDeps,
  view: JournalView,
  knownRow?: StoredTask,
): Promise<Message[]> => {
  const row = knownRow ?? (await deps.tasks.getTask(view.taskId));
  if (row === undefined) return [];
  try {
    return await openHistoryAsOf(deps, view, row);
  } catch (error) {
    // A history kept in chunks that a newer revision replaced between the row's read and the
    // chunks' (decision 0065): the row read again holds the newer one.
    if (!(error instanceof SealingFailedError) || knownRow !== undefined) throw error;
    const fresh = await deps.tasks.getTask(view.taskId);
    return fresh === undefined ? [] : openHistoryAsOf(deps, view, fresh);
  }
};

const openHistoryAsOf = async (deps: ReadTaskDeps, view: JournalView, row: StoredTask) =>
  historyAsOf(await deps.codec.openHistory(view.taskId, row.sealedHistory), view.revision);

export const getTask = async (
  deps: ReadTaskDeps,
  caller: AgentCaller,
  taskId: string,
  options: ReadOptions = {},
): Promise<Task> => toTask(deps, await getVisibleView(deps, caller, taskId), options);

export interface WaitOptions {
  /** The revision the caller's own write committed; the view must have reached it (I-RYW). */
  readonly minRevision: number;
  /** Stop early once the view is in one of these states (e.g. terminal or interrupted). */
  readonly until?: (state: TaskState) => boolean;
  readonly timeoutMs: number;
  /**
   * Waits alike in how long they take (e.g. `settled:<profile>`, `projected`): the first poll is
   * deferred by what the recent waits of this kind took (`WaitHistory`).
   */
  readonly kind?: string;
}

/** The wait kind of a caller's own write until its first projection: one stream hop. */
export const projectedWait = 'projected';

/**
 * How the journal is polled while a caller waits on its own write. A projection lands one
 * stream hop or more after the commit (decision 0017), so the first poll is deferred to a
 * little before the quickest of the recent waits of the same kind, then the wait polls
 * every `activePollMs` for `activeWindowMs`, then doubles the delay up to `maxPollMs` for long
 * runs. Polls read eventually consistent (half a read unit): a view is written only after its
 * commit, so a stale read only means one more poll.
 */
export const journalWaitTiming = {
  activePollMs: 25,
  /**
   * Waits of a kind that recently took little poll `pollShare` of the quickest of them apart,
   * down to `minPollMs` (decision 0046): a short run is picked up a few ms late, not 25.
   */
  minPollMs: 10,
  pollShare: 0.15,
  activeWindowMs: 1_000,
  maxPollMs: 200,
  /** Recent waits remembered per kind. */
  historySize: 16,
  /**
   * The first poll is due at this share of the quickest recent wait (less `activePollMs`): a wait
   * quicker than all recent ones still finds its view at once unless it is much quicker.
   */
  deferShare: 0.75,
} as const;

/**
 * What the recent waits of each kind took until their view was there, per instance (a Lambda
 * instance serves one call at a time, but many in turn). A wait's first poll is due at
 * `deferShare` of the quickest of them, less `activePollMs`: a view found at that first poll may have landed
 * earlier, so it is remembered as half that time, and a deferral that overshoots is undone in a
 * few waits. No history (a fresh instance, a new kind): the first poll is immediate.
 */
export class WaitHistory {
  private readonly recent = new Map<string, number[]>();

  /** Milliseconds after the start of a wait of `kind` when its first poll is due. */
  firstPollMs(kind: string): number {
    const quickest = this.quickestMs(kind);
    if (quickest === undefined) return 0;
    return Math.max(0, Math.round(journalWaitTiming.deferShare * quickest) - this.pollMs(kind));
  }

  /**
   * Milliseconds between a wait's polls in its first second: `pollShare` of the quickest recent
   * wait of `kind`, between `minPollMs` and `activePollMs` (decision 0046). No history: `activePollMs`.
   */
  pollMs(kind: string): number {
    const quickest = this.quickestMs(kind);
    if (quickest === undefined) return journalWaitTiming.activePollMs;
    return Math.min(
      journalWaitTiming.activePollMs,
      Math.max(journalWaitTiming.minPollMs, Math.round(journalWaitTiming.pollShare * quickest)),
    );
  }

  private quickestMs(kind: string): number | undefined {
    const recent = this.recent.get(kind);
    return recent === undefined || recent.length === 0 ? undefined : Math.min(...recent);
  }

  /** A wait of `kind` found its view `elapsedMs` after it began, at its first poll or later. */
  record(kind: string, elapsedMs: number, atFirstPoll: boolean): void {
    const recent = this.recent.get(kind) ?? [];
    recent.push(atFirstPoll ? elapsedMs / 2 : elapsedMs);
    if (recent.length > journalWaitTiming.historySize) recent.shift();
    this.recent.set(kind, recent);
  }
}

/**
 * Waits on the journal for a view at or past `minRevision` (and, if asked, in a wanted state).
 * Returns the newest visible view at or past `minRevision` when the time is up, or undefined
 * when the projection never reached it (the projector is behind or down).
 */
export const waitForView = async (
  deps: ReadTaskDeps,
  caller: AgentCaller,
  taskId: string,
  options: WaitOptions,
): Promise<JournalView | undefined> => {
  const sleep = deps.sleep ?? defaultSleep;
  const startedAt = deps.clock.now().getTime();
  const deadline = startedAt + options.timeoutMs;
  const { kind } = options;
  const history = kind === undefined ? undefined : deps.waitHistory;
  const firstPollMs = kind === undefined ? 0 : Math.min(history?.firstPollMs(kind) ?? 0, options.timeoutMs);
  if (firstPollMs > 0) await sleep(firstPollMs);
  const activeUntil = startedAt + firstPollMs + journalWaitTiming.activeWindowMs;
  let delay: number = (kind !== undefined && history?.pollMs(kind)) || journalWaitTiming.activePollMs;
  let latest: JournalView | undefined;
  for (let polls = 1; ; polls++) {
    const view = await deps.journal.getView(taskId, { consistent: false });
    if (
      view !== undefined &&
      isOwnTask(view, caller) &&
      !isExpired(view.expiresAt, deps.clock.now()) &&
      view.revision >= options.minRevision &&
      // An eventually consistent read may go back a revision: keep the newest seen.
      view.revision >= (latest?.revision ?? 0)
    ) {
      latest = view;
      if (options.until === undefined || options.until(view.state)) {
        if (kind !== undefined) history?.record(kind, deps.clock.now().getTime() - startedAt, polls === 1);
        return view;
      }
    }
    const now = deps.clock.now().getTime();
    const remaining = deadline - now;
    if (remaining <= 0) return latest;
    await sleep(Math.min(delay, remaining));
    if (now >= activeUntil) delay = Math.min(delay * 2, journalWaitTiming.maxPollMs);
  }
};

/**
 * The Task of a committed state row, for the one case the journal cannot answer in time: a
 * caller's own write whose projection is late. It shows committed state only (I-COMMITTED's
 * promise that nothing uncommitted is shown still holds).
 */
export const taskFromCommittedRow = async (
  deps: ReadTaskDeps,
  caller: AgentCaller,
  taskId: string,
  options: ReadOptions = {},
): Promise<Task> => {
  const row = await deps.tasks.getTask(taskId);
  if (row === undefined || !isOwnTask(row, caller) || isExpired(row.expiresAt, deps.clock.now())) {
    throw new TaskNotFoundError(taskId);
  }
  return toTask(deps, viewOf(row), options, row);
};
