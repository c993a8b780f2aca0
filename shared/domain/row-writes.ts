import type { RowExpectation, TaskRowWrite, WritePlan } from './ports.ts';
import type { StoredTask } from './projection.ts';
import type { StoredPushConfig } from './push.ts';
import type { RunRecord } from './task.ts';

/**
 * The plans use cases commit: they say what the database writes. A task and its current run
 * share the task row (docs/data-model.md, "State table"), so a change of both is one row write on the
 * revision and the run version read; a run that is not its task's current one has its own row.
 */

/** Task and its current run in one write of the task row, conditioned on what was read (I-LOCK). */
export const taskAndRunWrite = (
  before: StoredTask,
  task: StoredTask,
  read: RunRecord,
  run: RunRecord,
  expect: Omit<RowExpectation, 'revision' | 'runVersion'> = {},
): TaskRowWrite => ({
  taskId: before.taskId,
  task,
  run,
  expect: { ...expect, revision: before.revision, runVersion: read.version },
  before,
});

/**
 * A change of a run alone (no new task revision): in its task's row while it is the task's
 * current run (`task` as read with it), else in its own row.
 */
export const runAloneWrite = (
  task: StoredTask | undefined,
  read: RunRecord,
  run: RunRecord,
  expect: Omit<RowExpectation, 'revision' | 'runVersion'> = {},
): WritePlan =>
  task?.currentRunId === read.runId
    ? { row: { taskId: read.taskId, run, expect: { ...expect, runVersion: read.version } } }
    : { items: [{ entity: 'run', item: run, expect: { ...expect, version: read.version } }] };

/**
 * The row a transaction wrote, when its push mark is certain: a transaction
 * returns nothing, but its condition proves the row holds the task it wrote, except the push mark,
 * which no task write sets. The mark is known when this write set it (a push config
 * with it) or the row it read had it (never cleared), and absent from a row this write created;
 * otherwise a mark set meanwhile could be missing, and there is no image.
 */
export const transactedImage = (
  row: Partial<Pick<TaskRowWrite, 'task' | 'before' | 'expect'>>,
  marksPush: boolean,
): StoredTask | undefined => {
  if (row.task === undefined) return undefined;
  const { pushConfigured: _planned, ...task } = row.task;
  if (marksPush || row.before?.pushConfigured) return { ...task, pushConfigured: true };
  return row.expect?.revision === 'absent' ? task : undefined;
};

/**
 * The push configs of a plan that created its task's row: no other config can want
 * that first revision (one stored later is after it, `configWantsRevision`), so they are all its
 * fan-out needs. `undefined` for a plan that did not create the row: its configs must be read.
 */
export const configsOfCreatedRow = (plan: WritePlan): readonly StoredPushConfig[] | undefined => {
  if (plan.row?.expect.revision !== 'absent') return undefined;
  return (plan.items ?? []).flatMap((write) => (write.entity === 'push' ? [write.item] : []));
};
