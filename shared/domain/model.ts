import type { JsonObject, Message, Part } from './a2a.ts';
import type { ToolEffect, ToolSpec } from './tools.ts';

/**
 * One model turn behind a port, in a provider-neutral transcript. The Bedrock Converse and
 * OpenAI chat-completions adapters translate it to their wire formats; the tool loop
 * (shared/app/runs/tool-loop-agent.ts) drives turns, tools and the round cap above it, so a fallback
 * model continues the same transcript and a finished tool call is never made twice.
 */

export interface ToolCall {
  /** The provider's call id (toolUseId / tool_call id), kept to pair the result. */
  readonly id: string;
  readonly name: string;
  readonly arguments: JsonObject;
}

export interface ToolResult {
  readonly callId: string;
  readonly name: string;
  /** The tool's output as JSON text. */
  readonly content: string;
  readonly isError: boolean;
}

export type TranscriptEntry =
  | { readonly role: 'user'; readonly text: string }
  | { readonly role: 'assistant'; readonly text: string; readonly toolCalls: readonly ToolCall[] }
  | { readonly role: 'tool'; readonly results: readonly ToolResult[] };

export interface ModelRequest {
  readonly system: string;
  readonly transcript: readonly TranscriptEntry[];
  readonly tools: readonly ToolSpec[];
  /** Aborts the HTTP request: cancellation and lease loss. Per-call timeouts are the adapter's. */
  readonly signal?: AbortSignal;
}

/** Why the model stopped: its answer is final, it asks for tools, or it ran out of tokens. */
export type StopReason = 'end' | 'tool_use' | 'max_tokens' | 'refused';

export interface ModelTurn {
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
  readonly stopReason: StopReason;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
}

/**
 * What a streamed model turn yields: its text as the model writes it, then the whole turn (tool
 * calls assembled from their deltas, usage, stop reason), always last.
 */
export type ModelStreamEvent =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'turn'; readonly turn: ModelTurn };

/**
 * An LLM endpoint. Throws ProviderUnavailableError for failures worth the next provider
 * (connection, timeout, HTTP 5xx, 429, throttling, a stream cut before its end); any other error
 * is a plain failure.
 *
 * One turn is asked in one of two ways, by one rule: `stream` when the run reports its answer as
 * it grows (a profile with progressive output), `complete` otherwise. Both end in the same
 * `ModelTurn` for the same answer; a streamed turn's text is its text deltas joined, and its
 * errors, mid-stream ones included, are classified as `complete`'s.
 */
export interface ChatModel {
  readonly providerId: string;
  complete(request: ModelRequest): Promise<ModelTurn>;
  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
}

/**
 * Consumes a streamed turn: hands each text delta to `onText` and returns the final turn. A
 * stream that ends without its turn is the provider's failure (`ended`), never a silent answer.
 */
export const consumeTurn = async (
  events: AsyncIterable<ModelStreamEvent>,
  onText: (text: string) => void,
  ended: () => Error,
): Promise<ModelTurn> => {
  for await (const event of events) {
    if (event.kind === 'turn') return event.turn;
    if (event.text !== '') onText(event.text);
  }
  throw ended();
};

/** How a part reaches a model: text as it is, data as JSON text, files described, not sent. */
export const partAsText = (part: Part): string => {
  if ('text' in part) return part.text;
  if ('data' in part) return JSON.stringify(part.data);
  const name = part.filename ?? ('url' in part ? part.url : 'unnamed');
  return `[file ${name}${part.mediaType ? ` (${part.mediaType})` : ''} attached; its content is not shown]`;
};

/** The task history as a transcript: user/agent messages, oldest first, empty ones left out. */
export const transcriptOf = (history: readonly Message[]): TranscriptEntry[] =>
  history.flatMap((message): TranscriptEntry[] => {
    const text = message.parts
      .map(partAsText)
      .filter((t) => t !== '')
      .join('\n');
    if (text === '') return [];
    return message.role === 'ROLE_USER'
      ? [{ role: 'user', text }]
      : [{ role: 'assistant', text, toolCalls: [] }];
  });

/**
 * What a run did beyond the task history: model turns and tool results, in order. The executor
 * owns one per run and hands it to every attempt, so a fallback continues where the failed
 * provider stopped and no tool call is repeated (non-idempotent tools are never retried).
 */
export interface AgentSession {
  readonly steps: TranscriptEntry[];
  /** Tool rounds used so far, across attempts (the round cap counts them all). */
  rounds: number;
  /**
   * A resumed run's turn that waited for an approval, with the operator's decision (I-APPROVAL):
   * the loop runs it first — approved calls run, denied ones are answered with the denial —
   * and only then calls the model again. Cleared once its results are in `steps`.
   */
  decided?: DecidedToolTurn;
}

/** A model turn whose tool calls wait for an operator (a tool with `requiresApproval`). */
export interface PendingToolTurn {
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
}

export type ApprovalVerdict = 'approved' | 'denied';

export interface DecidedToolTurn {
  readonly turn: PendingToolTurn;
  readonly verdict: ApprovalVerdict;
  /** The operator's reason for a denial, told to the model with it. */
  readonly reason?: string;
  /** Calls of the turn that already have their result (a run resumed at a delegated call): not made again. */
  readonly done?: readonly ToolResult[];
  /** The delegated call the run was waiting at, and its remote task: read again, never sent again (I-EFFECT). */
  readonly remoteTask?: RemoteTaskOfCall;
}

/** Where a remote task's push notifications wake the run that waits for it, and the token they carry. */
export interface DelegationCallback {
  readonly url: string;
  readonly token: string;
}

/** A delegated call's remote task (docs/configuration.md `a2aAgents`). */
export interface RemoteTaskOfCall {
  readonly callId: string;
  readonly remoteTaskId: string;
}

/**
 * A delegated call that started its remote task, with what the run needs to continue at it: the
 * session before the call's turn, the turn, and the results of the turn's calls before it.
 */
export interface DelegatedStep {
  readonly call: ToolCall;
  readonly remoteTaskId: string;
  readonly steps: readonly TranscriptEntry[];
  readonly rounds: number;
  readonly turn: PendingToolTurn;
  readonly done: readonly ToolResult[];
  /** The turn's approval decision, when it was a decided turn. */
  readonly verdict?: ApprovalVerdict;
  readonly reason?: string;
}

export const newAgentSession = (): AgentSession => ({ steps: [], rounds: 0 });

/** One step for the audit trail seam (`AgentRequest.onStep`). Content lives here, never in the journal. */
export type AgentStep =
  | {
      readonly kind: 'model-turn';
      readonly providerId: string;
      readonly durationMs: number;
      readonly stopReason: StopReason;
      readonly toolCalls: readonly string[];
      readonly inputTokens?: number;
      readonly outputTokens?: number;
    }
  | {
      readonly kind: 'tool-call';
      readonly providerId: string;
      readonly call: ToolCall;
      readonly result: ToolResult;
      readonly readOnly: boolean;
      /** What the call may have changed (I-EFFECT); `write` calls were fenced before they were sent. */
      readonly effect: ToolEffect;
      readonly durationMs: number;
    };
