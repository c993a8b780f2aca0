import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, localCredentials, startLocalStack } from '../../infra/local/local-stack.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { agentCall, settledTask, type TaskJson } from '../support/agent-calls.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { freePort } from '../support/mcp-server-process.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * CancelTask on a task whose run waits for a delegated task (docs/reliability.md "Delegated
 * calls"), through the local stack: profile `parker` delegates to `crawl` of the same stack
 * without waiting in place (its run is parked), profile `waiter` waits in place. `crawl` writes
 * its answer a word every 3 s (a remote task that stays WORKING for half a minute). The reaper is
 * off and leases last two minutes, so nothing but the cancel moves a run.
 */

let stack: LocalStack;
let rows: DynamoDBDocumentClient;
const prefix = `e2e-delegation-cancel-${randomUUID().slice(0, 6)}`;
const slowWords = 'one two three four five six seven eight nine ten';

beforeAll(async () => {
  const port = await freePort();
  const agent = (waitSeconds: number) => ({
    cardUrl: `http://127.0.0.1:${port}/agents/crawl/.well-known/agent-card.json`,
    timeoutMs: 10_000,
    waitSeconds,
  });
  const delegating = (agentId: string) => ({
    name: agentId,
    description: 'Delegates',
    providers: [agentId],
    privacyLevel: 'full' as const,
    agents: { [agentId]: {} },
  });
  stack = await startLocalStack({
    port,
    config: parseConfig({
      privacy: { level: 'metadata' },
      publicUrl: `http://127.0.0.1:${port}`,
      providers: {
        parker: {
          type: 'scripted',
          behavior: 'call-tool',
          tool: 'a2a__parker',
          arguments: { message: slowWords },
        },
        waiter: {
          type: 'scripted',
          behavior: 'call-tool',
          tool: 'a2a__waiter',
          arguments: { message: slowWords },
        },
        crawl: { type: 'scripted', behavior: 'stream', paceMs: 3_000 },
      },
      profiles: {
        parker: delegating('parker'),
        waiter: delegating('waiter'),
        crawl: {
          name: 'Crawl',
          description: 'Echoes a word every 3 s',
          providers: ['crawl'],
          privacyLevel: 'full',
        },
      },
      a2aAgents: { parker: agent(0), waiter: agent(60) },
    }),
    endpoints: providedEndpoints(),
    prefix,
    runLeaseMs: 120_000,
    reaperIntervalMs: 0,
    log: () => {},
  });
  rows = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      region: 'us-east-1',
      endpoint: stack.endpoints.dynamodb,
      credentials: localCredentials,
    }),
  );
});
afterAll(async () => {
  rows?.destroy();
  await stack?.stop();
});

const call = agentCall(() => stack.baseUrl);

/** A task's run as its row in DynamoDB holds it. */
const runOf = async (taskId: string) => {
  const { Item } = await rows.send(new GetCommand({ TableName: `${prefix}-State`, Key: keys.task(taskId) }));
  return Item?.run as { status: string; delegation?: { remoteTaskId: string; parked?: boolean } } | undefined;
};
const delegationOf = async (taskId: string) => (await runOf(taskId))?.delegation;

const send = async (agent: string): Promise<string> => {
  const answer = await call(agent, 'SendMessage', {
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] },
    configuration: { returnImmediately: true },
  });
  const task = answer?.task as { id: string } | undefined;
  if (task === undefined) throw new Error(`${agent} answered without a task`);
  return task.id;
};

describe('CancelTask while the run waits for a delegated task', () => {
  it('a parked run: CANCELED in the cancel’s own write, and the remote task is canceled at its agent', async () => {
    const taskId = await send('parker');
    await waitFor(async () => (await delegationOf(taskId))?.parked === true, { what: 'the run parked' });
    const remoteTaskId = (await delegationOf(taskId))?.remoteTaskId ?? '';
    expect((await call('crawl', 'GetTask', { id: remoteTaskId }))?.status).toMatchObject({
      state: 'TASK_STATE_WORKING',
    });

    const canceled = (await call('parker', 'CancelTask', { id: taskId })) as TaskJson | undefined;
    expect(canceled?.status.state).toBe('TASK_STATE_CANCELED');
    expect((await settledTask(call, 'crawl', remoteTaskId))?.status.state).toBe('TASK_STATE_CANCELED');
    // The parked run never resumes: the task stays CANCELED, with no answer.
    const task = await settledTask(call, 'parker', taskId);
    expect(task?.status.state).toBe('TASK_STATE_CANCELED');
    expect(task?.artifacts ?? []).toEqual([]);
    expect((await runOf(taskId))?.status).toBe('CANCELED');
  });

  it('a run waiting in place: flagged; the remote task is canceled, the wait ends, and the executor ends the task CANCELED', async () => {
    const taskId = await send('waiter');
    await waitFor(async () => (await delegationOf(taskId)) !== undefined, {
      what: 'the remote task recorded',
    });
    const delegation = await delegationOf(taskId);
    expect(delegation?.parked).toBeUndefined();

    const canceled = (await call('waiter', 'CancelTask', { id: taskId })) as TaskJson | undefined;
    expect(canceled?.status.state).toBe('TASK_STATE_CANCELED');
    expect((await settledTask(call, 'crawl', delegation?.remoteTaskId ?? ''))?.status.state).toBe(
      'TASK_STATE_CANCELED',
    );
    // The flag is for the executor: its wait sees the remote task end, and it ends its run.
    await waitFor(async () => (await runOf(taskId))?.status === 'CANCELED', { what: 'the run ended' });
    const task = await settledTask(call, 'waiter', taskId);
    expect(task?.status.state).toBe('TASK_STATE_CANCELED');
    expect(task?.artifacts ?? []).toEqual([]);
  });
});
