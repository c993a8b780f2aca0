import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { armFailpoints, disarmFailpoints, failpointCounts } from '../../shared/app/operations/failpoints.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { adminOn, scanAll } from '../support/admin-on.ts';
import {
  type FakeModelServer,
  openAiText,
  openAiToolCall,
  startFakeModelServer,
} from '../support/fake-model-servers.ts';
import { crashedRunsReaped, readTaskRows, redeliverRun } from '../support/fault-stack.ts';
import { createTestResources, providedEndpoints, type TestResources } from '../support/local-guard.ts';
import {
  type McpServerProcess,
  startMcpTestServer,
  startServerEverything,
} from '../support/mcp-server-process.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { waitFor } from '../support/wait-for.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * MCP tools through the local stack (docs/configuration.md `mcpServers`, I-EFFECT, I-LEAVE,
 * I-APPROVAL), against the MCP test server on the official SDK in its own process: every
 * `tools/call` it receives is in its own call log (GET /calls), so "sent at most once" is counted
 * at the server, not assumed. Faults: a crash right after the fence (failpoint
 * `executor.afterFence`), a crash after the call was answered (`executor.afterToolCall`), each
 * followed by a redelivered run message and the reaper; a server that hangs past the deadline; a
 * result above the size cap; a destructive tool that waits for an operator's approval. And a
 * third-party server, `@modelcontextprotocol/server-everything` from the npm registry.
 */

const prefix = `e2e-mcp-${randomUUID().slice(0, 8)}`;
const argMarker = 'ARG-5b2e-note';
let server: McpServerProcess;
let everything: McpServerProcess;
let model: FakeModelServer;
let stack: LocalStack;
let inspect: TestResources;

beforeAll(async () => {
  [server, everything] = await Promise.all([startMcpTestServer(), startServerEverything()]);
  // An OpenAI-compatible model that calls the note tool with the marker, then answers plainly.
  model = await startFakeModelServer((request) => {
    const messages = (request.body.messages ?? []) as { role: string }[];
    if (messages.at(-1)?.role === 'tool') return openAiText('Your note is in.');
    return openAiToolCall('call_note_1', 'tools__append_note', { text: argMarker });
  });
  const scripted = (tool: string, extra: Record<string, unknown> = {}) => ({
    type: 'scripted',
    behavior: 'call-tool',
    tool,
    ...extra,
  });
  const profile = (provider: string, tools: Record<string, object>) => ({
    name: provider,
    description: 'Calls an MCP tool',
    providers: [provider],
    mcp: { tools: { tools } },
  });
  const config = parseConfig({
    privacy: { level: 'full' },
    mcpServers: {
      tools: { url: server.url, timeoutMs: 1_500, maxResultBytes: 4_096 },
      everything: { url: everything.url },
    },
    providers: {
      model: { type: 'openai', baseUrl: `${model.url}/v1`, model: 'gpt-test' },
      note: scripted('tools__append_note'),
      big: scripted('tools__big', { arguments: { bytes: 10_000 } }),
      deleter: scripted('tools__delete_record'),
      echoer: scripted('everything__echo', { arguments: { message: 'hello from a task' } }),
    },
    profiles: {
      default: profile('model', { append_note: {} }),
      note: profile('note', { append_note: {} }),
      big: profile('big', { big: {} }),
      deleter: profile('deleter', { delete_record: {} }),
      everything: {
        name: 'Everything',
        description: 'Calls a third-party MCP server',
        providers: ['echoer'],
        mcp: { everything: { tools: { echo: {} } } },
      },
    },
  });
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix,
    log: () => {},
    ...crashedRunsReaped,
  });
  inspect = await createTestResources('e2e-mcp-inspect');
});

afterAll(async () => {
  disarmFailpoints();
  inspect?.destroy();
  await stack?.stop();
  await Promise.all([server?.stop(), everything?.stop(), model?.stop()]);
});
afterEach(async () => {
  disarmFailpoints();
  await server.faults({});
});

type Json = Record<string, unknown>;
let ids = 0;
const rpc = async (profile: string, method: string, params: unknown): Promise<Json> => {
  const response = await fetch(`${stack.baseUrl}/agents/${profile}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++ids, method, params }),
  });
  return (await response.json()) as Json;
};

/** Sends without waiting; the task id. */
const send = async (profile: string, text: string): Promise<string> => {
  const reply = await rpc(profile, 'SendMessage', {
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
    configuration: { returnImmediately: true },
  });
  const task = (reply.result as Json | undefined)?.task as { id: string } | undefined;
  if (task === undefined) throw new Error(`no task: ${JSON.stringify(reply).slice(0, 300)}`);
  return task.id;
};

interface SeenTask {
  readonly status: { readonly state: string };
  readonly metadata?: { readonly reason?: string };
  readonly artifacts?: readonly { parts: readonly { text?: string }[] }[];
}
const getTask = async (profile: string, id: string): Promise<SeenTask> =>
  (await rpc(profile, 'GetTask', { id })).result as SeenTask;

const settled = async (profile: string, id: string): Promise<SeenTask> => {
  let task: SeenTask | undefined;
  await waitFor(
    async () => {
      task = await getTask(profile, id);
      return ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED'].includes(task.status.state);
    },
    { timeoutMs: 30_000, what: `task ${id} settled` },
  );
  return task as SeenTask;
};

const answerOf = (task: SeenTask) =>
  (task.artifacts ?? []).flatMap((artifact) => artifact.parts.map((part) => part.text ?? '')).join('');

/** The calls the MCP server logged whose arguments carry `marker`. */
const callsWith = async (marker: string) =>
  (await server.calls()).filter((call) => JSON.stringify(call.arguments).includes(marker));

/** The run message of a task sent again, as SQS delivers a message twice. */
const redeliver = async (taskId: string): Promise<void> => {
  const { tasks } = await readTaskRows(stack.endpoints, prefix);
  await redeliverRun(stack, { taskId, runId: tasks.get(taskId)?.currentRunId });
};

const scan = (table: string) => scanAll(inspect.clients.doc, table);
const admin = (...args: string[]) => adminOn(stack, ...args);

describe('MCP tools through the local stack', () => {
  it('one write call from an OpenAI-compatible model: sent once, its effect audited, nothing of it in the journal (I-LEAVE)', async () => {
    const taskId = await send('default', 'Note something down for me.');
    const task = await settled('default', taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(answerOf(task)).toBe('Your note is in.');
    expect(await callsWith(argMarker)).toHaveLength(1);
    // The model was offered the MCP tool with the server's own input schema.
    const offered = (model.requests[0]?.body.tools ?? []) as {
      function: { name: string; parameters: Json };
    }[];
    expect(offered).toEqual([
      expect.objectContaining({
        function: expect.objectContaining({
          name: 'tools__append_note',
          parameters: expect.objectContaining({
            type: 'object',
            properties: { text: { type: 'string' } },
            required: ['text'],
          }),
        }),
      }),
    ]);
    // The audit trail holds the tool step with its effect; arguments and result only sealed.
    const rows = (await scan(stack.resources.tables.Audit.name)).filter((row) => row.taskId === taskId);
    expect(rows.filter((row) => row.kind === 'tool-call')).toEqual([
      expect.objectContaining({ toolNames: ['tools__append_note'], effect: 'write', outcome: 'ok' }),
    ]);
    const shown = await admin('runs', 'show', taskId);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/tool-call.*tools tools__append_note {2}effect write/);
    // Neither the arguments nor the result reach the journal or any plaintext item (I-LEAVE).
    const everything = JSON.stringify([
      await scan(stack.resources.tables.Journal.name),
      await scan(stack.resources.tables.State.name),
      rows,
      shown.stdout,
    ]);
    expect(everything).not.toContain(argMarker);
    expect(everything).not.toMatch(/note \d+ added/);
  });

  it('a crash right after the fence: the call is never sent, a redelivery calls nothing, the reaper ends it TOOL_CALL_INTERRUPTED', async () => {
    armFailpoints('executor.afterFence=#1');
    const marker = `fence-${randomUUID()}`;
    const taskId = await send('note', JSON.stringify({ text: marker }));
    await waitFor(() => failpointCounts()['executor.afterFence']?.faults === 1, { what: 'the crash' });
    await redeliver(taskId);
    const task = await settled('note', taskId);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.metadata?.reason).toBe('TOOL_CALL_INTERRUPTED');
    expect(await callsWith(marker)).toHaveLength(0);
    // Neither the redelivery nor the reaper ran it again, even a while later.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await callsWith(marker)).toHaveLength(0);
    expect((await getTask('note', taskId)).status.state).toBe('TASK_STATE_FAILED');
  });

  it('a crash after the call was answered: sent exactly once, never again after a redelivery and the reaper', async () => {
    armFailpoints('executor.afterToolCall=#1');
    const marker = `sent-${randomUUID()}`;
    const taskId = await send('note', JSON.stringify({ text: marker }));
    await waitFor(() => failpointCounts()['executor.afterToolCall']?.faults === 1, { what: 'the crash' });
    await redeliver(taskId);
    const task = await settled('note', taskId);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.metadata?.reason).toBe('TOOL_CALL_INTERRUPTED');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await callsWith(marker)).toHaveLength(1);
  });

  it('a server that hangs past the deadline: the write is sent once and the run ends TOOL_CALL_INTERRUPTED at once', async () => {
    await server.faults({ hangMs: 5_000 });
    const marker = `hang-${randomUUID()}`;
    const started = Date.now();
    const taskId = await send('note', JSON.stringify({ text: marker }));
    const task = await settled('note', taskId);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.metadata?.reason).toBe('TOOL_CALL_INTERRUPTED');
    // Ended by its own deadline (1.5 s), not by waiting for the server.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await callsWith(marker)).toHaveLength(1);
  });

  it('a result above the size cap goes back to the model as an error; the task completes', async () => {
    const before = (await server.calls()).filter((call) => call.tool === 'big').length;
    const taskId = await send('big', 'Give me a big one.');
    const task = await settled('big', taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(answerOf(task)).toMatch(/^Tool tools__big failed: .*above the limit of 4096/);
    expect((await server.calls()).filter((call) => call.tool === 'big').length - before).toBe(1);
  });

  it('a destructive tool waits for an approval (I-APPROVAL): nothing sent before, sent once after `approvals approve`', async () => {
    const marker = `delete-${randomUUID()}`;
    const taskId = await send('deleter', JSON.stringify({ id: marker }));
    let approvalId = '';
    await waitFor(
      async () => {
        const listed = await admin('approvals', 'list', '--json');
        const found = (JSON.parse(listed.stdout).approvals as { approvalId: string; taskId: string }[]).find(
          (approval) => approval.taskId === taskId,
        );
        approvalId = found?.approvalId ?? '';
        return approvalId !== '';
      },
      { timeoutMs: 20_000, what: 'the pending approval' },
    );
    expect((await getTask('deleter', taskId)).status.state).toBe('TASK_STATE_WORKING');
    expect(await callsWith(marker)).toHaveLength(0);
    const approved = await admin('approvals', 'approve', approvalId);
    expect(approved).toMatchObject({ code: 0 });
    const task = await settled('deleter', taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(answerOf(task)).toContain(`record ${marker} deleted`);
    expect(await callsWith(marker)).toHaveLength(1);
  });

  it('calls a third-party MCP server (server-everything from the npm registry) from a run', async () => {
    const taskId = await send('everything', 'Echo something.');
    const task = await settled('everything', taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(answerOf(task)).toMatch(/^Tool everything__echo answered: .*hello from a task/);
  });
});
