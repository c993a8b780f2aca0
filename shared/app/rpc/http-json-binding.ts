import type { JsonValue } from '../../domain/a2a.ts';
import { ContentTypeNotSupportedError } from '../../domain/errors.ts';
import type { Dispatcher, HeaderMap, InvokedEvent, RequestInfo, SseEvent } from './dispatcher.ts';
import { headerValue, isJsonMediaType } from './dispatcher.ts';
import {
  type JsonRpcErrorObject,
  JsonRpcProtocolError,
  jsonRpcErrorTable,
  toJsonRpcError,
} from './errors-table.ts';

/**
 * The HTTP+JSON binding (docs/protocol.md §14): the proto's `google.api.http` routes of each
 * method, and their `/{tenant}/…` variants, translated into the dispatcher's `invoke` — the same
 * negotiation, schemas and use cases as JSON-RPC, a second transport adapter and no second copy of
 * any method. Errors are `google.rpc.Status` bodies (AIP-193) with the ErrorInfo JSON-RPC carries
 * and the HTTP status the specification maps (§5.4); streams are SSE of bare StreamResponses.
 */

/** A request below an agent's base URL (`/message:send`, `/t1/tasks/abc`, …). */
export interface HttpJsonRequest {
  readonly method: string;
  /** The path below the agent's base URL, starting with `/`, undecoded. */
  readonly path: string;
  readonly query: HeaderMap;
  readonly headers: HeaderMap;
  readonly body: string;
}

export type HttpJsonAnswer =
  | {
      readonly kind: 'json';
      readonly status: number;
      readonly headers: Record<string, string>;
      readonly body: string;
    }
  | { readonly kind: 'sse'; readonly status: 200; readonly events: AsyncIterable<SseEvent> };

type Params = Record<string, unknown>;

interface Route {
  readonly verbs: readonly string[];
  readonly pattern: RegExp;
  readonly method: string;
  /** The method's params from the path's captures, the query and the body. */
  readonly params: (captures: readonly string[], query: Params, body: Params) => Params;
}

const segment = '([^/:]+)';

/** The proto's routes; SubscribeToTask answers GET (the proto) and POST (the specification's text). */
const routes: readonly Route[] = [
  { verbs: ['POST'], pattern: /^\/message:send$/, method: 'SendMessage', params: (_, __, body) => body },
  {
    verbs: ['POST'],
    pattern: /^\/message:stream$/,
    method: 'SendStreamingMessage',
    params: (_, __, body) => body,
  },
  { verbs: ['GET'], pattern: /^\/tasks$/, method: 'ListTasks', params: (_, query) => query },
  {
    verbs: ['GET'],
    pattern: new RegExp(`^/tasks/${segment}$`),
    method: 'GetTask',
    params: ([id], query) => ({ ...query, id }),
  },
  {
    verbs: ['POST'],
    pattern: new RegExp(`^/tasks/${segment}:cancel$`),
    method: 'CancelTask',
    params: ([id], _, body) => ({ ...body, id }),
  },
  {
    verbs: ['GET', 'POST'],
    pattern: new RegExp(`^/tasks/${segment}:subscribe$`),
    method: 'SubscribeToTask',
    params: ([id]) => ({ id }),
  },
  {
    verbs: ['POST'],
    pattern: new RegExp(`^/tasks/${segment}/pushNotificationConfigs$`),
    method: 'CreateTaskPushNotificationConfig',
    params: ([taskId], _, body) => ({ ...body, taskId }),
  },
  {
    verbs: ['GET'],
    pattern: new RegExp(`^/tasks/${segment}/pushNotificationConfigs$`),
    method: 'ListTaskPushNotificationConfigs',
    params: ([taskId], query) => ({ ...query, taskId }),
  },
  {
    verbs: ['GET'],
    pattern: new RegExp(`^/tasks/${segment}/pushNotificationConfigs/${segment}$`),
    method: 'GetTaskPushNotificationConfig',
    params: ([taskId, id]) => ({ taskId, id }),
  },
  {
    verbs: ['DELETE'],
    pattern: new RegExp(`^/tasks/${segment}/pushNotificationConfigs/${segment}$`),
    method: 'DeleteTaskPushNotificationConfig',
    params: ([taskId, id]) => ({ taskId, id }),
  },
  { verbs: ['GET'], pattern: /^\/extendedAgentCard$/, method: 'GetExtendedAgentCard', params: () => ({}) },
];

interface Match {
  readonly route: Route;
  readonly captures: readonly string[];
  readonly tenant?: string;
}

/**
 * The route of a path and verb: as it is, else as `/{tenant}/…` (the proto's additional
 * bindings). A path some route has but not for this verb answers with that route (a 405).
 */
const matchRoute = (path: string, verb?: string): Match | undefined => {
  const slash = path.indexOf('/', 1);
  const candidates: [string, string | undefined][] = [[path, undefined]];
  if (slash > 1 && slash < path.length - 1) candidates.push([path.slice(slash), path.slice(1, slash)]);
  let wrongVerb: Match | undefined;
  for (const [rest, tenant] of candidates) {
    for (const route of routes) {
      const found = route.pattern.exec(rest);
      if (found === null) continue;
      const match = { route, captures: found.slice(1), ...(tenant !== undefined && { tenant }) };
      if (verb === undefined || route.verbs.includes(verb)) return match;
      wrongVerb ??= match;
    }
  }
  return wrongVerb;
};

/** Whether a path is one of this binding's routes, whatever the verb. */
export const isHttpJsonPath = (path: string): boolean => matchRoute(path) !== undefined;

/** The gRPC status and HTTP status of an A2A error (the specification's §5.4 table). */
const a2aStatuses: Readonly<Record<number, readonly [number, string]>> = {
  [-32001]: [404, 'NOT_FOUND'],
  [-32002]: [409, 'FAILED_PRECONDITION'],
  [-32003]: [400, 'UNIMPLEMENTED'],
  [-32004]: [400, 'UNIMPLEMENTED'],
  [-32005]: [415, 'INVALID_ARGUMENT'],
  [-32006]: [502, 'INTERNAL'],
  [-32007]: [400, 'FAILED_PRECONDITION'],
  [-32008]: [400, 'FAILED_PRECONDITION'],
  [-32009]: [400, 'UNIMPLEMENTED'],
  [-32010]: [409, 'ABORTED'],
  [-32700]: [400, 'INVALID_ARGUMENT'],
  [-32600]: [400, 'INVALID_ARGUMENT'],
  [-32602]: [400, 'INVALID_ARGUMENT'],
  [-32601]: [404, 'NOT_FOUND'],
  [-32603]: [500, 'INTERNAL'],
};

/** This installation's reasons for a lost race are a conflict on this binding, not a bad request. */
const conflictReasons = new Set(['TASK_BUSY', 'TASK_ALREADY_WORKING']);

const reasonOf = (error: JsonRpcErrorObject): string | undefined => {
  const info = error.data?.find((detail) => 'reason' in detail);
  return info !== undefined && 'reason' in info ? info.reason : undefined;
};

/** `{error: {code, status, message, details}}` and its HTTP status (AIP-193). */
export const toStatusBody = (error: JsonRpcErrorObject): { status: number; body: JsonValue } => {
  const reason = reasonOf(error);
  const [status, grpcStatus] =
    reason !== undefined && conflictReasons.has(reason)
      ? ([409, 'ABORTED'] as const)
      : (a2aStatuses[error.code] ?? [500, 'INTERNAL']);
  return {
    status,
    body: {
      error: {
        code: status,
        status: grpcStatus,
        message: error.message,
        details: (error.data ?? []) as unknown as JsonValue[],
      },
    },
  };
};

/** Query strings as the proto's JSON: booleans and short state names converted, repeated keys to their first value. */
const queryParams = (query: HeaderMap): Params => {
  const params: Params = {};
  for (const [key, raw] of Object.entries(query)) {
    const value = typeof raw === 'string' ? raw : raw?.[0];
    if (value === undefined || key.toLowerCase() === 'a2a-version') continue;
    if (value === 'true' || value === 'false') params[key] = value === 'true';
    else if (key === 'status' && /^[a-z][a-z-]*$/.test(value))
      params[key] = `TASK_STATE_${value.replaceAll('-', '_').toUpperCase()}`;
    else params[key] = value;
  }
  return params;
};

const decodeAll = (captures: readonly string[]): string[] =>
  captures.map((value) => decodeURIComponent(value));

export interface HttpJsonBindingOptions {
  /** ErrorInfo domain for this installation's own reasons (config `errorDomain`). */
  readonly errorDomain: string;
  readonly now?: () => Date;
}

export const createHttpJsonBinding = (dispatcher: Dispatcher, options: HttpJsonBindingOptions) => {
  const now = options.now ?? (() => new Date());

  /** A thrown error as this binding answers it (the JSON-RPC error table, then its Status). */
  const failure = (error: unknown): HttpJsonAnswer =>
    statusAnswer(toJsonRpcError(error, { errorDomain: options.errorDomain, now }));

  /** Undefined: the path is none of this binding's routes. */
  const serve = async (request: HttpJsonRequest, info: RequestInfo): Promise<HttpJsonAnswer | undefined> => {
    const match = matchRoute(request.path, request.method);
    if (match === undefined) return undefined;
    if (!match.route.verbs.includes(request.method)) {
      const { body } = toStatusBody(jsonRpcErrorTable.METHOD_NOT_FOUND);
      return {
        kind: 'json',
        status: 405,
        headers: { 'Content-Type': 'application/json', Allow: match.route.verbs.join(', ') },
        body: JSON.stringify({ error: { ...(body as { error: object }).error, code: 405 } }),
      };
    }
    let params: Params;
    try {
      params = match.route.params(decodeAll(match.captures), queryParams(request.query), readBody(request));
    } catch (error) {
      return failure(error);
    }
    if (match.tenant !== undefined) params = { ...params, tenant: decodeURIComponent(match.tenant) };
    const invocation = await dispatcher.invoke(match.route.method, params, request.headers, {
      ...info,
      binding: 'HTTP+JSON',
    });
    if (invocation.kind === 'failure') return statusAnswer(invocation.error);
    if (invocation.kind === 'stream')
      return { kind: 'sse', status: 200, events: toSseEvents(invocation.events) };
    // google.protobuf.Empty (DeleteTaskPushNotificationConfig) is `{}`.
    const body = invocation.value ?? {};
    return {
      kind: 'json',
      status: 200,
      headers: { 'Content-Type': contentTypeFor(request) },
      body: JSON.stringify(body),
    };
  };

  return { serve, failure };
};

/** An error object as this binding answers it: a Status body, `application/json` (§11.6 of the specification). */
const statusAnswer = (error: JsonRpcErrorObject): HttpJsonAnswer => {
  const { status, body } = toStatusBody(error);
  return {
    kind: 'json',
    status,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  };
};

/** `application/a2a+json` to a client that accepts it, else `application/json` (docs/protocol.md §14). */
const contentTypeFor = (request: HttpJsonRequest): string =>
  /application\/a2a\+json/i.test(headerValue(request.headers, 'accept') ?? '')
    ? 'application/a2a+json'
    : 'application/json';

/** A POST's JSON body (none is `{}`); a body of another media type is refused (415). */
const readBody = (request: HttpJsonRequest): Params => {
  if (request.method !== 'POST' || request.body.trim() === '') return {};
  const contentType = headerValue(request.headers, 'content-type');
  if (!isJsonMediaType(contentType)) throw new ContentTypeNotSupportedError((contentType ?? '').slice(0, 64));
  let body: unknown;
  try {
    body = JSON.parse(request.body);
  } catch {
    throw new JsonRpcProtocolError('PARSE_ERROR');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new JsonRpcProtocolError('INVALID_REQUEST', [
      { field: 'body', description: 'Must be a JSON object' },
    ]);
  }
  return body as Params;
};

/** SSE of bare StreamResponses (§11.7 of the specification); a failure mid-stream is an `error` event. */
async function* toSseEvents(events: AsyncIterable<InvokedEvent>): AsyncGenerator<SseEvent> {
  for await (const event of events) {
    if ('comment' in event) yield event;
    else if ('failure' in event) yield { event: 'error', data: toStatusBody(event.failure).body };
    else
      yield event.eventId === undefined
        ? { data: event.result }
        : { eventId: event.eventId, data: event.result };
  }
}
