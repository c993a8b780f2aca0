import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { armFailpoints, disarmFailpoints, failpointCounts } from '../../shared/app/operations/failpoints.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { rpc, type SseFrame, stateOf } from '../conformance/sse.ts';
import { crashedRunsReaped, readTaskRows, redeliverRun } from '../support/fault-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { type McpServerProcess, startMcpTestServer } from '../support/mcp-server-process.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { waitFor } from '../support/wait-for.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Progressive output around a fenced write tool call, through the local stack
 * (docs/architecture.md "Progressive output", docs/reliability.md "Crash around a `write` tool
 * call", I-EFFECT, I-COMMITTED). The profile's scripted `call-tool` model calls `append_note` of the
 * MCP test server (a non-idempotent write: fenced on the run row before it is sent), then streams
 * its answer word by word (`paceMs`), which the run commits in chunks. Every `tools/call` the
 * server receives is in its own call log, so "sent once" is counted at the server. Faults: a crash
 * right after the first committed chunk (`executor.afterChunk`) and one right after the fence
 * (`executor.afterFence`), each followed by a redelivered run message and the reaper.
 */

const prefix = `e2e-progressive-tool-${randomUUID().slice(0, 8)}`;
let server: McpServerProcess;
let stack: LocalStack;

beforeAll(async () => {
  server = await startMcpTestServer();
  const config = parseConfig({
    privacy: { level: 'full' },
    mcpServers: { tools: { url: server.url, timeoutMs: 5_000 } },
    providers: {
      // A word every 200 ms and a chunk at most every 100 ms: the answer comes in several chunks.
      noter: { type: 'scripted', behavior: 'call-tool', tool: 'tools__append_note', paceMs: 200 },
    },
    profiles: {
      default: {
        name: 'Notes, then streams',
        description: 'Writes a note, then streams its answer',
        providers: ['noter'],
        mcp: { tools: { tools: { append_note: {} } } },
        output: { progressive: true, cadence: { ms: 100, bytes: 256 } },
      },
    },
    streaming: { heartbeatSeconds: 1, maxStreamSeconds: 120 },
  });
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix,
    log: () => {},
    ...crashedRunsReaped,
  });
});

afterAll(async () => {
  disarmFailpoints();
  await stack?.stop();
  await server?.stop();
});
afterEach(() => disarmFailpoints());

interface ArtifactUpdate {
  readonly artifact: { readonly parts: readonly { text?: string }[] };
  readonly append?: boolean;
  readonly lastChunk?: boolean;
}
interface SeenTask {
  readonly id: string;
  readonly status: { readonly state: string };
  readonly metadata?: { readonly reason?: string };
  readonly artifacts?: readonly { readonly parts: readonly { text?: string }[] }[];
}
type Result = { artifactUpdate?: ArtifactUpdate; task?: SeenTask };

const url = () => `${stack.baseUrl}/agents/default`;
const resultOf = (frame: SseFrame): Result => (frame.data?.result ?? {}) as Result;
const textOf = (update: ArtifactUpdate) => update.artifact.parts.map((part) => part.text ?? '').join('');
/** What a client holds after applying the artifact updates in order (append or replace). */
const applied = (updates: readonly ArtifactUpdate[]): string => {
  let text = '';
  for (const update of updates) text = update.append ? text + textOf(update) : textOf(update);
  return text;
};
const artifactUpdatesOf = (frames: readonly SseFrame[]) =>
  frames.flatMap((frame) => {
    const update = resultOf(frame).artifactUpdate;
    return update === undefined ? [] : [update];
  });
const revisionsOf = (frames: readonly SseFrame[]) =>
  frames.flatMap((frame) => (frame.id === undefined ? [] : [Number(frame.id)]));

/**
 * A SendStreamingMessage whose message is the note's arguments (the `call-tool` model calls the
 * tool with the user's JSON object); the task id as soon as the first frame names it, and every
 * event frame once the server closes the stream.
 */
const streamNote = async (marker: string) => {
  const answer = await rpc(url(), 'SendStreamingMessage', {
    message: {
      messageId: randomUUID(),
      role: 'ROLE_USER',
      parts: [{ text: JSON.stringify({ text: marker }) }],
    },
  });
  if (answer.kind !== 'sse') throw new Error(`did not stream: ${JSON.stringify(answer.body)}`);
  let named: (taskId: string) => void = () => {};
  const taskId = new Promise<string>((resolve) => {
    named = resolve;
  });
  const frames = (async () => {
    const seen: SseFrame[] = [];
    for await (const frame of answer.frames) {
      if (frame.data === undefined) continue;
      seen.push(frame);
      const task = resultOf(frame).task;
      if (task !== undefined) named(task.id);
    }
    return seen;
  })();
  return { taskId, frames };
};

const getTask = async (taskId: string): Promise<SeenTask> => {
  const answer = await rpc(url(), 'GetTask', { id: taskId });
  if (answer.kind !== 'json') throw new Error('GetTask streamed');
  return answer.body.result as unknown as SeenTask;
};

/** The calls the MCP server logged whose arguments carry `marker`. */
const callsWith = async (marker: string) =>
  (await server.calls()).filter((call) => JSON.stringify(call.arguments).includes(marker));

const currentRunOf = async (taskId: string): Promise<string> => {
  const { tasks } = await readTaskRows(stack.endpoints, prefix);
  const runId = tasks.get(taskId)?.currentRunId;
  if (runId === undefined) throw new Error(`no task row for ${taskId}`);
  return runId;
};

/**
 * A streamed note whose executor crashes at `failpoint`, then its run message delivered again,
 * handled and deleted by the executor (the crashed delivery stays invisible on the queue): what
 * the subscriber saw once the stream ends, and the run.
 */
const crashedNote = async (failpoint: string, marker: string) => {
  armFailpoints(`${failpoint}=#1`);
  const sent = await streamNote(marker);
  const taskId = await sent.taskId;
  await waitFor(() => failpointCounts()[failpoint]?.faults === 1, { what: 'the crash' });
  const runId = await currentRunOf(taskId);
  const handled = stack.pollers.executor.stats().deleted;
  await redeliverRun(stack, { taskId, runId });
  await waitFor(() => stack.pollers.executor.stats().deleted > handled, { what: 'the redelivery handled' });
  return { taskId, runId, frames: await sent.frames };
};

describe('progressive output around a fenced MCP write call', () => {
  it('the write reaches the server once; the answer after it arrives in committed chunks, in revision order, then whole', async () => {
    const marker = `streamed-${randomUUID()}`;
    const sent = await streamNote(marker);
    const taskId = await sent.taskId;
    const frames = await sent.frames;

    const updates = artifactUpdatesOf(frames);
    const chunks = updates.filter((update) => update.lastChunk === false);
    expect(chunks.length).toBeGreaterThan(1);
    // The first chunk starts the artifact; each later one appends to it.
    expect(chunks[0]?.append).not.toBe(true);
    expect(chunks.slice(1).every((update) => update.append === true)).toBe(true);
    // The completion closes the artifact with the whole answer, which the chunks began.
    const closing = updates.at(-1);
    expect(closing?.lastChunk).toBe(true);
    const answer = textOf(closing!);
    expect(answer).toMatch(/^Tool tools__append_note answered: .*note \d+ added/);
    expect(answer.startsWith(applied(chunks))).toBe(true);
    expect(applied(updates)).toBe(answer);
    // Each revision once, in revision order (I-ORDER), ending COMPLETED.
    const revisions = revisionsOf(frames);
    expect(revisions).toEqual(Array.from({ length: revisions.length }, (_, index) => revisions[0]! + index));
    expect(stateOf(frames.at(-1)!)).toBe('TASK_STATE_COMPLETED');

    // The journal holds the same: a re-attach after the first revision reads what followed it.
    const reattach = await rpc(
      url(),
      'SubscribeToTask',
      { id: taskId },
      { 'Last-Event-ID': String(revisions[0]) },
    );
    if (reattach.kind !== 'sse') throw new Error('SubscribeToTask did not stream');
    const replayed: SseFrame[] = [];
    for await (const frame of reattach.frames) if (frame.data !== undefined) replayed.push(frame);
    const events = (all: readonly SseFrame[]) =>
      all.filter((frame) => resultOf(frame).task === undefined).map((frame) => frame.data?.result);
    expect(events(replayed)).toEqual(events(frames));

    const task = await getTask(taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.[0]?.parts).toEqual([{ text: answer }]);
    // Sent once, counted on the server's own log (I-EFFECT); the model was called once (I-ONCE).
    expect(await callsWith(marker)).toHaveLength(1);
    expect(ScriptedProvider.callsByRun.get(await currentRunOf(taskId))).toBe(1);
  });

  it('a crash after a committed chunk: the subscriber keeps the chunk and sees FAILED TOOL_CALL_INTERRUPTED; a redelivery sends nothing again', async () => {
    const marker = `chunk-crash-${randomUUID()}`;
    const { taskId, runId, frames } = await crashedNote('executor.afterChunk', marker);

    // The reaper finds the fenced run RUNNING past its lease and ends it (docs/reliability.md).
    expect(stateOf(frames.at(-1)!)).toBe('TASK_STATE_FAILED');
    // The one chunk committed before the crash, and no closing update.
    const updates = artifactUpdatesOf(frames);
    expect(updates).toHaveLength(1);
    expect(updates[0]?.lastChunk).toBe(false);
    const shown = applied(updates);
    expect(shown).toMatch(/^Tool /);

    const task = await getTask(taskId);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.metadata?.reason).toBe('TOOL_CALL_INTERRUPTED');
    // The chunks every channel delivered stay beside FAILED (docs/architecture.md "Progressive output").
    expect(task.artifacts?.[0]?.parts).toEqual([{ text: shown }]);
    // The write was sent before the chunk, once; neither the redelivery nor the reaper sent it again.
    expect(await callsWith(marker)).toHaveLength(1);
    expect(ScriptedProvider.callsByRun.get(runId)).toBe(1);
  });

  it('a crash right after the fence: the write is never sent, no chunk is committed, and the task ends FAILED TOOL_CALL_INTERRUPTED', async () => {
    const marker = `fence-crash-${randomUUID()}`;
    const { taskId, runId, frames } = await crashedNote('executor.afterFence', marker);
    expect(stateOf(frames.at(-1)!)).toBe('TASK_STATE_FAILED');
    expect(artifactUpdatesOf(frames)).toEqual([]);
    const task = await getTask(taskId);
    expect(task.metadata?.reason).toBe('TOOL_CALL_INTERRUPTED');
    expect(task.artifacts ?? []).toEqual([]);
    expect(await callsWith(marker)).toHaveLength(0);
    expect(ScriptedProvider.callsByRun.get(runId)).toBe(1);
  });
});
