import { SendMessageRequest, StreamResponse, SubscribeToTaskRequest } from '@a2a-js/sdk';
import { type Client, ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/config.ts';
import { drain, kindOf, type RpcAnswer, rpc, type SseFrame, stateOf, terminalStates } from './sse.ts';
import { type ConformanceStack, conformanceConfig, startConformanceStack } from './support.ts';

/**
 * The streaming requirements of the A2A v1.0 TCK (docs/protocol.md §5, §13.3, §13.4, §17) against the local
 * stack's `tck` profile (the scripted `tck` provider): raw HTTP with a small SSE parser (framing,
 * ids, heartbeats, Last-Event-ID) and the official @a2a-js/sdk client. One test per requirement ID.
 */

// Heartbeats every second, so a test sees one without waiting 15 s.
const config = parseConfig({ ...conformanceConfig, streaming: { heartbeatSeconds: 1 } });

let conformance: ConformanceStack;
let url: string;
let client: Client;

beforeAll(async () => {
  conformance = await startConformanceStack('conf-stream', config);
  url = conformance.agentUrl('tck');
  client = await new ClientFactory().createFromUrl(
    conformance.baseUrl,
    '/agents/tck/.well-known/agent-card.json',
  );
});
afterAll(async () => {
  await conformance?.stop();
});

const message = (messageId: string, extra: Record<string, unknown> = {}) => ({
  message: {
    messageId: `${messageId}-${crypto.randomUUID()}`,
    role: 'ROLE_USER',
    parts: [{ text: 'hi' }],
    ...extra,
  },
});

const sse = (answer: RpcAnswer) => {
  if (answer.kind !== 'sse') throw new Error(`expected SSE, got ${JSON.stringify(answer.body)}`);
  return answer;
};

const stream = async (method: string, params: unknown, headers?: Record<string, string>) =>
  sse(await rpc(url, method, params, headers));

/** A task waiting in INPUT_REQUIRED (blocking SendMessage returns there). */
const inputRequiredTask = async (): Promise<string> => {
  const answer = await rpc(url, 'SendMessage', message('tck-input-required'));
  if (answer.kind !== 'json') throw new Error('expected JSON');
  const task = answer.body.result?.task as { id: string; status: { state: string } };
  expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
  return task.id;
};

const completeWithFollowUp = (taskId: string) =>
  rpc(url, 'SendMessage', message('tck-complete-task', { taskId }));

const compact = (frames: readonly SseFrame[]) =>
  frames.map((frame) => `${kindOf(frame)}:${(stateOf(frame) ?? '').replace('TASK_STATE_', '')}`);

describe('SSE over JSON-RPC', () => {
  it('the card declares streaming (CORE-CAP-002 does not apply)', async () => {
    const card = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as {
      capabilities: { streaming?: boolean };
    };
    expect(card.capabilities.streaming).toBe(true);
  });

  it('JSONRPC-SSE-001: every event is a JSON-RPC response with the request id and a StreamResponse', async () => {
    const answer = await stream('SendStreamingMessage', message('tck-stream-001'));
    const { events } = await drain(answer.frames);
    expect(events.length).toBeGreaterThanOrEqual(2);
    for (const frame of events) {
      expect(frame.data?.jsonrpc).toBe('2.0');
      expect(frame.data?.id).toBe(answer.requestId);
      expect(['task', 'message', 'statusUpdate', 'artifactUpdate']).toContain(kindOf(frame));
      expect(Object.keys(frame.data?.result ?? {})).toHaveLength(1);
    }
  });

  it('JSONRPC-SSE-002: errors before the first event are plain application/json JSON-RPC errors', async () => {
    const unknown = await rpc(url, 'SubscribeToTask', { id: 'no-such-task' });
    const unsupportedPart = await rpc(url, 'SendStreamingMessage', {
      message: {
        messageId: 'tck-send-003',
        role: 'ROLE_USER',
        parts: [{ raw: 'dGNr', mediaType: 'application/x-unsupported-tck-type' }],
      },
    });
    const badParams = await rpc(url, 'SendStreamingMessage', {});
    const codes = [unknown, unsupportedPart, badParams].map((answer) => {
      if (answer.kind !== 'json') throw new Error('expected JSON');
      expect(answer.status).toBe(200);
      expect(answer.contentType).toMatch(/^application\/json/);
      return answer.body.error?.code;
    });
    expect(codes).toEqual([-32001, -32005, -32602]);
  });

  it('answers with Content-Type text/event-stream and no caching', async () => {
    const answer = await stream('SendStreamingMessage', message('tck-stream-003'));
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^text\/event-stream/);
    expect(answer.headers.get('cache-control')).toBe('no-cache');
    await drain(answer.frames);
  });

  it('frames each event as one data: line, with id: lines carrying increasing revisions', async () => {
    const answer = await stream('SendStreamingMessage', message('tck-stream-artifact-text'));
    const { events } = await drain(answer.frames);
    for (const frame of events) expect(frame.dataLines).toBe(1);
    // The snapshot and every statusUpdate end a revision and carry its id; artifactUpdates do not.
    const ids = events.filter((frame) => kindOf(frame) !== 'artifactUpdate').map((frame) => Number(frame.id));
    // The run runs in the rpc, claimed by its create: the Task is revision 1, WORKING (decision 0159).
    expect(ids).toEqual([1, 2]);
    expect(
      events.filter((frame) => kindOf(frame) === 'artifactUpdate').every((f) => f.id === undefined),
    ).toBe(true);
  });

  it('sends SSE comment heartbeats while nothing happens', async () => {
    const taskId = await inputRequiredTask();
    const answer = await stream('SubscribeToTask', { id: taskId });
    const { events, comments } = await drain(answer.frames, (frame) => frame.comment === 'keep-alive');
    answer.close();
    expect(compact(events)).toEqual(['task:INPUT_REQUIRED']);
    expect(comments).toBe(1);
  });
});

describe('SendStreamingMessage', () => {
  it('CORE-STREAM-001: streams the committed lifecycle WORKING → artifact → COMPLETED', async () => {
    const answer = await stream('SendStreamingMessage', message('tck-stream-001'));
    const { events } = await drain(answer.frames);
    // The create claims the run the rpc runs (decision 0159): the Task is the WORKING revision.
    expect(compact(events)).toEqual(['task:WORKING', 'artifactUpdate:', 'statusUpdate:COMPLETED']);
    const artifact = events[1]?.data?.result?.artifactUpdate as { artifact: { parts: { text: string }[] } };
    expect(artifact.artifact.parts).toEqual([{ text: 'Stream hello from TCK' }]);
  });

  it('CORE-STREAM-002: tck-stream-002 (a completed status only) ends with COMPLETED and no artifact', async () => {
    const answer = await stream('SendStreamingMessage', message('tck-stream-002'));
    const { events } = await drain(answer.frames);
    expect(compact(events)).toEqual(['task:WORKING', 'statusUpdate:COMPLETED']);
  });

  it('CORE-STREAM-003: begins with the Task and closes at the terminal state', async () => {
    const answer = await stream('SendStreamingMessage', message('tck-stream-003'));
    const { events } = await drain(answer.frames);
    expect(kindOf(events[0] as SseFrame)).toBe('task');
    expect(terminalStates).toContain(stateOf(events.at(-1) as SseFrame));
  });

  it('a follow-up to INPUT_REQUIRED streams WORKING → COMPLETED: never SUBMITTED again, one WORKING (decision 0050)', async () => {
    const taskId = await inputRequiredTask();
    const answer = await stream('SendStreamingMessage', message('tck-stream-001', { taskId }));
    const { events } = await drain(answer.frames);
    expect(compact(events)).toEqual(['task:WORKING', 'artifactUpdate:', 'statusUpdate:COMPLETED']);
    // The blocking first turn ran in the rpc, claimed by its create (decision 0096): revisions
    // 1 WORKING, 2 INPUT_REQUIRED, then the follow-up's 3 WORKING and 4.
    expect(events.filter((frame) => frame.id !== undefined).map((frame) => frame.id)).toEqual(['3', '4']);
  });

  it('closes at an interrupted state (docs/protocol.md §17)', async () => {
    const answer = await stream('SendStreamingMessage', message('tck-input-required'));
    const { events } = await drain(answer.frames);
    expect(compact(events)).toEqual(['task:WORKING', 'statusUpdate:INPUT_REQUIRED']);
  });

  it('STREAM-ORDER-001: states never regress and the last event is terminal', async () => {
    const order: Record<string, number> = {
      TASK_STATE_SUBMITTED: 0,
      TASK_STATE_WORKING: 1,
      TASK_STATE_INPUT_REQUIRED: 1,
      TASK_STATE_AUTH_REQUIRED: 1,
    };
    const answer = await stream('SendStreamingMessage', message('tck-stream-ordering-001'));
    const { events } = await drain(answer.frames);
    const ranks = events.flatMap((frame) => {
      const state = stateOf(frame);
      return state === undefined ? [] : [order[state] ?? 2];
    });
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    expect(terminalStates).toContain(stateOf(events.at(-1) as SseFrame));
  });
});

describe('a Message answer over SSE (decision 0067)', () => {
  type AgentMessage = { messageId: string; taskId: string; contextId: string; parts: unknown[] };

  it('STREAM-MSG-001: tck-message-response streams exactly one Message event, then closes', async () => {
    // Fails without the change: the stream was task:SUBMITTED → WORKING → COMPLETED.
    const answer = await stream('SendStreamingMessage', message('tck-message-response'));
    const { events } = await drain(answer.frames);
    expect(events.map(kindOf)).toEqual(['message']);
    const streamed = events[0]?.data?.result?.message as AgentMessage;
    expect(streamed).toMatchObject({ role: 'ROLE_AGENT', parts: [{ text: 'Direct message response' }] });
    // A message-only stream has no revision to resume after.
    expect(events[0]?.id).toBeUndefined();

    // The same as a blocking SendMessage answers, and the task behind it is durable: GetTask shows
    // it COMPLETED with this message as its status, and there is nothing to subscribe to.
    const blocking = await rpc(url, 'SendMessage', message('tck-message-response'));
    expect(blocking.kind === 'json' && Object.keys(blocking.body.result ?? {})).toEqual(['message']);
    const task = await rpc(url, 'GetTask', { id: streamed.taskId });
    expect(task.kind === 'json' && task.body.result).toMatchObject({
      id: streamed.taskId,
      contextId: streamed.contextId,
      status: { state: 'TASK_STATE_COMPLETED', message: streamed },
      metadata: { responseKind: 'message' },
    });
    const subscribe = await rpc(url, 'SubscribeToTask', { id: streamed.taskId });
    expect(subscribe.kind === 'json' && subscribe.body.error?.code).toBe(-32004);
  });

  it('a retried streaming send of a Message answer streams the same one Message (I-RETRY)', async () => {
    const params = message('tck-message-response');
    const first = await drain((await stream('SendStreamingMessage', params)).frames);
    const retry = await drain((await stream('SendStreamingMessage', params)).frames);
    expect(retry.events.map(kindOf)).toEqual(['message']);
    expect(retry.events[0]?.data?.result).toEqual(first.events[0]?.data?.result);
  });

  it('a follow-up answered with a Message streams one Message too', async () => {
    const taskId = await inputRequiredTask();
    const answer = await stream('SendStreamingMessage', message('tck-message-response', { taskId }));
    const { events } = await drain(answer.frames);
    expect(events.map(kindOf)).toEqual(['message']);
    expect(events[0]?.data?.result?.message).toMatchObject({ taskId });
  });
});

describe('SubscribeToTask', () => {
  it('STREAM-SUB-001: the first event is the Task', async () => {
    const taskId = await inputRequiredTask();
    const answer = await stream('SubscribeToTask', { id: taskId });
    const first = (await answer.frames.next()).value as SseFrame;
    answer.close();
    expect(kindOf(first)).toBe('task');
    expect(first.data?.result?.task).toMatchObject({ id: taskId });
  });

  it('STREAM-SUB-002: stays open at INPUT_REQUIRED, receives the terminal event another request caused, then closes', async () => {
    const taskId = await inputRequiredTask();
    const answer = await stream('SubscribeToTask', { id: taskId });
    const first = await answer.frames.next();
    expect(stateOf(first.value as SseFrame)).toBe('TASK_STATE_INPUT_REQUIRED');
    const [{ events }] = await Promise.all([drain(answer.frames), completeWithFollowUp(taskId)]);
    // The follow-up moves the task on to WORKING; it never shows SUBMITTED again.
    expect(compact(events)).toEqual(['statusUpdate:WORKING', 'statusUpdate:COMPLETED']);
    expect(terminalStates).toContain(stateOf(events.at(-1) as SseFrame));
  });

  it('STREAM-SUB-003: a terminal task is refused with -32004', async () => {
    const done = await rpc(url, 'SendMessage', message('tck-complete-task'));
    if (done.kind !== 'json') throw new Error('expected JSON');
    const taskId = (done.body.result?.task as { id: string } | undefined)?.id ?? '';
    const answer = await rpc(url, 'SubscribeToTask', { id: taskId });
    expect(answer.kind === 'json' && answer.body.error?.code).toBe(-32004);
  });

  it('STREAM-SUB-004: an unknown task is refused with -32001', async () => {
    const answer = await rpc(url, 'SubscribeToTask', { id: 'tck-nonexistent-subscribe-001' });
    expect(answer.kind === 'json' && answer.body.error?.code).toBe(-32001);
  });

  it('STREAM-ORDER-002/003: two concurrent subscribers receive the same events in the same order', async () => {
    const taskId = await inputRequiredTask();
    const [a, b] = await Promise.all([
      stream('SubscribeToTask', { id: taskId }),
      stream('SubscribeToTask', { id: taskId }),
    ]);
    const firstA = await a.frames.next();
    const firstB = await b.frames.next();
    const [restA, restB] = await Promise.all([
      drain(a.frames),
      drain(b.frames),
      completeWithFollowUp(taskId),
    ]);
    const payloads = (first: IteratorResult<SseFrame>, rest: { events: SseFrame[] }) =>
      [first.value as SseFrame, ...rest.events].map((frame) => ({
        id: frame.id,
        result: frame.data?.result,
      }));
    expect(payloads(firstA, restA).length).toBeGreaterThanOrEqual(2);
    expect(payloads(firstA, restA)).toEqual(payloads(firstB, restB));
  });

  it('STREAM-ORDER-004: closing one stream does not affect the other', async () => {
    const taskId = await inputRequiredTask();
    const [a, b] = await Promise.all([
      stream('SubscribeToTask', { id: taskId }),
      stream('SubscribeToTask', { id: taskId }),
    ]);
    await a.frames.next();
    a.close();
    await b.frames.next();
    const [{ events }] = await Promise.all([drain(b.frames), completeWithFollowUp(taskId)]);
    expect(terminalStates).toContain(stateOf(events.at(-1) as SseFrame));
  });

  it('resumes after Last-Event-ID: the task as last seen, then only the revisions after it (docs/protocol.md §17)', async () => {
    // test-resubscribe-message-id: WORKING, then COMPLETED 4 s later — the client leaves in between.
    const first = await stream('SendStreamingMessage', message('test-resubscribe-message-id'));
    const { events: before } = await drain(first.frames, (frame) => stateOf(frame) === 'TASK_STATE_WORKING');
    first.close();
    const taskId = (before[0]?.data?.result?.task as { id: string } | undefined)?.id ?? '';
    const lastEventId = before.at(-1)?.id as string;
    expect(compact(before)).toEqual(['task:WORKING']);

    const resumed = await stream('SubscribeToTask', { id: taskId }, { 'Last-Event-ID': lastEventId });
    const { events } = await drain(resumed.frames);
    expect(compact(events)).toEqual(['task:WORKING', 'statusUpdate:COMPLETED']);
    expect(events.map((frame) => frame.id)).toEqual([lastEventId, String(Number(lastEventId) + 1)]);

    // Once it has seen the end, there is nothing to re-attach to.
    const again = await rpc(
      url,
      'SubscribeToTask',
      { id: taskId },
      { 'Last-Event-ID': events.at(-1)?.id as string },
    );
    expect(again.kind === 'json' && again.body.error?.code).toBe(-32004);
  });
});

describe('with the official @a2a-js/sdk client', () => {
  const collect = async (events: AsyncIterable<StreamResponse>) => {
    const out: Record<string, unknown>[] = [];
    for await (const event of events) out.push(StreamResponse.toJSON(event) as Record<string, unknown>);
    return out;
  };

  it('sendMessageStream: the chunked scenario arrives as one whole artifact with both chunks', async () => {
    const events = await collect(
      client.sendMessageStream(SendMessageRequest.fromJSON(message('tck-stream-artifact-chunked'))),
    );
    expect(events.map((event) => Object.keys(event)[0])).toEqual(['task', 'artifactUpdate', 'statusUpdate']);
    expect(events[1]).toMatchObject({
      artifactUpdate: { artifact: { parts: [{ text: 'chunk-1 ' }, { text: 'chunk-2' }] }, lastChunk: true },
    });
    expect(events[2]).toMatchObject({ statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } });
  });

  it('sendMessageStream: a file artifact keeps its filename and media type', async () => {
    const events = await collect(
      client.sendMessageStream(SendMessageRequest.fromJSON(message('tck-stream-artifact-file'))),
    );
    const artifact = events.find((event) => 'artifactUpdate' in event);
    expect(artifact).toMatchObject({
      artifactUpdate: { artifact: { parts: [{ filename: 'output.txt', mediaType: 'text/plain' }] } },
    });
  });

  it('sendMessageStream: a Message answer is the one event of its stream (STREAM-MSG-001)', async () => {
    const events = await collect(
      client.sendMessageStream(SendMessageRequest.fromJSON(message('tck-message-response'))),
    );
    expect(events).toEqual([
      {
        message: expect.objectContaining({
          role: 'ROLE_AGENT',
          parts: [{ text: 'Direct message response' }],
        }),
      },
    ]);
  });

  it('resubscribeTask: the Task first, then the follow-up lifecycle to COMPLETED', async () => {
    const taskId = await inputRequiredTask();
    const events = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: taskId }));
    const first = await events.next();
    expect(StreamResponse.toJSON(first.value as StreamResponse)).toMatchObject({
      task: { id: taskId, status: { state: 'TASK_STATE_INPUT_REQUIRED' } },
    });
    const [rest] = await Promise.all([collect(events), completeWithFollowUp(taskId)]);
    expect(rest.at(-1)).toMatchObject({ statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } });
  });
});
