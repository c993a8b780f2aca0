import type { TaskRepository } from '../../domain/ports.ts';
import type { HistorySegment, StoredTask } from '../../domain/projection.ts';
import type { HistoryEntry } from '../../domain/task.ts';
import type { TaskContentCodec } from './task-content.ts';

/**
 * A task's history as the row and its segments hold it (docs/data-model.md, "History"). The row
 * keeps the newest entries (revision `historyFrom` on) while they are small; each earlier revision
 * that added entries is a sealed segment of its own, put once when the row lets it go. A turn
 * therefore writes what it adds and the row stays small, whatever the conversation's length.
 */

/**
 * The row keeps the entries of its newest revisions while their JSON is at most this many bytes,
 * and always those of the newest: a short conversation (the common task: one message, one answer)
 * never writes a segment, and a row write (claim, chunk, settle) carries at most this much history
 * besides the newest turn's.
 */
export const inlineHistoryBytes = 8 * 1024;

export interface HistoryDeps {
  readonly tasks: Pick<TaskRepository, 'readHistorySegments'>;
  readonly codec: TaskContentCodec;
}

/**
 * The task's history as of revision `asOf` (default: the row's), oldest first (I-HISTORY: never an
 * entry newer than `asOf`); with `last`, at least the last `last` messages and only the segments
 * they need.
 */
export const loadHistory = async (
  deps: HistoryDeps,
  task: StoredTask,
  options: { readonly asOf?: number; readonly last?: number } = {},
): Promise<HistoryEntry[]> => {
  const asOf = options.asOf ?? task.revision;
  const inline = (await deps.codec.openHistory(task.taskId, task.sealedHistory)).filter(
    (entry) => entry.revision <= asOf,
  );
  const from = task.historyFrom;
  if (from === undefined || (options.last !== undefined && inline.length >= options.last)) return inline;
  const segments = await deps.tasks.readHistorySegments(
    task.taskId,
    Math.min(from, asOf + 1),
    options.last === undefined ? undefined : options.last - inline.length,
  );
  const older = await Promise.all(
    segments.map((segment) => deps.codec.openHistorySegment(task.taskId, segment.revision, segment.sealed)),
  );
  return [...older.flat(), ...inline];
};

type HistoryFields = Pick<StoredTask, 'sealedHistory' | 'historyFrom' | 'historyWrite'>;

const groupByRevision = (history: readonly HistoryEntry[]): Map<number, HistoryEntry[]> => {
  const groups = new Map<number, HistoryEntry[]>();
  for (const entry of history) {
    const group = groups.get(entry.revision) ?? [];
    group.push(entry);
    groups.set(entry.revision, group);
  }
  return groups;
};

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/**
 * The history fields of a task write that leaves the history as `next` (the write of revision
 * `at.revision`; `inPlace` when it keeps the revision, a scrub): which entries the row keeps and
 * which segments the write puts first — those the row lets go now, and stored ones whose entries
 * changed (redacted). `previous` and `next` are the history before and after, whole or from the
 * row's `historyFrom` on (the segments before it are then neither compared nor written).
 */
export const historyFieldsFor = async (
  codec: TaskContentCodec,
  before: StoredTask | undefined,
  previous: readonly HistoryEntry[],
  next: readonly HistoryEntry[],
  at: { readonly revision: number; readonly inPlace?: boolean },
): Promise<HistoryFields> => {
  const taskId = before?.taskId ?? next[0]?.message.taskId ?? '';
  const groups = [...groupByRevision(next).entries()].sort(([a], [b]) => a - b);
  const earlier = groupByRevision(previous);
  const keptFrom = before?.historyFrom;
  // The newest revisions' entries stay while they fit; the row never takes back what it let go.
  let from = groups.at(-1)?.[0] ?? at.revision;
  let bytes = jsonBytes(groups.at(-1)?.[1] ?? []);
  for (let index = groups.length - 2; index >= 0; index--) {
    const [revision, entries] = groups[index] as [number, HistoryEntry[]];
    bytes += jsonBytes(entries);
    if (bytes > inlineHistoryBytes || (keptFrom !== undefined && revision < keptFrom)) break;
    from = revision;
  }
  if (keptFrom !== undefined) from = Math.max(from, keptFrom);
  const firstRevision = groups[0]?.[0];
  const allInline = keptFrom === undefined && (firstRevision === undefined || from <= firstRevision);
  const put: HistorySegment[] = [];
  for (const [revision, entries] of groups) {
    if (allInline || revision >= from) continue;
    const wasInline = keptFrom === undefined || revision >= keptFrom;
    if (!wasInline && JSON.stringify(earlier.get(revision)) === JSON.stringify(entries)) continue;
    put.push({
      revision,
      sealed: await codec.sealHistorySegment(taskId, revision, entries),
      messages: entries.length,
    });
  }
  const inline = allInline ? next : next.filter((entry) => entry.revision >= from);
  const sealed =
    inline.length === 0 ? undefined : (await codec.seal(taskId, { history: inline })).sealedHistory;
  return {
    sealedHistory: sealed,
    historyFrom: allInline ? undefined : from,
    historyWrite:
      put.length === 0
        ? undefined
        : { at: at.revision, ...(at.inPlace === true && { inPlace: true as const }), put },
  };
};

/** The history fields of a write that keeps no history (the answer ceiling keeps no content): all segments go. */
export const droppedHistory = (
  revision: number,
  inPlace = false,
): Pick<StoredTask, 'sealedHistory' | 'historyFrom' | 'historyExpiresAt' | 'historyWrite'> => ({
  sealedHistory: undefined,
  historyFrom: undefined,
  historyExpiresAt: undefined,
  historyWrite: { at: revision, ...(inPlace && { inPlace: true as const }), drop: true },
});
