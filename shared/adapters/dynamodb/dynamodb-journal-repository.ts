import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import type { JournalRepository } from '../../domain/ports.ts';
import type { JournalEvent, JournalView, Projection } from '../../domain/projection.ts';
import {
  eventItemSchema,
  fromEventItem,
  fromViewItem,
  keys,
  toEventItem,
  toViewItem,
  viewItemSchema,
} from './entities.ts';

/** The journal table: one view per task (newest revision wins) and one event item per revision. */
export class DynamoDbJournalRepository implements JournalRepository {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async putRevision(projection: Projection): Promise<'written' | 'duplicate'> {
    const eventPut = {
      TableName: this.tableName,
      Item: toEventItem(projection.event),
      ConditionExpression: 'attribute_not_exists(pk)',
    };
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: eventPut },
            {
              Put: {
                TableName: this.tableName,
                Item: toViewItem(projection.view),
                ConditionExpression: 'attribute_not_exists(pk) OR #revision < :revision',
                ExpressionAttributeNames: { '#revision': 'revision' },
                ExpressionAttributeValues: { ':revision': projection.view.revision },
              },
            },
          ],
        }),
      );
      return 'written';
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      // A replayed or late record: the view is already newer. Still make sure its event exists,
      // so a revision replayed from the DLQ fills its gap without moving the view backwards.
      return this.putEventOnly(eventPut);
    }
  }

  private async putEventOnly(
    eventPut: ConstructorParameters<typeof PutCommand>[0],
  ): Promise<'written' | 'duplicate'> {
    try {
      await this.client.send(new PutCommand(eventPut));
      return 'written';
    } catch (error) {
      if (error instanceof Error && error.name === 'ConditionalCheckFailedException') return 'duplicate';
      throw error;
    }
  }

  async getView(taskId: string): Promise<JournalView | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.view(taskId), ConsistentRead: true }),
    );
    return Item ? fromViewItem(viewItemSchema.parse(Item)) : undefined;
  }

  async listEvents(taskId: string, afterRevision: number): Promise<JournalEvent[]> {
    const events: JournalEvent[] = [];
    let exclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: {
            ':pk': keys.task(taskId).pk,
            ':from': keys.event(taskId, afterRevision + 1).sk,
            ':to': `${keys.eventPrefix}~`,
          },
          ConsistentRead: true,
          ExclusiveStartKey: exclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) events.push(fromEventItem(eventItemSchema.parse(item)));
      exclusiveStartKey = page.LastEvaluatedKey;
    } while (exclusiveStartKey);
    return events;
  }
}
