import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drain, rpc as streamRpc } from './sse.ts';
import {
  type ConformanceStack,
  conformanceConfigWith,
  errorInfoOf,
  type JsonObject,
  startConformanceStack,
  taskOf,
  userMessage,
} from './support.ts';

/**
 * A2A 1.1 task generations (docs/protocol.md §16) against the local stack, over real HTTP on both
 * bindings: `generation` on Task and on both update events — 1 at creation, +1 per event shown,
 * answer chunks included — long-poll GetTask with `currentGeneration` (held by the blocking wait,
 * bounded by the profile's blocking cap), `ifGenerationMatch` on SendMessage (-32010 / 409 ABORTED
 * with the ErrorInfo), and none of it seen by a 1.0 client.
 */

let sut: ConformanceStack;

beforeAll(async () => {
  sut = await startConformanceStack(
    'conf-generation',
    conformanceConfigWith({
      providers: { streamer: { type: 'scripted', behavior: 'stream', paceMs: 5 } },
      profiles: {
        // Progressive output: the answer is committed in chunks, each a revision of its own.
        streams: {
          name: 'Streams',
          description: 'Echoes word by word, committing the answer so far.',
          providers: ['streamer'],
          privacyLevel: 'full',
          output: { progressive: true, cadence: { ms: 100, bytes: 256 } },
        },
      },
    }),
  );
});
afterAll(async () => {
  await sut?.stop();
});

const v11 = { 'A2A-Version': '1.1' };

/** Every `generation` member anywhere in a JSON value (a 1.0 answer must have none). */
const generationsIn = (value: unknown): number[] => {
  if (Array.isArray(value)) return value.flatMap(generationsIn);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) =>
    key === 'generation' ? [item as number] : generationsIn(item),
  );
};

const rest = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${sut.agentUrl('tck')}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as JsonObject };
};

/** A task waiting for input (INPUT_REQUIRED) at the generation its revisions reached. */
const inputRequired = async () => {
  const task = taskOf(await sut.send('tck-input-required'));
  expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
  const got = await sut.rpc('GetTask', { id: task.id }, { headers: v11 });
  return { id: task.id, generation: got.result.generation as number };
};

const followUp = (taskId: string, configuration: JsonObject, headers: Record<string, string> = v11) =>
  sut.rpc(
    'SendMessage',
    { message: userMessage('tck-complete-task', { taskId }), configuration },
    { headers },
  );

describe('generation on Task and on both update events', () => {
  it('a 1.1 stream: the Task, then events whose generations go up by one each, answer chunks included; GetTask agrees', async () => {
    const text = Array.from({ length: 150 }, (_, index) => `word${index}`).join(' ');
    const answer = await streamRpc(
      sut.agentUrl('streams'),
      'SendStreamingMessage',
      { message: { messageId: `gen-${randomUUID()}`, role: 'ROLE_USER', parts: [{ text }] } },
      v11,
    );
    if (answer.kind !== 'sse') throw new Error(`expected a stream, got ${JSON.stringify(answer.body)}`);
    const { events } = await drain(answer.frames);
    const results = events.map((event) => event.data?.result as JsonObject);
    const task = results[0]?.task as JsonObject & { id: string };
    expect(task.generation).toBe(1);
    const updates = results
      .slice(1)
      .map((result) => (result.statusUpdate ?? result.artifactUpdate) as JsonObject);
    expect(updates.length).toBeGreaterThan(3);
    // Consecutive: no gap, no repeat (a client detects a missed event by a gap).
    expect(updates.map((update) => update.generation)).toEqual(updates.map((_, index) => 2 + index));
    // Chunks of the answer were among them: each counted like any other event.
    expect(
      results.some((result) => (result.artifactUpdate as JsonObject | undefined)?.lastChunk === false),
    ).toBe(true);
    const last = updates.at(-1)?.generation;
    const got = await sut.rpc('GetTask', { id: task.id }, { profile: 'streams', headers: v11 });
    expect(got.result).toMatchObject({ id: task.id, generation: last });
    // The same task to a 1.0 client: no generation anywhere (the 1.0 schema forbids unknown fields).
    const as10 = await sut.rpc('GetTask', { id: task.id }, { profile: 'streams' });
    expect(as10.result.id).toBe(task.id);
    expect(generationsIn(as10.body)).toEqual([]);
  });

  it('a 1.0 client sees no generation: SendMessage, GetTask, ListTasks, CancelTask, streams, HTTP+JSON', async () => {
    const contextId = randomUUID();
    const sent = await sut.send('tck-artifact-text', { message: { contextId } });
    expect(generationsIn(sent.body)).toEqual([]);
    const { id } = taskOf(sent);
    expect(generationsIn((await sut.rpc('GetTask', { id, currentGeneration: 0 })).body)).toEqual([]);
    expect(generationsIn((await sut.rpc('ListTasks', { contextId })).body)).toEqual([]);
    const open = taskOf(await sut.send('tck-input-required'));
    expect(generationsIn((await sut.rpc('CancelTask', { id: open.id })).body)).toEqual([]);
    const stream = await streamRpc(sut.agentUrl('tck'), 'SendStreamingMessage', {
      message: userMessage('tck-stream-artifact-chunked'),
    });
    if (stream.kind !== 'sse') throw new Error('expected a stream');
    const { events } = await drain(stream.frames);
    expect(events.length).toBeGreaterThan(1);
    expect(generationsIn(events.map((event) => event.data))).toEqual([]);
    const viaRest = await rest('GET', `/tasks/${id}`, undefined, { 'A2A-Version': '1.0' });
    expect(viaRest.status).toBe(200);
    expect(generationsIn(viaRest.body)).toEqual([]);
    // The same read negotiated as 1.1, by header or by query: the generation is there.
    const listed = await sut.rpc('ListTasks', { contextId }, { headers: v11 });
    expect(generationsIn(listed.body)).toEqual([expect.any(Number)]);
    expect((await rest('GET', `/tasks/${id}?A2A-Version=1.1`)).body.generation).toEqual(expect.any(Number));
  });
});

describe('long-poll GetTask with currentGeneration', () => {
  it('held until the task moves past it (JSON-RPC), then answers with the newer generation', async () => {
    const task = await inputRequired();
    const startedAt = Date.now();
    const polled = sut.rpc('GetTask', { id: task.id, currentGeneration: task.generation }, { headers: v11 });
    let answeredAt: number | undefined;
    void polled.then(() => {
      answeredAt = Date.now();
    });
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(answeredAt).toBeUndefined();
    const sent = await followUp(task.id, { ifGenerationMatch: task.generation });
    expect(taskOf(sent).status.state).toBe('TASK_STATE_COMPLETED');
    const answer = await polled;
    expect(answer.error).toBeUndefined();
    expect(answer.result.generation as number).toBeGreaterThan(task.generation);
    expect((answeredAt ?? 0) - startedAt).toBeGreaterThanOrEqual(700);
  });

  it('held over HTTP+JSON too (`?currentGeneration=`), and answers at once when the task is already past it', async () => {
    const task = await inputRequired();
    const polled = rest('GET', `/tasks/${task.id}?currentGeneration=${task.generation}`, undefined, v11);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await followUp(task.id, {});
    const answer = await polled;
    expect(answer.status).toBe(200);
    expect(answer.body.generation as number).toBeGreaterThan(task.generation);
    // Already past, or terminal (it will not move again): at once.
    const final = (await rest('GET', `/tasks/${task.id}`, undefined, v11)).body;
    expect(final.status).toMatchObject({ state: 'TASK_STATE_COMPLETED' });
    const startedAt = Date.now();
    const past = await rest('GET', `/tasks/${task.id}?currentGeneration=${task.generation}`, undefined, v11);
    const terminal = await rest(
      'GET',
      `/tasks/${task.id}?currentGeneration=${final.generation as number}`,
      undefined,
      v11,
    );
    expect(past.body.generation).toBe(final.generation);
    expect(terminal.body.generation).toBe(final.generation);
    expect(Date.now() - startedAt).toBeLessThan(2_000);
  });

  it("bounded by the profile's blocking cap: at the cap, the task as it is", async () => {
    // `slow` runs for 2 s; its blocking cap is 0.5 s.
    const sent = await sut.send('slow-gen', { profile: 'slow', configuration: { returnImmediately: true } });
    const { id } = taskOf(sent);
    const current = (await sut.rpc('GetTask', { id }, { profile: 'slow', headers: v11 })).result;
    expect(current.status).toMatchObject({ state: 'TASK_STATE_WORKING' });
    const startedAt = Date.now();
    const polled = await sut.rpc(
      'GetTask',
      { id, currentGeneration: current.generation },
      { profile: 'slow', headers: v11 },
    );
    const heldMs = Date.now() - startedAt;
    expect(heldMs).toBeGreaterThanOrEqual(450);
    expect(heldMs).toBeLessThan(1_900);
    expect(polled.result).toMatchObject({ id, generation: current.generation });
  });
});

describe('ifGenerationMatch on SendMessage', () => {
  it('a stale generation → -32010 with the ErrorInfo (JSON-RPC) and 409 ABORTED (HTTP+JSON); the task is untouched', async () => {
    const task = await inputRequired();
    const stale = task.generation - 1;
    const refused = await followUp(task.id, { ifGenerationMatch: stale });
    expect(refused.error).toMatchObject({ code: -32010, message: 'Task generation mismatch' });
    expect(errorInfoOf(refused.error)).toMatchObject({
      reason: 'TASK_GENERATION_MISMATCH',
      domain: 'a2a-protocol.org',
      metadata: {
        taskId: task.id,
        expectedGeneration: String(stale),
        currentGeneration: String(task.generation),
      },
    });
    const viaRest = await rest(
      'POST',
      '/message:send',
      {
        message: userMessage('tck-complete-task', { taskId: task.id }),
        configuration: { ifGenerationMatch: String(task.generation + 3) },
      },
      v11,
    );
    expect(viaRest.status).toBe(409);
    const error = viaRest.body.error as JsonObject & { details: JsonObject[] };
    expect(error).toMatchObject({ code: 409, status: 'ABORTED' });
    expect(error.details[0]).toMatchObject({
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'TASK_GENERATION_MISMATCH',
      metadata: {
        expectedGeneration: String(task.generation + 3),
        currentGeneration: String(task.generation),
      },
    });
    const after = await sut.rpc('GetTask', { id: task.id }, { headers: v11 });
    expect(after.result).toMatchObject({
      status: { state: 'TASK_STATE_INPUT_REQUIRED' },
      generation: task.generation,
    });
    // The matching generation applies.
    expect(taskOf(await followUp(task.id, { ifGenerationMatch: task.generation })).status.state).toBe(
      'TASK_STATE_COMPLETED',
    );
  });

  it('a new task ignores it; to a 1.0 client it is an unknown field, ignored', async () => {
    const fresh = await sut.rpc(
      'SendMessage',
      { message: userMessage('tck-complete-task'), configuration: { ifGenerationMatch: 42 } },
      { headers: v11 },
    );
    expect(taskOf(fresh).generation).toEqual(expect.any(Number));
    const task = await inputRequired();
    const as10 = await followUp(
      task.id,
      { ifGenerationMatch: task.generation + 7 },
      { 'A2A-Version': '1.0' },
    );
    expect(taskOf(as10).status.state).toBe('TASK_STATE_COMPLETED');
  });
});
