import type { DeadLetter, DeadLetterQueue, StreamRangeReader } from '../../domain/operations.ts';

/**
 * The operator's re-drive of a stream consumer's dead-letter queue (docs/operations.md,
 * "Replaying the projector's and the pusher's DLQs"): the projector's and the pusher's on-failure records
 * name a range of their stream, not its records, so each message's range is read back from the stream (24
 * hours) and given to the same use case the consumer runs, in stream order. A message is deleted only after
 * its whole range was handled; what cannot be replayed yet (the consumer still fails, the records are gone,
 * the message is not an on-failure record) is made visible again and kept.
 *
 * Idempotent: the consumers are (the projector per revision, the fan-out by the delivery queue's
 * deduplication and the deliverer's delivery records), so a range replayed twice changes nothing
 * more, and a replayed message is gone from the queue.
 */

export type ReplayOutcome =
  /** The range was handled; the message is deleted. */
  | 'replayed'
  /** `--dry-run`: the range is readable and would be given to the consumer. */
  | 'replayable'
  /** The consumer failed for at least one record: kept. */
  | 'failed'
  /** The stream no longer holds the range's records: kept, nothing to replay from. */
  | 'trimmed'
  /** Not an on-failure record of a stream batch: kept. */
  | 'unreadable';

export interface ReplayedLetter {
  readonly messageId: string;
  readonly outcome: ReplayOutcome;
  readonly shardId?: string;
  readonly startSequenceNumber?: string;
  readonly endSequenceNumber?: string;
  /** Records of the range read back from the stream (before the consumer's filter). */
  readonly records?: number;
  /** Of them, the ones the consumer handled (after its filter). */
  readonly handled?: number;
  /** Why the replay failed: an error name, never content. */
  readonly error?: string;
}

export interface ReplayReport {
  readonly dryRun: boolean;
  /** Messages received from the queue. */
  readonly messages: number;
  /** Per outcome, how many messages. */
  readonly outcomes: Readonly<Record<ReplayOutcome, number>>;
  /** Messages still in the queue afterwards (every outcome but `replayed`). */
  readonly kept: number;
  /** Records read back from the stream, and of them the ones handed to the consumer. */
  readonly records: { readonly read: number; readonly handled: number };
  readonly letters: readonly ReplayedLetter[];
}

/** What the consumer made of a range's records: how many it was given, how many failed. */
export interface ConsumedRange {
  readonly handled: number;
  readonly failed: number;
}

export interface ReplayDeps<R> {
  readonly deadLetters: DeadLetterQueue;
  readonly stream: StreamRangeReader<R>;
  /**
   * The consumer's own batch handling, behind its event-source filter (records it would never
   * have been given are not handled). Resolves how many records failed; may throw.
   */
  readonly consume: (records: readonly R[]) => Promise<ConsumedRange>;
}

const compareSequence = (a: string, b: string): number => {
  const [x, y] = [BigInt(a), BigInt(b)];
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Older ranges first within a shard, so each task's revisions are replayed in the order they were committed. */
const inStreamOrder = (a: DeadLetter, b: DeadLetter): number => {
  if (!a.range || !b.range) return a.range ? -1 : b.range ? 1 : 0;
  if (a.range.shardId !== b.range.shardId) return a.range.shardId < b.range.shardId ? -1 : 1;
  return compareSequence(a.range.startSequenceNumber, b.range.startSequenceNumber);
};

const errorName = (error: unknown): string => (error instanceof Error ? error.name : 'Error');

export const replayDeadLetters = async <R>(
  deps: ReplayDeps<R>,
  options: { readonly dryRun: boolean },
): Promise<ReplayReport> => {
  // Everything first, then in stream order: a queue keeps no order, and the received messages
  // stay hidden until released, so none is received twice.
  const received: DeadLetter[] = [];
  const seen = new Set<string>();
  for (;;) {
    const page = (await deps.deadLetters.receive()).filter((letter) => !seen.has(letter.messageId));
    if (page.length === 0) break;
    for (const letter of page) seen.add(letter.messageId);
    received.push(...page);
  }
  received.sort(inStreamOrder);

  const letters: ReplayedLetter[] = [];
  const kept: DeadLetter[] = [];
  try {
    for (const letter of received) {
      const replayed = await replayOne(deps, letter, options.dryRun);
      letters.push(replayed);
      if (replayed.outcome === 'replayed') await deps.deadLetters.delete(letter);
      else kept.push(letter);
    }
  } finally {
    // Kept ones, and on a failure every one not yet replayed, are visible again for a later run.
    const done = new Set(letters.filter((l) => l.outcome === 'replayed').map((l) => l.messageId));
    const release = received.filter((letter) => !done.has(letter.messageId));
    await Promise.allSettled(release.map((letter) => deps.deadLetters.release(letter)));
  }

  const outcomes: Record<ReplayOutcome, number> = {
    replayed: 0,
    replayable: 0,
    failed: 0,
    trimmed: 0,
    unreadable: 0,
  };
  for (const letter of letters) outcomes[letter.outcome] += 1;
  return {
    dryRun: options.dryRun,
    messages: received.length,
    outcomes,
    kept: kept.length,
    records: {
      read: letters.reduce((sum, letter) => sum + (letter.records ?? 0), 0),
      handled: letters.reduce((sum, letter) => sum + (letter.handled ?? 0), 0),
    },
    letters,
  };
};

const replayOne = async <R>(
  deps: ReplayDeps<R>,
  letter: DeadLetter,
  dryRun: boolean,
): Promise<ReplayedLetter> => {
  const { range } = letter;
  if (range === undefined) return { messageId: letter.messageId, outcome: 'unreadable' };
  const where = {
    messageId: letter.messageId,
    shardId: range.shardId,
    startSequenceNumber: range.startSequenceNumber,
    endSequenceNumber: range.endSequenceNumber,
  };
  let records: readonly R[] | 'trimmed';
  try {
    records = await deps.stream.read(range);
  } catch (error) {
    return { ...where, outcome: 'failed', error: errorName(error) };
  }
  if (records === 'trimmed') return { ...where, outcome: 'trimmed' };
  if (dryRun) return { ...where, outcome: 'replayable', records: records.length };
  try {
    const { handled, failed } = await deps.consume(records);
    return failed === 0
      ? { ...where, outcome: 'replayed', records: records.length, handled }
      : { ...where, outcome: 'failed', records: records.length, handled: handled - failed };
  } catch (error) {
    return { ...where, outcome: 'failed', records: records.length, handled: 0, error: errorName(error) };
  }
};
