import type { JournalWriter } from '../../domain/ports.ts';
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
): Promise<ProjectResult> => {
  const projection = projectRevision(oldImage, newImage);
  if (projection === undefined) return 'skipped';
  // The backstop of the write-through (decision 0043): a revision already projected — its event
  // there, the view at or past it — costs one read and writes nothing.
  const { revision, taskId } = projection.event;
  const journaled = await journal.projected(taskId, revision);
  if (journaled.event && (journaled.viewRevision ?? 0) >= revision) return 'duplicate';
  return journal.putRevision(projection);
};
