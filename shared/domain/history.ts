import type { HistorySegment, HistoryWrite, StoredTask } from './projection.ts';
import { epochSeconds } from './task.ts';

/**
 * A task's history in segments (docs/data-model.md, "History"): the row holds its newest entries
 * (revision `historyFrom` on), every earlier revision that added entries is a segment of its own,
 * written once, when the row lets it go. So a turn writes what it adds, not the history again.
 * Pure: both repositories apply these rules.
 */

/** The segment writes a task write carries, when it is the write they were made for. */
export const historyWriteOf = (
  task: StoredTask,
  before: StoredTask | undefined,
): HistoryWrite | undefined => {
  const write = task.historyWrite;
  if (write === undefined || write.at !== task.revision) return undefined;
  const sameRevision = before?.revision === task.revision;
  return (write.inPlace === true) === sameRevision ? write : undefined;
};

/**
 * When the task's segments expire after this write, and whether the segments already stored must
 * be extended to it: never before the task row (I-PURGE keeps nothing of a task past its row, and
 * nothing of a live task may expire). A write that moves the row past its segments' expiry gives
 * them as long again as the row has left, so an active conversation extends its segments about
 * once per retention period, not on every turn; after the row's own expiry they are gone at most
 * that much later (the purge takes them with the row at once).
 */
export const historyExpiryOf = (
  task: StoredTask,
  before: StoredTask | undefined,
): { readonly expiresAt?: number; readonly extendStored: boolean } => {
  if (task.historyFrom === undefined) return { extendStored: false };
  const stored = task.historyExpiresAt;
  if (stored !== undefined && stored >= task.expiresAt) return { expiresAt: stored, extendStored: false };
  const left = Math.max(0, task.expiresAt - epochSeconds(new Date(task.statusTimestamp)));
  return { expiresAt: task.expiresAt + left, extendStored: before?.historyFrom !== undefined };
};

/** Segments in revision order, the newest last; `last` messages counted from the newest. */
export const newestSegments = (
  segments: readonly HistorySegment[],
  below: number,
  last?: number,
): HistorySegment[] => {
  const kept = segments.filter((segment) => segment.revision < below).sort((a, b) => a.revision - b.revision);
  if (last === undefined) return kept;
  let messages = 0;
  let from = kept.length;
  while (from > 0 && messages < last) {
    from--;
    messages += (kept[from] as HistorySegment).messages;
  }
  return kept.slice(from);
};
