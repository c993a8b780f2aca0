import type { JsonObject } from '../../domain/a2a.ts';
import { ProviderFailedError, ProviderUnavailableError } from '../../domain/errors.ts';
import type {
  ChatModel,
  ModelRequest,
  ModelTurn,
  StopReason,
  ToolCall,
  TranscriptEntry,
} from '../../domain/model.ts';
import * as z from '../../zod.ts';
import { classifyStatus, classifyThrown, withTimeout } from './provider-errors.ts';

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
    const { apiKey } = this.options;
    const key = typeof apiKey === 'function' ? await apiKey() : apiKey;
    const signal = withTimeout(this.timeoutMs, request.signal);
    let payload: unknown;
    try {
      const response = await fetch(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
        body: JSON.stringify(toChatRequest(this.options.model, request)),
        signal,
      });
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw classifyStatus(this.providerId, response.status);
      }
      payload = await response.json();
    } catch (error) {
      if (error instanceof ProviderUnavailableError || error instanceof ProviderFailedError) throw error;
      if (error instanceof SyntaxError) throw new ProviderFailedError(this.providerId, 200, { cause: error });
      throw classifyThrown(this.providerId, error, request.signal);
    }
    const parsed = chatResponseSchema.safeParse(payload);
    if (!parsed.success) throw new ProviderFailedError(this.providerId, 200, { cause: parsed.error });
    return fromChatResponse(parsed.data);
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

const parseArguments = (raw: string | JsonObject | null | undefined): JsonObject => {
  if (raw === null || raw === undefined || raw === '') return {};
  if (typeof raw !== 'string') return raw;
  try {
    const value: unknown = JSON.parse(raw);
    // A malformed argument string reaches the tool as {}; its schema check tells the model.
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
  } catch {
    return {};
  }
};

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
    arguments: parseArguments(call.function.arguments),
  }));
  return {
    text: choice.message.content ?? '',
    toolCalls,
    stopReason: toolCalls.length > 0 ? 'tool_use' : (stopReasons[choice.finish_reason ?? ''] ?? 'end'),
    ...(response.usage?.prompt_tokens != null ? { inputTokens: response.usage.prompt_tokens } : {}),
    ...(response.usage?.completion_tokens != null ? { outputTokens: response.usage.completion_tokens } : {}),
  };
};
