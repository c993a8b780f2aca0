import type { PutCommandInput, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { PlannedWrite, WritePlan } from '../../domain/ports.ts';
import { toApprovalItem, toPushConfigItem, toRunItem, toTaskItem } from './entities.ts';

type ConditionalPut = NonNullable<NonNullable<TransactWriteCommandInput['TransactItems']>[number]['Put']>;

type Condition = Pick<
  ConditionalPut,
  'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

/** The condition of a planned write: absent, or the state the use case read (I-LOCK). */
const conditionOf = (write: PlannedWrite): Condition | undefined => {
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
  if (write.entity === 'task') {
    return {
      ConditionExpression: '#revision = :expectedRevision',
      ExpressionAttributeNames: { '#revision': 'revision' },
      ExpressionAttributeValues: { ':expectedRevision': write.expect.revision },
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

const itemOf = (write: PlannedWrite): Record<string, unknown> =>
  write.entity === 'push'
    ? toPushConfigItem(write.item)
    : write.entity === 'approval'
      ? toApprovalItem(write.item)
      : write.entity === 'task'
        ? toTaskItem(write.item)
        : toRunItem(write.item);

/**
 * One planned write as a conditional Put: the condition is the version the use case read (I-LOCK).
 * A push config stored with the task's own transaction (inline config on SendMessage) has none:
 * a repeated id replaces. A failed version condition returns the stored item (ALL_OLD).
 */
const toTransactItem = (write: PlannedWrite, tableName: string): { Put: ConditionalPut } => {
  const condition = conditionOf(write);
  return {
    Put: {
      TableName: tableName,
      Item: itemOf(write),
      ...condition,
      ...(condition?.ExpressionAttributeNames && { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
    },
  };
};

/**
 * A plan of one write as one conditional PutItem (decision 0027): a single item is atomic on its
 * own, and a transaction would bill it twice. Pure: unit tests assert on it.
 */
export const toPutInput = (write: PlannedWrite, tableName: string): PutCommandInput =>
  toTransactItem(write, tableName).Put;

/** Turns a write plan into the parameters of one TransactWriteItems call. Pure: unit tests assert on it. */
export const toTransactWriteInput = (
  plan: WritePlan,
  tableName: string,
  clientRequestToken: string,
): TransactWriteCommandInput => ({
  TransactItems: plan.writes.map((write) => toTransactItem(write, tableName)),
  ClientRequestToken: clientRequestToken,
});
