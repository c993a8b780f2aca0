import { randomUUID } from 'node:crypto';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { type Config, parseConfig } from '../../shared/config/config.ts';
import { providedEndpoints } from '../support/local-guard.ts';

/**
 * Shared start-up of the conformance suite (docs/protocol.md §13.4): the local stack, in-process, with a
 * configuration that publishes the TCK's system under test (`tck`, scripted `tck` provider), the
 * `default` echo profile, and a `slow` profile whose blocking cap is shorter than its run.
 * Tests talk raw HTTP through the helpers here, or the official client via `baseUrl`.
 */

export const conformanceConfig: Config = parseConfig({
  privacy: { level: 'metadata', retention: { agentRun: 30, approval: 7 } },
  providers: {
    local: { type: 'scripted', behavior: 'echo' },
    tck: { type: 'scripted', behavior: 'tck' },
    slow: { type: 'scripted', behavior: 'slow' },
  },
  profiles: {
    default: {
      name: 'Echo agent',
      description: 'Answers every message with its own text (scripted provider, offline).',
      providers: ['local'],
      privacyLevel: 'full',
      skills: [{ id: 'echo', name: 'Echo', description: 'Repeats the text it is sent.', tags: ['echo'] }],
    },
    tck: {
      name: 'TCK system under test',
      description: 'Plays the A2A TCK scenarios chosen by messageId prefix.',
      providers: ['tck'],
      privacyLevel: 'full',
    },
    slow: {
      name: 'Slow echo',
      description: 'Echoes after two seconds; blocking calls return after half a second.',
      providers: ['slow'],
      privacyLevel: 'full',
      blockingCapSeconds: 0.5,
    },
  },
  // Small enough that a test can exceed it below the local gateway's own 1 MiB limit.
  maxRequestBytes: 64 * 1024,
});

/** The conformance configuration with more providers and profiles (a test file's own agents). */
export const conformanceConfigWith = (extra: {
  readonly providers?: Record<string, unknown>;
  readonly profiles: Record<string, unknown>;
}): Config => {
  const base = conformanceConfig as unknown as Record<string, unknown> & {
    providers: Record<string, unknown>;
    profiles: Record<string, unknown>;
  };
  return parseConfig({
    ...base,
    providers: { ...base.providers, ...extra.providers },
    profiles: { ...base.profiles, ...extra.profiles },
  });
};

/** The eleven A2A v1.0 JSON-RPC methods, as docs/protocol.md §2.1 lists them (the spec, not the router's table). */
export const a2aMethods = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
] as const;
export type A2aMethod = (typeof a2aMethods)[number];

export type JsonObject = Record<string, unknown>;

export interface RpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: JsonObject[];
}

/** A JSON-RPC answer as it came over the wire, with the HTTP facts the TCK also checks. */
export interface RpcReply {
  readonly status: number;
  readonly contentType: string;
  readonly body: { jsonrpc?: unknown; id?: unknown; result?: unknown; error?: RpcError } & JsonObject;
  /** The result, typed loosely for assertions; undefined on errors. */
  readonly result: JsonObject;
  readonly error: RpcError | undefined;
}

export interface RpcOptions {
  /** Agent profile; `tck` by default. */
  readonly profile?: string;
  /** Extra headers; `A2A-Version: 1.0` and JSON content type are sent unless overridden. */
  readonly headers?: Record<string, string>;
  readonly id?: string | number | null;
}

export interface ConformanceStack {
  readonly stack: LocalStack;
  readonly baseUrl: string;
  /** The JSON-RPC endpoint of a profile (its card's interface URL). */
  agentUrl(profile?: string): string;
  /** POSTs a raw body; nothing is added but the given headers. */
  /** `path` (e.g. `/` for the root agent) instead of a profile's `/agents/<profile>`. */
  post(
    body: string,
    options?: { profile?: string; path?: string; headers?: Record<string, string> },
  ): Promise<RpcReply>;
  /** One JSON-RPC call with the standard headers. */
  rpc(method: string, params?: unknown, options?: RpcOptions): Promise<RpcReply>;
  /** SendMessage of one text part with the given messageId prefix (a TCK scenario). */
  send(
    prefix: string,
    extra?: { message?: JsonObject; configuration?: JsonObject; profile?: string },
  ): Promise<RpcReply>;
  stop(): Promise<void>;
}

export const userMessage = (prefix: string, extra: JsonObject = {}): JsonObject => ({
  messageId: `${prefix}-${randomUUID()}`,
  role: 'ROLE_USER',
  parts: [{ text: 'Hello from the conformance suite' }],
  ...extra,
});

const toReply = async (response: Response): Promise<RpcReply> => {
  const text = await response.text();
  let body: RpcReply['body'];
  try {
    body = JSON.parse(text) as RpcReply['body'];
  } catch {
    body = { unparsable: text };
  }
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    body,
    result: (body.result ?? {}) as JsonObject,
    error: body.error,
  };
};

/** Starts the local stack with the conformance configuration; one per test file (`prefix` unique). */
export const startConformanceStack = async (
  prefix: string,
  config: Config = conformanceConfig,
): Promise<ConformanceStack> => {
  const stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix,
    log: () => {},
  });
  const agentUrl = (profile = 'tck') => `${stack.baseUrl}/agents/${profile}`;
  const post: ConformanceStack['post'] = async (body, options = {}) =>
    toReply(
      await fetch(
        options.path === undefined ? agentUrl(options.profile) : `${stack.baseUrl}${options.path}`,
        {
          method: 'POST',
          headers: options.headers ?? {},
          body,
        },
      ),
    );
  const rpc: ConformanceStack['rpc'] = (method, params, options = {}) =>
    post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: options.id === undefined ? randomUUID() : options.id,
        method,
        ...(params === undefined ? {} : { params }),
      }),
      {
        profile: options.profile,
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...options.headers },
      },
    );
  const send: ConformanceStack['send'] = (prefix, extra = {}) =>
    rpc(
      'SendMessage',
      {
        message: userMessage(prefix, extra.message),
        ...(extra.configuration ? { configuration: extra.configuration } : {}),
      },
      { profile: extra.profile },
    );
  return { stack, baseUrl: stack.baseUrl, agentUrl, post, rpc, send, stop: () => stack.stop() };
};

/** The task of a SendMessage result (fails the test when the answer is not a Task). */
export const taskOf = (
  reply: RpcReply,
): JsonObject & { id: string; contextId: string; status: JsonObject } => {
  if (reply.error) throw new Error(`expected a task, got error ${JSON.stringify(reply.error)}`);
  const task = reply.result.task as
    | (JsonObject & { id: string; contextId: string; status: JsonObject })
    | undefined;
  if (task === undefined) throw new Error(`expected {"task": …}, got ${JSON.stringify(reply.result)}`);
  return task;
};

export const stateOf = (task: JsonObject): unknown => (task.status as JsonObject | undefined)?.state;

/** The ErrorInfo detail of an A2A error, if any. */
export const errorInfoOf = (error: RpcError | undefined): JsonObject | undefined =>
  error?.data?.find((detail) => detail['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');

/** The field names a -32602/-32600 BadRequest detail names. */
export const violatedFields = (error: RpcError | undefined): string[] =>
  (
    (error?.data?.find((detail) => detail['@type'] === 'type.googleapis.com/google.rpc.BadRequest')
      ?.fieldViolations as { field: string }[] | undefined) ?? []
  ).map((violation) => violation.field);
