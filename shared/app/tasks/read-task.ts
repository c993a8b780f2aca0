import { setTimeout as delay } from 'node:timers/promises';
import type { Message, Task, TaskState } from '../../domain/a2a.ts';
import { SealingFailedError, TaskNotFoundError } from '../../domain/errors.ts';
import type { Clock, JournalRepository, TaskRepository } from '../../domain/ports.ts';
import { type JournalView, type StoredTask, viewOf } from '../../domain/projection.ts';
import { type AgentCaller, historyAsOf, isExpired, isOwnTask } from '../../domain/task.ts';
import type { TaskContentCodec } from './task-content.ts';
import { loadHistory } from './task-history.ts';

export interface ReadTaskDeps {
  readonly journal: JournalRepository;
  readonly tasks: TaskRepository;
  readonly codec: TaskContentCodec;
  readonly clock: Clock;
  /**
   * Sleeps between journal polls, and ends at once (without an error) when `signal` aborts;
   * injected so tests and benchmarks can observe it.
   */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** What recent waits took, per instance: defers a wait's first poll. */
  readonly waitHistory?: WaitHistory;
}

export interface ReadOptions {
  /** undefined = all history; 0 = none (the field is omitted). */
  readonly historyLength?: number;
  readonly includeArtifacts?: boolean;
}

/** The machine's timer as `ReadTaskDeps.sleep`: an aborted `signal` clears it and ends the sleep. */
export const timerSleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  delay(ms, undefined, { signal }).catch(() => undefined);

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
    wantsHistory ? readHistory(deps, view, options.historyLength, row) : undefined,
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
  // The events its revisions showed (docs/protocol.md §16); the edge shows it to 1.1 clients only.
  if (view.generation !== undefined) task.generation = view.generation;
  return task;
};

const readHistory = async (
  deps: ReadTaskDeps,
  view: JournalView,
  last: number | undefined,
  knownRow?: StoredTask,
): Promise<Message[]> => {
  const row = knownRow ?? (await deps.tasks.getTask(view.taskId));
  if (row === undefined) return [];
  try {
    return await openHistoryAsOf(deps, view, row, last);
  } catch (error) {
    // History kept in chunks or segments that a newer revision replaced between the row's read and
    // theirs (docs/data-model.md, "Large content", "History"): the row read again holds the newer one.
    if (!(error instanceof SealingFailedError)) throw error;
    const fresh = await deps.tasks.getTask(view.taskId);
    return fresh === undefined ? [] : openHistoryAsOf(deps, view, fresh, last);
  }
};

/** Only the segments the answer needs: the last `last` messages as of the view's revision (I-HISTORY). */
const openHistoryAsOf = async (deps: ReadTaskDeps, view: JournalView, row: StoredTask, last?: number) =>
  historyAsOf(
    await loadHistory(deps, row, { asOf: view.revision, ...(last !== undefined && { last }) }),
    view.revision,
  );

export const getTask = async (
  deps: ReadTaskDeps,
  caller: AgentCaller,
  taskId: string,
  options: ReadOptions = {},
): Promise<Task> => toTask(deps, await getVisibleView(deps, caller, taskId), options);

export interface WaitOptions {
  /** The revision the caller's own write committed; the view must have reached it (I-RYW). */
  readonly minRevision: number;
  /** The view must have reached this task generation too (a 1.1 long-poll, docs/protocol.md §16). */
  readonly minGeneration?: number;
  /** Stop early once the view is in one of these states (e.g. terminal or interrupted). */
  readonly until?: (state: TaskState) => boolean;
  readonly timeoutMs: number;
  /**
   * Waits alike in how long they take (e.g. `answerable:<profile>`, `projected`): the first poll is
   * deferred by what the recent waits of this kind took (`WaitHistory`).
   */
  readonly kind?: string;
  /** Ends the wait at once when it aborts (the client went away): the wait returns what it has. */
  readonly signal?: AbortSignal;
}

/** The wait kind of a caller's own write until its first projection: one stream hop. */
export const projectedWait = 'projected';

/**
 * How the journal is polled while a caller waits on its own write. A projection
 * lands right after its commit (write-through), so what a wait waits for is the run. The first
 * poll is due when about a tenth of the recent waits of the same kind had found their view;
 * after it, each poll waits `pollShare` of the wait's age so far (at least `minPollMs`, at most
 * `maxPollMs`): a view is picked up at most that share of its wait late (and at most `maxPollMs`),
 * and a long wait costs a logarithm of its length in polls, not a few dozen a second. Polls read
 * eventually consistent (half a read unit): a view is written only after its commit, so a stale
 * read only means one more poll.
 */
export const journalWaitTiming = {
  pollShare: 0.1,
  minPollMs: 10,
  maxPollMs: 500,
  /** Recent waits remembered per kind. */
  historySize: 16,
  /** The share of recent waits that had found their view when the first poll is due. */
  firstPollQuantile: 0.1,
  /**
   * A wait found at its first poll says only that its view was there by then: it is remembered as
   * this share of that time, so a deferral that overshoots comes down within a few waits.
   */
  foundAtFirstPollShare: 0.75,
} as const;

/** The step after a poll that found nothing, `elapsedMs` into the wait. */
export const pollStepMs = (elapsedMs: number): number =>
  Math.min(
    journalWaitTiming.maxPollMs,
    Math.max(journalWaitTiming.minPollMs, Math.round(journalWaitTiming.pollShare * elapsedMs)),
  );

/**
 * What the recent waits of each kind took until their view was there, per instance (a Lambda
 * instance serves one call at a time, but many in turn). A wait's first poll is due one step
 * before the `firstPollQuantile` of them: the quickest tenth of the waits find their view at the
 * first poll (late by what they were quicker), the others a step or a few later. No history (a
 * fresh instance, a new kind): the first poll is immediate.
 */
export class WaitHistory {
  private readonly recent = new Map<string, number[]>();

  /** Milliseconds after the start of a wait of `kind` when its first poll is due. */
  firstPollMs(kind: string): number {
    const recent = this.recent.get(kind);
    if (recent === undefined || recent.length === 0) return 0;
    const sorted = [...recent].sort((a, b) => a - b);
    const due = sorted[Math.floor(journalWaitTiming.firstPollQuantile * (sorted.length - 1))] as number;
    return Math.max(0, Math.round(due) - pollStepMs(due));
  }

  /** A wait of `kind` found its view `elapsedMs` after it began, at its first poll or later. */
  record(kind: string, elapsedMs: number, atFirstPoll: boolean): void {
    const recent = this.recent.get(kind) ?? [];
    recent.push(atFirstPoll ? journalWaitTiming.foundAtFirstPollShare * elapsedMs : elapsedMs);
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
  const sleep = deps.sleep ?? timerSleep;
  const { signal } = options;
  const startedAt = deps.clock.now().getTime();
  const deadline = startedAt + options.timeoutMs;
  const { kind } = options;
  const history = kind === undefined ? undefined : deps.waitHistory;
  const firstPollMs = kind === undefined ? 0 : Math.min(history?.firstPollMs(kind) ?? 0, options.timeoutMs);
  if (firstPollMs > 0) await sleep(firstPollMs, signal);
  let latest: JournalView | undefined;
  for (let polls = 1; ; polls++) {
    if (signal?.aborted) return latest;
    const view = await deps.journal.getView(taskId, { consistent: false });
    if (
      view !== undefined &&
      isOwnTask(view, caller) &&
      !isExpired(view.expiresAt, deps.clock.now()) &&
      view.revision >= options.minRevision &&
      (options.minGeneration === undefined || (view.generation ?? 0) >= options.minGeneration) &&
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
    await sleep(Math.min(pollStepMs(now - startedAt), remaining), signal);
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
