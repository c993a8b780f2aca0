import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../../infra/admin/cli.ts';
import { type LocalStack, localCredentials, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseOnFailureRecord } from '../../shared/adapters/sqs-dead-letters.ts';
import { armFailpoints, disarmFailpoints } from '../../shared/app/operations/failpoints.ts';
import type { ReplayReport } from '../../shared/app/operations/replay-dead-letters.ts';
import { defaultConfig } from '../../shared/config/config.ts';
import type { StreamBatchRange } from '../../shared/domain/operations.ts';
import { queueDepths, readTaskRows } from '../support/fault-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { rpcCalls } from '../support/rpc-calls.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * `a2a-admin dlq replay` (decision 0068) against the emulators, with the local stack's handlers
 * and pollers in this process. Real failures fill the dead-letter queues: failpoints make the
 * projector (its write-through off) and the pusher (its direct fan-out off) fail every record,
 * so the stream pollers give their batches up to the on-failure destinations, as Lambda does —
 * batch coordinates, not records. Then the "fix" (failpoints off) and the replay: the journal
 * gets every revision, the webhook every delivery, each once; a dry run changes nothing; a second
 * replay finds nothing; a duplicate of a replayed message changes nothing more.
 */

const prefix = 'int-dlq-replay';
let stack: LocalStack;
let receiver: WebhookReceiver;
let sqs: SQSClient;
let streams: DynamoDBStreamsClient;
let doc: DynamoDBDocumentClient;

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config: defaultConfig,
    endpoints: providedEndpoints(),
    prefix,
    log: () => {},
    // The pollers give a failing batch up after its retries; what follows is under test, not their pace.
    streamRetryBackoffCapMs: 50,
  });
  receiver = await startWebhookReceiver();
  const common = { region: 'us-east-1', credentials: localCredentials };
  sqs = new SQSClient({ ...common, endpoint: stack.endpoints.sqs });
  streams = new DynamoDBStreamsClient({ ...common, endpoint: stack.endpoints.dynamodbStreams });
  doc = DynamoDBDocumentClient.from(new DynamoDBClient({ ...common, endpoint: stack.endpoints.dynamodb }));
});
afterAll(async () => {
  disarmFailpoints();
  await stack?.stop();
  await receiver?.close();
  sqs?.destroy();
  streams?.destroy();
  doc?.destroy();
});

const { call } = rpcCalls(() => `${stack.baseUrl}/agents/default`);

const admin = async (...args: string[]): Promise<{ code: number; report: ReplayReport; stderr: string }> => {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(
    [
      'dlq',
      'replay',
      ...args,
      '--json',
      '--prefix',
      prefix,
      '--endpoint',
      stack.endpoints.dynamodb,
      '--sqs-endpoint',
      stack.endpoints.sqs,
    ],
    {
      out: (text) => {
        stdout += text;
      },
      err: (text) => {
        stderr += text;
      },
      env: {},
    },
  );
  return { code, report: stdout ? (JSON.parse(stdout) as ReplayReport) : (undefined as never), stderr };
};

/** Sequence numbers of a stream's records that `match`, in stream order (one shard here). */
const streamSequences = async (streamArn: string, match: (record: StreamRecord) => boolean) => {
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  const found: string[] = [];
  for (const shard of StreamDescription?.Shards ?? []) {
    let { ShardIterator: iterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shard.ShardId!,
        ShardIteratorType: 'TRIM_HORIZON',
      }),
    );
    while (iterator) {
      const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      for (const record of page.Records ?? [])
        if (match(record)) found.push(record.dynamodb!.SequenceNumber!);
      if ((page.Records ?? []).length === 0) break;
      iterator = page.NextShardIterator;
    }
  }
  return found;
};

/** The queue's messages without taking them (visibility 0): bodies and the ranges they name. */
const peek = async (queueUrl: string): Promise<{ bodies: string[]; ranges: StreamBatchRange[] }> => {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
  );
  const bodies = Messages.map((message) => message.Body ?? '');
  return { bodies, ranges: bodies.flatMap((body) => parseOnFailureRecord(body) ?? []) };
};

const within = (sequence: string, range: StreamBatchRange): boolean =>
  BigInt(range.startSequenceNumber) <= BigInt(sequence) &&
  BigInt(sequence) <= BigInt(range.endSequenceNumber);

/** Until the queue's on-failure records cover every one of `sequences` (the poller gave them all up). */
const untilDeadLettered = async (queueUrl: string, sequences: () => Promise<string[]>): Promise<string[]> => {
  for (;;) {
    const wanted = await sequences();
    const { bodies, ranges } = await peek(queueUrl);
    if (wanted.length > 0 && wanted.every((sequence) => ranges.some((range) => within(sequence, range)))) {
      return bodies;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

const until = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 50));
};

const journalItems = async (taskId: string) =>
  (
    await doc.send(
      new QueryCommand({
        TableName: stack.resources.tables.Journal.name,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `TASK#${taskId}` },
      }),
    )
  ).Items ?? [];

const taskRow = async (taskId: string) => (await readTaskRows(stack.endpoints, prefix)).tasks.get(taskId);

const sendMessage = (configuration: Record<string, unknown>) =>
  call('SendMessage', {
    message: { messageId: `m-${randomUUID()}`, role: 'ROLE_USER', parts: [{ text: 'hello' }] },
    configuration: { returnImmediately: true, ...configuration },
  });

const putBack = async (queueUrl: string, body: string) =>
  sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));

describe('dlq replay --queue projector', () => {
  it('projects every revision the projector gave up on, deletes the messages, and a second replay changes nothing', async () => {
    const dlq = stack.resources.queues.ProjectorDlq.url;
    // The write-through never starts and every projector record fails: the journal gets nothing.
    armFailpoints('writeThrough.afterCommit=1,projector.midBatch=1');
    const task = (await sendMessage({})).task as { id: string };
    await until(async () => (await taskRow(task.id))?.state === 'TASK_STATE_COMPLETED');
    const finalRevision = (await taskRow(task.id))!.revision;
    const bodies = await untilDeadLettered(dlq, () =>
      streamSequences(
        stack.resources.tables.State.streamArn!,
        (record) =>
          record.dynamodb?.Keys?.pk?.S === `TASK#${task.id}` && record.dynamodb?.Keys?.sk?.S === 'TASK',
      ),
    );
    expect(await journalItems(task.id)).toEqual([]);
    disarmFailpoints();

    const dry = await admin('--queue', 'projector', '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.report).toMatchObject({ dryRun: true, messages: bodies.length, kept: bodies.length });
    expect(dry.report.outcomes.replayable).toBe(bodies.length);
    expect(await journalItems(task.id)).toEqual([]);
    expect((await peek(dlq)).bodies.sort()).toEqual([...bodies].sort());

    const replay = await admin('--queue', 'projector');
    expect(replay.stderr).toBe('');
    expect(replay.code).toBe(0);
    expect(replay.report).toMatchObject({ dryRun: false, messages: bodies.length, kept: 0 });
    expect(replay.report.outcomes.replayed).toBe(bodies.length);
    expect(replay.report.records.handled).toBeGreaterThanOrEqual(finalRevision);
    const journal = await journalItems(task.id);
    const events = journal.filter((item) => String(item.sk).startsWith('EVT#')).map((item) => item.revision);
    expect(events).toEqual(Array.from({ length: finalRevision }, (_, index) => index + 1));
    expect(journal.find((item) => item.sk === 'VIEW')).toMatchObject({
      revision: finalRevision,
      state: 'TASK_STATE_COMPLETED',
    });
    expect(((await call('GetTask', { id: task.id })) as { status: { state: string } }).status.state).toBe(
      'TASK_STATE_COMPLETED',
    );
    expect((await peek(dlq)).bodies).toEqual([]);

    // Again: nothing left to replay.
    const again = await admin('--queue', 'projector');
    expect(again.code).toBe(0);
    expect(again.report).toMatchObject({ messages: 0, kept: 0 });
    // A duplicate of a replayed message (SQS delivers at least once): replayed, nothing changes.
    await putBack(dlq, bodies[0]!);
    const duplicate = await admin('--queue', 'projector');
    expect(duplicate.report.outcomes.replayed).toBe(1);
    expect(await journalItems(task.id)).toEqual(journal);
  });
});

describe('dlq replay --queue pusher', () => {
  it('queues the deliveries the pusher gave up on: each revision reaches the webhook once', async () => {
    const dlq = stack.resources.queues.PusherDlq.url;
    // The writers' direct fan-out and every pusher record fail: no delivery is queued.
    armFailpoints('push.directFanOut=1,pusher.midBatch=1');
    const task = (await sendMessage({ taskPushNotificationConfig: { url: `${receiver.url}/hook` } }))
      .task as {
      id: string;
    };
    await until(async () =>
      (await journalItems(task.id)).some(
        (item) => item.sk === 'VIEW' && item.state === 'TASK_STATE_COMPLETED',
      ),
    );
    const bodies = await untilDeadLettered(dlq, () =>
      streamSequences(
        stack.resources.tables.Journal.streamArn!,
        (record) =>
          record.eventName === 'INSERT' &&
          record.dynamodb?.Keys?.pk?.S === `TASK#${task.id}` &&
          (record.dynamodb?.Keys?.sk?.S ?? '').startsWith('EVT#'),
      ),
    );
    expect(receiver.posts).toEqual([]);
    disarmFailpoints();

    const replay = await admin('--queue', 'pusher');
    expect(replay.stderr).toBe('');
    expect(replay.code).toBe(0);
    expect(replay.report).toMatchObject({ messages: bodies.length, kept: 0 });
    expect(replay.report.outcomes.replayed).toBe(bodies.length);
    await receiver.waitFor((posts) => posts.some((post) => JSON.stringify(post.body).includes('COMPLETED')));
    /** The posts once the delivery queue is empty (every queued delivery final). */
    const delivered = async () => {
      await until(async () => (await queueDepths(stack, ['DeliveryQueue'])).DeliveryQueue === 0);
      return receiver.posts.map((post) => JSON.stringify(post.body));
    };
    const first = await delivered();
    expect(new Set(first).size).toBe(first.length);

    const again = await admin('--queue', 'pusher');
    expect(again.report).toMatchObject({ messages: 0, kept: 0 });
    await putBack(dlq, bodies[0]!);
    const duplicate = await admin('--queue', 'pusher');
    expect(duplicate.report.outcomes.replayed).toBe(1);
    expect(await delivered()).toEqual(first);
  });
});
