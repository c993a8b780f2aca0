import { Readable } from 'node:stream';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { StreamingResponse } from '../../shared/adapters/middy-presets.ts';
import type { Caller, SseEvent } from '../../shared/app/rpc/dispatcher.ts';
import { formatSseEvent, type HttpRequest, type HttpResponse } from './http-app.ts';

/** Translates between API Gateway's REST proxy event and the rpc function's HTTP surface. */

const lowerCaseHeaders = (headers: APIGatewayProxyEvent['headers']): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));

/**
 * The identity a Lambda authorizer put into the request context, if any. API Gateway reuses an
 * authorizer's answer for its cache TTL whatever the token says: an answer that carries the
 * token's `exp` (epoch seconds, as a number or, as the context reaches the function, a string) is
 * no identity from that second on (docs/security.md, control 1).
 */
const callerOf = (event: APIGatewayProxyEvent, nowMs: number): Caller | null => {
  const authorizer = event.requestContext.authorizer;
  const tenant = authorizer?.tenant;
  const principal = authorizer?.principal;
  const exp = authorizer?.exp;
  if (exp !== undefined && exp !== null && !(Number(exp) * 1000 > nowMs)) return null;
  return typeof tenant === 'string' && typeof principal === 'string' && tenant !== '' && principal !== ''
    ? { tenant, principal }
    : null;
};

/**
 * The public base URL: the Host the client used, and the stage prefix API Gateway strips from
 * `path` but keeps in `requestContext.path` (e.g. `/prod`).
 */
const baseUrlOf = (
  event: APIGatewayProxyEvent,
  headers: Record<string, string | undefined>,
  localMode: boolean,
) => {
  const proto = headers['x-forwarded-proto'] ?? (localMode ? 'http' : 'https');
  const host = headers.host ?? 'localhost';
  const fullPath = event.requestContext.path ?? event.path;
  const prefix = fullPath.endsWith(event.path) ? fullPath.slice(0, fullPath.length - event.path.length) : '';
  return `${proto}://${host}${prefix.replace(/\/$/, '')}`;
};

export const toHttpRequest = (
  event: APIGatewayProxyEvent,
  localMode: boolean,
  nowMs: number = Date.now(),
): HttpRequest => {
  const headers = lowerCaseHeaders(event.headers);
  const body = event.body ?? '';
  return {
    method: event.httpMethod,
    path: event.path,
    headers,
    query: event.queryStringParameters ?? {},
    body: event.isBase64Encoded ? Buffer.from(body, 'base64').toString('utf8') : body,
    caller: callerOf(event, nowMs),
    requestId: event.requestContext.requestId,
    baseUrl: baseUrlOf(event, headers, localMode),
  };
};

/** The SSE events as text, each as soon as it is read from the journal. */
async function* sseChunks(events: AsyncIterable<SseEvent>): AsyncGenerator<string> {
  for await (const event of events) yield formatSseEvent(event);
}

/**
 * The SSE events as the body middy pipes into Lambda's response stream. When that stream closes
 * or fails before the end (the client went away), the pipe destroys the body, and the body aborts
 * `disconnected` before it returns the generators behind it: each is suspended at an `await`
 * that its `return()` cannot interrupt, down to the stream's journal wait. The aborted wait ends,
 * the stream returns, and its slot is released at once (docs/protocol.md §5).
 */
const sseBody = (events: AsyncIterable<SseEvent>, disconnected: AbortController): Readable => {
  const body = Readable.from(sseChunks(events));
  const destroy = body._destroy.bind(body);
  body._destroy = (error, callback) => {
    if (!body.readableEnded) disconnected.abort();
    destroy(error, callback);
  };
  return body;
};

/**
 * A response for Lambda's response stream (API Gateway REST response streaming): status and
 * headers first, then the body, or each SSE event as it comes; `disconnected` aborts when the
 * client goes away before the last one.
 */
export const toStreamingResponse = (
  response: HttpResponse,
  disconnected: AbortController,
): StreamingResponse => ({
  statusCode: response.status,
  headers: response.headers,
  body: 'body' in response ? response.body : sseBody(response.events, disconnected),
});

/**
 * One API Gateway request through the rpc function's HTTP surface, answered on Lambda's response
 * stream. The request's `signal` aborts when the client goes away before the answer ends.
 */
export const serveOnResponseStream = async (
  app: (request: HttpRequest) => Promise<HttpResponse>,
  event: APIGatewayProxyEvent,
  localMode: boolean,
): Promise<StreamingResponse> => {
  const disconnected = new AbortController();
  const response = await app({ ...toHttpRequest(event, localMode), signal: disconnected.signal });
  return toStreamingResponse(response, disconnected);
};
