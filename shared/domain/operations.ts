import type { RunRecord } from './task.ts';

/**
 * Ports of the operator's admin command (docs/operations.md): run inspection and the purge.
 * Never reachable from the public API.
 */

/** The runs of a task, for inspection (metadata only: run rows hold no content). */
export interface RunCatalog {
  listRuns(taskId: string): Promise<RunRecord[]>;
}

/** An item of a table, opaque to the use case; the adapter knows its physical key. */
export interface ItemKey {
  readonly partition: string;
  readonly sort: string;
  /** The task the item belongs to (every item of a task shares its partition). */
  readonly taskId?: string;
  /** True for the task row itself: purging it purges everything of the task (I-PURGE). */
  readonly isTaskRow: boolean;
}

/**
 * One table's items, seen by their TTL attribute. Finding expired items may scan: the purge is an
 * operator command, never a request path.
 */
export interface ExpiredItemStore {
  /** A short name for reports: `state`, `journal`, `audit`. */
  readonly name: string;
  /** Items whose `expiresAt` is at or before `now`. */
  findExpired(now: Date): AsyncIterable<ItemKey>;
  /** Deletes the item if it is still expired at `now`; false when it was extended or is already gone. */
  deleteIfExpired(key: ItemKey, now: Date): Promise<boolean>;
  /** Every item of a task in this table, whatever its own `expiresAt` (or none). */
  listTaskItems(taskId: string): AsyncIterable<ItemKey>;
  /** Deletes the item; false when it was already gone. */
  delete(key: ItemKey): Promise<boolean>;
}

/**
 * Profiles an operator saved with the admin command (docs/architecture.md; docs/configuration.md): each is one entry of a
 * configuration's `profiles`, in that shape, kept in the state table.
 */
export interface StoredProfile {
  readonly profileId: string;
  /** The entry as it was saved (the `profiles.<id>` shape of the configuration). */
  readonly profile: Readonly<Record<string, unknown>>;
  readonly updatedAt: string;
}

/**
 * What the functions read of the saved profiles (docs/operations.md, "Saved profiles"): all of them, in one
 * query.
 */
export interface SavedProfiles {
  /** Every saved profile, by id. */
  list(): Promise<StoredProfile[]>;
}

/** The admin command's side: it also writes them. */
export interface ProfileStore extends SavedProfiles {
  put(profile: StoredProfile): Promise<void>;
  get(profileId: string): Promise<StoredProfile | undefined>;
  /** Removes a saved profile; false when there was none. */
  delete(profileId: string): Promise<boolean>;
}

/**
 * Where a stream consumer's failed batch lies in its stream (the projector's or the pusher's
 * on-failure record, docs/operations.md, "Replaying the projector's and the pusher's DLQs"): the records
 * themselves are not in it, only their range.
 */
export interface StreamBatchRange {
  readonly streamArn: string;
  readonly shardId: string;
  /** The first record of the batch that failed … */
  readonly startSequenceNumber: string;
  /** … and the last record of the batch. */
  readonly endSequenceNumber: string;
  /** Records the consumer was given (after its event-source filter), as the on-failure record says. */
  readonly batchSize?: number;
}

/** One message of a stream consumer's dead-letter queue, received and hidden from other readers. */
export interface DeadLetter {
  /** The queue's id of the message (for reports). */
  readonly messageId: string;
  /** The batch it names; undefined when the message is not an on-failure record. */
  readonly range?: StreamBatchRange;
}

/** A dead-letter queue seen by its replay: each message is deleted only once it was replayed. */
export interface DeadLetterQueue {
  /** The next messages (at most 10), hidden from other readers until released or deleted; none when empty. */
  receive(): Promise<DeadLetter[]>;
  delete(letter: DeadLetter): Promise<void>;
  /** Visible again now: kept for a later replay. */
  release(letter: DeadLetter): Promise<void>;
}

/** A stream's records of a range, while the stream still holds them (24 hours on DynamoDB). */
export interface StreamRangeReader<R> {
  /** The records from the range's start to its end, in stream order; `'trimmed'` when they are gone. */
  read(range: StreamBatchRange): Promise<readonly R[] | 'trimmed'>;
}
