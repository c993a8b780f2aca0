import type { Clock, DeliveryQueue, PushConfigRepository } from '../../domain/ports.ts';
import { configWantsRevision, type PushDelivery, type StoredPushConfig } from '../../domain/push.ts';
import { epochSeconds } from '../../domain/task.ts';
import { failpoint } from '../operations/failpoints.ts';

/**
 * The fan-out of committed journal events to their task's push configs (decisions 0009, 0041,
 * 0045): one delivery message per (event, config) on the delivery queue, where the deliverer
 * picks them up. Two callers: the pusher, fed by the journal table's stream (the backstop), and
 * the writer of a revision, right after its write-through projected it (`fanOutProjected`).
 */

export interface FanOutDeps {
  readonly pushConfigs: PushConfigRepository;
  readonly deliveries: DeliveryQueue;
  readonly clock: Clock;
}

/** A committed journal event, as much of it as the fan-out needs (no content: the pusher holds no key). */
export interface EventRef {
  readonly taskId: string;
  readonly revision: number;
  readonly expiresAt: number;
  /** The task row's push mark at this revision (decision 0041). */
  readonly pushConfigured?: true;
}

/**
 * Queues one delivery per (live event, live config) for events of ONE task, given in revision
 * order: the configs are read once (after every event was committed, so a config stored before
 * any of them is seen), the deliveries queued in revision order. Returns how many. Events without
 * the push mark are wanted by no config: for them the configs are not read.
 */
export const fanOutEvents = async (deps: FanOutDeps, events: readonly EventRef[]): Promise<number> => {
  const now = epochSeconds(deps.clock.now());
  const live = events.filter((event) => event.expiresAt > now);
  const taskId = live[0]?.taskId;
  if (taskId === undefined || !live.some((event) => event.pushConfigured)) return 0;
  const configs: StoredPushConfig[] = [];
  let afterConfigId: string | undefined;
  for (;;) {
    const page = await deps.pushConfigs.list(taskId, {
      limit: 100,
      ...(afterConfigId !== undefined ? { afterConfigId } : {}),
    });
    for (const config of page.configs) if (config.expiresAt > now) configs.push(config);
    afterConfigId = page.configs.at(-1)?.configId;
    if (!page.more || afterConfigId === undefined) break;
  }
  // A config gets only the revisions committed after it existed, not older ones this batch carries.
  const deliveries: PushDelivery[] = live.flatMap((event) =>
    configs
      .filter((config) => configWantsRevision(config, event.revision))
      .map((config) => ({ taskId, configId: config.configId, revision: event.revision })),
  );
  if (deliveries.length > 0) await deps.deliveries.enqueue(deliveries);
  return deliveries.length;
};

export interface DirectFanOutDeps extends FanOutDeps {
  readonly logger?: { warn(message: string, fields: Record<string, unknown>): void };
}

/** What the writer's direct fan-out came to; it never fails the writer. */
export type DirectFanOutResult = 'queued' | 'nothing-to-queue' | 'failed';

/**
 * The writer's own fan-out of a revision it has just projected into the journal (write-through):
 * the webhook's delivery is queued without waiting for the journal stream and the pusher
 * (decision 0045). Call it only after the revision's event is in the journal, with that event.
 * Never throws: a failure is logged and left to the backstop (the journal stream's pusher queues
 * the same delivery under the same deduplication id), and it never reruns the model or a tool.
 * Order per webhook does not depend on it: a delivery that overtakes an older revision still
 * waiting for the backstop delivers the older one first (`owedRevisions`, shared/domain/push.ts).
 */
export const fanOutProjected = async (
  deps: DirectFanOutDeps,
  event: EventRef,
): Promise<DirectFanOutResult> => {
  // Unmarked: no config wants it, and the pusher reads none for it either.
  if (!event.pushConfigured) return 'nothing-to-queue';
  try {
    failpoint('push.directFanOut');
    return (await fanOutEvents(deps, [event])) > 0 ? 'queued' : 'nothing-to-queue';
  } catch (error) {
    deps.logger?.warn('direct fan-out failed; the journal stream queues the revision', {
      taskId: event.taskId,
      revision: event.revision,
      error: error instanceof Error ? error.name : 'error',
    });
    return 'failed';
  }
};

/**
 * The write-through's hook for each revision whose event it put (`afterProjected`, beside the
 * view put): the direct fan-out of that revision's event. Resolves whatever the fan-out came to.
 */
export const fanOutAfterProjection =
  (deps: DirectFanOutDeps) =>
  async (projection: { readonly event: EventRef }): Promise<void> => {
    await fanOutProjected(deps, projection.event);
  };
