/**
 * What one DynamoDB request costs in CPU on the local stack, Node side and DynamoDB Local side
 * (decision 0035): `--requests` of each kind through a DocumentClient configured as the handlers'
 * (SigV4, default middleware), 10 in flight, against a table with a stream like the state table
 * (bench/lib/request-prices.ts; `npm run bench` runs the floor's whole task: bench/lib/floor-task.ts).
 * Linux only (/proc).
 *
 *   npx tsx bench/request-cost.ts [--requests 3000]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.ts';
import { startSqsEmulator } from '../infra/local/sqs-emulator.ts';
import { dynamoDbLocalPid } from './lib/cpu.ts';
import { priceRequests } from './lib/request-prices.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values: args } = parseArgs({ options: { requests: { type: 'string', default: '3000' } } });
const REQUESTS = Number(args.requests);

const [dynamodb, sqs] = await Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
try {
  const prices = await priceRequests({
    dynamodbEndpoint: dynamodb.endpoint,
    javaPid: dynamoDbLocalPid(dynamodb.port),
    sqsEndpoint: sqs.endpoint,
    kinds: ['put', 'get', 'getMissing', 'queryEmpty', 'sqsSend'],
    requests: REQUESTS,
  });
  process.stdout.write(
    `| request | Node CPU ms | DynamoDB Local CPU ms | per s |\n| --- | ---: | ---: | ---: |\n`,
  );
  for (const price of Object.values(prices)) {
    if (price === undefined) continue;
    process.stdout.write(
      `| ${price.name} | ${price.nodeMs.toFixed(2)} | ${price.javaMs.toFixed(2)} | ${price.perSecond} |\n`,
    );
  }
  process.stdout.write(
    `\nload average ${loadavg()[0]?.toFixed(2)}, ${REQUESTS} requests of each, 10 in flight\n`,
  );
} finally {
  await Promise.allSettled([dynamodb.stop(), sqs.stop()]);
}
