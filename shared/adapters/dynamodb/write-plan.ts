import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { ItemWrite, TaskRowWrite, WritePlan } from '../../domain/ports.ts';
import {
  leaseAttributes,
  pushMark,
  taskItemSchema,
  toApprovalItem,
  toEmbeddedRun,
  toPushConfigItem,
  toRunItem,
  toTaskItem,
} from './entities.ts';
import { keys } from './keys.ts';

type ConditionalPut = NonNullable<NonNullable<TransactWriteCommandInput['TransactItems']>[number]['Put']>;
type ConditionalUpdate = NonNullable<
  NonNullable<TransactWriteCommandInput['TransactItems']>[number]['Update']
>;

type Condition = Pick<
  ConditionalPut,
  'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

/**
 * A task-row write as the adapter sends it: the plan's row write, and whether it sets the row's
 * push mark (docs/data-model.md, "State table") — when the plan stores a push config of this task (inline on
 * SendMessage), or alone (no task, no run: `markPushConfigured`) on an existing row.
 */
export interface RowUpdate extends Partial<Omit<TaskRowWrite, 'taskId'>> {
  readonly taskId: string;
  readonly marksPush?: true;
}

/**
 * The row write of a plan with its push mark: a push config is committed with its task's write,
 * which marks the row from the revision the config starts after; a config stored
 * without it would go unseen by the pusher, so such a plan is refused. Pure.
 */
export const rowUpdateOf = (plan: WritePlan): RowUpdate | undefined => {
  const pushes = (plan.items ?? []).filter((write) => write.entity === 'push');
  const row = plan.row;
  if (pushes.some((write) => row?.task === undefined || write.item.taskId !== row.taskId))
    throw new Error('A push config is committed with its task (decision 0041)');
  if (row === undefined) return undefined;
  return pushes.length > 0 ? { ...row, marksPush: true } : row;
};

/**
 * The task attributes a task write sets or removes; the row's run and lease are the run write's,
 * and its push mark is set only with a push config: a task write from a read
 * older than the mark must not remove it. The creator's traceparent is the task's: every
 * task carries it on from the row it was read from, so each write sets it again as it was.
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
 * (the task's, or the run's — the whole run, or only its version for `runChanges` — and its lease),
 * so a task write keeps the row's run and a run write keeps the task. Conditions: the task revision and the run version the use case read (I-LOCK),
 * the run being the row's current one, the reaper's lease fence, and for a follow-up the run it
 * replaces. Pure: unit tests assert on it.
 */
export const toTaskRowUpdate = (row: RowUpdate, tableName: string): TaskRowUpdate => {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: Record<string, unknown> = {};
  const removes: string[] = [];
  const conditions: string[] = [];
  // A dotted attribute is a path into a map (`run.version`): a name per part.
  const name = (attribute: string): string =>
    attribute
      .split('.')
      .map((part) => {
        names[`#${part}`] = part;
        return `#${part}`;
      })
      .join('.');
  const value = (placeholder: string, content: unknown): string => {
    values[`:${placeholder.replaceAll('.', '_')}`] = content;
    return `:${placeholder.replaceAll('.', '_')}`;
  };
  const assign = (attribute: string, content: unknown): void => {
    if (content === undefined) removes.push(attribute);
    else sets[attribute] = content;
  };
  const expect = row.expect ?? {};

  if (row.task) {
    const item: Record<string, unknown> = toTaskItem(row.task);
    for (const attribute of taskAttributes) assign(attribute, item[attribute]);
  }
  if (expect.revision === 'absent') conditions.push('attribute_not_exists(pk)');
  else if (expect.revision !== undefined)
    conditions.push(`${name('revision')} = ${value('expectedRevision', expect.revision)}`);
  if (row.run) {
    const lease = leaseAttributes(row.run);
    // An answer chunk moves the run's version and lease only: the rest of the row's run stays as
    // stored, with any mark written beside the run lock (docs/reliability.md "Delegated calls").
    if (row.runChanges === 'version-and-lease') assign('run.version', row.run.version);
    else assign('run', toEmbeddedRun(row.run));
    assign('leaseUntil', lease.leaseUntil);
    assign('leaseShard', lease.leaseShard);
    if (expect.runVersion !== undefined) {
      conditions.push(
        `${name('run')}.${name('runId')} = ${value('runId', row.run.runId)}`,
        `${name('run')}.${name('version')} = ${value('expectedVersion', expect.runVersion)}`,
      );
    }
  }
  // The reaper's fence: the lease must still be over, since renewals do not move the version.
  if (expect.leaseExpiredBefore !== undefined)
    conditions.push(`${name('leaseUntil')} < ${value('leaseExpiredBefore', expect.leaseExpiredBefore)}`);
  // A cancel that flags the run for its executor: not once the executor left it parked.
  if (expect.runNotParked)
    conditions.push(`attribute_not_exists(${name('run')}.${name('delegation')}.${name('parked')})`);
  if (row.marksPush) {
    assign(pushMark, true);
    // The mark alone is set on an existing row only (never creates one).
    if (row.task === undefined && row.run === undefined) conditions.push(`attribute_exists(${name('pk')})`);
  }
  if (row.archive === 'none') conditions.push(`attribute_not_exists(${name('run')})`);
  else if (row.archive !== undefined)
    conditions.push(
      `${name('run')}.${name('runId')} = ${value('replacedRunId', row.archive.runId)}`,
      `${name('run')}.${name('version')} = ${value('replacedVersion', row.archive.version)}`,
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
    // A path into a map (`#run.#version`) keeps its dots: `run.version`.
    const path = name
      .split('.')
      .map((part) => request.ExpressionAttributeNames?.[part] ?? part)
      .join('.');
    item[path] = request.ExpressionAttributeValues?.[value];
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

/** Turns a plan into the parameters of one TransactWriteItems call. Pure: unit tests assert on it. */
export const toTransactWriteInput = (
  plan: WritePlan,
  tableName: string,
  clientRequestToken: string,
): TransactWriteCommandInput => {
  const row = rowUpdateOf(plan);
  return {
    TransactItems: [
      ...(row ? [{ Update: toTaskRowUpdate(row, tableName).input }] : []),
      ...(plan.items ?? []).map((write) => ({ Put: toPutInput(write, tableName) })),
    ],
    ClientRequestToken: clientRequestToken,
  };
};
