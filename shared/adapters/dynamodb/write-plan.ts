import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { PlannedWrite, WritePlan } from '../../domain/ports.ts';
import { toApprovalItem, toPushConfigItem, toRunItem, toTaskItem } from './entities.ts';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** One planned write as a conditional Put: the condition is the version the use case read (I-LOCK). */
const toTransactItem = (write: PlannedWrite, tableName: string): TransactItem => {
  if (write.entity === 'push') {
    // Stored with the task's own transaction (inline config on SendMessage); a repeated id replaces.
    return { Put: { TableName: tableName, Item: toPushConfigItem(write.item) } };
  }
  if (write.entity === 'approval') {
    const item = toApprovalItem(write.item);
    if (write.expect === 'absent') {
      return { Put: { TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' } };
    }
    // A decision wins only over the pending record it was made for (same calls, no earlier decision).
    return {
      Put: {
        TableName: tableName,
        Item: item,
        ConditionExpression: '#decision = :decision AND #digest = :digest',
        ExpressionAttributeNames: { '#decision': 'decision', '#digest': 'digest' },
        ExpressionAttributeValues: { ':decision': write.expect.decision, ':digest': write.expect.digest },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }
  if (write.entity === 'task') {
    const item = toTaskItem(write.item);
    if (write.expect === 'absent') {
      return { Put: { TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' } };
    }
    return {
      Put: {
        TableName: tableName,
        Item: item,
        ConditionExpression: '#revision = :expectedRevision',
        ExpressionAttributeNames: { '#revision': 'revision' },
        ExpressionAttributeValues: { ':expectedRevision': write.expect.revision },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }
  const item = toRunItem(write.item);
  if (write.expect === 'absent') {
    return { Put: { TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' } };
  }
  // The reaper's fence: the lease must still be over, since renewals do not move the version.
  const fence = write.expect.leaseExpiredBefore;
  return {
    Put: {
      TableName: tableName,
      Item: item,
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
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
};

/** Turns a write plan into the parameters of one TransactWriteItems call. Pure: unit tests assert on it. */
export const toTransactWriteInput = (
  plan: WritePlan,
  tableName: string,
  clientRequestToken: string,
): TransactWriteCommandInput => ({
  TransactItems: plan.writes.map((write) => toTransactItem(write, tableName)),
  ClientRequestToken: clientRequestToken,
});
