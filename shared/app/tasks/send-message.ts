import type { Config } from '../../config/config.ts';
import type { Message, Task } from '../../domain/a2a.ts';
import { isInterrupted, isTerminal } from '../../domain/a2a.ts';
import { type JournalView, viewAtEvent } from '../../domain/projection.ts';
import { type CreateTaskDeps, type CreateTaskInput, createTask, senderOf } from './create-task.ts';
import { projectedWait, type ReadTaskDeps, taskFromCommittedRow, toTask, waitForView } from './read-task.ts';

export type SendMessageDeps = CreateTaskDeps & ReadTaskDeps;

export type SendMessageInput = CreateTaskInput;

/** How long a non-blocking send waits for its own first revision to be projected (I-RYW). */
const projectionWaitMs = 10_000;

/** Where a blocking send returns: the run has settled for its caller (done, or waiting for it). */
export const settledForCaller = (state: Task['status']['state']): boolean =>
  isTerminal(state) || isInterrupted(state);

/** How long a send waits for its run to settle: the profile's blocking cap. */
export const blockingCapMs = (config: Config, profileId: string): number =>
  (config.profiles[profileId]?.blockingCapSeconds ?? 25) * 1000;

/** The wait kind of a send waiting for its run (`WaitHistory`): waits of one profile take alike. */
export const settledWait = (profileId: string): string => `settled:${profileId}`;

/**
 * SendMessage: blocking by default (returns at a terminal or interrupted state, or at the
 * profile's cap, after which GetTask continues); `returnImmediately` returns the
 * first committed revision. Either way the answer comes from the journal.
 */
export const sendMessage = async (deps: SendMessageDeps, input: SendMessageInput): Promise<Task> => {
  const created = await createTask(deps, input);
  const caller = senderOf(input);
  const blocking = input.configuration?.returnImmediately !== true;
  const capMs = blockingCapMs(deps.config, input.profileId);
  const view = await waitForView(deps, caller, created.taskId, {
    minRevision: created.revision,
    until: blocking ? settledForCaller : undefined,
    timeoutMs: blocking ? capMs : projectionWaitMs,
    // A blocking wait lasts as long as the profile's runs; a non-blocking one, one projection.
    kind: blocking ? settledWait(input.profileId) : projectedWait,
  });
  const options = { historyLength: input.configuration?.historyLength };
  if (view === undefined) return taskFromCommittedRow(deps, caller, created.taskId, options);
  // returnImmediately promises an in-progress task (docs/protocol.md §4): when the run already finished
  // before the first projection was seen, answer with the committed revision this call created.
  if (!blocking && isTerminal(view.state) && view.revision > created.revision) {
    const snapshot = await viewAtRevision(deps, view, created.revision);
    if (snapshot !== undefined) return toTask(deps, snapshot, options);
  }
  return toTask(deps, view, options);
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

/** Task metadata key the executor sets when the agent answered with a Message (decision 0006). */
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
