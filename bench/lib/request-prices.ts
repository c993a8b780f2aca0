/**
 * What single requests cost in CPU on the local stack (decision 0035): each kind sent `requests`
 * times through the SDK clients as the handlers configure them (SigV4, default middleware), 10 in
 * flight, after a warm-up; CPU of this Node process and of DynamoDB Local's Java process from
 * /proc (Linux only). Used by `bench/request-cost.ts` (the table); `npm run bench` runs the floor's
 * whole task instead (bench/lib/floor-task.ts, decision 0086).
 */

import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { localCredentials } from '../../infra/local/local-stack.ts';
import { pool } from './client.ts';
import { cpuMsOf } from './cpu.ts';

export interface RequestPrice {
  readonly name: string;
  /** CPU milliseconds per request of this Node process (SDK client; the SQS emulator when in-process). */
  readonly nodeMs: number;
  /** CPU milliseconds per request of DynamoDB Local (0 for SQS). */
  readonly javaMs: number;
  readonly perSecond: number;
}

export type RequestKind = 'put' | 'get' | 'getMissing' | 'queryEmpty' | 'sqsSend';

const labels: Record<RequestKind, string> = {
  put: 'PutItem (≈1 KB, stream on)',
  get: 'GetItem, item found (eventually consistent)',
  getMissing: 'GetItem, no item (eventually consistent)',
  queryEmpty: 'Query, no items',
  sqsSend: 'SQS SendMessage (the SQS emulator, in this process)',
};

/**
 * Prices each of `kinds` against a table of its own (stream on, as the state table) on the given
 * DynamoDB Local, and SendMessage against a queue of its own on the given SQS endpoint.
 */
export const priceRequests = async (options: {
  readonly dynamodbEndpoint: string;
  readonly javaPid: number;
  readonly sqsEndpoint?: string;
  readonly kinds: readonly RequestKind[];
  readonly requests: number;
  readonly tableName?: string;
}): Promise<Record<RequestKind, RequestPrice | undefined>> => {
  const common = { region: 'us-east-1', credentials: localCredentials };
  const client = new DynamoDBClient({ ...common, endpoint: options.dynamodbEndpoint });
  const documents = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const sqs = options.sqsEndpoint ? new SQSClient({ ...common, endpoint: options.sqsEndpoint }) : undefined;
  const TableName = options.tableName ?? 'request-prices';
  try {
    await client.send(
      new CreateTableCommand({
        TableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
      }),
    );
    const queueUrl = sqs
      ? (await sqs.send(new CreateQueueCommand({ QueueName: `${TableName}-queue` }))).QueueUrl
      : undefined;
    const content = 'x'.repeat(800); // items near 1 KB, as the task and view rows are
    const senders: Record<RequestKind, ((i: number) => Promise<unknown>) | undefined> = {
      put: (i) =>
        documents.send(
          new PutCommand({ TableName, Item: { pk: `TASK#${i % 500}`, sk: `EVT#${i}`, content } }),
        ),
      get: (i) =>
        documents.send(new GetCommand({ TableName, Key: { pk: `TASK#${i % 500}`, sk: `EVT#${i % 500}` } })),
      getMissing: (i) => documents.send(new GetCommand({ TableName, Key: { pk: `NONE#${i}`, sk: 'VIEW' } })),
      queryEmpty: (i) =>
        documents.send(
          new QueryCommand({
            TableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': `NONE#${i}` },
          }),
        ),
      sqsSend:
        sqs && queueUrl
          ? (i) => sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: `{"taskId":"t${i}"}` }))
          : undefined,
    };
    // The items the gets find exist before any kind is priced.
    await pool(500, 10, (i) =>
      documents.send(new PutCommand({ TableName, Item: { pk: `TASK#${i}`, sk: `EVT#${i}`, content } })),
    );
    const prices: Partial<Record<RequestKind, RequestPrice>> = {};
    for (const kind of options.kinds) {
      const send = senders[kind];
      if (send === undefined) continue;
      await pool(300, 10, send); // warm-up: JIT on both sides
      const node = cpuMsOf('self');
      const java = cpuMsOf(options.javaPid);
      const began = performance.now();
      await pool(options.requests, 10, send);
      const seconds = (performance.now() - began) / 1000;
      prices[kind] = {
        name: labels[kind],
        nodeMs: (cpuMsOf('self') - node) / options.requests,
        javaMs: kind === 'sqsSend' ? 0 : (cpuMsOf(options.javaPid) - java) / options.requests,
        perSecond: Math.round(options.requests / seconds),
      };
    }
    return {
      put: undefined,
      get: undefined,
      getMissing: undefined,
      queryEmpty: undefined,
      sqsSend: undefined,
      ...prices,
    };
  } finally {
    client.destroy();
    sqs?.destroy();
  }
};
