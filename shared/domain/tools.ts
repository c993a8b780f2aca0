import type { JsonObject, JsonValue } from './a2a.ts';

/**
 * Tools a profile may enable (config `tools: [{ name, requiresApproval }]`). A tool declares the
 * JSON schema of its arguments (what the model is shown) and whether it only reads; the registry
 * in shared/adapters/tools holds the implementations.
 */

/** Tool names as both Bedrock (toolSpec.name) and OpenAI (function.name) accept them. */
export const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * What calling a tool may change outside this server (I-EFFECT): nothing (`read-only`), the same
 * thing however often it is called (`idempotent`), or something a second call changes again
 * (`write`, also every effect nobody declared). Read-only and idempotent calls may be repeated;
 * a `write` call is fenced: the run records that it starts before it is sent.
 */
export type ToolEffect = 'read-only' | 'idempotent' | 'write';

export const toolEffects = ['read-only', 'idempotent', 'write'] as const satisfies readonly ToolEffect[];

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
  | {
      readonly ok: false;
      readonly error: string;
      /**
       * The request may have reached the tool (a deadline, a connection broken after sending): for
       * a `write` call the outcome is unknown and the call is never sent again (I-EFFECT).
       */
      readonly outcomeUnknown?: boolean;
    };

export interface ToolContext {
  readonly runId: string;
  /** The call's id in the run's transcript and the tool round it is in: together they name the step. */
  readonly callId?: string;
  readonly round?: number;
  readonly signal?: AbortSignal;
  /**
   * Delegation (docs/configuration.md `a2aAgents`): the remote task this call started before (a
   * run continued at it: read it, send nothing), and how to record the one it starts before it
   * waits for it. A rejection of `record` stops the call and the run's attempt.
   */
  readonly remoteTask?: {
    readonly recorded?: string;
    /** Resolves with where the remote task's push notifications should go, if anywhere. */
    record(remoteTaskId: string): Promise<{ readonly url: string; readonly token: string } | undefined>;
  };
}

export interface Tool extends ToolSpec {
  readonly effect: ToolEffect;
  /** It may destroy something (MCP `destructiveHint`): gated by an approval unless the profile says otherwise. */
  readonly destructive: boolean;
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

/**
 * The tools a profile reaches on remote servers (MCP), as that profile allows them: looked up
 * per run, since the servers' tool lists change (cached per container with a TTL). A server that
 * cannot be listed still yields the tools the profile allows, whose calls then fail with an error
 * the model reads.
 */
export interface RemoteToolSource {
  toolsFor(profile: RemoteToolGrants, signal?: AbortSignal): Promise<EnabledTool[]>;
}

/** Port: whether a profile's remote tools can be served now (checked when a profile is saved). */
export interface RemoteToolCheck {
  /** Each problem names the setting that causes it; none when every server answers with every tool. */
  problemsOf(grants: RemoteToolGrants, profileId: string): Promise<string[]>;
}

/** Port: whether a profile's remote A2A agents can be called now (checked when a profile is saved). */
export interface RemoteAgentCheck {
  /** Each problem names the setting that causes it; none when every agent's card is readable and usable. */
  problemsOf(grants: AgentGrants, profileId: string): Promise<string[]>;
}

/** Per remote server, the tools a profile allows, each with an optional effect and approval override. */
export type RemoteToolGrants = Readonly<
  Record<string, { readonly tools: Readonly<Record<string, RemoteToolGrant>> }>
>;

export interface RemoteToolGrant {
  readonly effect?: ToolEffect | 'destructive';
  readonly requiresApproval?: boolean;
}

/** Per remote A2A agent, how a profile may delegate to it (config `profiles.<id>.agents`). */
export type AgentGrants = Readonly<
  Record<string, { readonly description?: string; readonly requiresApproval: boolean }>
>;

/**
 * Remote A2A agents as tools (delegation, docs/configuration.md `a2aAgents`): one tool per agent a
 * profile may delegate to. An agent that cannot be reached still yields its tool, whose calls fail
 * with an error the model reads.
 */
export interface AgentToolSource {
  toolsFor(grants: AgentGrants, signal?: AbortSignal): Promise<EnabledTool[]>;
}

/**
 * The tasks this server's runs started at remote A2A agents (docs/configuration.md `a2aAgents`):
 * a cancel of the run that waits for one asks the agent to cancel it too (A2A CancelTask).
 */
export interface RemoteAgentTasks {
  /** Cancels the remote task a delegated call of `tool` (`a2a__<agent>`) started; rejects when the agent refused or was not reached. */
  cancel(tool: string, remoteTaskId: string): Promise<void>;
}
