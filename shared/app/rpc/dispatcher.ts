import { randomUUID } from 'node:crypto';
import type { JsonValue, ProtocolVersion, StreamResponse } from '../../domain/a2a.ts';
import { withoutGenerations } from '../../domain/a2a.ts';
import type { FieldViolation } from '../../domain/errors.ts';
import {
  ContentTypeNotSupportedError,
  ExtensionSupportRequiredError,
  VersionNotSupportedError,
} from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import { truncateText } from '../../domain/text.ts';
import type * as z from '../../zod.ts';
import type { JsonRpcErrorObject } from './errors-table.ts';
import { isInternalError, JsonRpcProtocolError, jsonRpcErrorTable, toJsonRpcError } from './errors-table.ts';
import { toProtoJson } from './proto-json.ts';
import type { a2aParamsSchemas } from './schemas.ts';
import { parseParams } from './schemas.ts';

/**
 * The one JSON-RPC 2.0 dispatcher of the A2A v1.0 binding (docs/protocol.md §2, §17): envelope checks,
 * version and extension negotiation, a method table whose params are parsed by schemas, and
 * every failure turned into an error envelope through `toJsonRpcError`. `dispatch` never throws.
 */

// ---------------------------------------------------------------------------------------------
// Envelope types
// ---------------------------------------------------------------------------------------------

export type JsonRpcId = string | number | null;

export interface JsonRpcSuccess {
  readonly jsonrpc: '2.0';
  readonly id: JsonRpcId;
  readonly result: JsonValue;
}

export interface JsonRpcFailure {
  readonly jsonrpc: '2.0';
  readonly id: JsonRpcId;
  readonly error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;

/**
 * One SSE event: `id: <eventId>` (when known) and a single `data:` line with the envelope — or a
 * comment line (`: keep-alive`) that keeps proxies from cutting an idle stream (docs/protocol.md §17).
 */
export type SseEvent =
  | { readonly eventId?: string; readonly message: JsonRpcResponse }
  /** An event of another binding (HTTP+JSON): its data as it is, and an event type if any. */
  | { readonly eventId?: string; readonly event?: string; readonly data: JsonValue }
  | { readonly comment: string };

/**
 * HTTP 200 for every JSON-RPC answer, errors included (docs/protocol.md §17); the handler sends `json` as
 * `application/json` and `sse` as `text/event-stream`.
 */
export type DispatchResult =
  | { readonly kind: 'json'; readonly status: 200; readonly body: JsonRpcResponse }
  | { readonly kind: 'sse'; readonly status: 200; readonly events: AsyncIterable<SseEvent> };

// ---------------------------------------------------------------------------------------------
// Request context and method table
// ---------------------------------------------------------------------------------------------

export interface Caller {
  readonly tenant: string;
  readonly principal: string;
}

export interface RequestContext {
  /** The authenticated identity, or null when the installation runs unauthenticated. */
  readonly caller: Caller | null;
  readonly requestId: string;
  /**
   * The negotiated protocol version, `Major.Minor`: "1.0"; "1.1" for the 1.0 methods with task
   * generations (docs/protocol.md §16); or "0.3" for the v0.3 method table.
   */
  readonly a2aVersion: ProtocolVersion;
  /** Extension URIs the client asked for in `A2A-Extensions`. */
  readonly extensions: readonly string[];
  readonly profileId: string;
  /** Absolute base URL of this agent's endpoint, for URLs the answer must carry. */
  readonly baseUrl: string;
  /** The SSE `Last-Event-ID` header of a re-attaching client, if any (docs/protocol.md §17). */
  readonly lastEventId?: string;
  /** The protocol binding the request came over: `JSONRPC` or `HTTP+JSON`. */
  readonly binding: ProtocolBinding;
  /** Aborts when the client's connection closes before the answer ends: a stream's waits end then. */
  readonly signal?: AbortSignal;
}

/** The transport bindings served (docs/protocol.md §2, §14). */
export type ProtocolBinding = 'JSONRPC' | 'HTTP+JSON';

/** An event for the SSE stream, with the id that lets a client re-attach after it (docs/protocol.md §17). */
export interface IdentifiedStreamResponse {
  readonly eventId: string;
  readonly response: StreamResponse;
}

/** A stream item that is no event: an SSE comment (heartbeat), never seen by A2A clients. */
export interface StreamComment {
  readonly comment: string;
}

/** An event already in another version's wire shape (the v0.3 layer's): sent as it is. */
export interface WireStreamEvent {
  readonly eventId?: string;
  readonly wire: unknown;
}

export type StreamItem = StreamResponse | IdentifiedStreamResponse | StreamComment | WireStreamEvent;

const streamBrand: unique symbol = Symbol('a2a-serverless.stream-result');

/** What a streaming method's `run` returns instead of a value: the dispatcher answers with SSE. */
export interface StreamResult {
  readonly [streamBrand]: true;
  readonly stream: AsyncIterable<StreamItem>;
}

export const toStreamResult = (stream: AsyncIterable<StreamItem>): StreamResult => ({
  [streamBrand]: true,
  stream,
});

export const isStreamResult = (value: unknown): value is StreamResult =>
  typeof value === 'object' && value !== null && streamBrand in value;

export interface MethodSpec<S extends z.core.$ZodType = z.core.$ZodType> {
  readonly params: S;
  /** Returns the result value (serialized as ProtoJSON; `undefined` → `null`) or a StreamResult. */
  run(params: z.output<S>, ctx: RequestContext): Promise<unknown>;
}

/** Method name → spec; `params` in each `run` is typed by that method's schema. */
export type MethodTable<S extends Record<string, z.core.$ZodType> = Record<string, z.core.$ZodType>> = {
  readonly [K in keyof S]: MethodSpec<S[K]>;
};

/** A table that routes every A2A v1.0 method (gated ones answer their A2A error, never -32601). */
export type A2aMethodTable = MethodTable<typeof a2aParamsSchemas>;

/** Declares one method with its params type inferred from the schema. */
export const defineMethod = <S extends z.core.$ZodType>(
  params: S,
  run: (params: z.output<S>, ctx: RequestContext) => Promise<unknown>,
): MethodSpec<S> => ({ params, run });

// ---------------------------------------------------------------------------------------------
// Options and inputs
// ---------------------------------------------------------------------------------------------

export interface DispatcherOptions {
  /** ErrorInfo domain for this installation's own reasons (config `errorDomain`). */
  readonly errorDomain: string;
  /**
   * Receives the cause of every -32603 (the client only sees "Internal error") and, where it has
   * `info`, one line per answered request that names a task: its id as `correlation_id`.
   */
  readonly logger: Pick<Logger, 'error'> & Partial<Pick<Logger, 'info'>>;
  /**
   * Extension URIs declared `required: true` — for every profile, or per profile (docs/protocol.md §9);
   * a request without one gets -32008.
   */
  readonly requiredExtensions?: readonly string[] | ((profileId: string) => Promise<readonly string[]>);
  /**
   * The v0.3 method table (`message/send`, …; rpc/v03-methods.ts), served to requests negotiated
   * as 0.3. Without it such requests get -32009 (docs/protocol.md §17).
   */
  readonly v03Methods?: MethodTable;
  readonly now?: () => Date;
}

/** Header and query maps as API Gateway or node:http give them; keys are matched case-insensitively. */
export type HeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface RequestInfo {
  /** Query parameters; `A2A-Version` may travel here too (docs/protocol.md §2). */
  readonly query?: HeaderMap;
  readonly caller?: Caller | null;
  readonly requestId?: string;
  readonly profileId?: string;
  readonly baseUrl?: string;
  /** The binding the request came over (JSON-RPC unless told). */
  readonly binding?: ProtocolBinding;
  /** Aborts when the client's connection closes before the answer ends (`RequestContext.signal`). */
  readonly signal?: AbortSignal;
}

/** One event of an invoked stream, in no binding's envelope (docs/protocol.md §2 and §14 wrap it). */
export type InvokedEvent =
  | { readonly eventId?: string; readonly result: JsonValue }
  | { readonly comment: string }
  /** A failure mid-stream: the stream's last event. */
  | { readonly failure: JsonRpcErrorObject };

/** What one method call came to, for a binding to put on its wire. */
export type Invocation =
  | { readonly kind: 'value'; readonly value: JsonValue }
  | { readonly kind: 'stream'; readonly events: AsyncIterable<InvokedEvent> }
  | { readonly kind: 'failure'; readonly error: JsonRpcErrorObject };

export interface Dispatcher {
  /** A JSON-RPC request body: its envelope checked, its method invoked, the answer enveloped. */
  dispatch(rawBody: string, headers: HeaderMap, request?: RequestInfo): Promise<DispatchResult>;
  /**
   * One method by name with its params, as another binding's adapter calls it (HTTP+JSON,
   * docs/protocol.md §14): the same negotiation, schemas and use cases as `dispatch`, the
   * failure as the error object JSON-RPC would send. Never throws.
   */
  invoke(method: string, params: unknown, headers: HeaderMap, request?: RequestInfo): Promise<Invocation>;
}

// ---------------------------------------------------------------------------------------------
// Version negotiation (docs/protocol.md §9 "Versioning", §17)
// ---------------------------------------------------------------------------------------------

export const supportedVersion = '1.0';

/** Client-supplied strings echoed into ErrorInfo metadata are cut short. */
const truncate = (value: string): string => (value.length > 64 ? `${truncateText(value, 64)}…` : value);

/** v0.3 method names use the `category/action` grammar (`message/send`, `tasks/get`, …). */
const isV03MethodName = (method: string): boolean => method.includes('/');

/**
 * `1.0` and `1.0.x` → 1.0 (patch numbers do not count), `1.1` → 1.1. Missing or empty: the
 * method-name grammar decides, leniently, like a2a-js — a PascalCase name is served as 1.0, a v0.3
 * name is 0.3. Anything else is unsupported.
 */
export const resolveProtocolVersion = (requested: string | undefined, method: string): ProtocolVersion => {
  const version = requested?.trim() ?? '';
  if (version === '') return isV03MethodName(method) ? '0.3' : '1.0';
  if (/^1\.0(\.\d+)?$/.test(version)) return '1.0';
  if (/^1\.1(\.\d+)?$/.test(version)) return '1.1';
  if (/^0\.3(\.\d+)?$/.test(version)) return '0.3';
  throw new VersionNotSupportedError(truncate(version));
};

// ---------------------------------------------------------------------------------------------
// Dispatcher
// ---------------------------------------------------------------------------------------------

interface Envelope {
  readonly method: string;
  readonly params: unknown;
}

/** What a failure log line carries: ids, never content (docs/security.md). */
interface LogAttributes {
  readonly requestId: string;
  readonly method?: string;
}

const isJsonRpcId = (value: unknown): value is JsonRpcId =>
  value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));

/** The task a result (or its first stream event) is about: the correlation id of its log line. */
const taskIdIn = (value: unknown, depth = 0): string | undefined => {
  if (!isObject(value) || depth > 2) return undefined;
  if (typeof value.taskId === 'string') return value.taskId;
  if (typeof value.id === 'string' && 'status' in value) return value.id;
  for (const key of ['task', 'message', 'statusUpdate', 'artifactUpdate', 'wire', 'response']) {
    const found = taskIdIn(value[key], depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const headerValue = (map: HeaderMap | undefined, name: string): string | undefined => {
  if (map === undefined) return undefined;
  for (const [key, value] of Object.entries(map)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    return typeof value === 'string' ? value : value.join(',');
  }
  return undefined;
};

/** `A2A-Extensions: a, b` → `['a', 'b']` (comma-separated URIs, duplicates dropped). */
export const parseExtensionsHeader = (value: string | undefined): string[] => [
  ...new Set(
    (value ?? '')
      .split(',')
      .map((uri) => uri.trim())
      .filter((uri) => uri !== ''),
  ),
];

/** JSON-RPC bodies are JSON; a declared other media type is refused, a missing one tolerated. */
export const isJsonMediaType = (contentType: string | undefined): boolean => {
  if (contentType === undefined) return true;
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return (
    mediaType === '' || mediaType === 'application/json' || /^application\/[\w.+-]+\+json$/.test(mediaType)
  );
};

/**
 * Envelope checks (JSON-RPC 2.0 §4): -32600 with a BadRequest naming what is wrong. A request
 * without an id is answered with id null: over HTTP a reply is always sent.
 */
const readEnvelope = (body: unknown): Envelope => {
  if (!isObject(body)) {
    throw new JsonRpcProtocolError('INVALID_REQUEST', [
      { field: 'request', description: 'Must be a JSON-RPC request object (batches are not supported)' },
    ]);
  }
  const violations: FieldViolation[] = [];
  if (body.jsonrpc !== '2.0') violations.push({ field: 'jsonrpc', description: 'Must be "2.0"' });
  if (typeof body.method !== 'string' || body.method === '') {
    violations.push({ field: 'method', description: 'Must be a non-empty string' });
  }
  if (body.id !== undefined && !isJsonRpcId(body.id)) {
    violations.push({ field: 'id', description: 'Must be a string, a number or null' });
  }
  if (violations.length > 0) throw new JsonRpcProtocolError('INVALID_REQUEST', violations);
  return { method: body.method as string, params: body.params };
};

/** Task generations are 1.1's: every other version's answers go without them (docs/protocol.md §16). */
const shownTo = <T>(version: ProtocolVersion, value: T): T =>
  version === '1.1' ? value : withoutGenerations(value);

const withEventId = (eventId: string | undefined, result: JsonValue): InvokedEvent =>
  eventId === undefined ? { result } : { eventId, result };

/** JSON-RPC's SSE events: each result in a response envelope with the request id (docs/protocol.md §2). */
async function* toJsonRpcEvents(
  id: JsonRpcId,
  events: AsyncIterable<InvokedEvent>,
): AsyncGenerator<SseEvent> {
  for await (const event of events) {
    if ('comment' in event) yield event;
    else if ('failure' in event) yield { message: { jsonrpc: '2.0', id, error: event.failure } };
    else {
      const message: JsonRpcSuccess = { jsonrpc: '2.0', id, result: event.result };
      yield event.eventId === undefined ? { message } : { eventId: event.eventId, message };
    }
  }
}

export const createDispatcher = <S extends Record<string, z.core.$ZodType>>(
  methods: MethodTable<S>,
  options: DispatcherOptions,
): Dispatcher => {
  const now = options.now ?? (() => new Date());
  const requiredOf = async (profileId: string): Promise<readonly string[]> => {
    const required = options.requiredExtensions ?? [];
    return typeof required === 'function' ? required(profileId) : required;
  };
  const tables: Readonly<Record<ProtocolVersion, Readonly<Record<string, MethodSpec>> | undefined>> = {
    '1.0': methods,
    // 1.1 is 1.0's methods with the task generations they keep shown (docs/protocol.md §16).
    '1.1': methods,
    '0.3': options.v03Methods,
  };

  const logInternal = (error: unknown, attributes: LogAttributes | { readonly phase: string }): void => {
    if (!isInternalError(error)) return;
    try {
      options.logger.error('JSON-RPC request failed', { ...attributes, error });
    } catch {
      // A failing logger must not turn an answer into a throw.
    }
  };

  const logHandled = (attributes: LogAttributes, result: unknown): void => {
    const taskId = taskIdIn(result);
    if (taskId === undefined) return;
    try {
      options.logger.info?.('JSON-RPC request handled', { ...attributes, correlation_id: taskId });
    } catch {
      // As above: logging never changes the answer.
    }
  };

  /** The error object of a failure; never throws (a failing mapping becomes a plain -32603). */
  const errorObjectOf = (error: unknown): JsonRpcErrorObject => {
    try {
      return toJsonRpcError(error, { errorDomain: options.errorDomain, now });
    } catch (mappingError) {
      logInternal(new Error('Error mapping failed', { cause: mappingError }), { phase: 'error-mapping' });
      const { code, message } = jsonRpcErrorTable.INTERNAL_ERROR;
      return { code, message };
    }
  };

  const failure = (id: JsonRpcId, error: unknown): JsonRpcFailure => ({
    jsonrpc: '2.0',
    id,
    error: errorObjectOf(error),
  });

  const toInvokedEvent = (item: StreamItem, version: ProtocolVersion): InvokedEvent => {
    if ('comment' in item) return { comment: item.comment };
    if ('wire' in item) return withEventId(item.eventId, toProtoJson(item.wire));
    if ('response' in item) return withEventId(item.eventId, toProtoJson(shownTo(version, item.response)));
    return { result: toProtoJson(shownTo(version, item)) };
  };

  /**
   * Pulls the first event before answering with a stream, so an early failure (unknown task,
   * terminal task) is still a plain error (docs/protocol.md §5 "Errors before and during a stream").
   */
  const openStream = async (
    result: StreamResult,
    version: ProtocolVersion,
    attributes: LogAttributes,
  ): Promise<Invocation> => {
    const iterator = result.stream[Symbol.asyncIterator]();
    const first = await iterator.next();
    if (first.done === true) throw new Error('The stream ended before its first event');
    logHandled(attributes, first.value);
    let firstEvent: InvokedEvent;
    try {
      firstEvent = toInvokedEvent(first.value, version);
    } catch (error) {
      await closeQuietly(iterator);
      throw error;
    }

    async function* continueStream(): AsyncGenerator<InvokedEvent> {
      let finished = false;
      try {
        yield firstEvent;
        for (;;) {
          const next = await iterator.next();
          if (next.done === true) {
            finished = true;
            return;
          }
          yield toInvokedEvent(next.value, version);
        }
      } catch (error) {
        // A mid-stream failure is the stream's last event.
        logInternal(error, attributes);
        yield { failure: errorObjectOf(error) };
      } finally {
        // The client went away or the stream failed: let the use case release what it holds.
        if (!finished) await closeQuietly(iterator);
      }
    }

    return { kind: 'stream', events: continueStream() };
  };

  const closeQuietly = async (iterator: AsyncIterator<StreamItem>): Promise<void> => {
    try {
      await iterator.return?.();
    } catch (error) {
      logInternal(error, { phase: 'stream-close' });
    }
  };

  /** Negotiates, parses and runs one method; throws what fails. */
  const run = async (
    envelope: Envelope,
    headers: HeaderMap,
    request: RequestInfo,
    attributes: LogAttributes,
  ): Promise<Invocation> => {
    const requested = headerValue(headers, 'a2a-version') || headerValue(request.query, 'a2a-version');
    const version = resolveProtocolVersion(requested, envelope.method);
    // v0.3 requests go to the v0.3 table (docs/protocol.md §1, §17), when this installation has
    // one; v0.3 had no HTTP+JSON binding of these routes.
    const table = request.binding === 'HTTP+JSON' && version === '0.3' ? undefined : tables[version];
    if (table === undefined) throw new VersionNotSupportedError(truncate(requested?.trim() || version));
    if (!Object.hasOwn(table, envelope.method)) throw new JsonRpcProtocolError('METHOD_NOT_FOUND');
    const spec = table[envelope.method] as MethodSpec;

    // v0.3 clients spell the extensions header `X-A2A-Extensions` (docs/protocol.md §1).
    const extensions = parseExtensionsHeader(
      headerValue(headers, 'a2a-extensions') ??
        (version === '0.3' ? headerValue(headers, 'x-a2a-extensions') : undefined),
    );
    const required = await requiredOf(request.profileId ?? 'default');
    const missing = required.find((uri) => !extensions.includes(uri));
    if (missing !== undefined) throw new ExtensionSupportRequiredError(missing);

    const params = parseParams(spec.params, envelope.params);
    const ctx: RequestContext = {
      caller: request.caller ?? null,
      requestId: attributes.requestId,
      a2aVersion: version,
      extensions,
      profileId: request.profileId ?? 'default',
      baseUrl: request.baseUrl ?? '',
      lastEventId: headerValue(headers, 'last-event-id'),
      binding: request.binding ?? 'JSONRPC',
      signal: request.signal,
    };
    const result = await spec.run(params, ctx);
    if (isStreamResult(result)) return openStream(result, version, attributes);
    logHandled(attributes, result);
    return { kind: 'value', value: toProtoJson(shownTo(version, result)) };
  };

  const invoke = async (
    method: string,
    params: unknown,
    headers: HeaderMap,
    request: RequestInfo = {},
  ): Promise<Invocation> => {
    const attributes: LogAttributes = { requestId: request.requestId ?? randomUUID(), method };
    try {
      return await run({ method, params }, headers, request, attributes);
    } catch (error) {
      logInternal(error, attributes);
      return { kind: 'failure', error: errorObjectOf(error) };
    }
  };

  const dispatch = async (
    rawBody: string,
    headers: HeaderMap,
    request: RequestInfo = {},
  ): Promise<DispatchResult> => {
    let id: JsonRpcId = null;
    let attributes: LogAttributes = { requestId: request.requestId ?? randomUUID() };
    try {
      const contentType = headerValue(headers, 'content-type');
      if (!isJsonMediaType(contentType)) throw new ContentTypeNotSupportedError(truncate(contentType ?? ''));
      let body: unknown;
      try {
        body = JSON.parse(rawBody);
      } catch {
        throw new JsonRpcProtocolError('PARSE_ERROR');
      }
      // Echo the id whenever it is usable, even when the rest of the envelope is not (JSON-RPC §5).
      if (isObject(body) && isJsonRpcId(body.id)) id = body.id;
      const envelope = readEnvelope(body);
      attributes = { ...attributes, method: envelope.method };
      const invocation = await run(envelope, headers, request, attributes);
      if (invocation.kind === 'stream') {
        return { kind: 'sse', status: 200, events: toJsonRpcEvents(id, invocation.events) };
      }
      if (invocation.kind === 'failure') {
        return { kind: 'json', status: 200, body: { jsonrpc: '2.0', id, error: invocation.error } };
      }
      return { kind: 'json', status: 200, body: { jsonrpc: '2.0', id, result: invocation.value } };
    } catch (error) {
      logInternal(error, attributes);
      return { kind: 'json', status: 200, body: failure(id, error) };
    }
  };

  return { dispatch, invoke };
};
