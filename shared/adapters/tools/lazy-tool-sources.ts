import type { SQSClient } from '@aws-sdk/client-sqs';
import type { JsonObject } from '../../domain/a2a.ts';
import type { ChatModel, ModelRequest, ModelStreamEvent, ModelTurn } from '../../domain/model.ts';
import type { RunQueue } from '../../domain/ports.ts';
import type {
  AgentGrants,
  AgentToolSource,
  RemoteAgentTasks,
  RemoteToolGrants,
  RemoteToolSource,
  ToolRegistry,
} from '../../domain/tools.ts';
import type { WebhookPolicy } from '../../domain/webhook-address.ts';
import type { ScriptedPacing } from '../providers/scripted-tool-model.ts';
import type { A2aAgentSourceOptions } from './a2a-agent-source.ts';
import type { CredentialSources } from './mcp-credentials.ts';
import type { McpToolSourceOptions } from './mcp-tool-source.ts';

/** Set in deployed bundles (infra/bundling.ts): the tool sources' own bundle file beside the function's. */
declare const A2A_TOOL_SOURCES_FILE: string | undefined;

const modulePath = typeof A2A_TOOL_SOURCES_FILE === 'string' ? A2A_TOOL_SOURCES_FILE : './tool-sources.ts';

type ToolSources = typeof import('./tool-sources.ts');

let loaded: Promise<ToolSources> | undefined;

/**
 * The module of tool-sources.ts, imported once: a dynamic import the function bundler leaves as
 * it is (its path is not a literal), so no function bundle carries the MCP SDK.
 */
const load = (): Promise<ToolSources> => {
  loaded ??= import(modulePath) as Promise<ToolSources>;
  return loaded;
};

export type { CredentialSources };

/** The MCP tool source (mcp-tool-source.ts), created when a run first needs it. */
export class LazyMcpToolSource implements RemoteToolSource {
  private source: Promise<InstanceType<ToolSources['McpToolSource']>> | undefined;

  constructor(private readonly options: McpToolSourceOptions) {}

  private get(): Promise<InstanceType<ToolSources['McpToolSource']>> {
    this.source ??= load().then(({ McpToolSource }) => new McpToolSource(this.options));
    return this.source;
  }

  async toolsFor(grants: RemoteToolGrants, signal?: AbortSignal) {
    return (await this.get()).toolsFor(grants, signal);
  }

  async problemsOf(grants: RemoteToolGrants, profileId: string): Promise<string[]> {
    return (await this.get()).problemsOf(grants, profileId);
  }
}

/**
 * The remote A2A agents as tools (a2a-agent-source.ts), created when a run first needs them, and
 * their tasks, which a cancel cancels (CancelTask).
 */
export class LazyA2aAgentSource implements AgentToolSource, RemoteAgentTasks {
  private source: Promise<InstanceType<ToolSources['A2aAgentSource']>> | undefined;

  constructor(private readonly options: A2aAgentSourceOptions) {}

  private get(): Promise<InstanceType<ToolSources['A2aAgentSource']>> {
    this.source ??= load().then(({ A2aAgentSource }) => new A2aAgentSource(this.options));
    return this.source;
  }

  async toolsFor(grants: AgentGrants) {
    return (await this.get()).toolsFor(grants);
  }

  async cancel(tool: string, remoteTaskId: string): Promise<void> {
    return (await this.get()).cancel(tool, remoteTaskId);
  }
}

/** The scripted `call-tool` model (scripted-tool-model.ts), loaded on its first turn. */
export const lazyScriptedToolModel = (
  providerId: string,
  tool: string,
  args?: JsonObject,
  answerInput?: string,
  pacing?: ScriptedPacing,
): ChatModel => {
  const model = load().then(
    ({ ScriptedToolModel }) => new ScriptedToolModel(providerId, tool, args, answerInput, pacing),
  );
  return {
    providerId,
    complete: async (request: ModelRequest): Promise<ModelTurn> => (await model).complete(request),
    stream: async function* (request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      yield* (await model).stream(request);
    },
  };
};

/** The build's own tools (static-tool-registry.ts), loaded when a run first needs its tools. */
export const lazyToolRegistry = (outbound?: WebhookPolicy): (() => Promise<ToolRegistry>) => {
  let registry: Promise<ToolRegistry> | undefined;
  return () => {
    registry ??= load().then(({ createToolRegistry }) => createToolRegistry(outbound));
    return registry;
  };
};

/**
 * The run queue (sqs-run-queue.ts) from the same bundle file, for a function that queues runs
 * only after a delegated call (the executor, docs/reliability.md "Delegated calls"): its client
 * is created on the first message.
 */
export const lazyRunQueue = (sqs: SQSClient, queueUrl: string): RunQueue => {
  let queue: Promise<RunQueue> | undefined;
  return {
    enqueue: async (message) => {
      queue ??= load().then(({ SqsRunQueue }) => new SqsRunQueue(sqs, queueUrl));
      return (await queue).enqueue(message);
    },
  };
};

/** A run's delegation steps (shared/app/runs/run-delegations.ts), from the same bundle file. */
export const loadRunDelegations = async (): Promise<Pick<ToolSources, 'parkRun' | 'runDelegations'>> =>
  load();
