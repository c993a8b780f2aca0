import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { JsonValue } from '../../domain/a2a.ts';
import type { Tool } from '../../domain/tools.ts';
import type { WebhookPolicy } from '../../domain/webhook-address.ts';
import * as z from '../../zod.ts';
import { pinnedLookup, type Resolver, vetTarget } from '../ssrf-guard.ts';
import { defineTool } from './define-tool.ts';

export interface HttpFetchOptions {
  /** The same policy as webhooks: https and public addresses only outside local mode. */
  readonly policy: WebhookPolicy;
  readonly resolve?: Resolver;
  /** The whole request, connect to last byte. @default 10_000 */
  readonly timeoutMs?: number;
  /** Body bytes read at most; the rest is cut. @default 100_000 */
  readonly maxBytes?: number;
}

const textual = /^(text\/|application\/(json|xml|xhtml\+xml|[\w.+-]+\+json|[\w.+-]+\+xml)\b)/i;

/**
 * GET a URL through the SSRF guard the webhooks use (shared/adapters/ssrf-guard.ts): the URL is
 * checked, the host resolved once and every address vetted, the socket pinned to the vetted
 * address, redirects not followed, one deadline, a byte cap. Read-only: it changes nothing.
 */
export const createHttpFetchTool = (options: HttpFetchOptions): Tool =>
  defineTool({
    name: 'http_fetch',
    description:
      'Fetches a public web page or API with HTTP GET. Returns the status, the content type and the text of the body (cut at a size limit). Redirects are not followed.',
    readOnly: true,
    input: z.strictObject({
      url: z
        .string()
        .check(z.minLength(1), z.maxLength(2048), z.describe('The absolute http(s) URL to fetch.')),
    }),
    run: ({ url }, context) => guardedGet(url, options, context.signal),
  });

const guardedGet = async (
  rawUrl: string,
  options: HttpFetchOptions,
  signal?: AbortSignal,
): Promise<JsonValue> => {
  const target = await vetTarget(rawUrl, options.policy, options.resolve);
  if (!target.ok) {
    return {
      error:
        target.kind === 'refused' ? `refused: ${target.addressClass ?? target.reason}` : 'unresolved host',
    };
  }
  const { url, host, address } = target;
  const maxBytes = options.maxBytes ?? 100_000;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<JsonValue>((resolve, reject) => {
    let done = false;
    const finish = (value: JsonValue | Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (value instanceof Error) reject(value);
      else resolve(value);
    };
    const outgoing = send(
      {
        protocol: url.protocol,
        host,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: {
          host: url.host,
          accept: 'text/*, application/json;q=0.9, */*;q=0.1',
          'user-agent': 'a2a-serverless',
        },
        lookup: pinnedLookup(address),
        agent: false,
        ...(url.protocol === 'https:' && isIP(host) === 0 ? { servername: host } : {}),
      },
      (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        const contentType = String(response.headers['content-type'] ?? '');
        if (!textual.test(contentType)) {
          response.destroy();
          finish({ status, contentType, note: 'The body is not text and was not read.' });
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        response.on('data', (chunk: Buffer) => {
          if (size + chunk.length > maxBytes) {
            chunks.push(chunk.subarray(0, maxBytes - size));
            size = maxBytes;
            truncated = true;
            response.destroy();
            finish({ status, contentType, body: Buffer.concat(chunks).toString('utf8'), truncated });
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        response.on('end', () =>
          finish({ status, contentType, body: Buffer.concat(chunks).toString('utf8'), truncated }),
        );
        response.on('error', () => finish({ error: 'the response broke off' }));
      },
    );
    const timer = setTimeout(() => {
      finish({ error: 'timeout' });
      outgoing.destroy();
    }, options.timeoutMs ?? 10_000);
    const onAbort = (): void => {
      outgoing.destroy();
      finish(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    outgoing.on('error', (error: NodeJS.ErrnoException) =>
      finish({ error: `network: ${error.code ?? error.name}` }),
    );
    outgoing.end();
  });
};
