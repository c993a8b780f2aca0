import {
  type Message as BedrockMessage,
  type BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
  ConverseStreamCommand,
  type ConverseStreamOutput,
} from '@aws-sdk/client-bedrock-runtime';
import type { DocumentType } from '@smithy/types';
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
import {
  classifyStatus,
  classifyThrown,
  toolArgumentsOf,
  unavailableErrorNames,
  withTimeout,
} from './provider-errors.ts';

export interface BedrockProviderOptions {
  readonly providerId: string;
  /** A model id, inference profile id or ARN. */
  readonly model: string;
  /** Built with `maxAttempts: 1`: the provider chain's fallback is the retry. */
  readonly client: BedrockRuntimeClient;
  /** Per model call. @default 25_000 */
  readonly timeoutMs?: number;
}

/**
 * Amazon Bedrock through the Converse API, tool use included (toolConfig, toolUse/toolResult
 * blocks, stopReason). The endpoint comes from the SDK's own configuration
 * (AWS_ENDPOINT_URL_BEDROCK_RUNTIME locally and in tests).
 */
export class BedrockProvider implements ChatModel {
  readonly providerId: string;
  private readonly timeoutMs: number;

  constructor(private readonly options: BedrockProviderOptions) {
    this.providerId = options.providerId;
    this.timeoutMs = options.timeoutMs ?? 25_000;
  }

  async complete(request: ModelRequest): Promise<ModelTurn> {
    let output: ConverseCommandOutput;
    try {
      output = await this.options.client.send(
        new ConverseCommand(toConverseInput(this.options.model, request)),
        {
          abortSignal: withTimeout(this.timeoutMs, request.signal),
        },
      );
    } catch (error) {
      throw this.classify(error, request.signal);
    }
    return fromConverseOutput(this.providerId, output);
  }

  /**
   * ConverseStream: the answer as an event stream over the response (HTTP/2), mapped by
   * `converseStreamTurn`. An exception event mid-stream (throttling, a model stream error) or a
   * body cut before `messageStop` is classified as a failed call of `complete` would be.
   */
  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    try {
      const output = await this.options.client.send(
        new ConverseStreamCommand(toConverseInput(this.options.model, request)),
        { abortSignal: withTimeout(this.timeoutMs, request.signal) },
      );
      if (output.stream === undefined) throw new ProviderFailedError(this.providerId, 200);
      yield* converseStreamTurn(this.providerId, output.stream);
    } catch (error) {
      throw this.classify(error, request.signal);
    }
  }

  private classify(error: unknown, callerSignal?: AbortSignal): Error {
    if (callerSignal?.aborted) return classifyThrown(this.providerId, error, callerSignal);
    if (error instanceof ProviderUnavailableError || error instanceof ProviderFailedError) return error;
    const name = error instanceof Error ? error.name : '';
    if (unavailableErrorNames.has(name)) {
      return new ProviderUnavailableError(this.providerId, httpStatusOf(error) ?? 503, { cause: error });
    }
    // An exception event of a stream carries no HTTP status: its fault says whose it is.
    const status = httpStatusOf(error) ?? (faultOf(error) === 'client' ? 400 : undefined);
    // No status: the request never got an answer (connection refused or reset, our timeout).
    if (status === undefined) return classifyThrown(this.providerId, error);
    return classifyStatus(this.providerId, status, error);
  }
}

const faultOf = (error: unknown): unknown =>
  typeof error === 'object' && error !== null && '$fault' in error ? error.$fault : undefined;

const httpStatusOf = (error: unknown): number | undefined => {
  if (typeof error !== 'object' || error === null || !('$metadata' in error)) return undefined;
  const metadata = (error as { $metadata?: { httpStatusCode?: number } }).$metadata;
  return metadata?.httpStatusCode;
};

/** Bedrock ids allow [a-zA-Z0-9_-]{1,64}; ids from another provider (after a fallback) are mapped into it. */
const toolUseId = (id: string): string => id.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64) || 'call';

export const toConverseInput = (model: string, request: ModelRequest): ConverseCommandInput => ({
  modelId: model,
  messages: toBedrockMessages(request.transcript),
  ...(request.system !== '' ? { system: [{ text: request.system }] } : {}),
  ...(request.tools.length > 0
    ? {
        toolConfig: {
          tools: request.tools.map((tool) => ({
            toolSpec: {
              name: tool.name,
              description: tool.description,
              inputSchema: { json: tool.inputSchema as DocumentType },
            },
          })),
        },
      }
    : {}),
});

/** Converse wants user and assistant turns alternating: consecutive entries of one role are merged. */
const toBedrockMessages = (transcript: readonly TranscriptEntry[]): BedrockMessage[] => {
  const messages: BedrockMessage[] = [];
  for (const entry of transcript) {
    const role = entry.role === 'assistant' ? 'assistant' : 'user';
    const content = toContentBlocks(entry);
    if (content.length === 0) continue;
    const last = messages.at(-1);
    if (last?.role === role) last.content = [...(last.content ?? []), ...content];
    else messages.push({ role, content });
  }
  return messages;
};

const toContentBlocks = (entry: TranscriptEntry): ContentBlock[] => {
  switch (entry.role) {
    case 'user':
      return entry.text === '' ? [] : [{ text: entry.text }];
    case 'assistant':
      return [
        ...(entry.text === '' ? [] : [{ text: entry.text }]),
        ...entry.toolCalls.map(
          (call): ContentBlock => ({
            toolUse: {
              toolUseId: toolUseId(call.id),
              name: call.name,
              input: call.arguments as DocumentType,
            },
          }),
        ),
      ];
    case 'tool':
      return entry.results.map(
        (result): ContentBlock => ({
          toolResult: {
            toolUseId: toolUseId(result.callId),
            content: [{ text: result.content }],
            status: result.isError ? 'error' : 'success',
          },
        }),
      );
  }
};

const stopReasons: Readonly<Record<string, StopReason>> = {
  end_turn: 'end',
  stop_sequence: 'end',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
  model_context_window_exceeded: 'max_tokens',
  guardrail_intervened: 'refused',
  content_filtered: 'refused',
};

const fromConverseOutput = (providerId: string, output: ConverseCommandOutput): ModelTurn => {
  const message = output.output && 'message' in output.output ? output.output.message : undefined;
  if (message === undefined) throw new ProviderFailedError(providerId, 200);
  const blocks = message.content ?? [];
  const text = blocks
    .map((block) => block.text ?? '')
    .filter((t) => t !== '')
    .join('\n');
  const toolCalls = blocks.flatMap((block) =>
    block.toolUse?.toolUseId && block.toolUse.name
      ? [
          {
            id: block.toolUse.toolUseId,
            name: block.toolUse.name,
            arguments: isObject(block.toolUse.input) ? (block.toolUse.input as JsonObject) : {},
          },
        ]
      : [],
  );
  const stopReason = stopReasons[output.stopReason ?? ''];
  // malformed_model_output / malformed_tool_use: the model's answer is unusable here.
  if (stopReason === undefined) throw new ProviderFailedError(providerId, 200);
  return {
    text,
    toolCalls,
    stopReason: toolCalls.length > 0 ? 'tool_use' : stopReason,
    ...(output.usage?.inputTokens !== undefined ? { inputTokens: output.usage.inputTokens } : {}),
    ...(output.usage?.outputTokens !== undefined ? { outputTokens: output.usage.outputTokens } : {}),
  };
};

/** The exception members of a ConverseStream event, by the error name the SDK throws them with. */
const streamExceptions: ReadonlyArray<readonly [keyof ConverseStreamOutput, string]> = [
  ['internalServerException', 'InternalServerException'],
  ['modelStreamErrorException', 'ModelStreamErrorException'],
  ['serviceUnavailableException', 'ServiceUnavailableException'],
  ['throttlingException', 'ThrottlingException'],
  ['validationException', 'ValidationException'],
];

/**
 * One turn from ConverseStream events, as `fromConverseOutput` builds it from Converse: text
 * deltas are yielded as they come (a line feed between two text blocks, as Converse's text
 * blocks are joined); a `toolUse` block's id and name come with its `contentBlockStart`, its
 * input as JSON text in pieces over its deltas; the stop reason with `messageStop`, usage with
 * the `metadata` after it. A stream that ends before `messageStop` was cut: unavailable. The SDK
 * throws exception events itself; one handed in as a member is thrown under its SDK name.
 */
export async function* converseStreamTurn(
  providerId: string,
  events: AsyncIterable<ConverseStreamOutput>,
): AsyncGenerator<ModelStreamEvent> {
  let text = '';
  let textBlock: number | undefined;
  const tools = new Map<number, { id: string; name: string; input: string }>();
  let stopReason: string | undefined;
  let usage: { inputTokens?: number; outputTokens?: number } = {};
  for await (const event of events) {
    for (const [member, name] of streamExceptions) {
      if (event[member] !== undefined) {
        throw Object.assign(new Error(`Bedrock stream exception ${name}`), {
          name,
          $fault: member === 'validationException' ? 'client' : 'server',
        });
      }
    }
    if (event.contentBlockStart?.start?.toolUse) {
      const { toolUseId, name } = event.contentBlockStart.start.toolUse;
      tools.set(event.contentBlockStart.contentBlockIndex ?? 0, {
        id: toolUseId ?? '',
        name: name ?? '',
        input: '',
      });
    }
    const delta = event.contentBlockDelta;
    if (delta?.delta?.text !== undefined && delta.delta.text !== '') {
      const index = delta.contentBlockIndex ?? 0;
      const piece = text !== '' && textBlock !== index ? `\n${delta.delta.text}` : delta.delta.text;
      textBlock = index;
      text += piece;
      yield { kind: 'text', text: piece };
    }
    if (delta?.delta?.toolUse?.input !== undefined) {
      const tool = tools.get(delta.contentBlockIndex ?? 0);
      if (tool) tool.input += delta.delta.toolUse.input;
    }
    if (event.messageStop) stopReason = event.messageStop.stopReason ?? '';
    if (event.metadata?.usage) {
      usage = {
        ...(event.metadata.usage.inputTokens !== undefined
          ? { inputTokens: event.metadata.usage.inputTokens }
          : {}),
        ...(event.metadata.usage.outputTokens !== undefined
          ? { outputTokens: event.metadata.usage.outputTokens }
          : {}),
      };
    }
  }
  if (stopReason === undefined) throw new ProviderUnavailableError(providerId, undefined);
  const mapped = stopReasons[stopReason];
  // malformed_model_output / malformed_tool_use: the model's answer is unusable here.
  if (mapped === undefined) throw new ProviderFailedError(providerId, 200);
  const toolCalls: ToolCall[] = [...tools.entries()]
    .sort(([a], [b]) => a - b)
    .flatMap(([, tool]) =>
      tool.id && tool.name ? [{ id: tool.id, name: tool.name, arguments: toolArgumentsOf(tool.input) }] : [],
    );
  yield {
    kind: 'turn',
    turn: { text, toolCalls, stopReason: toolCalls.length > 0 ? 'tool_use' : mapped, ...usage },
  };
}

const isObject = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
