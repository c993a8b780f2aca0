import type { JournalRepository } from '../domain/ports.ts';
import { type ProjectResult, projectRevision, type StoredTask } from '../domain/projection.ts';

/**
 * The projector's use case: one committed task image in, its revision in the journal out.
 * Idempotent per revision (I-ORDER); never calls a model or a tool (I-ONCE); copies sealed
 * blobs without opening them (it holds no key).
 */
export const projectRecord = async (
  journal: JournalRepository,
  oldImage: StoredTask | undefined,
  newImage: StoredTask | undefined,
): Promise<ProjectResult> => {
  const projection = projectRevision(oldImage, newImage);
  if (projection === undefined) return 'skipped';
  return journal.putRevision(projection);
};
