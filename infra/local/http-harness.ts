import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { AuthSettings } from '../../shared/config/auth.ts';
import { consoleLog, createLambdaContext, type LocalLog, reportInvocation } from './lambda-invocation.ts';
import { createLocalAuthorizer, type LocalAuthorizerOptions } from './local-authorizer.ts';

/**
 * API Gateway (REST API, `/{proxy+}` Lambda proxy integration, Lambda authorizer) in front of
 * the same rpc handler that runs in Lambda: each request becomes an `APIGatewayProxyEvent`,
 * the result becomes the HTTP response. A result whose body is an async iterable is written
 * chunk by chunk as it is produced — the seam for Lambda response streaming (SSE).
 */

export interface Identity {
  readonly tenant: string;
  readonly principal: string;
}

export interface AuthorizeRequest {
  readonly method: string;
  /** The request path, without the query string. */
  readonly path: string;
}

/** A Lambda authorizer: an identity for `requestContext.authorizer`, or 401 without invoking the handler. */
export type Authorize = (
  headers: IncomingHttpHeaders,
  request: AuthorizeRequest,
) => Promise<Identity | 'unauthorized'>;

/** A streamed response: status and headers first, then each chunk as soon as it is yielded. */
export interface StreamingProxyResult extends Omit<APIGatewayProxyResult, 'body' | 'isBase64Encoded'> {
  readonly body: AsyncIterable<string | Uint8Array>;
}

export type HarnessProxyResult = APIGatewayProxyResult | StreamingProxyResult;

export type ApiGatewayLambdaHandler = (
  event: APIGatewayProxyEvent,
  context: Context,
) => Promise<HarnessProxyResult>;

export const isStreamingResult = (result: HarnessProxyResult): result is StreamingProxyResult =>
  typeof result.body === 'object' && result.body !== null && Symbol.asyncIterator in result.body;

/** Who calls the public agent card routes when tokens are configured and none is sent. */
export const anonymousIdentity: Identity = { tenant: 'anonymous', principal: 'anonymous' };
/** Everyone, when no tokens are configured (docs/configuration.md). */
export const localIdentity: Identity = { tenant: 'local', principal: 'local' };

/**
 * docs/configuration.md local mode, over the same `authenticate` core as the Lambda authorizer (decision
 * 0007): static `auth.tokens`, `auth.apiKeys` and `auth.jwt` all work. Without any scheme every
 * caller is `local`/`local`; with one, agent cards are public and everything else needs a valid
 * credential (401 otherwise, without calling the handler).
 */
export const staticTokenAuthorizer = (
  config: { readonly auth: AuthSettings },
  options?: LocalAuthorizerOptions,
): Authorize => createLocalAuthorizer(config, options);

export interface HttpHarnessOptions {
  readonly handler: ApiGatewayLambdaHandler;
  readonly authorize: Authorize;
  /** 0 or omitted picks a free port. */
  readonly port?: number;
  readonly host?: string;
  readonly functionName?: string;
  readonly stage?: string;
  /** Larger bodies get 413 before the handler runs (default 1 MiB). */
  readonly maxBodyBytes?: number;
  readonly timeoutMs?: number;
  readonly region?: string;
  readonly log?: LocalLog;
  /**
   * Static files served as they are, before the authorizer (public, like the optional static
   * page of a deployment): `GET <prefix><name>` answers `<directory>/<name>`, `<prefix>` answers
   * `index.html`. Only plain file names of the directory itself (decision 0016: the journal viewer).
   */
  readonly staticFiles?: StaticFiles;
}

export interface StaticFiles {
  /** URL path prefix with both slashes, e.g. `/viewer/`. */
  readonly prefix: string;
  readonly directory: string;
}

export interface HttpHarness {
  /** Base URL, no trailing slash. */
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Stops accepting, waits briefly for requests in flight (open streams are cut), closes. */
  stop(graceMs?: number): Promise<void>;
}

export const maxBodyBytesDefault = 1024 * 1024;

const textualType =
  /^(?:text\/|application\/(?:json|[\w.+-]*\+json|x-www-form-urlencoded|xml|[\w.+-]*\+xml|javascript)\b)/i;

const isTextBody = (contentType: string | undefined, body: Buffer): boolean => {
  if (contentType) return textualType.test(contentType.trim());
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(body);
    return true;
  } catch {
    return false;
  }
};

class BodyTooLargeError extends Error {}

const readBody = (req: IncomingMessage, maxBytes: number): Promise<Buffer> =>
  new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLargeError());
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolveBody(Buffer.concat(chunks)));
    req.once('error', reject);
  });

const requestTime = (date: Date): string => {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const pad = (value: number): string => String(value).padStart(2, '0');
  return `${pad(date.getUTCDate())}/${months[date.getUTCMonth()]}/${date.getUTCFullYear()}:${pad(date.getUTCHours())}:${pad(
    date.getUTCMinutes(),
  )}:${pad(date.getUTCSeconds())} +0000`;
};

const decodePath = (path: string): string => {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
};

/**
 * The request target as a URL. An origin-form target is a path, whatever it looks like:
 * resolving `//agents/x` against a base would read `agents` as a host (and `//` would throw).
 * Undefined for a target that is no URL at all (`*`).
 */
export const requestUrl = (target: string | undefined): URL | undefined => {
  const raw = target ?? '/';
  try {
    return new URL(raw.startsWith('/') ? `http://harness.invalid${raw}` : raw);
  } catch {
    return undefined;
  }
};

export interface ToProxyEventInput {
  readonly req: IncomingMessage;
  readonly body: Buffer;
  readonly identity: Identity;
  readonly stage: string;
  readonly requestId: string;
}

/** The REST API proxy event API Gateway would send for this request. */
export const toProxyEvent = ({
  req,
  body,
  identity,
  stage,
  requestId,
}: ToProxyEventInput): APIGatewayProxyEvent => {
  const url = requestUrl(req.url) ?? new URL('http://harness.invalid/');
  const path = decodePath(url.pathname);
  // rawHeaders keeps the client's spelling, as API Gateway does. Maps, not object literals: a
  // header or parameter named `toString` or `__proto__` is a name like any other.
  const headers = new Map<string, string>();
  const multiValueHeaders = new Map<string, string[]>();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    const value = req.rawHeaders[i + 1]!;
    headers.set(name, value);
    multiValueHeaders.set(name, [...(multiValueHeaders.get(name) ?? []), value]);
  }
  const query = new Map<string, string>();
  const multiValueQuery = new Map<string, string[]>();
  for (const [name, value] of url.searchParams) {
    query.set(name, value);
    multiValueQuery.set(name, [...(multiValueQuery.get(name) ?? []), value]);
  }
  const hasQuery = query.size > 0;
  const isRoot = path === '/';
  const text = body.length > 0 && isTextBody(req.headers['content-type'], body);
  const now = new Date();
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  return {
    resource: isRoot ? '/' : '/{proxy+}',
    path,
    httpMethod: req.method ?? 'GET',
    // fromEntries defines own properties, so even `__proto__` stays an ordinary key.
    headers: Object.fromEntries(headers),
    multiValueHeaders: Object.fromEntries(multiValueHeaders),
    queryStringParameters: hasQuery ? Object.fromEntries(query) : null,
    multiValueQueryStringParameters: hasQuery ? Object.fromEntries(multiValueQuery) : null,
    pathParameters: isRoot ? null : { proxy: path.slice(1) },
    stageVariables: null,
    body: body.length === 0 ? null : text ? body.toString('utf8') : body.toString('base64'),
    isBase64Encoded: body.length > 0 && !text,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: {
        tenant: identity.tenant,
        principal: identity.principal,
        principalId: identity.principal,
        integrationLatency: 0,
      },
      domainName: req.headers.host ?? 'localhost',
      domainPrefix: (req.headers.host ?? 'localhost').split('.')[0],
      extendedRequestId: requestId,
      httpMethod: req.method ?? 'GET',
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp,
        user: null,
        userAgent: req.headers['user-agent'] ?? null,
        userArn: null,
      },
      // Served like a custom domain (no stage prefix), so the base URL is the harness's own.
      path,
      protocol: `HTTP/${req.httpVersion}`,
      requestId,
      requestTime: requestTime(now),
      requestTimeEpoch: now.getTime(),
      resourceId: 'local',
      resourcePath: isRoot ? '/' : '/{proxy+}',
      stage,
    },
  };
};

const sendJson = (
  res: ServerResponse,
  statusCode: number,
  body: unknown,
  headers: Record<string, string> = {},
) => {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const payload = JSON.stringify(body);
  res.writeHead(statusCode, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
};

const applyHeaders = (res: ServerResponse, result: HarnessProxyResult): void => {
  const merged = new Map<string, { name: string; values: string[] }>();
  const add = (name: string, value: boolean | number | string): void => {
    const key = name.toLowerCase();
    const entry = merged.get(key) ?? { name, values: [] };
    entry.values.push(String(value));
    merged.set(key, entry);
  };
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) {
    for (const value of values) add(name, value);
  }
  for (const [name, value] of Object.entries(result.headers ?? {})) {
    if (!merged.has(name.toLowerCase())) add(name, value);
  }
  for (const { name, values } of merged.values()) {
    res.setHeader(name, values.length === 1 ? values[0]! : values);
  }
};

const isValidStatus = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599;

/**
 * Writes the body chunk by chunk as it is produced. When the client goes away, the pipe destroys
 * the body at once: a streaming handler's body is the response stream it writes to
 * (lambda-streaming.ts), destroyed under it as Lambda's runtime destroys a response stream whose
 * connection failed. (Returning an async generator instead would wait for its next chunk.)
 */
const writeStream = async (res: ServerResponse, body: AsyncIterable<string | Uint8Array>): Promise<void> => {
  res.flushHeaders();
  try {
    await pipeline(body, res);
  } catch (error) {
    // The client went away: the response ends there, which is no failure of the stream.
    if ((error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') throw error;
  }
};

const staticTypes: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** Answers a request under `files.prefix`; false when the path is not under it. */
const serveStatic = async (
  files: StaticFiles,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> => {
  if (path === files.prefix.replace(/\/$/, '')) {
    req.resume();
    res.writeHead(308, { Location: files.prefix, 'Content-Length': 0 });
    res.end();
    return true;
  }
  if (!path.startsWith(files.prefix)) return false;
  req.resume();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { message: 'Method Not Allowed' }, { Allow: 'GET, HEAD' });
    return true;
  }
  const name = path.slice(files.prefix.length) || 'index.html';
  const type = staticTypes[extname(name)];
  let body: Buffer | undefined;
  if (/^[\w-][\w.-]*$/.test(name) && type !== undefined) {
    body = await readFile(join(files.directory, name)).catch(() => undefined);
  }
  if (body === undefined) {
    sendJson(res, 404, { message: 'Not Found' });
    return true;
  }
  res.writeHead(200, {
    'Content-Type': type!,
    'Content-Length': body.length,
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy':
      "default-src 'self'; connect-src 'self' http: https:; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
  });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
};

export const startHttpHarness = async (options: HttpHarnessOptions): Promise<HttpHarness> => {
  const functionName = options.functionName ?? 'rpc';
  const stage = options.stage ?? 'local';
  const maxBodyBytes = options.maxBodyBytes ?? maxBodyBytesDefault;
  const region = options.region ?? 'us-east-1';
  const log = options.log ?? consoleLog;
  const inFlight = new Set<Promise<void>>();

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID();
    res.setHeader('x-amzn-RequestId', requestId);
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > maxBodyBytes) {
      req.resume();
      sendJson(res, 413, { message: 'Request Entity Too Large' }, { Connection: 'close' });
      return;
    }
    const url = requestUrl(req.url);
    if (url === undefined) {
      req.resume();
      sendJson(res, 400, { message: 'Bad Request' });
      return;
    }
    const path = decodePath(url.pathname);
    if (options.staticFiles && (await serveStatic(options.staticFiles, path, req, res))) return;
    let identity: Identity | 'unauthorized';
    try {
      identity = await options.authorize(req.headers, { method: req.method ?? 'GET', path });
    } catch (error) {
      log('error', 'authorizer failed', { requestId, error: (error as Error).name });
      req.resume();
      sendJson(res, 500, { message: null });
      return;
    }
    if (identity === 'unauthorized') {
      req.resume();
      sendJson(res, 401, { message: 'Unauthorized' }, { 'WWW-Authenticate': 'Bearer' });
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, maxBodyBytes);
    } catch (error) {
      if (error instanceof BodyTooLargeError) {
        sendJson(res, 413, { message: 'Request Entity Too Large' }, { Connection: 'close' });
      } else {
        res.destroy();
      }
      return;
    }
    const event = toProxyEvent({ req, body, identity, stage, requestId });
    let result: HarnessProxyResult;
    // The invocation lasts until the handler returns; a streamed one until its last chunk.
    const began = performance.now();
    const invoked = (ok: boolean): void =>
      reportInvocation({ functionName, durationMs: performance.now() - began, ok, records: 1 });
    try {
      const context = createLambdaContext({
        functionName,
        region,
        ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      });
      result = await options.handler(event, context);
    } catch (error) {
      invoked(false);
      log('error', `${functionName} failed`, { requestId, error: (error as Error).name });
      sendJson(res, 502, { message: 'Internal server error' });
      return;
    }
    if (!result || !isValidStatus(result.statusCode)) {
      invoked(false);
      log('error', `${functionName} returned a malformed proxy response`, { requestId });
      sendJson(res, 502, { message: 'Internal server error' });
      return;
    }
    res.statusCode = result.statusCode;
    applyHeaders(res, result);
    if (isStreamingResult(result)) {
      req.socket.setNoDelay(true);
      try {
        await writeStream(res, result.body);
        invoked(true);
      } catch (error) {
        invoked(false);
        log('error', `${functionName} stream failed`, { requestId, error: (error as Error).name });
        res.destroy();
      }
      return;
    }
    invoked(true);
    const payload = Buffer.from(result.body ?? '', result.isBase64Encoded ? 'base64' : 'utf8');
    res.setHeader('Content-Length', payload.length);
    res.end(payload);
  };

  const server = createServer((req, res) => {
    const served = serve(req, res)
      .catch((error: unknown) => {
        log('error', 'harness failed', { error: (error as Error).name });
        if (!res.headersSent) sendJson(res, 500, { message: null });
        else res.destroy();
      })
      .finally(() => inFlight.delete(served));
    inFlight.add(served);
  });

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';
  const urlHost = host.includes(':') ? `[${host}]` : host;

  let stopped: Promise<void> | undefined;
  const stop = (graceMs = 2_000): Promise<void> => {
    stopped ??= (async () => {
      const closed = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise<void>((resolveGrace) => {
          timer = setTimeout(resolveGrace, graceMs);
        }),
      ]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
    })();
    return stopped;
  };

  return { url: `http://${urlHost}:${port}`, port, server, stop };
};
