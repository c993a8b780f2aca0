import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { type CapturedOutput, captureOutput } from '../support/captured-output.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { rpcCalls } from '../support/rpc-calls.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * One trace per task (docs/operations.md, "Follow one task through the logs"): one task through
 * the local stack, whose handlers run in this process, and its id as `correlation_id` in the log
 * lines of every function it crosses: rpc → run queue → executor → projector → pusher → delivery
 * queue → deliverer. The caller's traceparent goes along where the hop carries it.
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
});
afterAll(async () => {
  output?.restore();
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
    expect((await send('tck-complete-task', task.id)).status.state).toBe('TASK_STATE_COMPLETED');

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
    // The caller's traceparent goes along from the request to the executor through the run queue.
    for (const service of ['a2a-rpc', 'a2a-executor']) {
      const carried = ofTask(lines).filter((line) => line.service === service);
      expect(carried.length, service).toBeGreaterThan(0);
      expect(
        carried.every((line) => line.traceparent === traceparent),
        service,
      ).toBe(true);
    }
  }, 90_000);
});
