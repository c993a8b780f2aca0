import { BoundedMap } from '../../domain/bounded-map.ts';
import type { Clock, DeliveryQueue, PushConfigRepository, WritePlan } from '../../domain/ports.ts';
import { configWantsRevision, type PushDelivery, type StoredPushConfig } from '../../domain/push.ts';
import { configsOfCreatedRow } from '../../domain/row-writes.ts';
import { epochSeconds } from '../../domain/task.ts';
import { failpoint } from '../operations/failpoints.ts';

/**
 * The fan-out of committed journal events to their task's push configs (docs/architecture.md,
 * "Push notifications"): one delivery message per (event, config) on the delivery queue, where the deliverer
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
  /** The task row's push mark at this revision (docs/data-model.md, "State table"). */
  readonly pushConfigured?: true;
}

/** How long a writer reuses the push configs it read for a task's earlier revision. */
export const recentConfigsMaxAgeMs = 10_000;
/** Tasks whose configs a container keeps at most. */
const recentConfigsTasks = 1_000;

/**
 * The push configs a writer's direct fan-out read last, per task, for the revision that directly
 * follows the one it fanned out, within `recentConfigsMaxAgeMs` of the read — the
 * executor's COMPLETED after its WORKING: one read of the configs per run, not one per revision.
 * Any other revision (another writer's in between) reads them again. A config stored since the
 * read is left to the backstop (the journal stream's pusher, which always reads them); one deleted
 * since is queued for and dropped by the deliverer, which reads each config it delivers to.
 */
export class RecentPushConfigs {
  private readonly entries = new BoundedMap<
    string,
    { readonly configs: readonly StoredPushConfig[]; readonly readAtMs: number; readonly revision: number }
  >(recentConfigsTasks);

  constructor(private readonly clock: Clock) {}

  /** The configs read for `revision − 1` (or reused for it) within the age; the entry moves on to `revision`. */
  fresh(taskId: string, revision: number): readonly StoredPushConfig[] | undefined {
    const entry = this.entries.get(taskId);
    if (entry === undefined) return undefined;
    if (
      entry.revision !== revision - 1 ||
      this.clock.now().getTime() - entry.readAtMs >= recentConfigsMaxAgeMs
    ) {
      this.entries.delete(taskId);
      return undefined;
    }
    this.entries.set(taskId, { ...entry, revision });
    return entry.configs;
  }

  remember(taskId: string, revision: number, configs: readonly StoredPushConfig[]): void {
    this.entries.set(taskId, { configs, readAtMs: this.clock.now().getTime(), revision });
  }
}

/** Every push config of a task, all pages. */
const readConfigs = async (deps: FanOutDeps, taskId: string): Promise<StoredPushConfig[]> => {
  const configs: StoredPushConfig[] = [];
  let afterConfigId: string | undefined;
  for (;;) {
    const page = await deps.pushConfigs.list(taskId, {
      limit: 100,
      ...(afterConfigId !== undefined ? { afterConfigId } : {}),
    });
    configs.push(...page.configs);
    afterConfigId = page.configs.at(-1)?.configId;
    if (!page.more || afterConfigId === undefined) return configs;
  }
};

/**
 * Queues one delivery per (live event, live config) for events of ONE task, given in revision
 * order: the configs are read once (after every event was committed, so a config stored before
 * any of them is seen), the deliveries queued in revision order. Returns how many. Events without
 * the push mark are wanted by no config: for them the configs are not read. With `recent` (a
 * writer's own fan-out of one event), the configs it read for the revision before, within their
 * age, are used instead; with `known` (the configs the plan that created the task wrote), those,
 * and they are remembered as if read.
 */
export const fanOutEvents = async (
  deps: FanOutDeps,
  events: readonly EventRef[],
  recent?: RecentPushConfigs,
  known?: readonly StoredPushConfig[],
): Promise<number> => {
  const now = epochSeconds(deps.clock.now());
  const live = events.filter((event) => event.expiresAt > now);
  const taskId = live[0]?.taskId;
  if (taskId === undefined || !live.some((event) => event.pushConfigured)) return 0;
  // The writer's cache serves one revision at a time (its own fan-out passes one event).
  const single = live.length === 1 ? live[0] : undefined;
  const planned = single && known;
  const reused = single && planned === undefined ? recent?.fresh(taskId, single.revision) : undefined;
  const read = planned ?? reused ?? (await readConfigs(deps, taskId));
  // What was read or planned serves the next revision; a reused entry has moved on itself.
  if (single && reused === undefined) recent?.remember(taskId, single.revision, read);
  const configs = read.filter((config) => config.expiresAt > now);
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
 * (I-COMMITTED). Call it only after the revision's event is in the journal, with that event.
 * Never throws: a failure is logged and left to the backstop (the journal stream's pusher queues
 * the same delivery under the same deduplication id), and it never reruns the model or a tool.
 * Order per webhook does not depend on it: a delivery that overtakes an older revision still
 * waiting for the backstop delivers the older one first (`owedRevisions`, shared/domain/push.ts).
 */
export const fanOutProjected = async (
  deps: DirectFanOutDeps,
  event: EventRef,
  recent?: RecentPushConfigs,
  known?: readonly StoredPushConfig[],
): Promise<DirectFanOutResult> => {
  // Unmarked: no config wants it, and the pusher reads none for it either.
  if (!event.pushConfigured) return 'nothing-to-queue';
  try {
    failpoint('push.directFanOut');
    return (await fanOutEvents(deps, [event], recent, known)) > 0 ? 'queued' : 'nothing-to-queue';
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
 * view put): the direct fan-out of that revision's event, with the configs this hook read for the
 * task's earlier revisions (`RecentPushConfigs`, one per hook: per container), or, for the revision
 * that created the task, the configs its plan wrote (`configsOfCreatedRow`): an
 * inline push config's SUBMITTED is queued without reading it back. Resolves whatever the fan-out
 * came to.
 */
export const fanOutAfterProjection = (deps: DirectFanOutDeps) => {
  const recent = new RecentPushConfigs(deps.clock);
  return async (projection: { readonly event: EventRef }, plan?: WritePlan): Promise<void> => {
    await fanOutProjected(deps, projection.event, recent, plan && configsOfCreatedRow(plan));
  };
};
