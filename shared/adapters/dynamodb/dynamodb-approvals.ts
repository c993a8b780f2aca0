import { type DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { type ApprovalRecord, type ApprovalRepository, taskIdOfApproval } from '../../domain/approvals.ts';
import { approvalItemSchema, fromApprovalItem } from './entities.ts';
import { keys } from './keys.ts';

export const pendingApprovalIndexName = 'byPendingApproval';

/**
 * Approval records in the state table (docs/operations.md, "Approvals"), in their task's partition. An
 * approval id names its task (`<taskId>.<revision>`), so a decision reads its record with one consistent get;
 * the pending list is one query on the sparse byPendingApproval index. Writes go through the task
 * repository's transactions (with the run they decide).
 */
export class DynamoDbApprovals implements ApprovalRepository {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async get(approvalId: string): Promise<ApprovalRecord | undefined> {
    const taskId = taskIdOfApproval(approvalId);
    if (taskId === undefined) return undefined;
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.approval(taskId, approvalId),
        ConsistentRead: true,
      }),
    );
    return Item ? fromApprovalItem(approvalItemSchema.parse(Item)) : undefined;
  }

  async listPending(limit: number): Promise<ApprovalRecord[]> {
    const { Items = [] } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: pendingApprovalIndexName,
        KeyConditionExpression: '#pendingKey = :pending',
        ExpressionAttributeNames: { '#pendingKey': 'pendingKey' },
        ExpressionAttributeValues: { ':pending': keys.pendingApprovals },
        Limit: limit,
      }),
    );
    return Items.map((item) => fromApprovalItem(approvalItemSchema.parse(item)));
  }
}
