import type { Task } from '../../domain/a2a.ts';
import { isTerminal } from '../../domain/a2a.ts';
import type { IdGenerator } from '../../domain/ports.ts';
import type { AgentCaller } from '../../domain/task.ts';
import { withBlockingSlot } from './limits.ts';
import { getVisibleView, type ReadOptions, toTask, waitForView } from './read-task.ts';
import type { SendMessageDeps } from './send-message.ts';
import { blockingCapMs } from './send-message.ts';

export type LongPollDeps = Pick<
  SendMessageDeps,
  'journal' | 'tasks' | 'codec' | 'clock' | 'sleep' | 'config' | 'blockingSlots'
> & { readonly ids: IdGenerator };

/**
 * GetTask with `currentGeneration` (A2A 1.1, docs/protocol.md §16): the task at once when its
 * generation is past the one given — or it has none (a task from before generations were kept), or
 * it is terminal and will not move again. Otherwise the answer waits on the journal as a blocking
 * SendMessage waits for its run: holding one of the caller's blocking slots
 * (`limits.blockingSendsPerCaller`), at most the profile's blocking cap, until a view past that
 * generation is there; at the cap it is the task as it is then.
 */
export const longPollTask = async (
  deps: LongPollDeps,
  caller: AgentCaller,
  taskId: string,
  currentGeneration: number,
  options: ReadOptions = {},
): Promise<Task> => {
  const view = await getVisibleView(deps, caller, taskId);
  if (view.generation === undefined || view.generation > currentGeneration || isTerminal(view.state)) {
    return toTask(deps, view, options);
  }
  const capMs = blockingCapMs(deps.config, caller.profileId);
  const later = await withBlockingSlot(deps, caller, deps.ids.newId(), capMs, () =>
    waitForView(deps, caller, taskId, {
      minRevision: view.revision + 1,
      minGeneration: currentGeneration + 1,
      timeoutMs: capMs,
    }),
  );
  return toTask(deps, later ?? view, options);
};
