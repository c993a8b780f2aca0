import type { JsonObject, TaskState } from './a2a.ts';
import type { Owner, TaskRecord } from './task.ts';

/**
 * The projector's pure core (docs/architecture.md): from the committed images of a task row it derives
 * the public view and the event of that revision. Sealed blobs are copied as they are; the
 * projector never decrypts (it holds no kms:Decrypt). History is never projected (I-HISTORY).
 */

export type SealedBlob = Uint8Array;

/** The task row as stored: the record plus its sealed content fields. */
export interface StoredTask extends TaskRecord {
  readonly sealedStatusMessage?: SealedBlob;
  readonly sealedArtifacts?: SealedBlob;
  readonly sealedHistory?: SealedBlob;
  /**
   * The row's push mark (decision 0041): set once a push config was stored for the task and never
   * cleared. Task writes neither set nor remove it; the projector copies it into the events.
   */
  readonly pushConfigured?: true;
}

export interface JournalView {
  readonly taskId: string;
  readonly contextId: string;
  readonly owner: Owner;
  /** The agent (profile) whose endpoint created the task: only there is it visible (I-OWNER). */
  readonly profileId: string;
  readonly state: TaskState;
  readonly revision: number;
  readonly statusTimestamp: string;
  readonly createdAt: string;
  readonly sealedStatusMessage?: SealedBlob;
  readonly sealedArtifacts?: SealedBlob;
  readonly metadata?: JsonObject;
  readonly expiresAt: number;
}

/** One committed revision as remote parties see it: artifact updates (if any), then the status. */
export interface JournalEvent {
  readonly taskId: string;
  readonly contextId: string;
  readonly owner: Owner;
  readonly revision: number;
  readonly state: TaskState;
  readonly statusTimestamp: string;
  readonly sealedStatusMessage?: SealedBlob;
  /** Present when this revision changed the artifacts; readers emit one artifactUpdate per artifact. */
  readonly sealedArtifacts?: SealedBlob;
  readonly metadata?: JsonObject;
  readonly expiresAt: number;
  /**
   * The task row carried the push mark when this revision committed: only then
   * may a push config want the revision, so the pusher reads configs only for marked events.
   */
  readonly pushConfigured?: true;
}

export interface Projection {
  readonly view: JournalView;
  readonly event: JournalEvent;
  /**
   * The revision and expiry the view had before this one, from the old image (absent for a new
   * task). The journal expects the view there; per-owner counters move from its expiry to the new.
   */
  readonly previous?: { readonly revision: number; readonly expiresAt: number };
}

const sameBytes = (a: SealedBlob | undefined, b: SealedBlob | undefined): boolean => {
  if (a === undefined || b === undefined) return a === b;
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
};

/** The public view of a committed task row: everything but the history (I-HISTORY). */
export const viewOf = (task: StoredTask): JournalView => ({
  taskId: task.taskId,
  contextId: task.contextId,
  owner: task.owner,
  profileId: task.profileId,
  state: task.state,
  revision: task.revision,
  statusTimestamp: task.statusTimestamp,
  createdAt: task.createdAt,
  sealedStatusMessage: task.sealedStatusMessage,
  sealedArtifacts: task.sealedArtifacts,
  metadata: task.metadata,
  expiresAt: task.expiresAt,
});

/** What projecting one stream record did: wrote its revision, found it already written, or had none. */
export type ProjectResult = 'written' | 'duplicate' | 'skipped';

/**
 * Projects one stream record. Returns nothing when the record carries no new revision
 * (a removal, or a write that did not advance the revision), so replays are harmless.
 */
export const projectRevision = (
  oldImage: StoredTask | undefined,
  newImage: StoredTask | undefined,
): Projection | undefined => {
  if (newImage === undefined) return undefined;
  if (oldImage !== undefined && newImage.revision <= oldImage.revision) return undefined;

  const view = viewOf(newImage);
  const artifactsChanged =
    newImage.sealedArtifacts !== undefined && !sameBytes(oldImage?.sealedArtifacts, newImage.sealedArtifacts);
  const event: JournalEvent = {
    taskId: newImage.taskId,
    contextId: newImage.contextId,
    owner: newImage.owner,
    revision: newImage.revision,
    state: newImage.state,
    statusTimestamp: newImage.statusTimestamp,
    sealedStatusMessage: newImage.sealedStatusMessage,
    sealedArtifacts: artifactsChanged ? newImage.sealedArtifacts : undefined,
    metadata: newImage.metadata,
    expiresAt: newImage.expiresAt,
    ...(newImage.pushConfigured && { pushConfigured: true }),
  };
  const previous = oldImage && { revision: oldImage.revision, expiresAt: oldImage.expiresAt };
  return previous ? { view, event, previous } : { view, event };
};
