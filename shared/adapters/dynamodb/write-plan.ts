import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { PlannedWrite, WritePlan } from '../../domain/ports.ts';
import {
  keys,
  leaseAttributes,
  pushMark,
  taskItemSchema,
  toApprovalItem,
  toEmbeddedRun,
  toPushConfigItem,
  toRunItem,
  toTaskItem,
} from './entities.ts';

type ConditionalPut = NonNullable<NonNullable<TransactWriteCommandInput['TransactItems']>[number]['Put']>;
type ConditionalUpdate = NonNullable<
  NonNullable<TransactWriteCommandInput['TransactItems']>[number]['Update']
>;

type Condition = Pick<
  ConditionalPut,
  'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

type TaskWrite = Extract<PlannedWrite, { entity: 'task' }>;
type RunWrite = Extract<PlannedWrite, { entity: 'run' }>;
/** Everything but a task write is an item of its own. */
export type ItemWrite = Exclude<PlannedWrite, TaskWrite>;

/**
 * One write to a task row (decision 0038): its task attributes, its current run, or both. A run
 * lives in its task's row while it is the task's current run, so the writes that move task and
 * run together (create, claim, complete, cancel, settle) are one single-item write.
 */
export interface TaskRowWrite {
  readonly taskId: string;
  readonly task?: TaskWrite;
  readonly run?: RunWrite;
  /**
   * A row whose task takes a new run (a follow-up): the run it replaces, as the repository read
   * and archived it, or `'none'`. The write is conditioned on it still being there unchanged.
   */
  readonly replaces?: { readonly runId: string; readonly version: number } | 'none';
  /**
   * Sets the row's push mark (decision 0041): the plan stores a push config of this task (inline
   * on SendMessage), or, alone (no task, no run), the mark on an existing row before a config.
   */
  readonly marksPush?: true;
}

/** A plan split into task-row writes and plain item puts (approvals, push configs, earlier runs). */
export interface GroupedPlan {
  readonly rows: readonly TaskRowWrite[];
  readonly puts: readonly ItemWrite[];
}

/**
 * Groups a plan by item: a run goes into its task's row when the plan's task write names it as
 * the current run, or when the plan changes it without writing its task (the repository falls
 * back to the run's own row if the task row no longer holds it); a new run no task write makes
 * current, and a run the plan's task write does not point to, keep rows of their own. Pure.
 */
export const groupPlan = (plan: WritePlan): GroupedPlan => {
  const rows = new Map<string, { taskId: string; task?: TaskWrite; run?: RunWrite; marksPush?: true }>();
  for (const write of plan.writes) {
    if (write.entity === 'task') rows.set(write.item.taskId, { taskId: write.item.taskId, task: write });
  }
  const puts: ItemWrite[] = [];
  for (const write of plan.writes) {
    if (write.entity === 'task') continue;
    if (write.entity !== 'run') {
      puts.push(write);
      if (write.entity === 'push') {
        // The config's task row carries the push mark from the revision this plan commits on
        // (decision 0041); a config stored without its task's write would go unseen by the pusher.
        const row = rows.get(write.item.taskId);
        if (row?.task === undefined)
          throw new Error('A push config is committed with its task (decision 0041)');
        row.marksPush = true;
      }
      continue;
    }
    const row = rows.get(write.item.taskId);
    if (row === undefined && write.expect !== 'absent')
      rows.set(write.item.taskId, { taskId: write.item.taskId, run: write });
    else if (row === undefined) puts.push(write);
    else if (row.run === undefined && row.task?.item.currentRunId === write.item.runId) row.run = write;
    else puts.push(write);
  }
  return { rows: [...rows.values()], puts };
};

/**
 * The task attributes a task write sets or removes; the row's run and lease are the run write's,
 * and its push mark is set only with a push config (decision 0041): a task write from a read
 * older than the mark must not remove it.
 */
const taskAttributes = Object.keys(taskItemSchema.shape).filter(
  (name) => !['pk', 'sk', 'run', 'leaseUntil', 'leaseShard', pushMark].includes(name),
);

/** A task-row write as an UpdateItem, and the attributes it leaves (to recognise it once applied). */
export interface TaskRowUpdate {
  readonly input: ConditionalUpdate;
  readonly sets: Readonly<Record<string, unknown>>;
  readonly removes: readonly string[];
}

/**
 * A task-row write as one conditional UpdateItem: it sets exactly the attributes of what it writes
 * (the task's, or the run's and its lease), so a task write keeps the row's run and a run write
 * keeps the task. Conditions: the task revision and the run version the use case read (I-LOCK),
 * the run being the row's current one, and the reaper's lease fence. Pure: unit tests assert on it.
 */
export const toTaskRowUpdate = (row: TaskRowWrite, tableName: string): TaskRowUpdate => {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: Record<string, unknown> = {};
  const removes: string[] = [];
  const conditions: string[] = [];
  const name = (attribute: string): string => {
    names[`#${attribute}`] = attribute;
    return `#${attribute}`;
  };
  const value = (placeholder: string, content: unknown): string => {
    values[`:${placeholder}`] = content;
    return `:${placeholder}`;
  };
  const assign = (attribute: string, content: unknown): void => {
    if (content === undefined) removes.push(attribute);
    else sets[attribute] = content;
  };

  if (row.task) {
    const item: Record<string, unknown> = toTaskItem(row.task.item);
    for (const attribute of taskAttributes) assign(attribute, item[attribute]);
    conditions.push(
      row.task.expect === 'absent'
        ? 'attribute_not_exists(pk)'
        : `${name('revision')} = ${value('expectedRevision', row.task.expect.revision)}`,
    );
  }
  if (row.run) {
    const lease = leaseAttributes(row.run.item);
    assign('run', toEmbeddedRun(row.run.item));
    assign('leaseUntil', lease.leaseUntil);
    assign('leaseShard', lease.leaseShard);
    const expect = row.run.expect;
    if (expect !== 'absent') {
      conditions.push(
        `${name('run')}.${name('runId')} = ${value('runId', row.run.item.runId)}`,
        `${name('run')}.${name('version')} = ${value('expectedVersion', expect.version)}`,
      );
      // The reaper's fence: the lease must still be over, since renewals do not move the version.
      if (expect.leaseExpiredBefore !== undefined)
        conditions.push(`${name('leaseUntil')} < ${value('leaseExpiredBefore', expect.leaseExpiredBefore)}`);
    }
  }
  if (row.marksPush) {
    assign(pushMark, true);
    // The mark alone is set on an existing row only (never creates one).
    if (row.task === undefined && row.run === undefined) conditions.push(`attribute_exists(${name('pk')})`);
  }
  if (row.replaces === 'none') conditions.push(`attribute_not_exists(${name('run')})`);
  else if (row.replaces !== undefined)
    conditions.push(
      `${name('run')}.${name('runId')} = ${value('replacedRunId', row.replaces.runId)}`,
      `${name('run')}.${name('version')} = ${value('replacedVersion', row.replaces.version)}`,
    );

  const setClause = Object.entries(sets).map(
    ([attribute, content]) => `${name(attribute)} = ${value(attribute, content)}`,
  );
  const removeClause = removes.map(name);
  return {
    input: {
      TableName: tableName,
      Key: keys.task(row.taskId),
      UpdateExpression: [
        setClause.length > 0 ? `SET ${setClause.join(', ')}` : '',
        removeClause.length > 0 ? `REMOVE ${removeClause.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join(' '),
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
    sets,
    removes,
  };
};

/** The parts of an UpdateItem request `assignedItem` reads (plain or wire-form values alike). */
export interface UpdateRequest {
  readonly Key?: Record<string, unknown>;
  readonly UpdateExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
  readonly ExpressionAttributeValues?: Record<string, unknown>;
}

/**
 * What an update writes, as an item: its key and the attributes its SET clause assigns. For a
 * task write (`toTaskRowUpdate` sets every task attribute) that is the task as committed. For
 * tools that observe requests (the benchmark's meter and traces, the fault proofs' commit record).
 */
export const assignedItem = (request: UpdateRequest): Record<string, unknown> => {
  const item: Record<string, unknown> = { ...request.Key };
  const set =
    /(?:^|\s)SET (.*?)(?:\s(?:REMOVE|ADD|DELETE)\s|$)/.exec(request.UpdateExpression ?? '')?.[1] ?? '';
  for (const assignment of set.split(',')) {
    const [name, value] = assignment.split('=').map((part) => part.trim());
    if (!name || !value) continue;
    item[request.ExpressionAttributeNames?.[name] ?? name] = request.ExpressionAttributeValues?.[value];
  }
  return item;
};

/** The condition of a planned put: absent, or the state the use case read (I-LOCK). */
const conditionOf = (write: ItemWrite): Condition | undefined => {
  if (write.entity === 'push') return undefined;
  if (write.expect === 'absent') return { ConditionExpression: 'attribute_not_exists(pk)' };
  if (write.entity === 'approval') {
    // A decision wins only over the pending record it was made for (same calls, no earlier decision).
    return {
      ConditionExpression: '#decision = :decision AND #digest = :digest',
      ExpressionAttributeNames: { '#decision': 'decision', '#digest': 'digest' },
      ExpressionAttributeValues: { ':decision': write.expect.decision, ':digest': write.expect.digest },
    };
  }
  // The reaper's fence: the lease must still be over, since renewals do not move the version.
  const fence = write.expect.leaseExpiredBefore;
  return {
    ConditionExpression:
      fence === undefined
        ? '#version = :expectedVersion'
        : '#version = :expectedVersion AND #leaseUntil < :leaseExpiredBefore',
    ExpressionAttributeNames: {
      '#version': 'version',
      ...(fence === undefined ? {} : { '#leaseUntil': 'leaseUntil' }),
    },
    ExpressionAttributeValues: {
      ':expectedVersion': write.expect.version,
      ...(fence === undefined ? {} : { ':leaseExpiredBefore': fence }),
    },
  };
};

const itemOf = (write: ItemWrite): Record<string, unknown> =>
  write.entity === 'push'
    ? toPushConfigItem(write.item)
    : write.entity === 'approval'
      ? toApprovalItem(write.item)
      : toRunItem(write.item);

/**
 * One planned write as a conditional Put of its own item: an approval, a push config (stored
 * with the task's own transaction on SendMessage, no condition: a repeated id replaces), or a run
 * that is not its task's current one. A failed version condition returns the stored item (ALL_OLD).
 */
export const toPutInput = (write: ItemWrite, tableName: string): ConditionalPut => {
  const condition = conditionOf(write);
  return {
    TableName: tableName,
    Item: itemOf(write),
    ...condition,
    ...(condition?.ExpressionAttributeNames && { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
  };
};

/** Turns a grouped plan into the parameters of one TransactWriteItems call. Pure: unit tests assert on it. */
export const toTransactWriteInput = (
  plan: GroupedPlan,
  tableName: string,
  clientRequestToken: string,
): TransactWriteCommandInput => ({
  TransactItems: [
    ...plan.rows.map((row) => ({ Update: toTaskRowUpdate(row, tableName).input })),
    ...plan.puts.map((write) => ({ Put: toPutInput(write, tableName) })),
  ],
  ClientRequestToken: clientRequestToken,
});
