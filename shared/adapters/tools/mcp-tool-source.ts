import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type McpServerConfig, mcpToolName } from '../../config/config.ts';
import type { JsonObject, JsonValue } from '../../domain/a2a.ts';
import type {
  EnabledTool,
  RemoteToolCheck,
  RemoteToolGrant,
  RemoteToolGrants,
  RemoteToolSource,
  ToolContext,
  ToolEffect,
  ToolOutput,
} from '../../domain/tools.ts';
import type { WebhookPolicy } from '../../domain/webhook-address.ts';
import type { Resolver } from '../ssrf-guard.ts';
import { createGuardedFetch } from './guarded-fetch.ts';
import { type CredentialSources, serverHeaders } from './mcp-credentials.ts';

/** A tool as its server lists it. */
export interface ListedTool {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: JsonObject;
  readonly annotations?: {
    readonly readOnlyHint?: boolean;
    readonly idempotentHint?: boolean;
    readonly destructiveHint?: boolean;
  };
}

export interface McpToolSourceOptions {
  readonly servers: Readonly<Record<string, McpServerConfig>>;
  /** The webhooks' outbound policy (docs/security.md): every request goes through the SSRF guard. */
  readonly policy: WebhookPolicy;
  readonly credentials: CredentialSources;
  readonly resolve?: Resolver;
  readonly now?: () => number;
}

/** An MCP failure whose request may have reached the server: sent, and no answer read. */
const unansweredCodes = new Set([-32000, -32001]);

/**
 * Tools of remote MCP servers (Streamable HTTP, docs/configuration.md `mcpServers`) as a profile
 * allows them, offered as `<server>__<tool>` with the server's own input schemas. Each server's
 * tool list is kept per container for `toolListTtlSeconds`; a list or a call opens its own
 * connection through the SSRF guard (shared/adapters/tools/guarded-fetch.ts) with the server's
 * deadline, and a result above `maxResultBytes` is refused. A server that cannot be reached
 * fails that tool call with an error the model reads, never the run; a `write` call that may
 * have reached it says its outcome is unknown (I-EFFECT).
 */
export class McpToolSource implements RemoteToolSource, RemoteToolCheck {
  private readonly lists = new Map<
    string,
    { readonly until: number; readonly tools: Promise<readonly ListedTool[]> }
  >();
  private readonly headers = new Map<string, () => Promise<Record<string, string>>>();
  private readonly now: () => number;

  constructor(private readonly options: McpToolSourceOptions) {
    this.now = options.now ?? Date.now;
  }

  async toolsFor(grants: RemoteToolGrants, signal?: AbortSignal): Promise<EnabledTool[]> {
    const perServer = await Promise.all(
      Object.entries(grants).map(async ([serverId, grant]) => {
        const listed = await this.listed(serverId, signal);
        return Object.entries(grant.tools).map(([toolName, override]) =>
          this.enable(serverId, toolName, override, listed),
        );
      }),
    );
    return perServer.flat();
  }

  /**
   * Whether a profile's grants can be served now (the admin command that saves profiles): every
   * server reachable, and every allowed tool on its list. Each problem names the setting.
   */
  async problemsOf(grants: RemoteToolGrants, profileId: string): Promise<string[]> {
    const problems: string[] = [];
    for (const [serverId, grant] of Object.entries(grants)) {
      const listed = await this.listed(serverId);
      const setting = `profiles.${profileId}.mcp.${serverId}`;
      if (!listed.ok) {
        problems.push(`${setting}: ${listed.problem}`);
        continue;
      }
      for (const toolName of Object.keys(grant.tools)) {
        if (!listed.tools.some((tool) => tool.name === toolName))
          problems.push(`${setting}.tools.${toolName}: the server offers no tool "${toolName}"`);
      }
    }
    return problems;
  }

  private async listed(
    serverId: string,
    signal?: AbortSignal,
  ): Promise<{ ok: true; tools: readonly ListedTool[] } | { ok: false; problem: string }> {
    const server = this.options.servers[serverId];
    if (server === undefined) return { ok: false, problem: `no MCP server "${serverId}" is configured` };
    const cached = this.lists.get(serverId);
    let tools = cached !== undefined && cached.until > this.now() ? cached.tools : undefined;
    if (tools === undefined) {
      const listing = this.withClient(serverId, server, signal, async (client) => {
        const found: ListedTool[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor }, {
            timeout: server.timeoutMs,
            ...(signal && { signal }),
          });
          found.push(...(page.tools as unknown as ListedTool[]));
          cursor = page.nextCursor;
        } while (cursor !== undefined && found.length < 10_000);
        return found;
      });
      tools = listing;
      this.lists.set(serverId, { until: this.now() + server.toolListTtlSeconds * 1000, tools });
      listing.catch(() => {
        if (this.lists.get(serverId)?.tools === listing) this.lists.delete(serverId);
      });
    }
    try {
      return { ok: true, tools: await tools };
    } catch (error) {
      signal?.throwIfAborted();
      return { ok: false, problem: `the MCP server could not be listed (${describe(error)})` };
    }
  }

  private enable(
    serverId: string,
    toolName: string,
    override: RemoteToolGrant,
    listed: { ok: true; tools: readonly ListedTool[] } | { ok: false; problem: string },
  ): EnabledTool {
    const found = listed.ok ? listed.tools.find((tool) => tool.name === toolName) : undefined;
    const declared = effectOf(found?.annotations);
    const effect: ToolEffect =
      override.effect === 'destructive' ? 'write' : (override.effect ?? declared.effect);
    const destructive =
      override.effect === undefined ? declared.destructive : override.effect === 'destructive';
    const unavailable = !listed.ok
      ? listed.problem
      : found === undefined
        ? `the server offers no tool "${toolName}"`
        : undefined;
    const { $schema: _dialect, ...inputSchema } = found?.inputSchema ?? { type: 'object' };
    return {
      // A tool that cannot be called sends nothing: no operator is asked to approve its error.
      requiresApproval: unavailable === undefined && (override.requiresApproval ?? destructive),
      tool: {
        name: mcpToolName(serverId, toolName),
        description: found?.description ?? `Tool ${toolName} of the MCP server ${serverId}.`,
        inputSchema,
        readOnly: effect === 'read-only',
        effect,
        destructive,
        invoke: (args, context) =>
          unavailable === undefined
            ? this.call(serverId, toolName, args, context)
            : Promise.resolve({ ok: false, error: `Tool ${toolName} is unavailable: ${unavailable}.` }),
      },
    };
  }

  private async call(
    serverId: string,
    toolName: string,
    args: JsonObject,
    context: ToolContext,
  ): Promise<ToolOutput> {
    const server = this.options.servers[serverId];
    if (server === undefined) return { ok: false, error: `No MCP server "${serverId}" is configured.` };
    const sent = { call: false };
    try {
      const result = await this.withClient(
        serverId,
        server,
        context.signal,
        (client) =>
          client.callTool({ name: toolName, arguments: args }, undefined, {
            timeout: server.timeoutMs,
            ...(context.signal && { signal: context.signal }),
          }),
        (body) => {
          if (body?.includes('"tools/call"')) sent.call = true;
        },
      );
      return outputOf(result as CallResult, server.maxResultBytes);
    } catch (error) {
      context.signal?.throwIfAborted();
      const answered = isServerAnswer(error);
      return {
        ok: false,
        error: `The MCP server ${serverId} failed the call: ${describe(error)}.`,
        ...(sent.call && !answered && { outcomeUnknown: true }),
      };
    }
  }

  /** One connection for one list or call: initialized, used, closed. */
  private async withClient<T>(
    serverId: string,
    server: McpServerConfig,
    signal: AbortSignal | undefined,
    use: (client: McpClient) => Promise<T>,
    onConnected?: (body: string | undefined) => void,
  ): Promise<T> {
    const fetch = createGuardedFetch({
      policy: this.options.policy,
      timeoutMs: server.timeoutMs,
      ...(this.options.resolve && { resolve: this.options.resolve }),
      ...(onConnected && { onConnected }),
    });
    let headersOf = this.headers.get(serverId);
    if (headersOf === undefined) {
      headersOf = serverHeaders(this.options.credentials, serverId, server, fetch, this.now);
      this.headers.set(serverId, headersOf);
    }
    const transport = new Transport(new URL(server.url), {
      fetch,
      requestInit: { headers: await headersOf() },
      // A broken stream is never resumed or sent again: the call fails instead (I-EFFECT).
      reconnectionOptions: {
        maxRetries: 0,
        initialReconnectionDelay: 1000,
        maxReconnectionDelay: 1000,
        reconnectionDelayGrowFactor: 1,
      },
    });
    const client = new McpClient({ name: 'a2a-serverless', version: '1.0.0' });
    try {
      await client.connect(transport, { timeout: server.timeoutMs, ...(signal && { signal }) });
      return await use(client);
    } finally {
      await client.close().catch(() => {});
    }
  }
}

/**
 * A tool's effect from its MCP annotations (I-EFFECT): read-only when it says so; otherwise a
 * write, idempotent only when it says so, and destructive unless it says it is not (the MCP
 * defaults: `destructiveHint` true, `idempotentHint` false).
 */
export const effectOf = (
  annotations: ListedTool['annotations'],
): { readonly effect: ToolEffect; readonly destructive: boolean } => {
  if (annotations?.readOnlyHint === true) return { effect: 'read-only', destructive: false };
  return {
    effect: annotations?.idempotentHint === true ? 'idempotent' : 'write',
    destructive: annotations?.destructiveHint !== false,
  };
};

interface CallResult {
  readonly content?: readonly ContentBlock[];
  readonly structuredContent?: JsonObject;
  readonly isError?: boolean;
}

type ContentBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'image' | 'audio'; readonly data: string; readonly mimeType: string }
  | {
      readonly type: 'resource';
      readonly resource: {
        readonly uri: string;
        readonly mimeType?: string;
        readonly text?: string;
        readonly blob?: string;
      };
    }
  | {
      readonly type: 'resource_link';
      readonly uri: string;
      readonly name?: string;
      readonly mimeType?: string;
    };

/**
 * A call result as the model reads it (JSON): text as text, structured content as JSON, a
 * resource's text with its URI, and binary content (images, audio, blobs) as its media type and
 * size only — no model input here carries bytes. Above `maxBytes` the result is refused.
 */
export const outputOf = (result: CallResult, maxBytes: number): ToolOutput => {
  const content: JsonValue[] = (result.content ?? []).map(blockOf);
  const value: JsonObject = {
    ...(content.length > 0 && { content }),
    ...(result.structuredContent !== undefined && { structured: result.structuredContent }),
  };
  const size = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (size > maxBytes) {
    return {
      ok: false,
      error: `The tool's result is ${size} bytes, above the limit of ${maxBytes}; it was not read.`,
    };
  }
  if (result.isError === true)
    return { ok: false, error: textOfBlocks(result.content) || 'The tool reported an error.' };
  return { ok: true, content: value };
};

const blockOf = (block: ContentBlock): JsonValue => {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
    case 'audio':
      return {
        type: block.type,
        mimeType: block.mimeType,
        bytes: base64Bytes(block.data),
        note: 'binary content is not shown',
      };
    case 'resource': {
      const { uri, mimeType, text, blob } = block.resource;
      return text !== undefined
        ? { type: 'resource', uri, ...(mimeType && { mimeType }), text }
        : {
            type: 'resource',
            uri,
            ...(mimeType && { mimeType }),
            bytes: base64Bytes(blob ?? ''),
            note: 'binary content is not shown',
          };
    }
    case 'resource_link':
      return {
        type: 'resource_link',
        uri: block.uri,
        ...(block.name && { name: block.name }),
        ...(block.mimeType && { mimeType: block.mimeType }),
      };
    default:
      return {
        type: String((block as { type?: unknown }).type ?? 'unknown'),
        note: 'content of this type is not shown',
      };
  }
};

const base64Bytes = (data: string): number =>
  Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);

const textOfBlocks = (blocks: readonly ContentBlock[] | undefined): string =>
  (blocks ?? [])
    .flatMap((block) => (block.type === 'text' ? [block.text] : []))
    .join('\n')
    .slice(0, 2000);

/** The server answered the request with a JSON-RPC error: it was read, its outcome is known. */
const isServerAnswer = (error: unknown): boolean => {
  if (!(error instanceof Error) || error.name !== 'McpError') return false;
  const { code } = error as Error & { code?: unknown };
  return typeof code === 'number' && !unansweredCodes.has(code);
};

/** What the model and the operator may read of a failure: its kind and message, no stack. */
const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return 'unknown error';
  const code = (error as { code?: unknown }).code;
  return `${error.message.slice(0, 300)}${typeof code === 'string' ? ` (${code})` : ''}`;
};
