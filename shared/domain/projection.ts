import type { TaskRecord } from './task.ts';

/**
 * The projector's pure core (docs/architecture.md): from the committed images of a task row it derives
 * the public view and the event of that revision. Sealed blobs are copied as they are; the
 * projector never decrypts (it holds no kms:Decrypt). History is never projected (I-HISTORY).
 */

export type SealedBlob = Uint8Array;

/** The sealed history entries of one revision, stored as an item of their own (docs/data-model.md, "History"). */
export interface HistorySegment {
  readonly revision: number;
  readonly sealed: SealedBlob;
  /** How many messages it holds: a reader of the last few messages knows when to stop. */
  readonly messages: number;
}

/**
 * The history segments a task write puts (new ones, or redacted ones in place of theirs) or drops
 * (all of them: the answer ceiling keeps no content), before the row write that refers to them.
 */
export interface HistoryWrite {
  /** The task revision of the write this belongs to. */
  readonly at: number;
  /** The write keeps the revision (a scrub in place). */
  readonly inPlace?: true;
  readonly put?: readonly HistorySegment[];
  readonly drop?: true;
}

/**
 * A revision that commits the answer so far while the model works (docs/architecture.md,
 * "Progressive output"): its artifacts hold the answer's text so far, of which earlier chunks of
 * the same attempt showed the first `from` characters. Channels show the rest, appended (`from`
 * > 0) or replacing the artifact (`from` 0: the first chunk, or one after a reset).
 */
export interface AnswerChunk {
  readonly artifactId: string;
  readonly from: number;
}

/** The task row as stored: the record plus its sealed content fields. */
export interface StoredTask extends TaskRecord {
  readonly sealedStatusMessage?: SealedBlob;
  readonly sealedArtifacts?: SealedBlob;
  /**
   * How many artifacts `sealedArtifacts` holds, set with it by every writer that seals artifacts:
   * what a revision that changes them shows (`eventsOfRevision`) is known without opening them.
   */
  readonly artifactCount?: number;
  /**
   * The history's newest entries, sealed as one blob (docs/data-model.md, "History"): those of
   * revision `historyFrom` and later. Earlier entries are in the task's history segments.
   */
  readonly sealedHistory?: SealedBlob;
  /**
   * The first revision whose history entries the row holds itself; the entries of earlier revisions
   * are history segments, one item per revision. Unset: the row holds the whole history.
   */
  readonly historyFrom?: number;
  /**
   * When the task's history segments expire (their TTL): never before the task row. Unset while the
   * task has none.
   */
  readonly historyExpiresAt?: number;
  /**
   * What the write of this task does to its history segments beside the row; never stored. Applied
   * only by the write of revision `at` (a task carried on to a later write carries a spent one).
   */
  readonly historyWrite?: HistoryWrite;
  /** Set on a revision that commits the answer so far; every other revision clears it. */
  readonly answerChunk?: AnswerChunk;
  /**
   * The row's push mark (docs/data-model.md, "State table"): set once a push config was stored for the task
   * and never cleared. Task writes neither set nor remove it; the projector copies it into the events.
   */
  readonly pushConfigured?: true;
  /**
   * The W3C `traceparent` the caller sent with the request that created the task (validated at
   * the edge), for the logs of the hops that start from the streams (docs/operations.md). Set
   * when the task is created; every later revision carries it on; its events carry it too.
   */
  readonly traceparent?: string;
}

/** The named fields of a record, in the order named. */
const pick = <T, K extends keyof T>(record: T, fields: readonly K[]): Pick<T, K> => {
  const picked = {} as Pick<T, K>;
  for (const field of fields) picked[field] = record[field];
  return picked;
};

/**
 * The fields of a task its public view holds: the task row's but the history (I-HISTORY), the
 * current run and the push mark. `profileId` is the agent whose endpoint created the task: only
 * there is it visible (I-OWNER).
 */
export const viewFields = [
  'taskId',
  'contextId',
  'owner',
  'profileId',
  'state',
  'revision',
  'generation',
  'statusTimestamp',
  'createdAt',
  'sealedStatusMessage',
  'sealedArtifacts',
  'metadata',
  'expiresAt',
] as const satisfies readonly (keyof StoredTask)[];

export type JournalView = Pick<StoredTask, (typeof viewFields)[number]>;

/**
 * The fields of one committed revision as remote parties see it: artifact updates (if any), then
 * the status. `sealedArtifacts` is present when this revision changed the artifacts (readers emit
 * one artifactUpdate per artifact).
 */
export const eventFields = [
  'taskId',
  'contextId',
  'owner',
  'revision',
  'generation',
  'state',
  'statusTimestamp',
  'sealedStatusMessage',
  'sealedArtifacts',
  'metadata',
  'expiresAt',
  'traceparent',
  'answerChunk',
] as const satisfies readonly (keyof StoredTask)[];

/**
 * An event also carries the push mark the task row had when its revision committed: only then may
 * a push config want the revision, so the pusher reads configs only for marked events.
 */
export type JournalEvent = Pick<StoredTask, (typeof eventFields)[number] | 'pushConfigured'>;

/** The fields an event holds that change from revision to revision; the others are the task's for good. */
const revisionFields = [
  'state',
  'revision',
  'generation',
  'statusTimestamp',
  'sealedStatusMessage',
  'metadata',
] as const satisfies readonly (keyof JournalEvent & keyof JournalView)[];

/**
 * The view as it was at an earlier revision, from that revision's event. An event carries
 * artifacts only when its revision changed them, so the caller names the artifacts of then.
 */
export const viewAtEvent = (
  view: JournalView,
  event: JournalEvent,
  sealedArtifacts: SealedBlob | undefined,
): JournalView => ({ ...view, ...pick(event, revisionFields), sealedArtifacts });

export interface Projection {
  readonly view: JournalView;
  readonly event: JournalEvent;
  /**
   * The revision and expiry the view had before this one, from the old image (absent for a new
   * task). The journal expects the view there; per-owner counters move from its expiry to the new.
   */
  readonly previous?: { readonly revision: number; readonly expiresAt: number };
}

/** Whether two sealed blobs hold the same bytes (two absent ones count as the same). */
export const sameBytes = (a: SealedBlob | undefined, b: SealedBlob | undefined): boolean => {
  if (a === undefined || b === undefined) return a === b;
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
};

/**
 * Whether a revision changed the task's artifacts: it holds artifacts, and not the bytes the
 * revision before held. Its event then carries them, and readers show one artifactUpdate each.
 */
const changedArtifacts = (
  before: Pick<StoredTask, 'sealedArtifacts'> | undefined,
  after: Pick<StoredTask, 'sealedArtifacts'>,
): boolean =>
  after.sealedArtifacts !== undefined && !sameBytes(before?.sealedArtifacts, after.sealedArtifacts);

/**
 * The update events a revision shows on every channel (app/journal/journal-events.ts): one
 * artifactUpdate per artifact when it changed the artifacts, then its statusUpdate. A task's
 * generation is the sum of these over its revisions (docs/protocol.md §16).
 */
export const eventsOfRevision = (
  before: Pick<StoredTask, 'sealedArtifacts'>,
  after: Pick<StoredTask, 'sealedArtifacts' | 'artifactCount'>,
): number => 1 + (changedArtifacts(before, after) ? (after.artifactCount ?? 0) : 0);

/** The public view of a committed task row: everything but the history (I-HISTORY). */
export const viewOf = (task: StoredTask): JournalView => pick(task, viewFields);

/** What projecting one stream record did: wrote its revision, found it already written, or had none. */
export type ProjectResult = 'written' | 'duplicate' | 'skipped';

/** A write that made a new revision (not a run-only write, a lease renewal or a TTL removal). */
export const isNewRevision = (oldImage: StoredTask | undefined, newImage: StoredTask): boolean =>
  oldImage === undefined || newImage.revision > oldImage.revision;

/**
 * Projects one stream record. Returns nothing when the record carries no new revision
 * (a removal, or a write that did not advance the revision), so replays are harmless.
 */
export const projectRevision = (
  oldImage: StoredTask | undefined,
  newImage: StoredTask | undefined,
): Projection | undefined => {
  if (newImage === undefined || !isNewRevision(oldImage, newImage)) return undefined;

  const view = viewOf(newImage);
  const artifactsChanged = changedArtifacts(oldImage, newImage);
  const event: JournalEvent = {
    ...pick(newImage, eventFields),
    sealedArtifacts: artifactsChanged ? newImage.sealedArtifacts : undefined,
    ...(newImage.pushConfigured && { pushConfigured: true }),
  };
  const previous = oldImage && { revision: oldImage.revision, expiresAt: oldImage.expiresAt };
  return previous ? { view, event, previous } : { view, event };
};
