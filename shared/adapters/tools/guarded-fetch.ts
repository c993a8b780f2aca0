import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import type { WebhookPolicy } from '../../domain/webhook-address.ts';
import { pinnedLookup, type Resolver, vetTarget } from '../ssrf-guard.ts';

/** The part of `fetch` the MCP client uses: a URL, method, headers, a text or byte body, a signal. */
export type GuardedFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Refused by the SSRF guard or the deadline: nothing was sent (refused) or the outcome is open (deadline). */
export class OutboundRefusedError extends Error {
  override readonly name = 'OutboundRefusedError';
}

export interface GuardedFetchOptions {
  /** The webhooks' policy (docs/security.md): https and public addresses only outside local mode. */
  readonly policy: WebhookPolicy;
  readonly resolve?: Resolver;
  /** One request, connect to last byte of its body; the body stream errors past it. */
  readonly timeoutMs: number;
  /** Told when a request's socket connected: from then on the server may have seen it. */
  readonly onConnected?: (body: string | undefined) => void;
}

/**
 * `fetch` through the SSRF guard of the webhooks (shared/adapters/ssrf-guard.ts): the URL checked,
 * the host resolved once and every address vetted, the socket pinned to the vetted address (no
 * rebinding), redirects answered as they are (never followed), one deadline per request that
 * covers its streamed body too. What the MCP client's transport and its OAuth token request use.
 */
export const createGuardedFetch =
  (options: GuardedFetchOptions): GuardedFetch =>
  async (input, init = {}) => {
    const rawUrl = input instanceof Request ? input.url : String(input);
    const target = await vetTarget(rawUrl, options.policy, options.resolve);
    if (!target.ok) {
      throw new OutboundRefusedError(
        target.kind === 'refused' ? `refused: ${target.addressClass ?? target.reason}` : 'unresolved host',
      );
    }
    const { url, host, address } = target;
    const body = bodyOf(init.body);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      let response: IncomingMessage | undefined;
      const timer = setTimeout(() => fail(new OutboundRefusedError('deadline passed')), options.timeoutMs);
      const fail = (error: Error): void => {
        clearTimeout(timer);
        init.signal?.removeEventListener('abort', onAbort);
        outgoing.destroy(error);
        if (response === undefined) reject(error);
        else response.destroy(error);
      };
      const onAbort = (): void =>
        fail(init.signal?.reason instanceof Error ? init.signal.reason : new Error('aborted'));
      const outgoing = send(
        {
          protocol: url.protocol,
          host,
          port: url.port === '' ? undefined : Number(url.port),
          path: `${url.pathname}${url.search}`,
          method: init.method ?? 'GET',
          headers: {
            ...headers,
            host: url.host,
            ...(body !== undefined && { 'content-length': String(body.byteLength) }),
          },
          lookup: pinnedLookup(address),
          agent: false,
          ...(url.protocol === 'https:' && isIP(host) === 0 ? { servername: host } : {}),
        },
        (incoming) => {
          response = incoming;
          incoming.on('end', () => {
            clearTimeout(timer);
            init.signal?.removeEventListener('abort', onAbort);
          });
          const status = incoming.statusCode ?? 0;
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) {
            if (value === undefined) continue;
            for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
          }
          const noBody = status === 204 || status === 304 || init.method === 'HEAD';
          if (noBody) incoming.resume();
          resolve(
            new Response(noBody ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>), {
              status,
              statusText: incoming.statusMessage ?? '',
              headers: responseHeaders,
            }),
          );
        },
      );
      outgoing.on('socket', (socket) => {
        socket.once('connect', () => options.onConnected?.(body?.toString('utf8')));
      });
      outgoing.on('error', (error) => {
        clearTimeout(timer);
        if (response === undefined) reject(error);
      });
      if (init.signal?.aborted) return onAbort();
      init.signal?.addEventListener('abort', onAbort, { once: true });
      outgoing.end(body);
    });
  };

const bodyOf = (body: RequestInit['body']): Buffer | undefined => {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof URLSearchParams) return Buffer.from(body.toString(), 'utf8');
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('guarded fetch: unsupported body type');
};
