import { createHash } from 'node:crypto';
import {
  buildAgentCard,
  implementedCapabilities,
  pushDeliveriesExtension,
} from '../../shared/app/profiles/agent-card.ts';
import type { ProfileCatalog } from '../../shared/app/profiles/served-profiles.ts';
import {
  type Caller,
  type Dispatcher,
  type HeaderMap,
  parseExtensionsHeader,
  type SseEvent,
} from '../../shared/app/rpc/dispatcher.ts';
import { toJsonRpcError } from '../../shared/app/rpc/errors-table.ts';
import { createHttpJsonBinding, isHttpJsonPath } from '../../shared/app/rpc/http-json-binding.ts';
import {
  delegationCallbackPattern,
  type WakeInput,
  type WakeOutcome,
} from '../../shared/app/runs/wake-delegated-run.ts';
import { hasAuthScheme } from '../../shared/config/auth.ts';
import type { Config } from '../../shared/config/config.ts';
import { isInterrupted, isTerminal, type TaskState } from '../../shared/domain/a2a.ts';
import { LimitExceededError } from '../../shared/domain/errors.ts';

/**
 * The HTTP surface of the rpc function, independent of how the request arrived (API Gateway
 * event or the local harness): agent cards and the JSON-RPC endpoint of every profile.
 */

export interface HttpRequest {
  readonly method: string;
  readonly path: string;
  /** Lower-cased header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly query: HeaderMap;
  readonly body: string;
  readonly caller: Caller | null;
  readonly requestId: string;
  /** Absolute URL this API is served under (scheme, host and stage), without a trailing slash. */
  readonly baseUrl: string;
  /** Aborts when the client's connection closes before the answer ends (docs/protocol.md §5). */
  readonly signal?: AbortSignal;
}

export type HttpResponse =
  | { readonly status: number; readonly headers: Record<string, string>; readonly body: string }
  | {
      readonly status: number;
      readonly headers: Record<string, string>;
      readonly events: AsyncIterable<SseEvent>;
    };

export interface HttpAppDeps {
  readonly config: Config;
  readonly dispatcher: Dispatcher;
  /**
   * The profiles served, saved ones included (docs/operations.md, "Saved profiles"); absent =
   * `config.profiles` only.
   */
  readonly profiles?: ProfileCatalog;
  /**
   * Push notifications of delegated tasks (docs/configuration.md `publicUrl`): wakes the run
   * that waits for one. Absent: the callback path answers 404.
   */
  readonly wakeDelegated?: (input: WakeInput) => Promise<WakeOutcome>;
}

const json = (status: number, value: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: { 'Content-Type': 'application/json', ...headers },
  body: JSON.stringify(value),
});

/**
 * The extensions a request activates, echoed in the header spelling it used (docs/protocol.md §9
 * "Extensions": the response SHOULD list them): of those it names, the ones this server declares
 * on its cards — the push-deliveries extension (docs/protocol.md §7). Unknown ones are ignored.
 */
const activatedExtensions = (headers: HttpRequest['headers']): Record<string, string> => {
  const name = headers['a2a-extensions'] !== undefined ? 'A2A-Extensions' : 'X-A2A-Extensions';
  const active = parseExtensionsHeader(headers[name.toLowerCase()]).filter(
    (uri) => implementedCapabilities.pushNotifications && uri === pushDeliveriesExtension.uri,
  );
  return active.length === 0 ? {} : { [name]: active.join(', ') };
};

/**
 * Bodies above the cap are refused before they are parsed; the binding answers the error: a
 * JSON-RPC -32600 with HTTP 200 like every other JSON-RPC answer (docs/protocol.md §2), id null
 * since nothing was read, or an HTTP+JSON 400 Status.
 */
const largeBodyError = (body: string, maxBytes: number): LimitExceededError | undefined => {
  // UTF-16 length bounds the UTF-8 size from below: most bodies skip the byte count entirely.
  if (body.length <= maxBytes / 3 || Buffer.byteLength(body, 'utf8') <= maxBytes) return undefined;
  return new LimitExceededError('REQUEST_BYTES', {
    setting: 'maxRequestBytes',
    max: maxBytes,
    field: 'request',
    description: `The request body exceeds ${maxBytes} bytes`,
  });
};

const sseHeaders = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
};

const cardPath = /^\/(?:agents\/([a-z0-9][a-z0-9-]{0,62})\/)?\.well-known\/agent-card\.json$/;
const rpcPath = /^\/(?:agents\/([a-z0-9][a-z0-9-]{0,62}))?\/?$/;
/** An HTTP+JSON route below an agent's base URL (docs/protocol.md §14); `default`'s also at the root. */
const httpJsonPath = /^(?:\/agents\/([a-z0-9][a-z0-9-]{0,62}))?(\/.+)$/;

/** The `A2A-Version` a request asks for, as a header or a query parameter (docs/protocol.md §2). */
const requestedVersion = (request: HttpRequest): string => {
  const query = request.query['A2A-Version'] ?? request.query['a2a-version'];
  return (request.headers['a2a-version'] || (typeof query === 'string' ? query : query?.[0]) || '').trim();
};

/**
 * When this instance first served each card body (by its ETag), as an HTTP date: the card's
 * `Last-Modified` (docs/protocol.md §9). A card changes only with its configuration, which an
 * instance sees change at most when it reads it, so the first time a body is served is the latest
 * it can have changed as far as this instance knows. Bounded: the oldest entries go first.
 */
const createCardDates = (capacity = 64) => {
  const seen = new Map<string, string>();
  return {
    firstSeen: (etag: string, now: Date): string => {
      const known = seen.get(etag);
      if (known !== undefined) return known;
      if (seen.size >= capacity) seen.delete(seen.keys().next().value as string);
      const date = now.toUTCString();
      seen.set(etag, date);
      return date;
    },
  };
};

export const createHttpApp = (deps: HttpAppDeps) => {
  const cardDates = createCardDates();
  const servedConfig = async (): Promise<Config> =>
    deps.profiles === undefined ? deps.config : (await deps.profiles.current()).config;

  // The ETag is the body's digest: a saved profile that changes changes its card's ETag. The
  // card's version is negotiated like a request's (docs/protocol.md §9 "v0.3 clients"): v0.3 by
  // `A2A-Version: 0.3` (header or query), v1.0 otherwise; caches keep one per version (`Vary`).
  const serveCard = async (request: HttpRequest, profileId: string): Promise<HttpResponse> => {
    const version = /^0\.3(\.\d+)?$/.test(requestedVersion(request)) ? '0.3' : '1.0';
    const card = buildAgentCard(await servedConfig(), profileId, request.baseUrl, version);
    if (card === undefined) return json(404, { error: 'No such agent' });
    const body = JSON.stringify(card);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    const headers = {
      'Cache-Control': 'public, max-age=300',
      ETag: etag,
      'Last-Modified': cardDates.firstSeen(etag, new Date()),
      Vary: 'A2A-Version',
    };
    if (request.headers['if-none-match'] === etag) return { status: 304, headers, body: '' };
    return { status: 200, headers: { 'Content-Type': 'application/json', ...headers }, body };
  };

  // When callers must authenticate (I-OWNER), a JSON-RPC request that arrives without an
  // identity (a route deployed without the authorizer) is refused, never served as `local`.
  const secured = hasAuthScheme(deps.config.auth);

  /** What every data request passes first, on either binding: an identity, and an agent that exists. */
  const refuseUnserved = async (
    request: HttpRequest,
    profileId: string,
  ): Promise<HttpResponse | undefined> => {
    if (secured && request.caller === null) {
      return json(401, { message: 'Unauthorized' }, { 'WWW-Authenticate': 'Bearer' });
    }
    if ((await servedConfig()).profiles[profileId] === undefined)
      return json(404, { error: 'No such agent' });
    return undefined;
  };

  const requestInfo = (request: HttpRequest, profileId: string) => ({
    query: request.query,
    caller: request.caller,
    requestId: request.requestId,
    profileId,
    baseUrl: request.baseUrl,
    signal: request.signal,
  });

  const serveRpc = async (request: HttpRequest, profileId: string): Promise<HttpResponse> => {
    const refused = await refuseUnserved(request, profileId);
    if (refused !== undefined) return refused;
    const tooLarge = largeBodyError(request.body, deps.config.maxRequestBytes);
    if (tooLarge !== undefined) {
      const error = toJsonRpcError(tooLarge, { errorDomain: deps.config.errorDomain, now: () => new Date() });
      return json(200, { jsonrpc: '2.0', id: null, error });
    }
    const result = await deps.dispatcher.dispatch(
      request.body,
      request.headers,
      requestInfo(request, profileId),
    );
    const extensions = activatedExtensions(request.headers);
    if (result.kind === 'json') return json(result.status, result.body, extensions);
    return { status: result.status, headers: { ...extensions, ...sseHeaders }, events: result.events };
  };

  // The HTTP+JSON binding over the same dispatcher (docs/protocol.md §14).
  const httpJson = createHttpJsonBinding(deps.dispatcher, { errorDomain: deps.config.errorDomain });

  const serveHttpJson = async (
    request: HttpRequest,
    profileId: string,
    path: string,
  ): Promise<HttpResponse> => {
    const refused = await refuseUnserved(request, profileId);
    if (refused !== undefined) return refused;
    const tooLarge = largeBodyError(request.body, deps.config.maxRequestBytes);
    const answer =
      tooLarge !== undefined
        ? httpJson.failure(tooLarge)
        : await httpJson.serve({ ...request, path }, requestInfo(request, profileId));
    if (answer === undefined) return json(404, { error: 'Not found' });
    const extensions = activatedExtensions(request.headers);
    if (answer.kind === 'json') {
      return { status: answer.status, headers: { ...answer.headers, ...extensions }, body: answer.body };
    }
    return { status: answer.status, headers: { ...extensions, ...sseHeaders }, events: answer.events };
  };

  /**
   * A delegated task's push notification (no authorizer: the remote agent is not a caller of this
   * API): the token it carries decides, and the body says only whether the task settled.
   */
  const serveCallback = async (
    request: HttpRequest,
    taskId: string,
    runId: string,
  ): Promise<HttpResponse> => {
    if (deps.wakeDelegated === undefined || request.method !== 'POST')
      return json(404, { error: 'Not found' });
    const outcome = await deps.wakeDelegated({
      taskId: decodeURIComponent(taskId),
      runId: decodeURIComponent(runId),
      token: request.headers['x-a2a-notification-token'],
      settled: notifiesSettled(request.body),
    });
    return outcome === 'refused'
      ? json(401, { message: 'Unauthorized' })
      : { status: 204, headers: {}, body: '' };
  };

  return async (request: HttpRequest): Promise<HttpResponse> => {
    const callback = delegationCallbackPattern.exec(request.path);
    if (callback) return serveCallback(request, callback[1] ?? '', callback[2] ?? '');
    const card = cardPath.exec(request.path);
    if (card && (request.method === 'GET' || request.method === 'HEAD'))
      return serveCard(request, card[1] ?? 'default');
    const rpc = rpcPath.exec(request.path);
    if (rpc && request.method === 'POST') return serveRpc(request, rpc[1] ?? 'default');
    if (card || rpc) return json(405, { error: 'Method not allowed' }, { Allow: card ? 'GET' : 'POST' });
    const rest = httpJsonPath.exec(request.path);
    if (rest?.[2] !== undefined && isHttpJsonPath(rest[2]))
      return serveHttpJson(request, rest[1] ?? 'default', rest[2]);
    return json(404, { error: 'Not found' });
  };
};

/** Whether a push notification's body (a StreamResponse) says its task settled; unreadable: no. */
const notifiesSettled = (body: string): boolean => {
  try {
    const value = JSON.parse(body) as {
      task?: { status?: { state?: string } };
      statusUpdate?: { status?: { state?: string } };
    };
    const state = (value.task ?? value.statusUpdate)?.status?.state;
    return typeof state === 'string' && (isTerminal(state as TaskState) || isInterrupted(state as TaskState));
  } catch {
    return false;
  }
};

/**
 * Serializes one SSE event: an optional id line and one `data:` line (docs/protocol.md §2 "SSE framing"),
 * or a comment line (a heartbeat) that SSE clients ignore.
 */
export const formatSseEvent = (event: SseEvent): string => {
  if ('comment' in event) return `: ${event.comment.replace(/[\r\n]+/g, ' ')}\n\n`;
  const id = event.eventId === undefined ? '' : `id: ${event.eventId.replace(/[\r\n]+/g, '')}\n`;
  if ('message' in event) return `${id}data: ${JSON.stringify(event.message)}\n\n`;
  const type = event.event === undefined ? '' : `event: ${event.event.replace(/[\r\n]+/g, '')}\n`;
  return `${type}${id}data: ${JSON.stringify(event.data)}\n\n`;
};
