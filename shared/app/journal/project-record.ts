import type { JournalLedger, JournalState, JournalWriter } from '../../domain/ports.ts';
import { type ProjectResult, projectRevision, type StoredTask } from '../../domain/projection.ts';

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
  // The backstop of the write-through (decision 0043): a revision already projected — its event
  // there, the view at or past it — costs one read and writes nothing.
  const { revision, taskId } = projection.event;
  const journaled = await stateOf(taskId, revision);
  if (journaled.event && (journaled.viewRevision ?? 0) >= revision) return 'duplicate';
  return journal.putRevision(projection);
};

/** Where a revision is in the journal: the read the backstop decides by. */
export type JournalStateOf = (taskId: string, revision: number) => Promise<JournalState>;

/**
 * The backstop's reads for one task's records of one stream batch (decision 0070): one read of
 * the task's journal from the first record's revision on (`projectedFrom`), answering for every
 * later record of the batch, instead of a read per record. A task's records come in revision
 * order, so the first call asks about the lowest. What the read showed stays true (events stay,
 * views only move forward); what it missed is written again, idempotently.
 */
export const batchJournalState = (journal: JournalWriter): JournalStateOf => {
  let ledger: Promise<JournalLedger> | undefined;
  return async (taskId, revision) => {
    ledger ??= journal.projectedFrom(taskId, revision);
    const { events, viewRevision } = await ledger;
    return { event: events.has(revision), ...(viewRevision !== undefined && { viewRevision }) };
  };
};
