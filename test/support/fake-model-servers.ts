import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  constants,
  createServer as createH2cServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/core/event-streams';

/**
 * Local HTTP servers that speak the OpenAI chat-completions and the Bedrock Converse wire
 * formats, so the real adapters (plain fetch, the real BedrockRuntimeClient) are tested over
 * real HTTP. Each request is counted and kept; a script decides each answer. The Bedrock
 * runtime client speaks HTTP/2 by default (NodeHttp2Handler), so its server is h2c.
 */

export interface ScriptedReply {
  readonly status?: number;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** Answer only when this promise resolves (a slow or hung model); the socket may close first. */
  readonly hold?: Promise<void>;
  /**
   * A streamed answer instead of `body`: each piece written as it is, in order, a promise
   * waited for before the next piece (a model that is still writing). The response ends after
   * the last piece, or, with `cut`, its connection (HTTP/1.1) or stream (HTTP/2) is reset there.
   */
  readonly stream?: ReadonlyArray<string | Uint8Array | Promise<void>>;
  readonly cut?: boolean;
}

export interface ReceivedRequest {
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Record<string, unknown>;
}

export type Script = (request: ReceivedRequest, index: number) => ScriptedReply | Promise<ScriptedReply>;

export interface FakeModelServer {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Requests whose client went away before the answer (timeouts, aborts). */
  readonly closedEarly: () => number;
  script: Script;
  /** Resolves when the server has received `count` requests in total. */
  received(count: number): Promise<void>;
  stop(): Promise<void>;
}

const readBody = async (request: AsyncIterable<unknown>): Promise<Record<string, unknown>> => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
};

export const startFakeModelServer = async (
  script: Script,
  protocol: 'http1' | 'h2c' = 'http1',
): Promise<FakeModelServer> => {
  const requests: ReceivedRequest[] = [];
  const waiters: Array<{ count: number; wake: () => void }> = [];
  let closedEarly = 0;
  const closers = new Set<{ destroy(): void }>();
  const state = { script };
  const handle = (
    request: IncomingMessage | Http2ServerRequest,
    response: ServerResponse | Http2ServerResponse,
  ): void => {
    void (async () => {
      const received: ReceivedRequest = {
        path: request.url ?? '',
        headers: request.headers,
        body: await readBody(request),
      };
      const index = requests.push(received) - 1;
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.wake();
      }
      let gone = false;
      // Counted when the client goes, not when the held answer is released: a test can wait for it.
      response.on('close', () => {
        if (response.writableEnded) return;
        gone = true;
        closedEarly++;
      });
      const reply = await state.script(received, index);
      if (reply.hold) await reply.hold;
      if (gone || response.destroyed) return;
      response.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      if (reply.stream !== undefined) {
        for (const piece of reply.stream) {
          if (piece instanceof Promise) await piece;
          // Each piece flushed before the next step, so a cut after it comes after its bytes.
          else if (!gone)
            await new Promise<void>((resolve) => (response as ServerResponse).write(piece, () => resolve()));
        }
        if (reply.cut) {
          if ('stream' in response) response.stream.close(constants.NGHTTP2_INTERNAL_ERROR);
          else response.socket?.destroy();
        } else response.end();
        return;
      }
      response.end(reply.body === undefined ? '' : JSON.stringify(reply.body));
    })().catch(() => {
      if (!response.headersSent) response.writeHead(500).end();
    });
  };
  const server = protocol === 'h2c' ? createH2cServer(handle) : createServer(handle);
  server.on(
    protocol === 'h2c' ? 'session' : 'connection',
    (closer: { destroy(): void; on(e: 'close', f: () => void): void }) => {
      closers.add(closer);
      closer.on('close', () => closers.delete(closer));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    closedEarly: () => closedEarly,
    get script() {
      return state.script;
    },
    set script(next: Script) {
      state.script = next;
    },
    received: (count) =>
      requests.length >= count
        ? Promise.resolve()
        : new Promise<void>((wake) => {
            waiters.push({ count, wake });
          }),
    stop: async () => {
      for (const closer of closers) closer.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

// ---- OpenAI chat completions

export const openAiText = (
  text: string,
  usage = { prompt_tokens: 11, completion_tokens: 5 },
): ScriptedReply => ({
  body: {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  },
});

export const openAiToolCall = (id: string, name: string, args: Record<string, unknown>): ScriptedReply => ({
  body: {
    id: 'chatcmpl-2',
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 20, completion_tokens: 7, total_tokens: 27 },
  },
});

export const openAiError = (status: number, message = 'error'): ScriptedReply => ({
  status,
  body: { error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error' } },
});

/** Server-sent events, one per payload, then `data: [DONE]`, as OpenAI ends a stream. */
export const sseEvents = (payloads: readonly unknown[], done = true): string[] => [
  ...payloads.map((payload) => `data: ${JSON.stringify(payload)}\n\n`),
  ...(done ? ['data: [DONE]\n\n'] : []),
];

/** A chat-completion chunk of choice 0. */
export const openAiChunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: 'chatcmpl-s',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});

/** The usage chunk `stream_options.include_usage` adds at the end (no choices). */
export const openAiUsageChunk = (usage = { prompt_tokens: 11, completion_tokens: 5 }) => ({
  id: 'chatcmpl-s',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
});

/** A streamed text answer: the role, one chunk per piece, the finish reason, the usage. */
export const openAiStreamText = (
  pieces: readonly string[],
  usage?: { prompt_tokens: number; completion_tokens: number },
): string[] =>
  sseEvents([
    openAiChunk({ role: 'assistant', content: '' }),
    ...pieces.map((content) => openAiChunk({ content })),
    openAiChunk({}, 'stop'),
    openAiUsageChunk(usage),
  ]);

const sseHeaders = { 'content-type': 'text/event-stream' };

/** A streamed reply of OpenAI server-sent events (pieces as `ScriptedReply.stream`). */
export const openAiStream = (
  pieces: ReadonlyArray<string | Promise<void>>,
  options: { readonly cut?: boolean } = {},
): ScriptedReply => ({ headers: sseHeaders, stream: pieces, ...options });

type OpenAiMessage = { role: string; content?: string | null; tool_call_id?: string };

/** A model that asks the calculator for 6 × 7 once, then answers with the tool's result. */
export const openAiCalculatorScript: Script = (request) => {
  const messages = (request.body.messages ?? []) as OpenAiMessage[];
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const { result } = JSON.parse(last.content ?? '{}') as { result?: number };
    return openAiText(`The product is ${result}.`);
  }
  return openAiToolCall('call_calc_1', 'calculator', { operation: 'multiply', a: 6, b: 7 });
};

// ---- Bedrock Converse (restJson1: POST /model/{modelId}/converse)

export const bedrockText = (text: string, usage = { inputTokens: 13, outputTokens: 6 }): ScriptedReply => ({
  body: {
    output: { message: { role: 'assistant', content: [{ text }] } },
    stopReason: 'end_turn',
    usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens },
    metrics: { latencyMs: 5 },
  },
});

export const bedrockToolUse = (
  toolUseId: string,
  name: string,
  input: Record<string, unknown>,
): ScriptedReply => ({
  body: {
    output: {
      message: {
        role: 'assistant',
        content: [{ text: 'Let me compute that.' }, { toolUse: { toolUseId, name, input } }],
      },
    },
    stopReason: 'tool_use',
    usage: { inputTokens: 21, outputTokens: 9, totalTokens: 30 },
    metrics: { latencyMs: 5 },
  },
});

/** A Bedrock service error as the Converse endpoint sends it (x-amzn-ErrorType names the shape). */
export const bedrockError = (status: number, type: string, message = 'error'): ScriptedReply => ({
  status,
  headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` },
  body: { message },
});

type BedrockBlock = { text?: string; toolResult?: { toolUseId: string; content: Array<{ text?: string }> } };

/** The calculator conversation in Converse shapes. */
export const bedrockCalculatorScript: Script = (request) => {
  const messages = (request.body.messages ?? []) as Array<{ role: string; content: BedrockBlock[] }>;
  const toolResult = messages.at(-1)?.content.find((block) => block.toolResult !== undefined)?.toolResult;
  if (toolResult) {
    const { result } = JSON.parse(toolResult.content[0]?.text ?? '{}') as { result?: number };
    return bedrockText(`The product is ${result}.`);
  }
  return bedrockToolUse('tooluse_calc_1', 'calculator', { operation: 'multiply', a: 6, b: 7 });
};

// ---- Bedrock ConverseStream (POST /model/{modelId}/converse-stream, application/vnd.amazon.eventstream)

const eventStreamCodec = new EventStreamCodec(
  (bytes: Uint8Array) => new TextDecoder().decode(bytes),
  (text: string) => new TextEncoder().encode(text),
);

const stringHeader = (value: string) => ({ type: 'string' as const, value });

/** One ConverseStream event in the binary event-stream encoding the SDK decodes. */
export const bedrockEvent = (type: string, body: unknown): Uint8Array =>
  eventStreamCodec.encode({
    headers: {
      ':message-type': stringHeader('event'),
      ':event-type': stringHeader(type),
      ':content-type': stringHeader('application/json'),
    },
    body: new TextEncoder().encode(JSON.stringify(body)),
  });

/** An exception event mid-stream, e.g. `throttlingException` (the SDK throws it as ThrottlingException). */
export const bedrockExceptionEvent = (type: string, message = 'error'): Uint8Array =>
  eventStreamCodec.encode({
    headers: {
      ':message-type': stringHeader('exception'),
      ':exception-type': stringHeader(type),
      ':content-type': stringHeader('application/json'),
    },
    body: new TextEncoder().encode(JSON.stringify({ message })),
  });

/** The events of a streamed text answer: one delta per piece of one text block, stop, usage. */
export const bedrockStreamTextEvents = (
  pieces: readonly string[],
  usage = { inputTokens: 13, outputTokens: 6 },
) => [
  bedrockEvent('messageStart', { role: 'assistant' }),
  ...pieces.map((text) => bedrockEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
  bedrockEvent('contentBlockStop', { contentBlockIndex: 0 }),
  bedrockEvent('messageStop', { stopReason: 'end_turn' }),
  bedrockEvent('metadata', {
    usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens },
    metrics: { latencyMs: 5 },
  }),
];

/** A streamed reply of ConverseStream events (pieces as `ScriptedReply.stream`). */
export const bedrockStream = (
  pieces: ReadonlyArray<Uint8Array | Promise<void>>,
  options: { readonly cut?: boolean } = {},
): ScriptedReply => ({
  headers: { 'content-type': 'application/vnd.amazon.eventstream' },
  stream: pieces,
  ...options,
});
