/**
 * What one DynamoDB request costs in CPU on the local stack, Node side and DynamoDB Local side
 * (decision 0035): `--requests` of each kind through a DocumentClient configured as the handlers'
 * (SigV4, default middleware), 10 in flight, against a table with a stream like the state table.
 * Linux only (/proc).
 *
 *   npx tsx bench/request-cost.ts [--requests 3000]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.ts';
import { localCredentials } from '../infra/local/local-stack.ts';
import { pool } from './lib/client.ts';
import { cpuMsOf, dynamoDbLocalPid } from './lib/cpu.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values: args } = parseArgs({ options: { requests: { type: 'string', default: '3000' } } });
const REQUESTS = Number(args.requests);
const TableName = 'request-cost';

const dynamodb = await startDynamoDbLocal();
const client = new DynamoDBClient({
  endpoint: dynamodb.endpoint,
  region: 'us-east-1',
  credentials: localCredentials,
});
const documents = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
try {
  const javaPid = dynamoDbLocalPid(dynamodb.port);
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
  const content = 'x'.repeat(800); // items near 1 KB, as the task and view rows are
  const kinds: ReadonlyArray<readonly [string, (i: number) => Promise<unknown>]> = [
    [
      'PutItem (≈1 KB, stream on)',
      (i) =>
        documents.send(
          new PutCommand({ TableName, Item: { pk: `TASK#${i % 500}`, sk: `EVT#${i}`, content } }),
        ),
    ],
    [
      'GetItem, item found (eventually consistent)',
      (i) =>
        documents.send(new GetCommand({ TableName, Key: { pk: `TASK#${i % 500}`, sk: `EVT#${i % 500}` } })),
    ],
    [
      'GetItem, no item (eventually consistent)',
      (i) => documents.send(new GetCommand({ TableName, Key: { pk: `NONE#${i}`, sk: 'VIEW' } })),
    ],
    [
      'Query, no items',
      (i) =>
        documents.send(
          new QueryCommand({
            TableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': `NONE#${i}` },
          }),
        ),
    ],
  ];
  process.stdout.write(
    `| request | Node CPU ms | DynamoDB Local CPU ms | per s |\n| --- | ---: | ---: | ---: |\n`,
  );
  for (const [name, send] of kinds) {
    await pool(300, 10, send); // warm-up: JIT on both sides
    const node = cpuMsOf('self');
    const java = cpuMsOf(javaPid);
    const began = performance.now();
    await pool(REQUESTS, 10, send);
    const seconds = (performance.now() - began) / 1000;
    process.stdout.write(
      `| ${name} | ${((cpuMsOf('self') - node) / REQUESTS).toFixed(2)} | ${((cpuMsOf(javaPid) - java) / REQUESTS).toFixed(2)} | ${Math.round(REQUESTS / seconds)} |\n`,
    );
  }
  process.stdout.write(
    `\nload average ${loadavg()[0]?.toFixed(2)}, ${REQUESTS} requests of each, 10 in flight\n`,
  );
} finally {
  client.destroy();
  await dynamodb.stop();
}
