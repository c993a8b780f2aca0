import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, localCredentials, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { type CapturedOutput, captureOutput } from '../support/captured-output.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { rpcCalls } from '../support/rpc-calls.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * One trace per task (docs/operations.md, "Follow one task through the logs"): one task through
 * the local stack, whose handlers run in this process, and its id as `correlation_id` in the log
 * lines of every function it crosses: rpc → run queue → executor → projector → pusher → delivery
 * queue → deliverer. The caller's traceparent goes along: in the run queue's and the delivery
 * queue's message attributes, and on the task row and its journal events, which the projector and
 * the pusher read from the streams. A forged traceparent is not kept.
 */

const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: {
    default: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'], privacyLevel: 'full' },
  },
});

const traceparent = `00-${randomUUID().replaceAll('-', '')}-${randomUUID().replaceAll('-', '').slice(0, 16)}-01`;

let stack: LocalStack;
let receiver: WebhookReceiver;
let output: CapturedOutput;
let logLevelBefore: string | undefined;
let doc: DynamoDBDocumentClient;

beforeAll(async () => {
  // The projector's and pusher's per-record lines are DEBUG (docs/operations.md); read at import.
  logLevelBefore = process.env.POWERTOOLS_LOG_LEVEL;
  process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix: 'int-trace',
    log: () => {},
  });
  receiver = await startWebhookReceiver();
  doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: 'us-east-1',
      credentials: localCredentials,
      endpoint: stack.endpoints.dynamodb,
    }),
  );
});
afterAll(async () => {
  output?.restore();
  doc?.destroy();
  await stack?.stop();
  await receiver?.close();
  if (logLevelBefore === undefined) delete process.env.POWERTOOLS_LOG_LEVEL;
  else process.env.POWERTOOLS_LOG_LEVEL = logLevelBefore;
});

const { call, send } = rpcCalls(() => `${stack.baseUrl}/agents/default`, { traceparent });

const services = ['a2a-rpc', 'a2a-executor', 'a2a-projector', 'a2a-pusher', 'a2a-deliverer'];

/** Resolves once `predicate` holds for the captured lines (the test's timeout bounds the wait). */
const untilLogged = async (predicate: (lines: Array<Record<string, unknown>>) => boolean): Promise<void> => {
  while (!predicate(output.jsonLines())) await new Promise((resolve) => setTimeout(resolve, 100));
};

describe('one trace per task', () => {
  it("finds the task's correlation id in the log lines of every function it crosses", async () => {
    output = captureOutput();
    const task = await send('tck-input-required');
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    await call('CreateTaskPushNotificationConfig', { taskId: task.id, url: `${receiver.url}/hook` });
    // The blocking send's run ran in the rpc (decision 0091); the follow-up, returnImmediately, is
    // queued, so the executor carries the trace too.
    await call('SendMessage', {
      message: {
        messageId: `tck-complete-task-${randomUUID()}`,
        role: 'ROLE_USER',
        parts: [{ text: 'hi' }],
        taskId: task.id,
      },
      configuration: { returnImmediately: true },
    });
    const stateOf = async () => ((await call('GetTask', { id: task.id })).status as { state: string }).state;
    while ((await stateOf()) !== 'TASK_STATE_COMPLETED')
      await new Promise((resolve) => setTimeout(resolve, 50));

    const ofTask = (lines: Array<Record<string, unknown>>) =>
      lines.filter((line) => line.correlation_id === task.id);
    const servicesSeen = (lines: Array<Record<string, unknown>>) =>
      new Set(ofTask(lines).map((line) => line.service));
    await untilLogged((lines) => services.every((service) => servicesSeen(lines).has(service)));
    output.restore();

    const lines = output.jsonLines();
    expect([...servicesSeen(lines)].sort()).toEqual(expect.arrayContaining(services));
    // Every line about the task (by its own taskId field) carries the correlation id too.
    expect(lines.filter((line) => line.taskId === task.id && line.correlation_id !== task.id)).toEqual([]);
    // The caller's traceparent goes along from the request to the executor through the run queue,
    // and, kept on the task row and its journal events, to the hops that start from the streams.
    for (const service of services) {
      const carried = ofTask(lines).filter((line) => line.service === service);
      expect(carried.length, service).toBeGreaterThan(0);
      expect(
        carried.every((line) => line.traceparent === traceparent),
        service,
      ).toBe(true);
    }
  }, 90_000);

  it("keeps the creator's traceparent on the task row and its events; never one that is not W3C", async () => {
    const { send: sendWith } = rpcCalls(() => `${stack.baseUrl}/agents/default`, {
      traceparent: `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`,
    });
    const traced = await send('tck-complete-task');
    const forged = await sendWith('tck-complete-task');
    const items = async (table: string, taskId: string) =>
      (
        await doc.send(
          new QueryCommand({
            TableName: table,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': `TASK#${taskId}` },
          }),
        )
      ).Items ?? [];
    const state = stack.resources.tables.State.name;
    const journal = stack.resources.tables.Journal.name;
    const row = (await items(state, traced.id)).find((item) => item.sk === 'TASK');
    expect(row?.traceparent).toBe(traceparent);
    expect(row?.revision).toBeGreaterThan(1); // later task writes kept it
    const events = (await items(journal, traced.id)).filter((item) => String(item.sk).startsWith('EVT#'));
    expect(events.length).toBeGreaterThan(1);
    expect(events.every((event) => event.traceparent === traceparent)).toBe(true);
    // An all-zero trace id is not a traceparent (W3C Trace Context): nothing is kept.
    const forgedItems = [...(await items(state, forged.id)), ...(await items(journal, forged.id))];
    expect(forgedItems.length).toBeGreaterThan(1);
    expect(forgedItems.filter((item) => 'traceparent' in item)).toEqual([]);
  });
});
