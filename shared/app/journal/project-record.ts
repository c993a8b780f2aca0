import type {
  BackstopJournal,
  Clock,
  JournalLedger,
  JournalState,
  JournalWriter,
} from '../../domain/ports.ts';
import {
  isNewRevision,
  type ProjectResult,
  projectRevision,
  type StoredTask,
} from '../../domain/projection.ts';

/**
 * The projector's use case: one committed task image in, its revision in the journal out, unless
 * the writer's write-through projected it already.
 * Idempotent per revision (I-ORDER); never calls a model or a tool (I-ONCE); copies sealed
 * blobs without opening them (it holds no key).
 */
export const projectRecord = async (
  journal: JournalWriter,
  oldImage: StoredTask | undefined,
  newImage: StoredTask | undefined,
  stateOf: JournalStateOf = (taskId, revision) => journal.projected(taskId, revision),
): Promise<ProjectResult> => {
  const projection = projectRevision(oldImage, newImage);
  if (projection === undefined) return 'skipped';
  // The backstop of the writers' journal writes: a revision already projected costs a read.
  const { revision, taskId } = projection.event;
  if (isProjected(await stateOf(taskId, revision), revision)) return 'duplicate';
  return journal.putRevision(projection);
};

/** Where a revision is in the journal: the read the backstop decides by. */
export type JournalStateOf = (taskId: string, revision: number) => Promise<JournalState>;

/** A revision the backstop finds there — its event, the view at or past it — writes nothing. */
const isProjected = (state: JournalState, revision: number): boolean =>
  state.event && (state.viewRevision ?? 0) >= revision;

const stateIn = (ledger: JournalLedger, revision: number): JournalState => ({
  event: ledger.events.has(revision),
  ...(ledger.viewRevision !== undefined && { viewRevision: ledger.viewRevision }),
});

/**
 * How long after its commit a revision is left to its writer's write-through before the backstop
 * writes it itself: the write-through lands a few milliseconds after the commit,
 * and only a crashed or failed one needs the backstop. 400 ms: under load a
 * write-through can land more than 200 ms after its status timestamp, and a revision the backstop
 * writes beside it is written twice.
 */
export const writeThroughGraceMs = 400;

/** The clock and sleep the backstop's grace is measured with. */
export interface BackstopTiming {
  readonly clock: Clock;
  readonly sleep: (ms: number) => Promise<void>;
  readonly graceMs?: number;
}

/** A stream record's committed images (either may be absent). */
export interface CommittedImages {
  readonly oldImage: StoredTask | undefined;
  readonly newImage: StoredTask | undefined;
}

const merge = (seen: JournalLedger | undefined, again: JournalLedger | undefined): JournalLedger => {
  const viewRevision = Math.max(seen?.viewRevision ?? 0, again?.viewRevision ?? 0);
  return {
    events: new Set([...(seen?.events ?? []), ...(again?.events ?? [])]),
    ...(viewRevision > 0 && { viewRevision }),
  };
};

/**
 * The backstop's reads for one stream batch: one read (`projectedAll`) of every new revision's event and every task's view in the
 * batch, instead of one per task. A revision that read shows unprojected, committed less than
 * the grace ago (its `statusTimestamp`, set by its writer just before the commit), is most likely
 * its writer's write-through in flight: the backstop waits until the youngest such revision is
 * the grace old — at most the grace — and reads those tasks once more, so it does not race the
 * writer with writes that would lose (a lost conditional write is billed and does nothing). What a
 * read showed stays true (events stay, views only move forward); what it missed is written
 * again, idempotently. If the batch read fails, each record reads for itself (`projected`).
 */
export const batchJournalState = async (
  journal: BackstopJournal,
  images: readonly CommittedImages[],
  timing?: BackstopTiming,
): Promise<JournalStateOf> => {
  const revisions = images.flatMap(({ oldImage, newImage }) =>
    newImage !== undefined && isNewRevision(oldImage, newImage) ? [newImage] : [],
  );
  const asked = new Set(revisions.map((task) => `${task.taskId}#${task.revision}`));
  const ledgers = new Map<string, JournalLedger>();
  try {
    for (const [taskId, ledger] of await journal.projectedAll(revisions)) ledgers.set(taskId, ledger);
    const pending = revisions.filter((task) => {
      const ledger = ledgers.get(task.taskId);
      return ledger === undefined || !isProjected(stateIn(ledger, task.revision), task.revision);
    });
    const graceMs = timing?.graceMs ?? writeThroughGraceMs;
    const now = timing?.clock.now().getTime() ?? 0;
    const youngest = Math.max(...pending.map((task) => Date.parse(task.statusTimestamp)));
    const wait = Math.min(graceMs, youngest + graceMs - now);
    if (timing !== undefined && pending.length > 0 && wait > 0) {
      await timing.sleep(wait);
      for (const [taskId, ledger] of await journal.projectedAll(pending))
        ledgers.set(taskId, merge(ledgers.get(taskId), ledger));
    }
  } catch {
    ledgers.clear();
  }
  return async (taskId, revision) => {
    const ledger = ledgers.get(taskId);
    if (ledger === undefined || !asked.has(`${taskId}#${revision}`))
      return journal.projected(taskId, revision);
    return stateIn(ledger, revision);
  };
};
