import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { Caller } from '../../shared/app/rpc/dispatcher.ts';
import { formatSseEvent, type HttpRequest, type HttpResponse } from './http-app.ts';

/** Translates between API Gateway's REST proxy event and the rpc function's HTTP surface. */

const lowerCaseHeaders = (headers: APIGatewayProxyEvent['headers']): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));

/** The identity a Lambda authorizer put into the request context, if any. */
const callerOf = (event: APIGatewayProxyEvent): Caller | null => {
  const authorizer = event.requestContext.authorizer;
  const tenant = authorizer?.tenant;
  const principal = authorizer?.principal;
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

export const toHttpRequest = (event: APIGatewayProxyEvent, localMode: boolean): HttpRequest => {
  const headers = lowerCaseHeaders(event.headers);
  const body = event.body ?? '';
  return {
    method: event.httpMethod,
    path: event.path,
    headers,
    query: event.queryStringParameters ?? {},
    body: event.isBase64Encoded ? Buffer.from(body, 'base64').toString('utf8') : body,
    caller: callerOf(event),
    requestId: event.requestContext.requestId,
    baseUrl: baseUrlOf(event, headers, localMode),
  };
};

/**
 * Writes a response to Lambda's response stream (API Gateway REST response streaming): status
 * and headers first, then the body, or each SSE event as soon as it is read from the journal.
 */
export const writeResponse = async (responseStream: Writable, response: HttpResponse): Promise<void> => {
  const stream = awslambda.HttpResponseStream.from(responseStream, {
    statusCode: response.status,
    headers: response.headers,
  });
  if ('body' in response) {
    stream.end(response.body);
    await finished(stream);
    return;
  }
  // A client that went away closes the stream; leaving the loop closes the use case's journal
  // polling (the dispatcher returns its iterator) at the next event or heartbeat.
  let gone = false;
  const markGone = (): void => {
    gone = true;
  };
  stream.once('close', markGone);
  stream.once('error', markGone);
  for await (const event of response.events) {
    if (gone || stream.destroyed) break;
    stream.write(formatSseEvent(event));
  }
  if (gone || stream.destroyed) return;
  stream.end();
  await finished(stream);
};
