import type { ExpiredItemStore, ItemKey } from '../../domain/operations.ts';

/**
 * The operator's purge (I-PURGE, docs/operations.md "Retention and purge"): deletes every expired item of
 * every table at once, instead of waiting for DynamoDB TTL (which may take days). Reads already
 * treat expired items as absent (`isExpired`); this makes them physically gone.
 *
 * An expired task row takes everything of its task with it — runs, journal view and events, push
 * configs and audit rows, in every table — whatever their own `expiresAt`: nothing of a task
 * outlives its task row. Deletes of expired items are conditional on the item still being
 * expired, so a task a follow-up extended meanwhile is kept.
 */

export interface PurgeCount {
  /** Items found expired by their own `expiresAt`. */
  readonly expired: number;
  /** Items deleted (expired ones and those of purged tasks). */
  readonly deleted: number;
  /** Expired items not deleted: extended meanwhile, or already gone. */
  readonly skipped: number;
  /** Of `deleted`: items deleted because their task row was purged. */
  readonly withTask: number;
}

export interface PurgeReport {
  readonly now: string;
  readonly tables: Readonly<Record<string, PurgeCount>>;
  readonly tasks: number;
}

export interface PurgeDeps {
  /** The state table first: purging a task row cascades into the others. */
  readonly stores: readonly ExpiredItemStore[];
}

interface MutableCount {
  expired: number;
  deleted: number;
  skipped: number;
  withTask: number;
}

const keyOf = (key: ItemKey): string => `${key.partition}\u0000${key.sort}`;

export const purgeExpired = async (deps: PurgeDeps, now: Date): Promise<PurgeReport> => {
  const counts = new Map<string, MutableCount>(
    deps.stores.map((store) => [store.name, { expired: 0, deleted: 0, skipped: 0, withTask: 0 }]),
  );
  const countOf = (store: ExpiredItemStore): MutableCount => counts.get(store.name) as MutableCount;
  const purgedTasks = new Set<string>();
  const done = new Set<string>();

  const purgeTask = async (taskId: string): Promise<void> => {
    purgedTasks.add(taskId);
    for (const store of deps.stores) {
      for await (const key of store.listTaskItems(taskId)) {
        const id = `${store.name}\u0000${keyOf(key)}`;
        if (done.has(id)) continue;
        done.add(id);
        if (await store.delete(key)) {
          countOf(store).deleted++;
          countOf(store).withTask++;
        }
      }
    }
  };

  for (const store of deps.stores) {
    const count = countOf(store);
    // Collected first: deleting while a scan pages over the same table is legal, but a purge that
    // cascades into this table would otherwise meet keys it already deleted.
    const expired: ItemKey[] = [];
    for await (const key of store.findExpired(now)) expired.push(key);
    for (const key of expired) {
      const id = `${store.name}\u0000${keyOf(key)}`;
      count.expired++;
      if (done.has(id)) continue;
      done.add(id);
      if (await store.deleteIfExpired(key, now)) {
        count.deleted++;
        if (key.isTaskRow && key.taskId !== undefined) await purgeTask(key.taskId);
      } else {
        count.skipped++;
      }
    }
  }
  return { now: now.toISOString(), tables: Object.fromEntries(counts), tasks: purgedTasks.size };
};
