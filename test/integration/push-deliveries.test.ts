import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeliverRecords } from '../../functions/deliverer/deliver-records.ts';
import type { LocalLog } from '../../infra/local/lambda-invocation.ts';
import { createLocalClients, type LocalClients } from '../../infra/local/local-stack.ts';
import { injectSdkFaults } from '../../infra/local/sdk-faults.ts';
import { createSqsPoller, type SqsPoller } from '../../infra/local/sqs-poller.ts';
import { DynamoDbExpiredItems } from '../../shared/adapters/dynamodb/dynamodb-expired-items.ts';
import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbPushDeliveryLog } from '../../shared/adapters/dynamodb/dynamodb-push-delivery-log.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { deliveryKeys } from '../../shared/adapters/dynamodb/keys.ts';
import { deliveryQueueMaxReceiveCount } from '../../shared/adapters/dynamodb/tables.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { SqsDeliveryQueue } from '../../shared/adapters/sqs-delivery-queue.ts';
import { createGuardedWebhookSender } from '../../shared/adapters/ssrf-guard.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { armFailpoints, disarmFailpoints, failpointCounts } from '../../shared/app/operations/failpoints.ts';
import { purgeExpired } from '../../shared/app/operations/purge-expired.ts';
import { type DeliverDeps, deliverPush } from '../../shared/app/push/deliver-push.ts';
import { fanOutEvents, fanOutProjected } from '../../shared/app/push/fan-out-events.ts';
import { buildPushConfig, PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { listPushDeliveries } from '../../shared/app/push/push-deliveries.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { TaskNotFoundError } from '../../shared/domain/errors.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
import { deliveryGroupOf } from '../../shared/domain/push.ts';
import { webhookPolicyFor } from '../../shared/domain/webhook-address.ts';
import { alice } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { waitFor } from '../support/wait-for.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

// Its failpoints and failing receivers make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Delivery records (decision 0025) against DynamoDB Local and the SQS emulator: the deliverer's
 * own batch handler behind a local poller on the FIFO delivery queue, a real loopback receiver
 * that refuses its first POST with 503, the owner-scoped read, the write cost, a record write
 * DynamoDB refuses, the purge taking the records with their task, and the webhook's order when
 * the soak's faults hit a catch-up (decision 0062).
 */

const bob = { tenant: 't1', principal: 'bob', profileId: 'default' } as const;
const quiet: LocalLog = () => {};
const nowSeconds = () => Math.floor(Date.now() / 1000);

let env: TestResources;
let faultable: LocalClients;
let receiver: WebhookReceiver;
let poller: SqsPoller;
let tasks: DynamoDbTaskRepository;
let deps: DeliverDeps & { deliveryLog: DynamoDbPushDeliveryLog; tasks: DynamoDbTaskRepository };
/** Write units DynamoDB reported for each delivery-record append. */
const appendUnits: number[] = [];
/** Read units DynamoDB reported for each read of the settled revision (decision 0045). */
const settledReadUnits: number[] = [];
const warnings: Array<{ message: string; fields: Record<string, unknown> }> = [];
const logger = {
  info: () => {},
  warn: (message: string, fields: Record<string, unknown>) => void warnings.push({ message, fields }),
};

const task = (
  taskId: string,
  revision: number,
  state: StoredTask['state'],
  expiresAt: number,
): StoredTask => ({
  taskId,
  contextId: `ctx-${taskId}`,
  owner: { tenant: alice.tenant, principal: alice.principal },
  profileId: 'default',
  state,
  revision,
  currentRunId: `run-${taskId}`,
  statusTimestamp: new Date().toISOString(),
  createdAt: new Date().toISOString(),
  expiresAt,
});

beforeAll(async () => {
  env = await createTestResources('push-deliveries');
  const state = env.resources.tables.State.name;
  const sealer = new KmsSealer({
    kms: env.clients.kms,
    keyId: env.resources.key.keyId,
    installation: 'test',
  });
  tasks = new DynamoDbTaskRepository(env.clients.doc, state);
  // The log's own client carries the local stack's SDK failpoints: an armed `dynamodb.throttle=#N`
  // counts the log's calls alone (decision 0062). It asks DynamoDB what each append costs (as
  // `npm run bench`'s meter does).
  faultable = createLocalClients(env.endpoints);
  injectSdkFaults(faultable.dynamodb);
  const logDocuments = DynamoDBDocumentClient.from(faultable.dynamodb, {
    marshallOptions: { removeUndefinedValues: true },
  });
  const metered = Object.create(logDocuments) as typeof logDocuments;
  metered.send = (async (command: { input: Record<string, unknown> }) => {
    command.input.ReturnConsumedCapacity = 'TOTAL';
    const output = (await logDocuments.send(command as never)) as {
      ConsumedCapacity?: { CapacityUnits?: number };
    };
    if (command.constructor.name === 'UpdateCommand') {
      appendUnits.push(output.ConsumedCapacity?.CapacityUnits ?? Number.NaN);
    }
    if (command.constructor.name === 'QueryCommand' && command.input.ScanIndexForward === false) {
      settledReadUnits.push(output.ConsumedCapacity?.CapacityUnits ?? Number.NaN);
    }
    return output;
  }) as never;
  deps = {
    tasks,
    pushConfigs: new DynamoDbPushConfigRepository(env.clients.doc, state),
    journal: new DynamoDbJournalRepository(env.clients.doc, env.resources.tables.Journal.name),
    codec: new TaskContentCodec(sealer),
    pushCodec: new PushConfigCodec(sealer),
    sender: createGuardedWebhookSender({ policy: webhookPolicyFor(true, true), timeoutMs: 10_000 }),
    clock: systemClock,
    deliveryLog: new DynamoDbPushDeliveryLog(metered, state),
    logger,
  };
  // The first test's first POST is refused with 503; no other test depends on what ran before it.
  let refused = false;
  receiver = await startWebhookReceiver({
    respond: (post) => {
      if (refused || !post.path.startsWith('/hook?sig=')) return 200;
      refused = true;
      return 503;
    },
  });
  const queue = new SqsDeliveryQueue(env.clients.sqs, env.resources.queues.DeliveryQueue.url);
  poller = createSqsPoller({
    sqs: env.clients.sqs,
    queueUrl: env.resources.queues.DeliveryQueue.url,
    handler: createDeliverRecords({
      deps,
      queue,
      metrics: { add: () => {} },
      logger,
      retryBaseSeconds: 1,
      maxAttempts: deliveryQueueMaxReceiveCount,
    }),
    functionName: 'deliverer',
    batchSize: 1,
    concurrency: 1,
    log: quiet,
  });
  await poller.start();
});
afterAll(async () => {
  await poller?.stop();
  await receiver?.close();
  faultable?.destroy();
  env?.destroy();
});

/** The first receive of a delivery message, as the deliverer's handler describes it. */
const firstAttempt = (attemptId: string) => ({
  attempt: 1,
  maxAttempts: deliveryQueueMaxReceiveCount,
  retryBaseSeconds: 1,
  attemptId,
});

/**
 * A committed task at revisions 1 (WORKING) and 2 (COMPLETED), projected, with one push config;
 * `projectedThrough: 1` leaves revision 2 out of the journal until `projectRest`.
 */
const seedTask = async (url: string, options: { projectedThrough?: 1 | 2 } = {}) => {
  const taskId = `t-${randomUUID()}`;
  const expiresAt = nowSeconds() + 3_600;
  const r1 = task(taskId, 1, 'TASK_STATE_WORKING', expiresAt);
  const r2 = task(taskId, 2, 'TASK_STATE_COMPLETED', expiresAt);
  await tasks.commit({ row: { taskId, task: r1, expect: { revision: 'absent' } } });
  await tasks.commit({ row: { taskId, task: r2, expect: { revision: 1 }, before: r1 } });
  await projectRecord(deps.journal, undefined, r1);
  const projectRest = () => projectRecord(deps.journal, r1, r2);
  if (options.projectedThrough !== 1) await projectRest();
  const config = await buildPushConfig(
    { pushCodec: deps.pushCodec, clock: systemClock, ids: { newId: () => 'hook' } },
    r2,
    { url, token: 'notify-token-7f3' },
    0, // as if sent with the first message: revisions 1 and 2 are the config's
  );
  await deps.pushConfigs.put(config);
  return { taskId, r2, expiresAt, projectRest };
};

describe('the deliverer records each attempt', () => {
  it('503 then 2xx: two attempts on revision 1, one on revision 2, one write unit per attempt', async () => {
    const { taskId, expiresAt } = await seedTask(`${receiver.url}/hook?sig=query-secret-9`);
    const queue = new SqsDeliveryQueue(env.clients.sqs, env.resources.queues.DeliveryQueue.url);
    for (const revision of [1, 2]) {
      expect(
        await fanOutEvents({ pushConfigs: deps.pushConfigs, deliveries: queue, clock: systemClock }, [
          { taskId, revision, expiresAt, pushConfigured: true },
        ]),
      ).toBe(1);
    }
    const read = () => listPushDeliveries(deps, alice, taskId);
    await waitFor(async () => (await read()).deliveries.filter((d) => d.state === 'DELIVERED').length === 2);

    const { deliveries, nextPageToken } = await read();
    expect(nextPageToken).toBe('');
    expect(deliveries.map((d) => [d.configId, d.revision, d.state])).toEqual([
      ['hook', 1, 'DELIVERED'],
      ['hook', 2, 'DELIVERED'],
    ]);
    const [first, second] = deliveries;
    expect(first?.attempts).toEqual([
      {
        attempt: 1,
        timestamp: expect.any(String),
        outcome: 'HTTP_ERROR',
        httpStatus: 503,
        nextAttemptTimestamp: expect.any(String),
      },
      { attempt: 2, timestamp: expect.any(String), outcome: 'DELIVERED', httpStatus: 200, posts: 1 },
    ]);
    const [failed, delivered] = first!.attempts;
    // The retry came no earlier than the backoff the record announced (1 s at attempt 1).
    expect(Date.parse(delivered!.timestamp)).toBeGreaterThanOrEqual(
      Date.parse(failed!.nextAttemptTimestamp!) - 1_000,
    );
    expect(second?.attempts.map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([
      [1, 'DELIVERED', 200],
    ]);
    expect(receiver.posts).toHaveLength(3);

    // Cost: one UpdateItem per attempt, each one write unit (the item stays under 1 KB).
    expect(appendUnits).toEqual([1, 1, 1]);
    console.info(
      `push-deliveries: ${appendUnits.length} appends for 2 delivered events (one retried): ` +
        `${appendUnits.reduce((a, b) => a + b, 0)} WRU; 1 WRU per delivered event without retries`,
    );

    // The item: metadata only — no URL, query, token or body — and the task's expiry (I-PURGE).
    const { Item } = await env.clients.doc.send(
      new GetCommand({
        TableName: env.resources.tables.State.name,
        Key: deliveryKeys.item(taskId, 'hook', 1),
      }),
    );
    expect(Object.keys(Item ?? {}).sort()).toEqual([
      'attempts',
      'configId',
      'expiresAt',
      'lastAttemptId',
      'pk',
      'revision',
      'sk',
      'state',
      'taskId',
      'updatedAt',
    ]);
    expect(Item?.expiresAt).toBe(expiresAt);
    const raw = JSON.stringify(Item);
    for (const secret of ['127.0.0.1', 'query-secret-9', 'notify-token-7f3', 'statusUpdate']) {
      expect(raw).not.toContain(secret);
    }
    expect(Buffer.byteLength(raw)).toBeLessThan(1_024);
  });

  it('another caller reads none of them (I-OWNER); an unknown task is TaskNotFound too', async () => {
    const { taskId } = await seedTask(`${receiver.url}/hook`);
    await deliverPush(deps, { taskId, configId: 'hook', revision: 1 }, firstAttempt(`direct-${taskId}#1`));
    // Revision 1's message delivered 2 as well, which the journal held (decision 0093).
    expect((await listPushDeliveries(deps, alice, taskId)).deliveries).toHaveLength(2);
    await expect(listPushDeliveries(deps, bob, taskId)).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(listPushDeliveries(deps, alice, `t-${randomUUID()}`)).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
  });

  it('a record DynamoDB refuses is logged; the webhook still gets the revision exactly once', async () => {
    const { taskId, projectRest } = await seedTask(`${receiver.url}/refused-record`, { projectedThrough: 1 });
    // Revision 1 is settled first (before 2 is in the journal), so revision 2's message owes only itself.
    await deliverPush(deps, { taskId, configId: 'hook', revision: 1 }, firstAttempt(`r1-${taskId}#1`));
    await projectRest();
    const before = receiver.posts.length;
    warnings.length = 0;
    // Appends go to a missing table; the settled revision is read from the real one.
    const missing = new DynamoDbPushDeliveryLog(env.clients.doc, `${env.prefix}-Missing`);
    const broken = {
      ...deps,
      deliveryLog: {
        append: missing.append.bind(missing),
        list: missing.list.bind(missing),
        finalThrough: deps.deliveryLog.finalThrough.bind(deps.deliveryLog),
      },
    };
    const outcome = await deliverPush(
      broken,
      { taskId, configId: 'hook', revision: 2 },
      firstAttempt(`broken-${taskId}#1`),
    );
    expect(outcome).toEqual({ kind: 'delivered', posts: 1 });
    expect(receiver.posts.slice(before).map((post) => post.path)).toEqual(['/refused-record']);
    expect(warnings).toEqual([
      {
        message: 'delivery record not written',
        fields: { taskId, configId: 'hook', revision: 2, attempt: 1, error: 'ResourceNotFoundException' },
      },
    ]);
  });

  it('records go with their task: TaskNotFound once it expired, physically gone after the purge (I-PURGE)', async () => {
    const { taskId, r2 } = await seedTask(`${receiver.url}/hook`);
    await deliverPush(deps, { taskId, configId: 'hook', revision: 1 }, firstAttempt(`purge-${taskId}#1`));
    const records = () =>
      env.clients.doc.send(
        new QueryCommand({
          TableName: env.resources.tables.State.name,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': `TASK#${taskId}`, ':prefix': deliveryKeys.prefix },
        }),
      );
    expect((await records()).Items).toHaveLength(2);
    await tasks.commit({
      row: { taskId, task: { ...r2, revision: 3, expiresAt: nowSeconds() - 1 }, expect: { revision: 2 } },
    });
    await expect(listPushDeliveries(deps, alice, taskId)).rejects.toBeInstanceOf(TaskNotFoundError);
    await purgeExpired(
      { stores: [new DynamoDbExpiredItems(env.clients.doc, env.resources.tables.State.name, 'state')] },
      new Date(),
    );
    expect((await records()).Items).toEqual([]);
  });
});

/** No message left in the delivery queue, visible or in flight: the deliverer handled all of them. */
const queueDrained = () =>
  waitFor(async () => {
    const { Attributes = {} } = await env.clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: env.resources.queues.DeliveryQueue.url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return (
      Attributes.ApproximateNumberOfMessages === '0' &&
      Attributes.ApproximateNumberOfMessagesNotVisible === '0'
    );
  });

describe('order per webhook when a revision overtakes an older one on the queue (decision 0045)', () => {
  it('revision 2 queued before 1 (as a direct fan-out ahead of the backstop): the webhook gets 1, 2; a late 1 posts nothing', async () => {
    const { taskId } = await seedTask(`${receiver.url}/overtaken`);
    const queue = new SqsDeliveryQueue(env.clients.sqs, env.resources.queues.DeliveryQueue.url);
    const fanOut = { pushConfigs: deps.pushConfigs, deliveries: queue, clock: systemClock };
    const posts = () => receiver.posts.filter((post) => post.path === '/overtaken');
    const revisionsPosted = () =>
      posts().map(
        (post) => (post.body as { statusUpdate: { status: { state: string } } }).statusUpdate.status.state,
      );
    settledReadUnits.length = 0;
    for (const revision of [2, 1]) {
      await fanOutEvents(fanOut, [
        { taskId, revision, expiresAt: nowSeconds() + 3_600, pushConfigured: true },
      ]);
    }
    const read = () => listPushDeliveries(deps, alice, taskId);
    await waitFor(async () => (await read()).deliveries.filter((d) => d.state === 'DELIVERED').length === 2);
    // Revision 1's own message arrives after 2's delivered both; give it time to be handled.
    await waitFor(async () => settledReadUnits.length >= 2);
    expect(revisionsPosted()).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);

    // The same revision queued again after SQS's 5-minute deduplication window (another
    // deduplication id stands in for the elapsed window): the delivery records absorb it.
    await env.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: env.resources.queues.DeliveryQueue.url,
        MessageBody: JSON.stringify({ taskId, configId: 'hook', revision: 1 }),
        MessageGroupId: deliveryGroupOf({ taskId, configId: 'hook' }),
        MessageDeduplicationId: `${taskId}#hook#1#after-the-window`,
      }),
    );
    await waitFor(async () => settledReadUnits.length >= 3);
    await queueDrained();
    expect(revisionsPosted()).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect((await read()).deliveries.map((d) => [d.revision, d.state, d.attempts.length])).toEqual([
      [1, 'DELIVERED', 1],
      [2, 'DELIVERED', 1],
    ]);
    // The watermark read: one strongly consistent Query per message, one read unit when it finds
    // records (DynamoDB Local reports 0 for the empty first one; AWS bills it 1, decision 0036).
    expect(settledReadUnits).toEqual([0, 1, 1]);
    console.info(`push-deliveries: settled-revision reads ${settledReadUnits.join(', ')} RRU per message`);
  });
});

describe('the writer’s direct fan-out, with the journal stream as its backstop (decision 0045)', () => {
  it('the direct fan-out of revision 2 fails (failpoint): the webhook still gets 1, 2, 3 in order, each once', async () => {
    const taskId = `t-${randomUUID()}`;
    const expiresAt = nowSeconds() + 3_600;
    const queue = new SqsDeliveryQueue(env.clients.sqs, env.resources.queues.DeliveryQueue.url);
    const fanOut = { pushConfigs: deps.pushConfigs, deliveries: queue, clock: systemClock, logger };
    const images = (['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'] as const).map(
      (state, index) => ({ ...task(taskId, index + 1, state, expiresAt), pushConfigured: true as const }),
    );
    await deps.pushConfigs.put(
      await buildPushConfig(
        { pushCodec: deps.pushCodec, clock: systemClock, ids: { newId: () => 'hook' } },
        { taskId, expiresAt },
        { url: `${receiver.url}/direct` },
        0,
      ),
    );
    warnings.length = 0;
    const results: string[] = [];
    armFailpoints('push.directFanOut=#2');
    try {
      // Each writer: its commit, its write-through, then the direct fan-out of its event.
      for (const [index, image] of images.entries()) {
        const before = images[index - 1];
        await tasks.commit({
          row: before
            ? { taskId, task: image, expect: { revision: before.revision }, before }
            : { taskId, task: image, expect: { revision: 'absent' } },
        });
        await projectRecord(deps.journal, before, image);
        results.push(
          await fanOutProjected(fanOut, {
            taskId,
            revision: image.revision,
            expiresAt,
            pushConfigured: true,
          }),
        );
      }
    } finally {
      disarmFailpoints();
    }
    expect(results).toEqual(['queued', 'failed', 'queued']);
    expect(warnings).toEqual([
      {
        message: 'direct fan-out failed; the journal stream queues the revision',
        fields: { taskId, revision: 2, error: 'InjectedFaultError' },
      },
    ]);
    const states = () =>
      receiver.posts
        .filter((post) => post.path === '/direct')
        .map(
          (post) => (post.body as { statusUpdate: { status: { state: string } } }).statusUpdate.status.state,
        );
    await waitFor(async () => states().length === 3);
    // The backstop: the pusher, fed by the journal stream, queues all three (1 and 3 again).
    expect(
      await fanOutEvents(
        fanOut,
        images.map((image) => ({ taskId, revision: image.revision, expiresAt, pushConfigured: true })),
      ),
    ).toBe(3);
    await queueDrained();
    expect(states()).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(
      (await listPushDeliveries(deps, alice, taskId)).deliveries.map((d) => [d.revision, d.state]),
    ).toEqual([
      [1, 'DELIVERED'],
      [2, 'DELIVERED'],
      [3, 'DELIVERED'],
    ]);
  });
});

describe('a webhook never sees a revision after a newer one, whatever fails (decision 0062)', () => {
  it('revision 2 overtakes 1; 1’s record is throttled, 2’s answer lost: the webhook goes 1 → 2, never back', async () => {
    await queueDrained();
    const { taskId, expiresAt } = await seedTask(`${receiver.url}/ordered`);
    const queue = new SqsDeliveryQueue(env.clients.sqs, env.resources.queues.DeliveryQueue.url);
    const fanOut = { pushConfigs: deps.pushConfigs, deliveries: queue, clock: systemClock };
    warnings.length = 0;
    // The log's calls: 1 the settled-revision read, 2 the append of revision 1's DELIVERED record.
    // The POSTs: 1 revision 1's, 2 the next one — received, its answer lost.
    armFailpoints('dynamodb.throttle=#2,deliverer.post=#2');
    try {
      // As in the soak: revision 2's writer fanned it out directly while 1 waited for the backstop.
      for (const revision of [2, 1]) {
        await fanOutEvents(fanOut, [{ taskId, revision, expiresAt, pushConfigured: true }]);
      }
      // Read through the test's own client: these reads are not the log's calls.
      const reader = new DynamoDbPushDeliveryLog(env.clients.doc, env.resources.tables.State.name);
      const read = () => listPushDeliveries({ ...deps, deliveryLog: reader }, alice, taskId);
      await waitFor(
        async () => (await read()).deliveries.filter((d) => d.state === 'DELIVERED').length === 2,
      );
      await queueDrained();
      expect(failpointCounts()['dynamodb.throttle']?.faults).toBe(1);
      expect(failpointCounts()['deliverer.post']?.faults).toBe(1);
      expect((await read()).deliveries.map((d) => [d.revision, d.state])).toEqual([
        [1, 'DELIVERED'],
        [2, 'DELIVERED'],
      ]);
    } finally {
      disarmFailpoints();
    }
    const revisions = receiver.posts
      .filter((post) => post.path === '/ordered')
      .map((post) => (post.body as { statusUpdate: { status: { state: string } } }).statusUpdate.status.state)
      .map((state) => ({ TASK_STATE_WORKING: 1, TASK_STATE_COMPLETED: 2 })[state]);
    // I-ORDER: duplicates allowed (A2A §7), a step back never (at 2f6d83c: 1, 2, 1, 2).
    expect(revisions).toEqual([...revisions].sort((a = 0, b = 0) => a - b));
    expect(new Set(revisions)).toEqual(new Set([1, 2]));
    expect(warnings.map((warning) => warning.message)).toContain('delivery record not written');
  });
});
