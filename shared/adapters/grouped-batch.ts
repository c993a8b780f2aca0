/**
 * The one way a batch consumer keeps order within a key (a task's stream records, a FIFO message
 * group): records are grouped by key, each group is handled in batch order, groups concurrently
 * (one shard or queue batch carries many keys; one at a time would make the slowest key everyone's
 * bottleneck). A group stops at its first failure: the failed record and every later record of its
 * group count as failed, so a retry redelivers them in order. Pure: what the failed positions
 * mean for the event source (a stream retries from the earliest, a queue redelivers each) is the
 * caller's.
 */

/** Thrown by a group's handler: the group failed from this position (in the group) on. */
export class GroupStoppedError extends Error {
  override readonly name = 'GroupStoppedError';
  constructor(
    readonly position: number,
    options?: { readonly cause?: unknown },
  ) {
    super(`group stopped at its record ${position}`, options);
  }
}

/**
 * Handles `records` group by group and returns the positions (in `records`, ascending) of the
 * records that failed. A handler that throws anything but GroupStoppedError failed its whole group.
 */
export const handleInGroups = async <R>(
  records: readonly R[],
  keyOf: (record: R) => string,
  handleGroup: (group: readonly R[]) => Promise<void>,
): Promise<number[]> => {
  const groups = new Map<string, number[]>();
  records.forEach((record, index) => {
    const key = keyOf(record);
    groups.set(key, [...(groups.get(key) ?? []), index]);
  });
  const failed: number[] = [];
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      try {
        await handleGroup(indexes.map((index) => records[index]!));
      } catch (error) {
        const position = error instanceof GroupStoppedError ? error.position : 0;
        failed.push(...indexes.slice(position));
      }
    }),
  );
  return failed.sort((a, b) => a - b);
};

/**
 * A group handler that handles one record at a time and stops at the first that throws, after
 * `onFailure` (if given) has seen it; an `onFailure` that fails itself changes nothing.
 */
export const oneAtATime =
  <R>(handle: (record: R) => Promise<void>, onFailure?: (record: R, error: unknown) => Promise<void>) =>
  async (group: readonly R[]): Promise<void> => {
    for (const [position, record] of group.entries()) {
      try {
        await handle(record);
      } catch (error) {
        await onFailure?.(record, error).catch(() => {});
        throw new GroupStoppedError(position, { cause: error });
      }
    }
  };
