import { createHash } from 'node:crypto';
import {
  CancelTaskRequest,
  GetTaskRequest,
  Message,
  SendMessageRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  createAuthenticatingFetchWithRetry,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { A2AError } from '@a2a-js/sdk/errors';
import { type A2aAgentConfig, agentToolName } from '../../config/config.ts';
import { interruptedStates, type JsonObject, type JsonValue, terminalStates } from '../../domain/a2a.ts';
import { RemoteTaskPendingError } from '../../domain/errors.ts';
import type {
  AgentGrants,
  AgentToolSource,
  EnabledTool,
  RemoteAgentTasks,
  ToolContext,
  ToolOutput,
} from '../../domain/tools.ts';
import type { WebhookPolicy } from '../../domain/webhook-address.ts';
import type { Resolver } from '../ssrf-guard.ts';
import { createGuardedFetch, type GuardedFetch } from './guarded-fetch.ts';
import { type CredentialSources, serverHeaders } from './mcp-credentials.ts';

export interface A2aAgentSourceOptions {
  readonly agents: Readonly<Record<string, A2aAgentConfig>>;
  /** The webhooks' outbound policy (docs/security.md): every request goes through the SSRF guard. */
  readonly policy: WebhookPolicy;
  readonly credentials: CredentialSources;
  readonly resolve?: Resolver;
  readonly now?: () => number;
  /** Between two reads of a remote task that is still working. */
  readonly pollMs?: number;
}

/** How long a container reuses an agent's card (and the client made from it). */
const cardTtlMs = 300_000;

/** Remote task states after which it changes no more, or waits for its caller. */
const settledStates = new Set<string>([...terminalStates, ...interruptedStates]);

/**
 * The messageId of a delegated message: derived from the run, the tool round and the call, so the
 * same step sends the same message id however often it is retried (I-EFFECT).
 */
export const delegatedMessageId = (runId: string, round: number, callId: string): string =>
  `dlg-${createHash('sha256').update(`${runId}\n${round}\n${callId}`).digest('hex').slice(0, 32)}`;

/**
 * Remote A2A agents as tools (delegation, docs/configuration.md `a2aAgents`): one tool per agent a
 * profile may delegate to, `a2a__<agent>`, through the official `@a2a-js/sdk` client. The card is
 * read from its URL and kept per container; every request goes through the SSRF guard with the
 * agent's headers (guarded-fetch.ts). A call sends one message (its messageId derived from the
 * run and the step), then reads the remote task until it settles or the agent's `waitSeconds`
 * pass, and answers with the task's artifacts or its status message; a task that asks for input
 * is answered by calling the tool again with its `taskId`.
 */
export class A2aAgentSource implements AgentToolSource, RemoteAgentTasks {
  private readonly clients = new Map<string, { readonly until: number; readonly client: Promise<Client> }>();
  private readonly fetches = new Map<string, GuardedFetch>();
  private readonly now: () => number;

  constructor(private readonly options: A2aAgentSourceOptions) {
    this.now = options.now ?? Date.now;
  }

  async toolsFor(grants: AgentGrants): Promise<EnabledTool[]> {
    return Object.entries(grants).map(([agentId, grant]) => ({
      requiresApproval: grant.requiresApproval,
      tool: {
        name: agentToolName(agentId),
        description:
          grant.description ??
          `Sends a message to the remote agent "${agentId}" and returns its answer (its task's artifacts or status message). When the agent asks for input, answer it by calling this tool again with the taskId it returned; with a taskId and no message, reads that task's state.`,
        inputSchema: {
          type: 'object',
          properties: {
            message: { type: 'string', description: 'The text to send to the agent.' },
            taskId: {
              type: 'string',
              description: 'The agent task to continue or read (from an earlier answer of this tool).',
            },
          },
          additionalProperties: false,
        },
        readOnly: false,
        // A message to another agent may change something there; the derived messageId lets an
        // A2A server that deduplicates retries answer a repeated step from its first task.
        effect: 'write',
        destructive: false,
        invoke: (args, context) => this.delegate(agentId, args, context),
      },
    }));
  }

  /**
   * Whether a profile's agents can be called now (the admin command that saves profiles,
   * docs/configuration.md "Saved profiles"): each agent's card read from its URL through the
   * guarded fetch (its headers, the SSRF guard, the agent's `timeoutMs`), a valid A2A card, with
   * an interface the client speaks. Each problem names the setting.
   */
  async problemsOf(grants: AgentGrants, profileId: string): Promise<string[]> {
    const problems = await Promise.all(
      Object.keys(grants).map(async (agentId) => {
        const problem = await this.cardProblemOf(agentId);
        return problem === undefined ? [] : [`profiles.${profileId}.agents.${agentId}: ${problem}`];
      }),
    );
    return problems.flat();
  }

  private async cardProblemOf(agentId: string): Promise<string | undefined> {
    const agent = this.options.agents[agentId];
    if (agent === undefined) return `no A2A agent "${agentId}" is configured`;
    const where = `the agent card at ${agent.cardUrl}`;
    let text: string;
    try {
      const response = await this.fetchOf(agentId, agent)(agent.cardUrl, {
        headers: { accept: 'application/json', 'A2A-Version': '1.0' },
      });
      text = await response.text();
      if (!response.ok) return `${where} could not be read (HTTP ${response.status})`;
    } catch (error) {
      return `${where} could not be read (${describe(error)})`;
    }
    let card: unknown;
    try {
      card = JSON.parse(text);
    } catch {
      return `${where} is not JSON`;
    }
    return cardShapeProblemOf(card, where);
  }

  /**
   * Cancels the task a delegated call of `tool` started (A2A CancelTask), through the same
   * client and guard as the call, within the agent's `timeoutMs`. An agent that answers with an
   * error (the task ended already, or it cannot be canceled) rejects, as does one not reached.
   */
  async cancel(tool: string, remoteTaskId: string): Promise<void> {
    const agentId = agentIdOfTool(tool);
    const agent = agentId === undefined ? undefined : this.options.agents[agentId];
    if (agentId === undefined || agent === undefined) throw new Error(`No A2A agent for the tool "${tool}"`);
    const client = await this.client(agentId, agent);
    await client.cancelTask(CancelTaskRequest.fromJSON({ id: remoteTaskId }));
  }

  private async delegate(agentId: string, args: JsonObject, context: ToolContext): Promise<ToolOutput> {
    const agent = this.options.agents[agentId];
    if (agent === undefined) return { ok: false, error: `No A2A agent "${agentId}" is configured.` };
    const text = typeof args.message === 'string' ? args.message : undefined;
    const taskId = typeof args.taskId === 'string' && args.taskId !== '' ? args.taskId : undefined;
    if (text === undefined && taskId === undefined)
      return { ok: false, error: 'Give a message, or the taskId of a task to read.' };
    // A run continued at this call reads the remote task the call started: nothing is sent again.
    const recorded = context.remoteTask?.recorded;
    const sends = text !== undefined && recorded === undefined;
    let client: Client;
    let task: Task;
    try {
      client = await this.client(agentId, agent);
      if (!sends) {
        task = await client.getTask(
          GetTaskRequest.fromJSON({ id: recorded ?? taskId, historyLength: 0 }),
          requestOptions(context),
        );
      } else {
        const result = await client.sendMessage(
          SendMessageRequest.fromJSON({
            message: {
              messageId: delegatedMessageId(context.runId, context.round ?? 0, context.callId ?? ''),
              role: 'ROLE_USER',
              parts: [{ text }],
              ...(taskId !== undefined && { taskId }),
            },
            configuration: { returnImmediately: true },
          }),
          requestOptions(context),
        );
        if (!('status' in result)) return sized(replyOf(result), agent.maxResultBytes);
        task = result;
      }
    } catch (error) {
      context.signal?.throwIfAborted();
      return {
        ok: false,
        error: `The A2A agent ${agentId} failed the call: ${describe(error)}.`,
        // A message that may have been sent and whose task is unknown: its outcome is open.
        ...(sends && !isAnswer(error) && { outcomeUnknown: true }),
      };
    }
    // The remote task is recorded on the run before the call waits for it (I-EFFECT); a failure
    // to record stops the run's attempt (it is not the tool's to answer).
    if (sends && !settledStates.has(stateOf(task))) {
      const callback = await context.remoteTask?.record(task.id);
      if (callback !== undefined) await this.register(client, task.id, callback, context);
    }
    try {
      task = await this.settled(client, task, agent, context);
    } catch (error) {
      context.signal?.throwIfAborted();
      return {
        ok: false,
        error: `The task ${task.id} of the A2A agent ${agentId} could not be read: ${describe(error)}. Read it later with its taskId.`,
      };
    }
    // Still working after the wait, and recorded on the run: the run waits for it elsewhere.
    if (
      !settledStates.has(stateOf(task)) &&
      context.remoteTask !== undefined &&
      (sends || recorded !== undefined)
    )
      throw new RemoteTaskPendingError(task.id);
    return sized(answerOf(task), agent.maxResultBytes);
  }

  /**
   * Asks the agent to notify the run's callback when its task changes (a push notification
   * config with the wait's own token). Best effort: an agent without push notifications, or one
   * that refuses, leaves the wake-up to the reaper.
   */
  private async register(
    client: Client,
    taskId: string,
    callback: { readonly url: string; readonly token: string },
    context: ToolContext,
  ): Promise<void> {
    try {
      await client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({ taskId, url: callback.url, token: callback.token }),
        requestOptions(context),
      );
    } catch {
      context.signal?.throwIfAborted();
    }
  }

  /** The task read again until it settles or the agent's wait is over; the last read otherwise. */
  private async settled(
    client: Client,
    first: Task,
    agent: A2aAgentConfig,
    context: ToolContext,
  ): Promise<Task> {
    const until = this.now() + agent.waitSeconds * 1000;
    let task = first;
    let pause = Math.min(this.options.pollMs ?? 250, 2_000);
    while (!settledStates.has(stateOf(task)) && this.now() < until) {
      await sleep(Math.min(pause, Math.max(0, until - this.now())), context.signal);
      pause = Math.min(pause * 2, 2_000);
      task = await client.getTask(
        GetTaskRequest.fromJSON({ id: task.id, historyLength: 0 }),
        requestOptions(context),
      );
    }
    return task;
  }

  /** The agent's client, from its card (read through the guarded fetch), kept `cardTtlMs`. */
  private client(agentId: string, agent: A2aAgentConfig): Promise<Client> {
    const cached = this.clients.get(agentId);
    if (cached !== undefined && cached.until > this.now()) return cached.client;
    const fetchImpl = this.fetchOf(agentId, agent) as typeof fetch;
    const client = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      clientConfig: { polling: true },
    }).createFromUrl(agent.cardUrl, '');
    this.clients.set(agentId, { until: this.now() + cardTtlMs, client });
    client.catch(() => {
      if (this.clients.get(agentId)?.client === client) this.clients.delete(agentId);
    });
    return client;
  }

  /** The guarded fetch of one agent, carrying its headers (credentials read when first needed). */
  private fetchOf(agentId: string, agent: A2aAgentConfig): GuardedFetch {
    let fetch = this.fetches.get(agentId);
    if (fetch !== undefined) return fetch;
    const guarded = createGuardedFetch({
      policy: this.options.policy,
      timeoutMs: agent.timeoutMs,
      ...(this.options.resolve && { resolve: this.options.resolve }),
    });
    const headers = serverHeaders(this.options.credentials, agentId, agent, guarded, this.now, 'a2aAgents');
    fetch = createAuthenticatingFetchWithRetry(guarded as typeof globalThis.fetch, {
      headers,
      shouldRetryWithHeaders: async () => undefined,
    });
    this.fetches.set(agentId, fetch);
    return fetch;
  }
}

/** The client's transports by the card's binding names (`protocolBinding`, compared case-insensitively). */
const spokenBindings = new Set(['JSONRPC', 'HTTP+JSON']);

/**
 * What keeps a parsed card from being used by the client (docs/protocol.md, the v1.0 AgentCard):
 * a name, and `supportedInterfaces` whose entries each have a `url` and a `protocolBinding`, one
 * of them JSON-RPC or HTTP+JSON. A v0.3 card (a top-level `url`, no `supportedInterfaces`) is
 * named as such: the client reads v1.0 cards.
 */
export const cardShapeProblemOf = (card: unknown, where: string): string | undefined => {
  if (typeof card !== 'object' || card === null || Array.isArray(card))
    return `${where} is not a valid A2A agent card (not a JSON object)`;
  const { name, supportedInterfaces, url } = card as Record<string, unknown>;
  if (typeof name !== 'string' || name === '') return `${where} is not a valid A2A agent card (no name)`;
  if (supportedInterfaces === undefined && typeof url === 'string')
    return `${where} is an A2A v0.3 card (a url, no supportedInterfaces); a v1.0 card is needed`;
  if (!Array.isArray(supportedInterfaces))
    return `${where} is not a valid A2A agent card (no supportedInterfaces)`;
  const interfaces = supportedInterfaces.filter(
    (entry): entry is { url: string; protocolBinding: string } =>
      typeof entry === 'object' &&
      entry !== null &&
      typeof (entry as Record<string, unknown>).url === 'string' &&
      typeof (entry as Record<string, unknown>).protocolBinding === 'string',
  );
  if (interfaces.length !== supportedInterfaces.length)
    return `${where} is not a valid A2A agent card (an interface without url or protocolBinding)`;
  if (!interfaces.some((entry) => spokenBindings.has(entry.protocolBinding.toUpperCase())))
    return `${where} offers no JSON-RPC or HTTP+JSON interface (it lists: ${
      interfaces.map((entry) => entry.protocolBinding).join(', ') || 'none'
    })`;
  return undefined;
};

/** The agent a delegation tool names (`agentToolName`'s inverse); undefined for another tool. */
const agentIdOfTool = (tool: string): string | undefined => {
  const prefix = agentToolName('');
  return tool.startsWith(prefix) && tool.length > prefix.length ? tool.slice(prefix.length) : undefined;
};

const requestOptions = (context: ToolContext) => (context.signal ? { signal: context.signal } : {});

const stateOf = (task: Task): string =>
  (Task.toJSON(task) as { status?: { state?: string } }).status?.state ?? '';

interface JsonPart {
  readonly text?: string;
  readonly data?: JsonValue;
  readonly url?: string;
  readonly raw?: string;
  readonly mediaType?: string;
  readonly filename?: string;
}

/** A part as the model reads it: text and data as they are, files as their name, type and size or URL. */
const partOf = (part: JsonPart): JsonValue => {
  if (part.text !== undefined) return { text: part.text };
  if (part.data !== undefined) return { data: part.data };
  if (part.url !== undefined)
    return { file: { url: part.url, ...(part.mediaType && { mediaType: part.mediaType }) } };
  return {
    file: {
      ...(part.filename && { name: part.filename }),
      ...(part.mediaType && { mediaType: part.mediaType }),
      bytes: Math.floor(((part.raw ?? '').length * 3) / 4),
      note: 'binary content is not shown',
    },
  };
};

const partsOf = (parts: readonly JsonPart[] | undefined): JsonValue[] => (parts ?? []).map(partOf);

/** What a remote task says: its id, its state, its status message and its artifacts. */
export const answerOf = (task: Task): JsonObject => {
  const json = Task.toJSON(task) as {
    id: string;
    status?: { state?: string; message?: { parts?: JsonPart[] } };
    artifacts?: { name?: string; parts?: JsonPart[] }[];
  };
  const state = (json.status?.state ?? 'TASK_STATE_UNSPECIFIED').replace('TASK_STATE_', '').toLowerCase();
  const message = json.status?.message?.parts;
  return {
    taskId: json.id,
    state: state.replace('_', '-'),
    ...(message !== undefined && message.length > 0 && { message: partsOf(message) }),
    ...(json.artifacts !== undefined &&
      json.artifacts.length > 0 && {
        artifacts: json.artifacts.map((artifact) => ({
          ...(artifact.name && { name: artifact.name }),
          parts: partsOf(artifact.parts),
        })),
      }),
    ...(!settledStates.has(json.status?.state ?? '') && {
      note: 'The task is still working; read it later by calling this tool with its taskId and no message.',
    }),
    ...(json.status?.state === 'TASK_STATE_INPUT_REQUIRED' && {
      note: 'The agent asks for input: answer by calling this tool again with this taskId and your message.',
    }),
  };
};

/** A direct reply (a Message instead of a task). */
const replyOf = (message: Message): JsonObject => {
  const { parts } = Message.toJSON(message) as { parts?: JsonPart[] };
  return { state: 'replied', message: partsOf(parts) };
};

const sized = (content: JsonObject, maxBytes: number): ToolOutput => {
  const size = Buffer.byteLength(JSON.stringify(content), 'utf8');
  return size > maxBytes
    ? {
        ok: false,
        error: `The agent's answer is ${size} bytes, above the limit of ${maxBytes}; it was not read.`,
      }
    : { ok: true, content };
};

/** The agent answered the request with an A2A error: it was read, its outcome is known. */
const isAnswer = (error: unknown): boolean => error instanceof A2AError;

const describe = (error: unknown): string =>
  error instanceof Error ? error.message.slice(0, 300) : 'unknown error';

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
