import {
  type Message as BedrockMessage,
  type BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
} from '@aws-sdk/client-bedrock-runtime';
import type { DocumentType } from '@smithy/types';
import type { JsonObject } from '../../domain/a2a.ts';
import { ProviderFailedError } from '../../domain/errors.ts';
import type { ChatModel, ModelRequest, ModelTurn, StopReason, TranscriptEntry } from '../../domain/model.ts';
import { classifyStatus, classifyThrown, unavailableErrorNames, withTimeout } from './provider-errors.ts';

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

  private classify(error: unknown, callerSignal?: AbortSignal): Error {
    const status = httpStatusOf(error);
    const name = error instanceof Error ? error.name : '';
    if (callerSignal?.aborted) return classifyThrown(this.providerId, error, callerSignal);
    if (unavailableErrorNames.has(name)) return classifyStatus(this.providerId, status ?? 503, error);
    // No status: the request never got an answer (connection refused or reset, our timeout).
    if (status === undefined) return classifyThrown(this.providerId, error);
    return classifyStatus(this.providerId, status, error);
  }
}

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

const isObject = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
