import type { JsonObject } from '../../domain/a2a.ts';
import { ProviderFailedError, ProviderUnavailableError } from '../../domain/errors.ts';
import type {
  ChatModel,
  ModelRequest,
  ModelStreamEvent,
  ModelTurn,
  StopReason,
  ToolCall,
  TranscriptEntry,
} from '../../domain/model.ts';
import * as z from '../../zod.ts';
import { classifyStatus, classifyThrown, toolArgumentsOf, withTimeout } from './provider-errors.ts';

export interface OpenAiProviderOptions {
  readonly providerId: string;
  /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1` (Ollama). */
  readonly baseUrl: string;
  readonly model: string;
  /** Sent as `Authorization: Bearer …` when set; a function is asked before each call (secret-api-key.ts). */
  readonly apiKey?: string | (() => Promise<string>);
  /** Per model call. @default 25_000 */
  readonly timeoutMs?: number;
}

/**
 * Any OpenAI-compatible `/chat/completions` endpoint (OpenAI, Ollama, vLLM) with function tools,
 * over plain fetch. No retries here: the provider chain's fallback is the retry.
 */
export class OpenAiProvider implements ChatModel {
  readonly providerId: string;
  private readonly url: string;
  private readonly timeoutMs: number;

  constructor(private readonly options: OpenAiProviderOptions) {
    this.providerId = options.providerId;
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.timeoutMs = options.timeoutMs ?? 25_000;
  }

  async complete(request: ModelRequest): Promise<ModelTurn> {
    let payload: unknown;
    try {
      const response = await this.post(request, false);
      payload = await response.json();
    } catch (error) {
      throw this.classify(error, request.signal);
    }
    const parsed = chatResponseSchema.safeParse(payload);
    if (!parsed.success) throw new ProviderFailedError(this.providerId, 200, { cause: parsed.error });
    return fromChatResponse(parsed.data);
  }

  /**
   * `stream: true`: the answer as server-sent events of chat-completion chunks, usage in the
   * last one (`stream_options.include_usage`). A body that ends before the model's finish
   * reason was sent is a cut stream: the provider is unavailable, as when it never answered.
   */
  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const assembler = new ChatStreamAssembler(this.providerId);
    try {
      const response = await this.post(request, true);
      if (response.body === null) throw new ProviderUnavailableError(this.providerId, response.status);
      for await (const data of sseData(response.body)) {
        if (data === '[DONE]') break;
        yield* assembler.add(JSON.parse(data) as unknown);
      }
    } catch (error) {
      throw this.classify(error, request.signal);
    }
    yield { kind: 'turn', turn: assembler.turn() };
  }

  /** Posts the request; a status other than 2xx is classified here, its body discarded. */
  private async post(request: ModelRequest, stream: boolean): Promise<Response> {
    const { apiKey } = this.options;
    const key = typeof apiKey === 'function' ? await apiKey() : apiKey;
    const response = await fetch(this.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: stream ? 'text/event-stream' : 'application/json',
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      body: JSON.stringify({
        ...toChatRequest(this.options.model, request),
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }),
      signal: withTimeout(this.timeoutMs, request.signal),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw classifyStatus(this.providerId, response.status);
    }
    return response;
  }

  private classify(error: unknown, callerSignal?: AbortSignal): Error {
    if (error instanceof ProviderUnavailableError || error instanceof ProviderFailedError) {
      // A stream the caller stopped while its chunk was being read: the caller's reason wins.
      return callerSignal?.aborted ? classifyThrown(this.providerId, error, callerSignal) : error;
    }
    if (error instanceof SyntaxError) return new ProviderFailedError(this.providerId, 200, { cause: error });
    return classifyThrown(this.providerId, error, callerSignal);
  }
}

/**
 * The `data` fields of a server-sent event stream (the WHATWG format: events end at a blank
 * line, a field's value after `data:` and one optional space, several `data` lines joined by a
 * line feed; comments and other fields are skipped). An event the body ends in, before its
 * blank line, is dropped, as the format says: it may be cut short.
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  let data: string[] = [];
  const lineOf = function* (line: string): Generator<string> {
    if (line === '') {
      if (data.length > 0) yield data.join('\n');
      data = [];
      return;
    }
    if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  };
  for await (const bytes of body) {
    buffered += decoder.decode(bytes, { stream: true });
    const lines = buffered.split(/\r\n|\r|\n/);
    buffered = lines.pop() ?? '';
    for (const line of lines) yield* lineOf(line);
  }
}

type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export const toChatRequest = (model: string, request: ModelRequest): JsonObject => {
  const messages: ChatMessage[] = [];
  if (request.system !== '') messages.push({ role: 'system', content: request.system });
  for (const entry of request.transcript) messages.push(...toChatMessages(entry));
  return {
    model,
    messages: messages as unknown as JsonObject[],
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((tool) => ({
            type: 'function',
            function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
          })),
        }
      : {}),
  };
};

const toChatMessages = (entry: TranscriptEntry): ChatMessage[] => {
  switch (entry.role) {
    case 'user':
      return [{ role: 'user', content: entry.text }];
    case 'assistant':
      return [
        {
          role: 'assistant',
          content: entry.text === '' ? null : entry.text,
          ...(entry.toolCalls.length > 0
            ? {
                tool_calls: entry.toolCalls.map((call) => ({
                  id: call.id,
                  type: 'function' as const,
                  function: { name: call.name, arguments: JSON.stringify(call.arguments) },
                })),
              }
            : {}),
        },
      ];
    case 'tool':
      return entry.results.map((result) => ({
        role: 'tool' as const,
        tool_call_id: result.callId,
        content: result.content,
      }));
  }
};

const chatResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.nullish(z.string()),
          tool_calls: z.nullish(
            z.array(
              z.object({
                id: z.nullish(z.string()),
                function: z.object({
                  name: z.string(),
                  // OpenAI sends a JSON string; some compatible servers send the object itself.
                  arguments: z.nullish(z.union([z.string(), z.record(z.string(), z.json())])),
                }),
              }),
            ),
          ),
        }),
        finish_reason: z.nullish(z.string()),
      }),
    )
    .check(z.minLength(1)),
  usage: z.nullish(
    z.object({ prompt_tokens: z.nullish(z.number()), completion_tokens: z.nullish(z.number()) }),
  ),
});

const chatChunkSchema = z.object({
  choices: z.nullish(
    z.array(
      z.object({
        index: z.nullish(z.number()),
        delta: z.nullish(
          z.object({
            content: z.nullish(z.string()),
            tool_calls: z.nullish(
              z.array(
                z.object({
                  index: z.nullish(z.number()),
                  id: z.nullish(z.string()),
                  function: z.nullish(
                    z.object({ name: z.nullish(z.string()), arguments: z.nullish(z.string()) }),
                  ),
                }),
              ),
            ),
          }),
        ),
        finish_reason: z.nullish(z.string()),
      }),
    ),
  ),
  usage: chatResponseSchema.shape.usage,
  error: z.nullish(z.unknown()),
});

interface PartialToolCall {
  id?: string;
  name: string;
  arguments: string;
}

/**
 * Builds one turn from chat-completion chunks: content deltas are yielded as they come; tool
 * calls are keyed by their `index` (a call's id and name arrive in its first delta, its JSON
 * arguments in pieces over the following ones) and parsed once the turn ends.
 */
export class ChatStreamAssembler {
  private text = '';
  private readonly calls = new Map<number, PartialToolCall>();
  private finishReason: string | undefined;
  private usage: { inputTokens?: number; outputTokens?: number } = {};

  constructor(private readonly providerId: string) {}

  *add(payload: unknown): Generator<ModelStreamEvent> {
    const parsed = chatChunkSchema.safeParse(payload);
    if (!parsed.success) throw new ProviderFailedError(this.providerId, 200, { cause: parsed.error });
    const chunk = parsed.data;
    // An error sent in the stream after its 200: the server broke the answer off.
    if (chunk.error != null) throw new ProviderUnavailableError(this.providerId, undefined);
    if (chunk.usage != null) {
      this.usage = {
        ...(chunk.usage.prompt_tokens != null ? { inputTokens: chunk.usage.prompt_tokens } : {}),
        ...(chunk.usage.completion_tokens != null ? { outputTokens: chunk.usage.completion_tokens } : {}),
      };
    }
    // One choice is asked for (no `n`): choice 0 is the answer.
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice === undefined) return;
    for (const delta of choice.delta?.tool_calls ?? []) {
      const index = delta.index ?? 0;
      const call = this.calls.get(index) ?? { name: '', arguments: '' };
      if (delta.id) call.id = delta.id;
      call.name += delta.function?.name ?? '';
      call.arguments += delta.function?.arguments ?? '';
      this.calls.set(index, call);
    }
    if (choice.finish_reason != null) this.finishReason = choice.finish_reason;
    const text = choice.delta?.content ?? '';
    if (text !== '') {
      this.text += text;
      yield { kind: 'text', text };
    }
  }

  /** The turn, once the stream ended; a stream without its finish reason was cut. */
  turn(): ModelTurn {
    if (this.finishReason === undefined) throw new ProviderUnavailableError(this.providerId, undefined);
    const toolCalls: ToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        id: call.id ?? `call_${index}`,
        name: call.name,
        arguments: toolArgumentsOf(call.arguments),
      }));
    return {
      text: this.text,
      toolCalls,
      stopReason: toolCalls.length > 0 ? 'tool_use' : (stopReasons[this.finishReason] ?? 'end'),
      ...this.usage,
    };
  }
}

const stopReasons: Readonly<Record<string, StopReason>> = {
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  length: 'max_tokens',
  content_filter: 'refused',
};

const fromChatResponse = (response: z.infer<typeof chatResponseSchema>): ModelTurn => {
  // min(1) above guarantees the first choice.
  const choice = response.choices[0] as (typeof response.choices)[number];
  const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).map((call, index) => ({
    id: call.id ?? `call_${index}`,
    name: call.function.name,
    arguments: toolArgumentsOf(call.function.arguments),
  }));
  return {
    text: choice.message.content ?? '',
    toolCalls,
    stopReason: toolCalls.length > 0 ? 'tool_use' : (stopReasons[choice.finish_reason ?? ''] ?? 'end'),
    ...(response.usage?.prompt_tokens != null ? { inputTokens: response.usage.prompt_tokens } : {}),
    ...(response.usage?.completion_tokens != null ? { outputTokens: response.usage.completion_tokens } : {}),
  };
};
