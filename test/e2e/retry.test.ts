import { randomUUID } from 'node:crypto';
import { SendMessageRequest, type Task } from '@a2a-js/sdk';
import { type Client, ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { providedEndpoints } from '../support/local-guard.ts';

/**
 * I-RETRY through the local stack (docs/protocol.md §4 "Retries"), two published agents (`alpha`
 * full, `beta` redacted, both the scripted TCK agent): a message sent again — sequentially, five at
 * once, as a stream, as a follow-up — starts no second task and calls the model once; other content
 * under the same messageId is a new message; once the caller acted on the task (here: a cancel),
 * the same send is a new message too; the same messageId at another agent is its own task.
 * Counted by ListTasks and the scripted provider's calls per run.
 */

const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: {
    default: { name: 'Root', description: 'x', providers: ['tck'], privacyLevel: 'full' },
    alpha: { name: 'Alpha', description: 'x', providers: ['tck'], privacyLevel: 'full' },
    beta: { name: 'Beta', description: 'x', providers: ['tck'], privacyLevel: 'redacted' },
  },
});

let stack: LocalStack;
let alpha: Client;

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix: 'e2e-retry',
    log: () => {},
  });
  alpha = await new ClientFactory().createFromUrl(
    `${stack.baseUrl}/agents/alpha/.well-known/agent-card.json`,
    '',
  );
});
afterAll(async () => {
  await stack?.stop();
});

type Json = Record<string, unknown>;

const rpc = async (
  agent: string,
  method: string,
  params: unknown,
): Promise<{ result?: Json; error?: Json }> => {
  const response = await fetch(`${stack.baseUrl}/agents/${agent}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
  });
  return (await response.json()) as { result?: Json; error?: Json };
};

const message = (prefix: string, extra: Json = {}) => ({
  messageId: `${prefix}-${randomUUID()}`,
  role: 'ROLE_USER',
  parts: [{ text: 'Hello, retried' }],
  ...extra,
});

const taskCount = async (agent: string) =>
  ((await rpc(agent, 'ListTasks', { pageSize: 100 })).result?.totalSize as number) ?? -1;

/** Model calls since a snapshot: the scripted provider counts them per run (the stack runs in process). */
const callsSince = (before: ReadonlyMap<string, number>) => {
  let calls = 0;
  for (const [runId, count] of ScriptedProvider.callsByRun) calls += count - (before.get(runId) ?? 0);
  return calls;
};

/** SSE events of a streaming call, as the JSON-RPC results they carry. */
const streamResults = async (agent: string, params: unknown): Promise<Json[]> => {
  const response = await fetch(`${stack.baseUrl}/agents/${agent}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params }),
  });
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const text = await response.text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => (JSON.parse(line.slice(5)) as { result: Json }).result);
};

describe('I-RETRY through the local stack', () => {
  it('a blocking retry with the official client answers the first task; one task, one model call', async () => {
    const before = await taskCount('alpha');
    const calls = new Map(ScriptedProvider.callsByRun);
    const request = SendMessageRequest.fromJSON({ message: message('tck-artifact-text') });
    const first = (await alpha.sendMessage(request)) as Task;
    const again = (await alpha.sendMessage(request)) as Task;
    expect(again.id).toBe(first.id);
    expect(again.status?.state).toBe(first.status?.state);
    expect(again.artifacts).toEqual(first.artifacts);
    expect(await taskCount('alpha')).toBe(before + 1);
    expect(callsSince(calls)).toBe(1);
  });

  it('five concurrent sends of one message: one task, one run, one model call, five equal answers', async () => {
    const before = await taskCount('alpha');
    const calls = new Map(ScriptedProvider.callsByRun);
    const params = { message: message('tck-complete-task') };
    const answers = await Promise.all(Array.from({ length: 5 }, () => rpc('alpha', 'SendMessage', params)));
    const tasks = answers.map((answer) => answer.result?.task as Json & { id: string; status: Json });
    expect(new Set(tasks.map((task) => task.id)).size).toBe(1);
    for (const task of tasks) expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await taskCount('alpha')).toBe(before + 1);
    expect(callsSince(calls)).toBe(1);
  });

  it('the same messageId with other content is a new message: a new task, one more model call', async () => {
    const sent = message('tck-complete-task');
    const first = (await rpc('alpha', 'SendMessage', { message: sent })).result?.task as { id: string };
    const before = await taskCount('alpha');
    const calls = new Map(ScriptedProvider.callsByRun);
    const reused = await rpc('alpha', 'SendMessage', { message: { ...sent, parts: [{ text: 'changed' }] } });
    const other = reused.result?.task as { id: string; status: Json };
    expect(other.id).not.toBe(first.id);
    expect(other.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await taskCount('alpha')).toBe(before + 1);
    expect(callsSince(calls)).toBe(1);
  });

  it('after the caller canceled its task, the same send is a new task; its retry answers that one', async () => {
    const sent = { message: message('tck-input-required'), configuration: { returnImmediately: true } };
    const taskIdOf = async () =>
      ((await rpc('alpha', 'SendMessage', sent)).result?.task as { id?: string })?.id;
    const first = { id: (await taskIdOf()) ?? '' };
    expect(first.id).not.toBe('');
    expect(await taskIdOf()).toBe(first.id);
    const canceled = (await rpc('alpha', 'CancelTask', { id: first.id })).result as { status: Json };
    expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
    const next = await taskIdOf();
    expect(next).toBeDefined();
    expect(next).not.toBe(first.id);
    expect(await taskIdOf()).toBe(next);
  });

  it('the same messageId at another agent is that agent’s own task', async () => {
    const params = { message: message('tck-complete-task') };
    const atAlpha = (await rpc('alpha', 'SendMessage', params)).result?.task as { id: string };
    const atBeta = (await rpc('beta', 'SendMessage', params)).result?.task as { id: string };
    const atRoot = (await rpc('default', 'SendMessage', params)).result?.task as { id: string };
    expect(new Set([atAlpha.id, atBeta.id, atRoot.id]).size).toBe(3);
  });

  it('a retried streaming send re-attaches to the task’s stream instead of starting another', async () => {
    const calls = new Map(ScriptedProvider.callsByRun);
    const params = { message: message('tck-stream-001') };
    const first = await streamResults('alpha', params);
    const again = await streamResults('alpha', params);
    const idOf = (result: Json) =>
      (
        (result.task ?? result.statusUpdate ?? result.artifactUpdate) as Json & {
          id?: string;
          taskId?: string;
        }
      ).id ?? ((result.statusUpdate ?? result.artifactUpdate) as { taskId: string }).taskId;
    expect(new Set([...first, ...again].map(idOf)).size).toBe(1);
    // The retry opens at the task as it is now (COMPLETED) and closes.
    expect((again[0]?.task as { status: Json } | undefined)?.status.state).toBe('TASK_STATE_COMPLETED');
    expect(again).toHaveLength(1);
    expect(callsSince(calls)).toBe(1);
  });

  it('a retried follow-up starts no second run', async () => {
    const open = (await rpc('alpha', 'SendMessage', { message: message('tck-input-required') })).result
      ?.task as { id: string };
    const calls = new Map(ScriptedProvider.callsByRun);
    const followUp = { message: message('tck-complete-task', { taskId: open.id }) };
    const first = (await rpc('alpha', 'SendMessage', followUp)).result?.task as { status: Json };
    const again = (await rpc('alpha', 'SendMessage', followUp)).result?.task as { id: string; status: Json };
    expect(first.status.state).toBe('TASK_STATE_COMPLETED');
    expect(again.id).toBe(open.id);
    expect(again.status.state).toBe('TASK_STATE_COMPLETED');
    expect(callsSince(calls)).toBe(1);
  });
});
