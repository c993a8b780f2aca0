import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchConfig, benchTokens } from '../../bench/lib/bench-config.ts';
import { RpcClient } from '../../bench/lib/client.ts';
import { dynamoDbLocalPid } from '../../bench/lib/cpu.ts';
import {
  type FloorTaskItems,
  type FloorTaskShape,
  fewestDynamodbRequests,
  runFloorTasks,
  sampleFloorItems,
} from '../../bench/lib/floor-task.ts';
import {
  createLocalClients,
  type LocalClients,
  type LocalStack,
  startLocalStack,
} from '../../infra/local/local-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';

/**
 * The floor's task of `npm run bench` (decision 0086): copies of a real task's items, the cost
 * floor's requests and queue hop, against the emulators.
 */
let stack: LocalStack;
let clients: LocalClients;
let documents: DynamoDBDocumentClient;
beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config: benchConfig,
    endpoints: providedEndpoints(),
    prefix: 'bench-floor-task',
    log: () => {},
  });
  clients = createLocalClients(providedEndpoints());
  documents = DynamoDBDocumentClient.from(clients.dynamodb);
});
afterAll(async () => {
  clients?.destroy();
  await stack?.stop();
});

/** The items of a task completed on the stack, as the bench samples them. */
const sampledItems = async (): Promise<{ taskId: string; items: FloorTaskItems }> => {
  const client = new RpcClient(`${stack.baseUrl}/agents/default`, benchTokens.main);
  const answer = await client.send('floor task sample');
  const taskId = answer.result?.task?.id ?? '';
  expect(answer.result?.task?.status?.state).toBe('TASK_STATE_COMPLETED');
  const tables = stack.resources.tables;
  const items = await sampleFloorItems(
    documents,
    { state: tables.State.name, journal: tables.Journal.name, audit: tables.Audit.name },
    taskId,
    { requestBytes: 300, answerBytes: 1_500 },
  );
  return { taskId, items };
};

const runTwelve = (items: FloorTaskItems, shape: FloorTaskShape) => {
  const endpoints = providedEndpoints();
  return runFloorTasks({
    endpoints,
    javaPid: dynamoDbLocalPid(Number(new URL(endpoints.dynamodb).port)),
    items,
    tasks: 12,
    warmUp: 3,
    concurrency: 4,
    prefix: `bench-floor-task-${crypto.randomUUID().slice(0, 6)}`,
    shape,
  });
};

describe("the floor's task", () => {
  it('copies a completed task and sends exactly the floor requests for each task, every stream record read', async () => {
    const { taskId, items } = await sampledItems();
    // A blocking task run in the rpc: WORKING from its create, then COMPLETED (decision 0096).
    expect(items.events.map((event) => event.sk)).toEqual(['EVT#0000000001', 'EVT#0000000002']);
    expect(items.view.pk).toBe(`TASK#${taskId}`);

    const run = await runTwelve(items, 'design');
    expect(run.shape).toBe('design');
    // 6 conditional puts per task, no read and no queue hop.
    expect(run.dynamodbRequests).toBe(6);
    // The backstops read every record of both streams, and only the run's: the task row's two
    // writes on the state stream, two events and one view on the journal stream.
    expect(run.streamRecords).toBe(5);
    expect(run.streamReads).toBeGreaterThan(0);
    expect(run.tasks).toBe(12);
  });

  it('in the fewest shape, commits each revision with its event in one transaction (decisions 0090, 0096)', async () => {
    const { items } = await sampledItems();
    const run = await runTwelve(items, 'fewest');
    expect(run.shape).toBe('fewest');
    // Two two-item transactions per task.
    expect(run.dynamodbRequests).toBe(fewestDynamodbRequests);
    expect(fewestDynamodbRequests).toBe(2);
    // Each transaction's two items are a record on each stream: two task-row writes, two events.
    expect(run.streamRecords).toBe(4);
    expect(run.tasks).toBe(12);
  });

  it('refuses a task without its three events', async () => {
    await expect(
      sampleFloorItems(
        documents,
        {
          state: stack.resources.tables.State.name,
          journal: stack.resources.tables.Journal.name,
          audit: stack.resources.tables.Audit.name,
        },
        'no-such-task',
        { requestBytes: 1, answerBytes: 1 },
      ),
    ).rejects.toThrow(/no task row|events/);
  });
});
