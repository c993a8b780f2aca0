import { PassThrough } from 'node:stream';
import { finished } from 'node:stream/promises';
import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { DescribeKeyCommand } from '@aws-sdk/client-kms';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type {
  APIGatewayProxyEvent,
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
  SQSBatchResponse,
  SQSEvent,
  SQSRecord,
} from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiGatewayLambdaHandler,
  type HarnessProxyResult,
  type HttpHarness,
  startHttpHarness,
  staticTokenAuthorizer,
} from '../../infra/local/http-harness.ts';
import { type LocalLog, observeInvocationStarts } from '../../infra/local/lambda-invocation.ts';
import { startLocalStack } from '../../infra/local/local-stack.ts';
import { createResources } from '../../infra/local/resources.ts';
import { createSqsPoller } from '../../infra/local/sqs-poller.ts';
import {
  createStreamPoller,
  type StreamBatchFailure,
  type StreamPollerOptions,
} from '../../infra/local/stream-poller.ts';
import { isTaskItemRecord } from '../../shared/adapters/dynamodb/journal-stream.ts';
import { queueDefinitions, tableDefinitions } from '../../shared/adapters/dynamodb/tables.ts';
import { defaultConfig } from '../../shared/config/config.ts';
import {
  assertLocalEndpoint,
  createTestResources,
  isLocalEndpoint,
  type TestResources,
} from '../support/local-guard.ts';
import { waitFor } from '../support/wait-for.ts';

/** The local harness itself, with stand-in handlers defined here (the real ones have their own tests). */

let local: TestResources;
const quiet: LocalLog = () => {};

beforeAll(async () => {
  local = await createTestResources('harness');
});

afterAll(() => {
  local?.destroy();
});

describe('local guard', () => {
  it('accepts loopback endpoints and refuses anything else', () => {
    expect(isLocalEndpoint('http://127.0.0.1:8000')).toBe(true);
    expect(isLocalEndpoint('http://localhost:4566')).toBe(true);
    expect(isLocalEndpoint('http://[::1]:4566')).toBe(true);
    expect(isLocalEndpoint('https://dynamodb.us-east-1.amazonaws.com')).toBe(false);
    expect(isLocalEndpoint('http://10.0.0.5:8000')).toBe(false);
    expect(isLocalEndpoint('not a url')).toBe(false);
    expect(() => assertLocalEndpoint('https://sqs.eu-west-1.amazonaws.com')).toThrow(/non-local/);
    expect(() => assertLocalEndpoint(undefined)).toThrow(/non-local/);
  });
});

describe('createResources', () => {
  it('creates every declared table with its stream, TTL, GSIs and on-demand billing', async () => {
    for (const definition of tableDefinitions) {
      const name = local.resources.tables[definition.id].name;
      const { Table } = await local.clients.dynamodb.send(new DescribeTableCommand({ TableName: name }));
      expect(Table?.TableStatus).toBe('ACTIVE');
      expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      expect(Table?.KeySchema).toEqual([
        { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: definition.sortKey.name, KeyType: 'RANGE' },
      ]);
      if (definition.stream) {
        expect(Table?.StreamSpecification).toEqual({
          StreamEnabled: true,
          StreamViewType: definition.stream,
        });
        expect(local.resources.tables[definition.id].streamArn).toBe(Table?.LatestStreamArn);
      } else {
        expect(Table?.StreamSpecification?.StreamEnabled ?? false).toBe(false);
      }
      // DynamoDB does not promise an order for the indexes it describes.
      expect((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName).sort()).toEqual(
        definition.globalSecondaryIndexes.map((index) => index.indexName).sort(),
      );
      const { TimeToLiveDescription } = await local.clients.dynamodb.send(
        new DescribeTimeToLiveCommand({ TableName: name }),
      );
      expect(TimeToLiveDescription).toEqual({
        TimeToLiveStatus: 'ENABLED',
        AttributeName: definition.timeToLiveAttribute,
      });
    }
    const { Table: journal } = await local.clients.dynamodb.send(
      new DescribeTableCommand({ TableName: local.resources.tables.Journal.name }),
    );
    expect(journal?.GlobalSecondaryIndexes?.[0]).toMatchObject({
      IndexName: 'byOwner',
      KeySchema: [
        { AttributeName: 'ownerKey', KeyType: 'HASH' },
        { AttributeName: 'ownerSort', KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'ALL' },
    });
  });

  it('creates the queues with their visibility timeouts and dead-letter redrive', async () => {
    for (const definition of queueDefinitions) {
      const queue = local.resources.queues[definition.id];
      const { Attributes } = await local.clients.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['All'] }),
      );
      expect(Attributes?.QueueArn).toBe(queue.arn);
      expect(Attributes?.VisibilityTimeout).toBe(String(definition.visibilityTimeoutSeconds));
      if (definition.deadLetter) {
        expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toEqual({
          deadLetterTargetArn: local.resources.queues[definition.deadLetter.queueId].arn,
          maxReceiveCount: definition.deadLetter.maxReceiveCount,
        });
      } else {
        expect(Attributes?.RedrivePolicy).toBeUndefined();
      }
    }
  });

  it('creates a key behind the content alias and exposes the handler env', async () => {
    const { KeyMetadata } = await local.clients.kms.send(
      new DescribeKeyCommand({ KeyId: `alias/${local.prefix}-content` }),
    );
    expect(KeyMetadata?.KeyId).toBe(local.resources.key.keyId);
    expect(local.env).toEqual({
      STATE_TABLE_NAME: `${local.prefix}-State`,
      JOURNAL_TABLE_NAME: `${local.prefix}-Journal`,
      AUDIT_TABLE_NAME: `${local.prefix}-Audit`,
      RUN_QUEUE_URL: local.resources.queues.RunQueue.url,
      DELIVERY_QUEUE_URL: local.resources.queues.DeliveryQueue.url,
      KMS_KEY_ID: local.resources.key.keyId,
    });
  });

  it('is idempotent: a second run adopts the same tables, queues and key', async () => {
    const again = await createResources({ prefix: local.prefix, clients: local.clients });
    expect(again.env).toEqual(local.env);
    expect(again.tables.State.created).toBe(false);
    expect(again.tables.State.streamArn).toBe(local.resources.tables.State.streamArn);
  });
});

describe('SQS poller', () => {
  it('deletes what succeeded and lets a reported failure come back after the visibility timeout', async () => {
    const { QueueUrl } = await local.clients.sqs.send(
      new CreateQueueCommand({ QueueName: `${local.prefix}-poller`, Attributes: { VisibilityTimeout: '1' } }),
    );
    const queueUrl = QueueUrl!;
    const events: SQSEvent[] = [];
    const handled: Array<{ body: string; receiveCount: string }> = [];
    const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
      events.push(event);
      const batchItemFailures = [];
      for (const record of event.Records) {
        handled.push({ body: record.body, receiveCount: record.attributes.ApproximateReceiveCount });
        if (record.body === 'fail-once' && record.attributes.ApproximateReceiveCount === '1') {
          batchItemFailures.push({ itemIdentifier: record.messageId });
        }
      }
      return { batchItemFailures };
    };
    const poller = createSqsPoller({
      sqs: local.clients.sqs,
      queueUrl,
      handler,
      functionName: 'executor',
      concurrency: 2,
      log: quiet,
    });
    await poller.start();
    try {
      await local.clients.sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: 'ok-1',
          MessageAttributes: { kind: { DataType: 'String', StringValue: 'wake-up' } },
        }),
      );
      await local.clients.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'fail-once' }));
      await local.clients.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'ok-2' }));
      await waitFor(() => handled.some((entry) => entry.body === 'fail-once' && entry.receiveCount === '2'));
      await waitFor(() => poller.stats().deleted === 3);
    } finally {
      await poller.stop();
    }

    expect(handled.filter((entry) => entry.body === 'ok-1')).toHaveLength(1);
    expect(handled.filter((entry) => entry.body === 'ok-2')).toHaveLength(1);
    expect(handled.filter((entry) => entry.body === 'fail-once').map((entry) => entry.receiveCount)).toEqual([
      '1',
      '2',
    ]);
    expect(poller.stats()).toMatchObject({ received: 4, deleted: 3, failed: 1, errors: 0 });
    const { Attributes } = await local.clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    expect(Attributes).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });

    const record = events.flatMap((event) => event.Records).find((entry) => entry.body === 'ok-1');
    const { Attributes: arn } = await local.clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    expect(record).toMatchObject({
      eventSource: 'aws:sqs',
      eventSourceARN: arn?.QueueArn,
      awsRegion: 'us-east-1',
      messageAttributes: { kind: { dataType: 'String', stringValue: 'wake-up' } },
    });
    expect(record?.messageId).toMatch(/\S/);
    expect(record?.receiptHandle).toMatch(/\S/);
    expect(record?.md5OfBody).toMatch(/^[0-9a-f]{32}$/);
    expect(Number(record?.attributes.SentTimestamp)).toBeGreaterThan(0);
  });

  it('leaves the whole batch on the queue when the handler throws', async () => {
    const { QueueUrl } = await local.clients.sqs.send(
      new CreateQueueCommand({ QueueName: `${local.prefix}-throws`, Attributes: { VisibilityTimeout: '1' } }),
    );
    let calls = 0;
    const poller = createSqsPoller({
      sqs: local.clients.sqs,
      queueUrl: QueueUrl!,
      handler: async () => {
        calls += 1;
        if (calls === 1) throw new Error('cold start failed');
        return { batchItemFailures: [] };
      },
      functionName: 'executor',
      concurrency: 1,
      log: quiet,
    });
    await local.clients.sqs.send(new SendMessageCommand({ QueueUrl: QueueUrl!, MessageBody: 'again' }));
    await poller.start();
    try {
      await waitFor(() => poller.stats().deleted === 1);
    } finally {
      await poller.stop();
    }
    expect(poller.stats()).toMatchObject({ invocations: 2, errors: 1, deleted: 1 });
  });

  it('reports each invocation with its event to the start observers before the handler runs (bench tracing)', async () => {
    const { QueueUrl } = await local.clients.sqs.send(
      new CreateQueueCommand({ QueueName: `${local.prefix}-starts`, Attributes: { VisibilityTimeout: '1' } }),
    );
    const seen: string[] = [];
    const stopObserving = observeInvocationStarts(({ functionName, event }) => {
      if (functionName === 'traced') seen.push(`start ${(event.Records[0] as SQSRecord).body}`);
    });
    const poller = createSqsPoller({
      sqs: local.clients.sqs,
      queueUrl: QueueUrl!,
      handler: async (event) => {
        seen.push(`handler ${event.Records[0]?.body}`);
      },
      functionName: 'traced',
      concurrency: 1,
      log: quiet,
    });
    await local.clients.sqs.send(new SendMessageCommand({ QueueUrl: QueueUrl!, MessageBody: 'hop' }));
    await poller.start();
    try {
      await waitFor(() => poller.stats().deleted === 1);
    } finally {
      await poller.stop();
      stopObserving();
    }
    expect(seen).toEqual(['start hop', 'handler hop']);
  });
  it('scales out while messages keep coming, never running two of a FIFO group at once (decision 0023)', async () => {
    const { QueueUrl } = await local.clients.sqs.send(
      new CreateQueueCommand({
        QueueName: `${local.prefix}-scale.fifo`,
        Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true', VisibilityTimeout: '30' },
      }),
    );
    // What it proves: a busy receive starts another poller, so two invocations run at once (one
    // standing poller would run one at a time), never more than the ceiling, never two of one
    // FIFO group, each group in order. No sleep decides it: every invocation waits until two are
    // in flight together — an observable event, not a time. A poller that does not scale out
    // leaves the first one waiting: `waitFor` times out and the peak stays 1 (the wait is released
    // before the poller stops, so the test fails instead of hanging).
    const groups = 8;
    const perGroup = 3;
    const seen = new Map<string, number[]>();
    const inFlightGroups = new Set<string>();
    let inFlight = 0;
    let peak = 0;
    let overlaps = 0;
    let twoInFlight = (): void => {};
    const scaledOut = new Promise<void>((resolve) => {
      twoInFlight = resolve;
    });
    const poller = createSqsPoller({
      sqs: local.clients.sqs,
      queueUrl: QueueUrl!,
      handler: async (event: SQSEvent): Promise<SQSBatchResponse> => {
        for (const record of event.Records) {
          const [group = '', index = ''] = record.body.split(':');
          if (inFlightGroups.has(group)) overlaps += 1;
          inFlightGroups.add(group);
          inFlight += 1;
          peak = Math.max(peak, inFlight);
          if (inFlight >= 2) twoInFlight();
          await scaledOut;
          seen.set(group, [...(seen.get(group) ?? []), Number(index)]);
          inFlight -= 1;
          inFlightGroups.delete(group);
        }
        return { batchItemFailures: [] };
      },
      functionName: 'deliverer',
      batchSize: 1,
      concurrency: 1,
      maxConcurrency: groups,
      log: quiet,
    });
    for (let index = 0; index < perGroup; index++) {
      for (let group = 0; group < groups; group++) {
        await local.clients.sqs.send(
          new SendMessageCommand({
            QueueUrl: QueueUrl!,
            MessageBody: `g${group}:${index}`,
            MessageGroupId: `g${group}`,
          }),
        );
      }
    }
    await poller.start();
    try {
      await waitFor(() => poller.stats().deleted === groups * perGroup);
    } finally {
      twoInFlight();
      await poller.stop();
    }
    expect(peak).toBeGreaterThan(1);
    expect(peak).toBeLessThanOrEqual(groups);
    expect(overlaps).toBe(0);
    for (let group = 0; group < groups; group++) expect(seen.get(`g${group}`)).toEqual([0, 1, 2]);
  });
});

describe('DynamoDB stream poller', () => {
  const streamArn = (): string => local.resources.tables.State.streamArn!;
  const table = (): string => local.resources.tables.State.name;
  const inTest =
    (tag: string) =>
    (record: DynamoDBRecord): boolean =>
      record.dynamodb?.Keys?.pk?.S?.startsWith(`${tag}#`) ?? false;
  /** A projector poller of the state stream from its oldest record, quiet. */
  const projectorFromTheStart = (
    options: Omit<StreamPollerOptions, 'streams' | 'streamArn' | 'startingPosition' | 'functionName' | 'log'>,
  ) =>
    createStreamPoller({
      streams: local.clients.streams,
      streamArn: streamArn(),
      startingPosition: 'TRIM_HORIZON',
      functionName: 'projector',
      log: quiet,
      ...options,
    });

  it('delivers inserts, updates and removes in order with both images, task items only', async () => {
    const records: DynamoDBRecord[] = [];
    const poller = projectorFromTheStart({
      filter: (record) => inTest('order')(record) && isTaskItemRecord(record),
      handler: async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
        records.push(...event.Records);
        return { batchItemFailures: [] };
      },
    });
    await poller.start();
    try {
      const key = { pk: 'order#1', sk: 'TASK' };
      await local.clients.doc.send(
        new PutCommand({ TableName: table(), Item: { ...key, state: 'SUBMITTED', n: 1 } }),
      );
      await local.clients.doc.send(
        new PutCommand({ TableName: table(), Item: { pk: 'order#1', sk: 'RUN#r1', status: 'QUEUED' } }),
      );
      await local.clients.doc.send(
        new UpdateCommand({
          TableName: table(),
          Key: key,
          UpdateExpression: 'SET #s = :s, n = :n',
          ExpressionAttributeNames: { '#s': 'state' },
          ExpressionAttributeValues: { ':s': 'WORKING', ':n': 2 },
        }),
      );
      await local.clients.doc.send(new DeleteCommand({ TableName: table(), Key: key }));
      await waitFor(() => records.length >= 3);
    } finally {
      await poller.stop();
    }
    expect(records.map((record) => record.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE']);
    const [insert, modify, remove] = records;
    expect(insert).toMatchObject({
      eventSource: 'aws:dynamodb',
      eventSourceARN: streamArn(),
      awsRegion: 'us-east-1',
      dynamodb: {
        Keys: { pk: { S: 'order#1' }, sk: { S: 'TASK' } },
        NewImage: { pk: { S: 'order#1' }, sk: { S: 'TASK' }, state: { S: 'SUBMITTED' }, n: { N: '1' } },
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    });
    expect(insert?.dynamodb?.OldImage).toBeUndefined();
    expect(modify?.dynamodb?.OldImage).toMatchObject({ state: { S: 'SUBMITTED' }, n: { N: '1' } });
    expect(modify?.dynamodb?.NewImage).toMatchObject({ state: { S: 'WORKING' }, n: { N: '2' } });
    expect(remove?.dynamodb?.OldImage).toMatchObject({ state: { S: 'WORKING' } });
    expect(remove?.dynamodb?.NewImage).toBeUndefined();
    for (const record of records) {
      expect(record.eventID).toMatch(/\S/);
      expect(record.dynamodb?.SequenceNumber).toMatch(/^\d+$/);
      expect(record.dynamodb?.SizeBytes).toBeGreaterThan(0);
      expect(typeof record.dynamodb?.ApproximateCreationDateTime).toBe('number');
    }
    const sequences = records.map((record) => BigInt(record.dynamodb?.SequenceNumber ?? '0'));
    expect([...sequences].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(sequences);
    expect(poller.stats().filtered).toBeGreaterThan(0);
  });

  it('caughtUp resolves once the records written before the call were handled', async () => {
    const handled: number[] = [];
    const poller = projectorFromTheStart({
      filter: inTest('caught'),
      maximumBatchingWindowMs: 500,
      // A slow handler: nothing is handled yet when the last write returns.
      handler: async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
        await new Promise((wake) => setTimeout(wake, 300));
        handled.push(...event.Records.map((record) => Number(record.dynamodb?.NewImage?.n?.N)));
        return { batchItemFailures: [] };
      },
    });
    await poller.start();
    try {
      for (const n of [1, 2, 3])
        await local.clients.doc.send(
          new PutCommand({ TableName: table(), Item: { pk: `caught#${n}`, sk: 'TASK', n } }),
        );
      await poller.caughtUp();
      expect(handled).toEqual([1, 2, 3]);
    } finally {
      await poller.stop();
    }
  });

  it('retries from the first reported failure, so each record is processed once and in order', async () => {
    const processed: number[] = [];
    const attemptsOf = new Map<number, number>();
    const poller = projectorFromTheStart({
      filter: inTest('retry'),
      handler: async (event) => {
        // A sequential consumer: stops at the first failure and reports it and everything after.
        for (const [index, record] of event.Records.entries()) {
          const n = Number(record.dynamodb?.NewImage?.n?.N);
          attemptsOf.set(n, (attemptsOf.get(n) ?? 0) + 1);
          if (n === 2 && (attemptsOf.get(n) ?? 0) <= 2) {
            return {
              batchItemFailures: event.Records.slice(index).map((failed) => ({
                itemIdentifier: failed.dynamodb?.SequenceNumber ?? '',
              })),
            };
          }
          processed.push(n);
        }
        return { batchItemFailures: [] };
      },
    });
    await poller.start();
    try {
      for (const n of [1, 2, 3, 4]) {
        await local.clients.doc.send(
          new PutCommand({ TableName: table(), Item: { pk: `retry#${n}`, sk: 'TASK', n } }),
        );
      }
      await waitFor(() => processed.length >= 4);
    } finally {
      await poller.stop();
    }
    expect(processed).toEqual([1, 2, 3, 4]);
    expect(attemptsOf.get(1)).toBe(1);
    expect(attemptsOf.get(2)).toBe(3);
    expect(poller.stats().retries).toBe(2);
    expect(poller.stats().failedBatches).toBe(0);
  });

  it('gathers records for its batching window: one invocation once the batch is full, or once the window ends', async () => {
    const batches: number[][] = [];
    const poller = (tag: string, batchSize: number, maximumBatchingWindowMs: number) =>
      createStreamPoller({
        streams: local.clients.streams,
        streamArn: streamArn(),
        startingPosition: 'TRIM_HORIZON',
        functionName: 'pusher',
        batchSize,
        maximumBatchingWindowMs,
        pollIntervalMs: 20,
        filter: inTest(tag),
        handler: async (event) => {
          batches.push(event.Records.map((record) => Number(record.dynamodb?.NewImage?.n?.N)));
          return { batchItemFailures: [] };
        },
        log: quiet,
      });
    const put = (tag: string, n: number) =>
      local.clients.doc.send(
        new PutCommand({ TableName: table(), Item: { pk: `${tag}#${n}`, sk: 'TASK', n } }),
      );

    // A window far longer than the test: the third record fills the batch and ends it. Without
    // the window, records written 200 ms apart would each be read, and invoked, on their own.
    const full = poller('window-full', 3, 60_000);
    await full.start();
    try {
      for (const n of [1, 2, 3]) {
        await put('window-full', n);
        await new Promise((wake) => setTimeout(wake, 200));
      }
      await waitFor(() => batches.length >= 1);
    } finally {
      await full.stop();
    }
    expect(batches).toEqual([[1, 2, 3]]);

    // A batch that never fills is invoked when its window ends.
    batches.length = 0;
    const partial = poller('window-partial', 100, 300);
    await partial.start();
    try {
      await put('window-partial', 1);
      await waitFor(() => batches.length >= 1);
    } finally {
      await partial.stop();
    }
    expect(batches).toEqual([[1]]);
  });

  it('bisects a throwing batch, gives up on the poison record after bounded retries and moves on', async () => {
    const processed: string[] = [];
    const failures: StreamBatchFailure[] = [];
    let poisonAttempts = 0;
    const poller = projectorFromTheStart({
      maximumRetryAttempts: 2,
      filter: inTest('poison'),
      handler: async (event) => {
        const names = event.Records.map((record) => record.dynamodb?.NewImage?.name?.S ?? '');
        if (names.includes('bad')) {
          poisonAttempts += 1;
          throw new Error('cannot project');
        }
        processed.push(...names);
        return { batchItemFailures: [] };
      },
      onFailure: (failure) => {
        failures.push(failure);
      },
    });
    for (const name of ['a', 'bad', 'b']) {
      await local.clients.doc.send(
        new PutCommand({ TableName: table(), Item: { pk: `poison#${name}`, sk: 'TASK', name } }),
      );
    }
    await poller.start();
    try {
      await waitFor(() => processed.includes('b'));
    } finally {
      await poller.stop();
    }
    expect(processed).toEqual(['a', 'b']);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.records.map((record) => record.dynamodb?.NewImage?.name?.S)).toEqual(['bad']);
    expect(failures[0]?.error).toMatch(/cannot project/);
    // Narrowing to the single record, then the first try and two retries at size one.
    expect(poisonAttempts).toBeGreaterThanOrEqual(3);
    expect(poller.stats().failedBatches).toBe(1);
  });

  it('starts at LATEST by default and skips what the stream held before', async () => {
    await local.clients.doc.send(
      new PutCommand({ TableName: table(), Item: { pk: 'latest#old', sk: 'TASK' } }),
    );
    const seen: string[] = [];
    const poller = createStreamPoller({
      streams: local.clients.streams,
      streamArn: streamArn(),
      functionName: 'projector',
      filter: inTest('latest'),
      handler: async (event) => {
        seen.push(...event.Records.map((record) => record.dynamodb?.Keys?.pk?.S ?? ''));
      },
      log: quiet,
    });
    await poller.start();
    try {
      await local.clients.doc.send(
        new PutCommand({ TableName: table(), Item: { pk: 'latest#new', sk: 'TASK' } }),
      );
      await waitFor(() => seen.length > 0);
    } finally {
      await poller.stop();
    }
    expect(seen).toEqual(['latest#new']);
  });
});

describe('HTTP harness', () => {
  let harness: HttpHarness;
  let events: APIGatewayProxyEvent[] = [];
  let release: (() => void) | undefined;
  /** The response stream the `/held` handler writes to, as Lambda's runtime hands one to a streaming handler. */
  let held: PassThrough | undefined;

  const rpc: ApiGatewayLambdaHandler = async (event): Promise<HarnessProxyResult> => {
    events.push(event);
    if (event.path === '/boom') throw new Error('handler crashed');
    if (event.path === '/binary') {
      return {
        statusCode: 200,
        headers: { 'Content-Type': 'image/png' },
        body: 'AAEC/w==',
        isBase64Encoded: true,
      };
    }
    if (event.path === '/held') {
      held = new PassThrough();
      held.write('data: first\n\n');
      return { statusCode: 200, headers: { 'Content-Type': 'text/event-stream' }, body: held };
    }
    if (event.path === '/stream') {
      const gate = new Promise<void>((resolveGate) => {
        release = resolveGate;
      });
      return {
        statusCode: 200,
        headers: { 'Content-Type': 'text/event-stream' },
        body: (async function* () {
          yield 'data: first\n\n';
          await gate;
          yield new TextEncoder().encode('data: second\n\n');
        })(),
      };
    }
    return {
      statusCode: 201,
      headers: { 'Content-Type': 'application/json', 'X-Single': 'one' },
      multiValueHeaders: { 'Set-Cookie': ['a=1', 'b=2'] },
      body: JSON.stringify({ ok: true }),
    };
  };

  beforeAll(async () => {
    harness = await startHttpHarness({
      handler: rpc,
      authorize: staticTokenAuthorizer({
        auth: { tokens: { 'token-alice': { tenant: 't1', principal: 'alice' } } },
      }),
      log: quiet,
    });
  });

  afterAll(async () => {
    await harness?.stop();
  });

  it('turns a request into a REST proxy event and the result back into a response', async () => {
    events = [];
    const headers = new Headers({ Authorization: 'Bearer token-alice', 'Content-Type': 'application/json' });
    headers.append('X-Multi', 'one');
    const response = await fetch(`${harness.url}/agents/default?x=1&x=2&y=z`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask' }),
    });
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ ok: true });
    expect(response.headers.get('x-single')).toBe('one');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(response.headers.get('x-amzn-requestid')).toMatch(/\S/);

    expect(events).toHaveLength(1);
    const event = events[0]!;
    expect(event).toMatchObject({
      resource: '/{proxy+}',
      path: '/agents/default',
      httpMethod: 'POST',
      pathParameters: { proxy: 'agents/default' },
      queryStringParameters: { x: '2', y: 'z' },
      multiValueQueryStringParameters: { x: ['1', '2'], y: ['z'] },
      body: '{"jsonrpc":"2.0","id":1,"method":"GetTask"}',
      isBase64Encoded: false,
      stageVariables: null,
      requestContext: {
        stage: 'local',
        httpMethod: 'POST',
        resourcePath: '/{proxy+}',
        identity: { sourceIp: '127.0.0.1' },
        authorizer: { tenant: 't1', principal: 'alice', principalId: 'alice' },
      },
    });
    expect(event.requestContext.requestId).toBe(response.headers.get('x-amzn-requestid'));
    const headerNames = Object.keys(event.headers).map((name) => name.toLowerCase());
    expect(headerNames).toContain('authorization');
    expect(
      event.multiValueHeaders[Object.keys(event.multiValueHeaders).find((n) => /^x-multi$/i.test(n))!],
    ).toEqual(['one']);
  });

  it('passes headers and query parameters named like Object.prototype members as ordinary names', async () => {
    // Found by test/conformance/edge-fuzz.test.ts: a `toString` header was a 500 from the harness.
    events = [];
    const response = await fetch(
      `${harness.url}/agents/default?toString=q&constructor=c&__proto__=p&hasOwnProperty=h`,
      {
        method: 'POST',
        headers: {
          Authorization: 'Bearer token-alice',
          toString: 'a',
          constructor: 'b',
          valueOf: 'd',
        },
        body: '{}',
      },
    );
    expect(response.status).toBe(201);
    const event = events[0]!;
    const lower = (map: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(map).map(([name, value]) => [name.toLowerCase(), value]));
    const headers = lower(event.headers);
    expect(headers).toMatchObject({ tostring: 'a', constructor: 'b', valueof: 'd' });
    expect(lower(event.multiValueHeaders)).toMatchObject({ tostring: ['a'], valueof: ['d'] });
    expect(Object.hasOwn(event.queryStringParameters ?? {}, '__proto__')).toBe(true);
    expect(event.queryStringParameters).toMatchObject({
      toString: 'q',
      constructor: 'c',
      hasOwnProperty: 'h',
    });
    expect(event.multiValueQueryStringParameters).toMatchObject({ toString: ['q'], constructor: ['c'] });
  });

  it('reads a target starting with // as a path, not as a host (it was a 500 for `//`)', async () => {
    // Found by test/conformance/edge-fuzz.test.ts.
    events = [];
    for (const target of ['//', '//agents/default', '///x']) {
      const response = await fetch(`${harness.url}${target}`, {
        method: 'POST',
        headers: { Authorization: 'Bearer token-alice' },
        body: '{}',
      });
      expect(response.status, target).toBe(201);
    }
    expect(events.map((event) => event.path)).toEqual(['//', '//agents/default', '///x']);
  });

  it('passes binary bodies base64-encoded both ways', async () => {
    events = [];
    const response = await fetch(`${harness.url}/binary`, {
      method: 'PUT',
      headers: { Authorization: 'Bearer token-alice', 'Content-Type': 'application/octet-stream' },
      body: new Uint8Array([0, 1, 2, 255]),
    });
    expect(response.status).toBe(200);
    expect([...new Uint8Array(await response.arrayBuffer())]).toEqual([0, 1, 2, 255]);
    expect(events[0]).toMatchObject({ isBase64Encoded: true, body: 'AAEC/w==' });
  });

  it('answers 401 without calling the handler for a missing or unknown token', async () => {
    events = [];
    for (const authorization of ['Bearer wrong', undefined]) {
      const response = await fetch(`${harness.url}/agents/default`, {
        method: 'POST',
        headers: authorization ? { Authorization: authorization } : {},
        body: '{}',
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.json()).toEqual({ message: 'Unauthorized' });
    }
    expect(events).toHaveLength(0);
  });

  it('serves agent cards without a token, as anonymous', async () => {
    events = [];
    for (const path of ['/.well-known/agent-card.json', '/agents/default/.well-known/agent-card.json']) {
      const response = await fetch(`${harness.url}${path}`);
      expect(response.status).toBe(201);
    }
    expect(events.map((event) => event.requestContext.authorizer)).toEqual([
      expect.objectContaining({ tenant: 'anonymous', principal: 'anonymous' }),
      expect.objectContaining({ tenant: 'anonymous', principal: 'anonymous' }),
    ]);
    expect(events[0]?.resource).toBe('/{proxy+}');
  });

  it('treats every caller as local/local when no tokens are configured', async () => {
    const open = await staticTokenAuthorizer(defaultConfig)({}, { method: 'POST', path: '/' });
    expect(open).toEqual({ tenant: 'local', principal: 'local' });
  });

  it('refuses bodies over 1 MiB with 413 before the handler runs', async () => {
    events = [];
    const response = await fetch(`${harness.url}/agents/default`, {
      method: 'POST',
      headers: { Authorization: 'Bearer token-alice', 'Content-Type': 'application/json' },
      body: 'x'.repeat(1024 * 1024 + 1),
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ message: 'Request Entity Too Large' });
    expect(events).toHaveLength(0);
  });

  it('answers 502 like API Gateway when the handler throws', async () => {
    const response = await fetch(`${harness.url}/boom`, { headers: { Authorization: 'Bearer token-alice' } });
    expect(response.status).toBe(502);
    expect(await response.json()).toEqual({ message: 'Internal server error' });
  });

  it('writes a streamed body chunk by chunk, without waiting for the end', async () => {
    const response = await fetch(`${harness.url}/stream`, {
      headers: { Authorization: 'Bearer token-alice' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    // The producer is still blocked on the gate: this chunk can only arrive if it was flushed.
    const first = await reader.read();
    expect(decoder.decode(first.value)).toBe('data: first\n\n');
    release?.();
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
    }
    expect(rest).toBe('data: second\n\n');
  });

  it('destroys a streamed body under its handler when the client goes away, before its next chunk', async () => {
    const client = new AbortController();
    const response = await fetch(`${harness.url}/held`, {
      headers: { Authorization: 'Bearer token-alice' },
      signal: client.signal,
    });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    const stream = held!;
    const ended = finished(stream);
    expect(stream.destroyed).toBe(false);
    client.abort();
    // The handler writes nothing more: only the client's leaving can end its stream, destroyed.
    await expect(ended).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
    expect(stream.destroyed).toBe(true);
  });
});

describe('startLocalStack', () => {
  it('wires the HTTP harness, the run-queue poller and the task-stream poller to the handlers', async () => {
    const { providedEndpoints } = await import('../support/local-guard.ts');
    const executed: string[] = [];
    const projected: DynamoDBRecord[] = [];
    const { SQSClient } = await import('@aws-sdk/client-sqs');
    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const { DynamoDBDocumentClient } = await import('@aws-sdk/lib-dynamodb');
    // Built lazily, as a handler module would at load: from the env the stack set.
    const clients = () => ({
      sqs: new SQSClient({}),
      doc: DynamoDBDocumentClient.from(new DynamoDBClient({})),
    });
    let made: ReturnType<typeof clients> | undefined;
    const stack = await startLocalStack({
      endpoints: providedEndpoints(),
      prefix: `${local.prefix}-stack`,
      log: quiet,
      handlers: {
        rpc: async (event) => {
          made ??= clients();
          const taskId = event.path.split('/').pop() ?? '';
          await made.doc.send(
            new PutCommand({
              TableName: process.env.STATE_TABLE_NAME,
              Item: { pk: `TASK#${taskId}`, sk: 'TASK' },
            }),
          );
          await made.doc.send(
            new PutCommand({
              TableName: process.env.STATE_TABLE_NAME,
              Item: { pk: `RUN#${taskId}`, sk: 'RUN' },
            }),
          );
          await made.sqs.send(
            new SendMessageCommand({ QueueUrl: process.env.RUN_QUEUE_URL, MessageBody: taskId }),
          );
          return { statusCode: 202, body: JSON.stringify(event.requestContext.authorizer) };
        },
        executor: async (event) => {
          executed.push(...event.Records.map((record) => record.body));
          return { batchItemFailures: [] };
        },
        projector: async (event) => {
          projected.push(...event.Records);
          return { batchItemFailures: [] };
        },
      },
    });
    try {
      expect(process.env).toMatchObject({
        A2A_LOCAL_MODE: 'true',
        A2A_INSTALLATION: 'local',
        STATE_TABLE_NAME: `${local.prefix}-stack-State`,
        AWS_ENDPOINT_URL_DYNAMODB: stack.endpoints.dynamodb,
        AWS_ENDPOINT_URL_SQS: stack.endpoints.sqs,
        AWS_ENDPOINT_URL_KMS: stack.endpoints.kms,
      });
      expect(JSON.parse(process.env.A2A_CONFIG ?? '{}')).toEqual(JSON.parse(JSON.stringify(defaultConfig)));
      const response = await fetch(`${stack.baseUrl}/tasks/t-42`, { method: 'POST', body: '{}' });
      expect(response.status).toBe(202);
      expect(await response.json()).toMatchObject({ tenant: 'local', principal: 'local' });
      await waitFor(() => executed.includes('t-42') && projected.length > 0);
      // Give a RUN record the chance to (wrongly) arrive.
      await new Promise((wake) => setTimeout(wake, 200));
      expect(projected.map((record) => record.dynamodb?.Keys?.pk?.S)).toEqual(['TASK#t-42']);
    } finally {
      await stack.stop();
      made?.sqs.destroy();
      made?.doc.destroy();
    }
    await expect(fetch(`${stack.baseUrl}/tasks/t-43`, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});
