import type { Config } from '../../config/config.ts';
import type { Message, Task } from '../../domain/a2a.ts';
import { isInterrupted, isTerminal } from '../../domain/a2a.ts';
import type { Logger } from '../../domain/logger.ts';
import type { StreamSlots } from '../../domain/ports.ts';
import { type JournalEvent, type JournalView, viewAtEvent } from '../../domain/projection.ts';
import type { JournaledRevision } from '../journal/write-through.ts';
import {
  type CreatedTask,
  type CreateTaskDeps,
  type CreateTaskInput,
  createTask,
  type HandedOver,
  senderOf,
} from './create-task.ts';
import { withBlockingSlot } from './limits.ts';
import {
  projectedWait,
  type ReadOptions,
  type ReadTaskDeps,
  taskFromCommittedRow,
  toTask,
  waitForView,
} from './read-task.ts';

/**
 * A blocking or streaming send's run, run by the function that created it (docs/how-a-task-flows.md §1):
 * no queue hop and no journal polls. Absent, every run is queued for the executor.
 */
export interface RunsHere {
  /** Whether this function holds the adapters of these providers (a profile's chain). */
  canRun(providerIds: readonly string[]): boolean;
  /**
   * Runs a run its create claimed, from the image that commit returned (`executeClaimedRun`), to
   * its end: the newest revision it committed with its event and view in the journal, if any.
   * `onJournaled` receives each revision's event once the run journaled it (`RunFeed`).
   */
  run(
    image: HandedOver,
    onJournaled?: (event: JournalEvent) => void,
  ): Promise<{ readonly journaled?: JournaledRevision }>;
  /** Keeps the invocation alive after its answer while `work` runs (a run past the blocking cap). */
  keepAlive(work: Promise<unknown>): void;
}

export type SendMessageDeps = CreateTaskDeps &
  ReadTaskDeps & {
    readonly runsHere?: RunsHere;
    readonly logger?: Pick<Logger, 'warn'>;
    /** The caller's blocking sends, counted across rpc instances (`limits.blockingSendsPerCaller`); none: uncounted. */
    readonly blockingSlots?: StreamSlots;
  };

export type SendMessageInput = CreateTaskInput;

/** How long a non-blocking send waits for its own first revision to be projected (I-RYW). */
const projectionWaitMs = 10_000;

/** Where a blocking send returns: the task is answerable (done, or waiting for its caller). */
export const isAnswerable = (state: Task['status']['state']): boolean =>
  isTerminal(state) || isInterrupted(state);

/** How long a send waits for its task to be answerable: the profile's blocking cap. */
export const blockingCapMs = (config: Config, profileId: string): number =>
  (config.profiles[profileId]?.blockingCapSeconds ?? 25) * 1000;

/** The wait kind of a send waiting for its run (`WaitHistory`): waits of one profile take alike. */
export const answerableWait = (profileId: string): string => `answerable:${profileId}`;

/**
 * SendMessage: blocking by default (returns at a terminal or interrupted state, or at the
 * profile's cap, after which GetTask continues); `returnImmediately` returns the
 * first committed revision. Either way the answer is a revision the journal holds: read from it, or
 * the one a run here (`runsHere`) committed and projected into it itself.
 */
export const sendMessage = async (deps: SendMessageDeps, input: SendMessageInput): Promise<Task> =>
  input.configuration?.returnImmediately === true
    ? send(deps, input, false)
    : withBlockingSlot(
        deps,
        senderOf(input),
        deps.ids.newId(),
        blockingCapMs(deps.config, input.profileId),
        () => send(deps, input, true),
      );

const send = async (deps: SendMessageDeps, input: SendMessageInput, blocking: boolean): Promise<Task> => {
  const providers = deps.config.profiles[input.profileId]?.providers ?? [];
  const runsHere = blocking && deps.runsHere?.canRun(providers) ? deps.runsHere : undefined;
  const created = await createTask(deps, input, { handOver: runsHere !== undefined });
  const caller = senderOf(input);
  const capMs = blockingCapMs(deps.config, input.profileId);
  const options = { historyLength: input.configuration?.historyLength };
  const startedAt = deps.clock.now().getTime();
  if (runsHere !== undefined && created.handedOver !== undefined) {
    const answer = await runHere(
      deps,
      runsHere,
      { ...created, handedOver: created.handedOver },
      capMs,
      options,
    );
    if (answer !== undefined) return answer;
  }
  const view = await waitForView(deps, caller, created.taskId, {
    minRevision: created.revision,
    until: blocking ? isAnswerable : undefined,
    // What is left of the cap after a run here (all of it when the run was queued).
    timeoutMs: blocking ? Math.max(0, capMs - (deps.clock.now().getTime() - startedAt)) : projectionWaitMs,
    // A blocking wait lasts as long as the profile's runs; a non-blocking one, one projection.
    kind: blocking ? answerableWait(input.profileId) : projectedWait,
  });
  if (view === undefined) return taskFromCommittedRow(deps, caller, created.taskId, options);
  // returnImmediately promises an in-progress task (docs/protocol.md §4): when the run already finished
  // before the first projection was seen, answer with the committed revision this call created.
  if (!blocking && isTerminal(view.state) && view.revision > created.revision) {
    const snapshot = await viewAtRevision(deps, view, created.revision);
    if (snapshot !== undefined) return toTask(deps, snapshot, options);
  }
  return toTask(deps, view, options);
};

/**
 * Runs a handed-over run here and answers from the revision it ended with, as
 * this container committed and projected it: that view is in the journal (I-RYW), and its history
 * comes from the row its commit returned (I-HISTORY). A run still working at the cap goes on after
 * the answer. A run that failed here (a DynamoDB, KMS or sealing fault) is queued, as the
 * executor's failed message is delivered again. Undefined: the caller waits on the journal as for
 * a queued run (its last revision was left to the backstop, or the run is someone else's now).
 */
const runHere = async (
  deps: SendMessageDeps,
  runsHere: RunsHere,
  created: CreatedTask & { readonly handedOver: NonNullable<CreatedTask['handedOver']> },
  capMs: number,
  options: ReadOptions,
): Promise<Task | undefined> => {
  const running = startHere(deps, runsHere, created);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ended = await Promise.race([
    running,
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), capMs);
    }),
  ]);
  clearTimeout(timer);
  if (ended === undefined) {
    runsHere.keepAlive(running);
    return undefined;
  }
  // The run's own end says which revision it left in the journal: the answer is that revision.
  const newest = ended.journaled;
  if (newest === undefined || newest.view.revision < created.revision || !isAnswerable(newest.view.state))
    return undefined;
  return toTask(deps, newest.view, options, newest.task);
};

/**
 * Starts a handed-over run here: its end, with the newest revision it left in the journal. A run
 * that failed here (a DynamoDB, KMS or sealing fault) is queued, as the executor's failed message
 * is delivered again; unqueued, its lease runs out and the reaper queues it. `onJournaled` is the
 * stream beside a streaming send's run (`RunFeed`); a blocking send passes none.
 */
export const startHere = (
  deps: Pick<SendMessageDeps, 'queue' | 'logger'>,
  runsHere: RunsHere,
  created: CreatedTask & { readonly handedOver: NonNullable<CreatedTask['handedOver']> },
  onJournaled?: (event: JournalEvent) => void,
): Promise<{ readonly journaled?: JournaledRevision }> => {
  const { taskId } = created;
  const { runId } = created.handedOver.run;
  return runsHere.run(created.handedOver, onJournaled).catch(async (error: unknown) => {
    deps.logger?.warn('run failed in the rpc; queued for the executor', {
      taskId,
      runId,
      error: error instanceof Error ? error.name : 'unknown',
    });
    await deps.queue.enqueue({ taskId, runId }).catch(() => undefined);
    return { journaled: undefined };
  });
};

/** The view as it was at an earlier revision, from that revision's journal event. */
const viewAtRevision = async (
  deps: SendMessageDeps,
  view: JournalView,
  revision: number,
): Promise<JournalView | undefined> => {
  const events = await deps.journal.listEvents(view.taskId, revision - 1);
  const event = events.find((candidate) => candidate.revision === revision);
  // An event carries artifacts only when its revision changed them; a new task has none yet.
  return event && viewAtEvent(view, event, event.sealedArtifacts);
};

/** The SendMessage result: exactly one of a Task or a Message (docs/protocol.md §2.1). */
export type SendMessageResponse = { readonly task: Task } | { readonly message: Message };

/** Task metadata key the executor sets when the agent answered with a Message (docs/protocol.md). */
export const responseKindKey = 'responseKind';

/**
 * A task the agent completed with a direct Message answers `{"message": …}`; every other task
 * (still working, interrupted, failed, or completed with a result) answers `{"task": …}`.
 */
export const toSendMessageResponse = (task: Task): SendMessageResponse =>
  task.status.state === 'TASK_STATE_COMPLETED' &&
  task.metadata?.[responseKindKey] === 'message' &&
  task.status.message !== undefined
    ? { message: task.status.message }
    : { task };
