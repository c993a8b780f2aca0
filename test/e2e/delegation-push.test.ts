import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { delegationCallbackPath } from '../../shared/app/runs/wake-delegated-run.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { agentCall, settledTask, type TaskJson, toolAnswerOf } from '../support/agent-calls.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { freePort } from '../support/mcp-server-process.ts';

/**
 * The push wake-up of a run that waits for a delegated task (docs/configuration.md `a2aAgents`,
 * `publicUrl`): profile `c` delegates to `slow` (2 s) of the same local stack and does not wait in
 * place (`waitSeconds: 0`). The reaper is off and leases last two minutes, so only the remote
 * task's push notification — `slow`'s own webhook delivery to `c`'s callback URL, with the token
 * `c`'s run made for the wait — can queue the run again.
 */

let stack: LocalStack;

beforeAll(async () => {
  const port = await freePort();
  stack = await startLocalStack({
    port,
    config: parseConfig({
      privacy: { level: 'metadata' },
      publicUrl: `http://127.0.0.1:${port}`,
      providers: {
        park: {
          type: 'scripted',
          behavior: 'call-tool',
          tool: 'a2a__slowpoke',
          arguments: { message: 'wake me' },
        },
        slow: { type: 'scripted', behavior: 'slow' },
      },
      profiles: {
        c: {
          name: 'C',
          description: 'Delegates',
          providers: ['park'],
          privacyLevel: 'full',
          agents: { slowpoke: {} },
        },
        slow: { name: 'Slow', description: 'Echoes after 2 s', providers: ['slow'], privacyLevel: 'full' },
      },
      a2aAgents: {
        slowpoke: {
          cardUrl: `http://127.0.0.1:${port}/agents/slow/.well-known/agent-card.json`,
          timeoutMs: 10_000,
          waitSeconds: 0,
        },
      },
    }),
    endpoints: providedEndpoints(),
    prefix: `e2e-delegation-push-${randomUUID().slice(0, 6)}`,
    runLeaseMs: 120_000,
    reaperIntervalMs: 0,
    log: () => {},
  });
});
afterAll(async () => {
  await stack?.stop();
});

const call = agentCall(() => stack.baseUrl);

describe('a waiting run woken by the remote task’s push notification', () => {
  it('c completes with slow’s answer well before any lease is over; slow holds one task', async () => {
    const started = Date.now();
    const accepted = (
      await call('c', 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] },
        configuration: { returnImmediately: true },
      })
    )?.task as { id: string };
    const task = await settledTask(call, 'c', accepted.id);
    expect(task?.status.state).toBe('TASK_STATE_COMPLETED');
    // The lease is 120 s and the reaper off: only the push could have queued the run again.
    expect(Date.now() - started).toBeLessThan(60_000);
    const answer = toolAnswerOf(task);
    expect(answer.state).toBe('completed');
    const tasks = ((await call('slow', 'ListTasks', { pageSize: 100 }))?.tasks as TaskJson[]) ?? [];
    expect(tasks.map((one) => one.id)).toEqual([answer.taskId]);
  });

  it('a notification without the wait’s token is refused and wakes nothing', async () => {
    const response = await fetch(`${stack.baseUrl}${delegationCallbackPath('no-task', 'no-run')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/a2a+json', 'x-a2a-notification-token': 'guess' },
      body: JSON.stringify({ task: { id: 'x', status: { state: 'TASK_STATE_COMPLETED' } } }),
    });
    expect(response.status).toBe(401);
  });
});
