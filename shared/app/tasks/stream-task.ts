import type { Config } from '../../config/config.ts';
import type { Message, StreamEnd, Task, TaskState } from '../../domain/a2a.ts';
import { endsStream, isTerminal } from '../../domain/a2a.ts';
import { TaskNotFoundError, UnsupportedOperationError } from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import type { StreamSlots } from '../../domain/ports.ts';
import {
  type JournalEvent,
  type JournalView,
  type StoredTask,
  viewAtEvent,
  viewOf,
} from '../../domain/projection.ts';
import { type AgentCaller, isExpired, isOwnTask, sameOwner } from '../../domain/task.ts';
import { openStreamResponses } from '../journal/journal-events.ts';
import type { StreamComment, StreamItem } from '../rpc/dispatcher.ts';
import { type CreateTaskDeps, type CreateTaskInput, createTask, senderOf } from './create-task.ts';
import { withStreamSlot } from './limits.ts';
import {
  getVisibleView,
  projectedWait,
  type ReadTaskDeps,
  timerSleep,
  toTask,
  waitForView,
} from './read-task.ts';
import { RunFeed } from './run-feed.ts';
import {
  answerableWait,
  blockingCapMs,
  isAnswerable,
  type RunsHere,
  startHere,
  toSendMessageResponse,
} from './send-message.ts';

/**
 * SSE streams of a task, read from the journal only (I-COMMITTED, docs/protocol.md §5): the Task
 * snapshot first, then for every later committed revision, in revision order, one artifactUpdate
 * per artifact when that revision changed the artifacts and then its statusUpdate (I-ORDER).
 * Every subscriber reads the same journal, so concurrent streams see the same sequence. A
 * streaming send whose run runs in this function is handed each revision's event by its run once
 * the run journaled it (`RunFeed`): the same events, without reading them back.
 */

export interface StreamTiming {
  /** First poll delay after a write or an event; doubled while idle up to `maxPollMs`. */
  readonly firstPollMs: number;
  readonly maxPollMs: number;
  /** For this long after a write or an event, the delay stays at most `activeMaxPollMs`. */
  readonly activeWindowMs: number;
  readonly activeMaxPollMs: number;
  /**
   * While active, the delay after a poll that found nothing is this share of the time since the
   * last change (at least `firstPollMs`, at most `activeMaxPollMs`) instead of doubling: a
   * revision is picked up at most this share of its wait late, and a long wait costs few reads
   * (`bench/poll-schedule.ts` measures it). Absent: the delay doubles.
   */
  readonly activeShare?: number;
  /** An SSE comment is sent when nothing else was sent for this long (≤ 30 s, docs/protocol.md §17). */
  readonly heartbeatMs: number;
  /** The stream closes cleanly after this long (API Gateway cuts streams at 15 min). */
  readonly maxDurationMs: number;
  /** How long the caller's own write may take to reach the journal (I-RYW). */
  readonly projectionWaitMs: number;
  /** How long a missing revision is waited for before the stream moves past it. */
  readonly gapWaitMs: number;
  /**
   * Failed journal reads in a row that end the stream with an error; fewer cost a poll (the
   * delay still doubles), not the stream.
   */
  readonly maxReadFailures: number;
}

export const defaultStreamTiming: StreamTiming = {
  firstPollMs: 10,
  maxPollMs: 1_000,
  activeWindowMs: 3_000,
  activeMaxPollMs: 100,
  activeShare: 0.2,
  heartbeatMs: 15_000,
  maxDurationMs: 14 * 60_000,
  projectionWaitMs: 10_000,
  gapWaitMs: 5_000,
  maxReadFailures: 3,
};

export interface StreamTaskDeps extends ReadTaskDeps {
  readonly streamTiming?: Partial<StreamTiming>;
  /** The caller's open streams across rpc instances (`limits.streamsPerCaller`); none: uncounted. */
  readonly streamSlots?: StreamSlots;
}

/** Where a stream starts: right after the caller's own write, or at a (re-)subscription. */
export type StreamStart =
  | {
      readonly kind: 'created';
      readonly revision: number;
      /**
       * The row as the caller's own commit returned it, when its run runs here: that revision's
       * journal write put its event only (its view comes with the run's next revision), so the
       * snapshot comes from this committed image, as `openFromCommittedRow` would read it.
       */
      readonly image?: StoredTask;
    }
  | { readonly kind: 'subscribe'; readonly lastEventId?: string };

export interface StreamTaskInput {
  readonly caller: AgentCaller;
  readonly taskId: string;
  readonly start: StreamStart;
  /**
   * SendStreamingMessage closes at a terminal or interrupted state; SubscribeToTask stays open
   * through INPUT_REQUIRED/AUTH_REQUIRED until a terminal state (TCK STREAM-SUB-002, docs/protocol.md §17).
   */
  readonly closeAt: StreamEnd;
  readonly historyLength?: number;
  /**
   * A send to an agent that may answer with a Message (docs/protocol.md §4): the first event waits for
   * the task to be answerable, at most this long. A run that answered with a Message streams that Message
   * alone; any other run streams its task from the created revision, as if nothing had waited.
   */
  readonly messageAnswerWaitMs?: number;
  /**
   * The revisions the task's run, run in this function, journals (`RunFeed`): while it feeds the
   * stream, the stream reads no journal; it reads the journal once the feed has a gap or the run
   * ended without the stream's closing revision.
   */
  readonly feed?: RunFeed;
  /**
   * Aborts when the client's connection closes (docs/protocol.md §5): every wait of the stream
   * ends at once and the stream returns, so it releases what it holds (its slot, `withStreamSlot`)
   * now, not at its next event or heartbeat. An async generator's `return()` cannot interrupt the
   * `await` it is suspended at; only the wait itself can end it.
   */
  readonly signal?: AbortSignal;
}

/**
 * Whether the agent a profile serves may answer this message with a direct Message instead of a
 * task. A composition root knows its providers; without one, no agent does.
 */
export type MessageAnswerForecast = (config: Config, profileId: string, message: Message) => boolean;

export const heartbeat: StreamComment = { comment: 'keep-alive' };

/** `Last-Event-ID` is a revision this server sent; anything else is ignored (a fresh subscription). */
export const parseLastEventId = (value: string | undefined): number | undefined => {
  const trimmed = value?.trim() ?? '';
  if (!/^\d{1,15}$/.test(trimmed)) return undefined;
  const revision = Number(trimmed);
  return revision >= 1 ? revision : undefined;
};

interface Opening {
  readonly task: Task;
  readonly revision: number;
  readonly expiresAt: number;
  /** Events after `revision` already read while building the snapshot. */
  readonly pending?: readonly JournalEvent[];
}

/**
 * The stream of one task. The first item is the Task snapshot (or the failure that a plain
 * JSON-RPC error reports: unknown, foreign or expired task → TaskNotFound; a subscription to a
 * terminal task → UnsupportedOperation). Polling stops when the consumer closes the iterator or
 * `input.signal` aborts.
 */
export async function* streamTask(deps: StreamTaskDeps, input: StreamTaskInput): AsyncGenerator<StreamItem> {
  const timing = { ...defaultStreamTiming, ...deps.streamTiming };
  const sleep = deps.sleep ?? timerSleep;
  const { signal } = input;
  const now = (): number => deps.clock.now().getTime();
  const startedAt = now();
  const closes = (state: TaskState): boolean => endsStream(state, input.closeAt);

  if (input.start.kind === 'created' && input.messageAnswerWaitMs !== undefined) {
    const answer = yield* messageAnswerOf(
      deps,
      input,
      input.start.revision,
      input.messageAnswerWaitMs,
      timing,
    );
    if (answer !== undefined) {
      // A message-only stream (docs/protocol.md §5): exactly one Message, then closed. It has no
      // revision to resume after: its task is terminal.
      yield { message: answer };
      return;
    }
  }

  const opening = await openSnapshot(deps, input, timing);
  yield { eventId: String(opening.revision), response: { task: opening.task } };
  if (closes(opening.task.status.state)) return;

  let cursor = opening.revision;
  let expiresAt = opening.expiresAt;
  let lastSentAt = now();
  let lastChangeAt = lastSentAt;
  // While the run here feeds the stream, its revisions come from the feed and the journal is not
  // read; afterwards (a gap, or the run's end without the closing revision) the journal is polled.
  let feed = input.feed;
  let delay = timing.firstPollMs;
  let gapSince: number | undefined;
  let pending = opening.pending;
  let readFailures = 0;
  for (;;) {
    if (signal?.aborted) return;
    let events: readonly JournalEvent[] = [];
    let readJournalNext = false;
    if (pending === undefined && feed !== undefined) {
      const fed = feed.take(cursor);
      events = fed.events;
      if (fed.thenJournal) {
        feed = undefined;
        readJournalNext = true;
      }
    } else {
      try {
        events = pending ?? (await deps.journal.listEvents(input.taskId, cursor));
        readFailures = 0;
      } catch (error) {
        // A read the SDK's own retries did not save (a throttle, a timeout) is a missed poll: the
        // cursor has not moved, so the next read asks for the same revisions (I-ORDER holds).
        readFailures += 1;
        if (readFailures >= timing.maxReadFailures) throw error;
      }
    }
    pending = undefined;
    let progressed = false;
    for (const event of events) {
      if (event.revision <= cursor) continue;
      if (event.revision !== cursor + 1) {
        // A revision is missing (its projection is late or being retried): hold the later ones
        // back for a while, so the order stays the revision order (I-ORDER).
        gapSince ??= now();
        if (now() - gapSince < timing.gapWaitMs) break;
      }
      gapSince = undefined;
      yield* eventItems(deps, event);
      cursor = event.revision;
      expiresAt = Math.max(expiresAt, event.expiresAt);
      lastSentAt = now();
      lastChangeAt = lastSentAt;
      progressed = true;
      if (closes(event.state)) return;
    }
    // Fast right after a change (a claim is soon followed by its completion), slower when idle.
    if (progressed) delay = timing.firstPollMs;

    const at = now();
    if (at - startedAt >= timing.maxDurationMs) return;
    if (expiresAt <= Math.floor(at / 1000)) return; // purged meanwhile (I-PURGE)
    if (readJournalNext) continue;
    if (at - lastSentAt >= timing.heartbeatMs) {
      yield heartbeat;
      lastSentAt = now();
    }
    const untilHeartbeat = lastSentAt + timing.heartbeatMs - now();
    const untilEnd = startedAt + timing.maxDurationMs - now();
    if (feed !== undefined) {
      // Fed: no poll; the run's next revision or its end wakes the stream.
      const ms = Math.max(1, Math.min(timing.maxPollMs, untilHeartbeat, untilEnd));
      await sleepUnlessWoken(sleep, ms, feed.changed(), signal);
      continue;
    }
    await sleep(Math.max(1, Math.min(delay, untilHeartbeat, untilEnd)), signal);
    if (!progressed) {
      const sinceChange = now() - lastChangeAt;
      const active = sinceChange < timing.activeWindowMs;
      delay =
        active && timing.activeShare !== undefined
          ? Math.min(
              timing.activeMaxPollMs,
              Math.max(timing.firstPollMs, Math.round(timing.activeShare * sinceChange)),
            )
          : Math.min(delay * 2, active ? timing.activeMaxPollMs : timing.maxPollMs);
    }
  }
}

/**
 * Sleeps `ms`, less when `wake` resolves or `signal` aborts first. The sleep ends with the wait, so
 * a stream its run wakes often holds one timer, and one listener on its signal, at a time.
 */
const sleepUnlessWoken = async (
  sleep: NonNullable<ReadTaskDeps['sleep']>,
  ms: number,
  wake: Promise<void>,
  signal: AbortSignal | undefined,
): Promise<void> => {
  const wait = new AbortController();
  const end = (): void => wait.abort();
  signal?.addEventListener('abort', end, { once: true });
  try {
    await Promise.race([sleep(ms, wait.signal), wake]);
  } finally {
    signal?.removeEventListener('abort', end);
    wait.abort();
  }
};

/**
 * Waits for the created task to be answerable, at most `waitMs`, sending heartbeats meanwhile: the
 * Message it answered with, or undefined (it answered with a task, or is not answerable in time).
 * The rule is the blocking SendMessage's (`toSendMessageResponse` after a wait of its blocking
 * cap), so a send answers alike blocking and streaming.
 */
async function* messageAnswerOf(
  deps: StreamTaskDeps,
  input: StreamTaskInput,
  revision: number,
  waitMs: number,
  timing: StreamTiming,
): AsyncGenerator<StreamItem, Message | undefined> {
  const now = (): number => deps.clock.now().getTime();
  const until = now() + waitMs;
  for (;;) {
    const view = await waitForView(deps, input.caller, input.taskId, {
      minRevision: revision,
      until: isAnswerable,
      timeoutMs: Math.max(0, Math.min(until - now(), timing.heartbeatMs)),
      kind: answerableWait(input.caller.profileId),
      // A wait ended by a closed connection is followed by a heartbeat (or the Task): the stream
      // unwinds there.
      signal: input.signal,
    });
    if (view !== undefined && isAnswerable(view.state)) {
      const task = await toTask(deps, view, { historyLength: 0, includeArtifacts: false });
      const response = toSendMessageResponse(task);
      return 'message' in response ? response.message : undefined;
    }
    if (now() >= until) return undefined;
    yield heartbeat;
  }
}

/**
 * One revision as stream items: one artifactUpdate per artifact when the revision changed the
 * artifacts (the whole committed artifact with `lastChunk`, or for a chunk of the answer the text the chunks
 * before it did not show, appended: docs/architecture.md "Progressive output"), then the
 * statusUpdate. Only the revision's last item carries the `id:`, so a client cut off in the middle
 * of a revision re-attaches before it and receives the whole revision again (no half revision).
 */
async function* eventItems(deps: StreamTaskDeps, event: JournalEvent): AsyncGenerator<StreamItem> {
  const responses = await openStreamResponses(deps.codec, event);
  const last = responses.length - 1;
  for (const [index, response] of responses.entries()) {
    yield index === last ? { eventId: String(event.revision), response } : response;
  }
}

const openSnapshot = async (
  deps: StreamTaskDeps,
  input: StreamTaskInput,
  timing: StreamTiming,
): Promise<Opening> => {
  const options = { historyLength: input.historyLength };
  if (input.start.kind === 'created') {
    // The caller's own write, at its revision (I-RYW): shown as committed, then what followed.
    const wanted = input.start.revision;
    const image = input.start.image;
    if (image !== undefined && image.revision === wanted)
      return {
        task: await toTask(deps, viewOf(image), options, image),
        revision: image.revision,
        expiresAt: image.expiresAt,
      };
    const view = await waitForView(deps, input.caller, input.taskId, {
      minRevision: wanted,
      timeoutMs: timing.projectionWaitMs,
      kind: projectedWait,
    });
    if (view === undefined) return openFromCommittedRow(deps, input);
    return (await openAt(deps, view, wanted, options)) ?? openAtView(deps, view, options);
  }

  const resumeAfter = parseLastEventId(input.start.lastEventId);
  const view = await getVisibleView(deps, input.caller, input.taskId).catch((error: unknown) => {
    // A client that re-attaches has seen the task: a journal without it yet is a late projection.
    if (resumeAfter !== undefined && error instanceof TaskNotFoundError) return undefined;
    throw error;
  });
  if (resumeAfter !== undefined && resumeAfter !== view?.revision) {
    // A re-attach: the task as the client last saw it, then every revision it missed — also when
    // the task has ended meanwhile (the stream then closes after the terminal event). The view may
    // also lag the event the client saw (the projector writes the event first): the task is then
    // rebuilt from that event too, never shown at an older revision (I-ORDER).
    const resumed =
      (view && (await openAt(deps, view, resumeAfter, options))) ??
      (await openAheadOfJournal(deps, input, resumeAfter, view, timing));
    if (resumed !== undefined) return resumed;
  }
  if (view === undefined) throw new TaskNotFoundError(input.taskId);
  if (isTerminal(view.state)) {
    throw new UnsupportedOperationError('Task is in a terminal state; there is nothing to subscribe to', {
      taskId: input.taskId,
      state: view.state,
    });
  }
  return openAtView(deps, view, options);
};

const openAtView = async (
  deps: StreamTaskDeps,
  view: JournalView,
  options: { historyLength?: number },
): Promise<Opening> => ({
  task: await toTask(deps, view, options),
  revision: view.revision,
  expiresAt: view.expiresAt,
});

/**
 * The task as of an earlier revision, rebuilt from the journal's events: that revision's state and
 * status message, and the artifacts of the newest revision at or before it that set them.
 * Undefined when the journal no longer holds that revision's event.
 */
const openAt = async (
  deps: StreamTaskDeps,
  view: JournalView,
  revision: number,
  options: { historyLength?: number },
): Promise<Opening | undefined> => {
  if (revision === view.revision) return openAtView(deps, view, options);
  const events = await deps.journal.listEvents(view.taskId, 0);
  const event = events.find((candidate) => candidate.revision === revision);
  if (event === undefined || !sameOwner(event.owner, view.owner)) return undefined;
  const artifactsSetter = events
    .filter((candidate) => candidate.revision <= revision && candidate.sealedArtifacts !== undefined)
    .at(-1);
  const past = viewAtEvent(view, event, artifactsSetter?.sealedArtifacts);
  return {
    task: await toTask(deps, past, options),
    revision,
    expiresAt: view.expiresAt,
    pending: events.filter((candidate) => candidate.revision > revision),
  };
};

/**
 * A re-attach after a revision the journal holds neither as a view nor as an event: the client
 * saw it in a stream that opened from the committed row while the projection was
 * late. Like SendStreamingMessage's own write (I-RYW), the view is waited for (bounded), and if it
 * is still behind, the snapshot comes from the committed row — never a revision older than the one
 * the client saw (I-ORDER). Undefined when the view is not behind, or no committed revision is that
 * far (not a revision this server sent): an ordinary re-attach.
 */
const openAheadOfJournal = async (
  deps: StreamTaskDeps,
  input: StreamTaskInput,
  resumeAfter: number,
  view: JournalView | undefined,
  timing: StreamTiming,
): Promise<Opening | undefined> => {
  if (view !== undefined && view.revision >= resumeAfter) return undefined;
  const row = await deps.tasks.getTask(input.taskId);
  if (
    row === undefined ||
    !isOwnTask(row, input.caller) ||
    isExpired(row.expiresAt, deps.clock.now()) || // purged meanwhile: TaskNotFound (I-PURGE)
    row.revision < resumeAfter
  )
    return undefined;
  const caughtUp = await waitForView(deps, input.caller, input.taskId, {
    minRevision: resumeAfter,
    timeoutMs: timing.projectionWaitMs,
  });
  if (caughtUp === undefined) return openFromCommittedRow(deps, input);
  const options = { historyLength: input.historyLength };
  return (await openAt(deps, caughtUp, resumeAfter, options)) ?? openAtView(deps, caughtUp, options);
};

/**
 * The projection of the caller's own write is late: the snapshot comes from the committed task row
 * (committed state only), and the stream continues from the journal once it catches up.
 */
const openFromCommittedRow = async (deps: StreamTaskDeps, input: StreamTaskInput): Promise<Opening> => {
  const row = await deps.tasks.getTask(input.taskId);
  if (row === undefined || !isOwnTask(row, input.caller) || isExpired(row.expiresAt, deps.clock.now()))
    throw new TaskNotFoundError(input.taskId);
  const view = viewOf(row);
  return {
    task: await toTask(deps, view, { historyLength: input.historyLength }, row),
    revision: row.revision,
    expiresAt: row.expiresAt,
  };
};

export type StreamMethodDeps = CreateTaskDeps &
  StreamTaskDeps & {
    /** Which sends may be answered with a Message; absent: none (every stream is a task's). */
    readonly mayAnswerWithMessage?: MessageAnswerForecast;
    /**
     * Runs a streaming send's run in this function, as a blocking send's (docs/how-a-task-flows.md
     * §1): no queue hop and no claim of its own. Absent: every run is queued for the executor.
     */
    readonly runsHere?: RunsHere;
    readonly logger?: Pick<Logger, 'warn'>;
  };

/** The stream timing of an installation: defaults, with heartbeat and lifetime from its configuration. */
export const streamTimingOf = (deps: StreamMethodDeps): Partial<StreamTiming> => ({
  ...(deps.config.streaming
    ? {
        heartbeatMs: deps.config.streaming.heartbeatSeconds * 1000,
        maxDurationMs: deps.config.streaming.maxStreamSeconds * 1000,
      }
    : {}),
  ...deps.streamTiming,
});

/**
 * SendStreamingMessage: the task is created exactly as SendMessage creates it (refusal, content
 * types, follow-ups — all plain JSON-RPC errors, before any event), then streamed from the created
 * revision until a terminal or interrupted state. When the agent may answer with a Message, the
 * first event waits for the run, as long as a blocking send would. Where a blocking send's run
 * runs in this function (`runsHere`), so does this one's: the create claims it, it runs beside the
 * stream (kept alive past the stream, like a blocking run past its cap), and it feeds the stream
 * each revision once it journaled it (`RunFeed`): the stream shows only what the journal holds
 * (I-COMMITTED), in revision order (I-ORDER), without reading it back.
 */
export const sendStreamingMessage = async (
  deps: StreamMethodDeps,
  input: CreateTaskInput & { readonly historyLength?: number; readonly signal?: AbortSignal },
): Promise<AsyncGenerator<StreamItem>> =>
  // The slot first: a caller at the limit is refused before the task is created.
  withStreamSlot(deps, input.caller, deps.ids.newId(), async () => {
    const providers = deps.config.profiles[input.profileId]?.providers ?? [];
    const runsHere = deps.runsHere?.canRun(providers) ? deps.runsHere : undefined;
    const created = await createTask(
      deps,
      { ...input, streaming: true },
      { handOver: runsHere !== undefined },
    );
    const handedOver = created.handedOver;
    // The run here feeds the stream each revision it journals, and ends the feed when it ends.
    let feed: RunFeed | undefined;
    if (runsHere !== undefined && handedOver !== undefined) {
      const fed = new RunFeed();
      feed = fed;
      runsHere.keepAlive(
        startHere(deps, runsHere, { ...created, handedOver }, fed.journaled).finally(() => fed.end()),
      );
    }
    return streamTask(
      { ...deps, streamTiming: streamTimingOf(deps) },
      {
        caller: senderOf(input),
        taskId: created.taskId,
        start: {
          kind: 'created',
          revision: created.revision,
          ...(handedOver !== undefined && { image: handedOver.task }),
        },
        closeAt: 'terminal-or-interrupted',
        ...(feed !== undefined && { feed }),
        historyLength: input.historyLength,
        signal: input.signal,
        ...(deps.mayAnswerWithMessage?.(deps.config, input.profileId, input.message) && {
          messageAnswerWaitMs: blockingCapMs(deps.config, input.profileId),
        }),
      },
    );
  });

/** SubscribeToTask: the current task (or, with Last-Event-ID, what was missed) until a terminal state. */
export const subscribeToTask = (
  deps: StreamMethodDeps,
  caller: AgentCaller,
  taskId: string,
  options: { readonly lastEventId?: string; readonly signal?: AbortSignal } = {},
): Promise<AsyncGenerator<StreamItem>> =>
  withStreamSlot(deps, caller, deps.ids.newId(), async () =>
    streamTask(
      { ...deps, streamTiming: streamTimingOf(deps) },
      {
        caller,
        taskId,
        start: { kind: 'subscribe', lastEventId: options.lastEventId },
        closeAt: 'terminal',
        signal: options.signal,
      },
    ),
  );
