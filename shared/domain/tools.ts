import type { JsonObject, JsonValue } from './a2a.ts';

/**
 * Tools a profile may enable (config `tools: [{ name, requiresApproval }]`). A tool declares the
 * JSON schema of its arguments (what the model is shown) and whether it only reads; the registry
 * in shared/adapters/tools holds the implementations.
 */

/** Tool names as both Bedrock (toolSpec.name) and OpenAI (function.name) accept them. */
export const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  /** JSON Schema (draft 2020-12 subset) of the arguments object. */
  readonly inputSchema: JsonObject;
  /** True when calling it changes nothing outside this server (safe to repeat). */
  readonly readOnly: boolean;
}

export type ToolOutput =
  | { readonly ok: true; readonly content: JsonValue }
  | { readonly ok: false; readonly error: string };

export interface ToolContext {
  readonly runId: string;
  readonly signal?: AbortSignal;
}

export interface Tool extends ToolSpec {
  /** Validates its own arguments; a bad argument is an `ok: false` output the model can read, not a throw. */
  invoke(args: JsonObject, context: ToolContext): Promise<ToolOutput>;
}

/** A tool as a profile enables it. */
export interface EnabledTool {
  readonly tool: Tool;
  readonly requiresApproval: boolean;
}

export interface ToolRegistry {
  get(name: string): Tool | undefined;
  names(): readonly string[];
}
