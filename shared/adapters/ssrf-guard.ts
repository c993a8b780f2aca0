import { lookup as dnsLookup } from 'node:dns/promises';
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { WebhookRequest, WebhookResult, WebhookSender } from '../domain/ports.ts';
import {
  type AddressClass,
  checkWebhookUrl,
  classifyAddress,
  isAllowedAddress,
  type WebhookPolicy,
} from '../domain/webhook-address.ts';

/**
 * Outbound HTTP to addresses a remote party chose (webhooks today, an HTTP fetch tool later),
 * guarded against SSRF (docs/security.md):
 *
 * 1. The URL is checked without DNS (scheme, https outside local mode, no `user:pass@`, IP
 *    literals in any spelling — the WHATWG parser normalizes `2130706433`, `0x7f.1`, `0177.0.0.1`).
 * 2. The host is resolved once; EVERY address it resolves to must be allowed (loopback, private,
 *    link-local incl. 169.254.169.254, CGNAT, multicast, unspecified, reserved and their IPv6
 *    forms incl. IPv4-mapped are refused; loopback only when the policy allows it).
 * 3. The connection goes to the vetted address: the socket's DNS lookup is replaced by one that
 *    answers with it, so a second, different DNS answer (rebinding) is never asked for. The URL's
 *    host stays in the Host header and in TLS SNI/certificate checks.
 * 4. Redirects are not followed (a 3xx is a failed delivery); one deadline covers the whole
 *    request.
 * 5. Connections are kept alive per vetted target — scheme, URL host, port AND the vetted address
 *    — so a pooled socket is only reused for a request whose own vetting chose that same address
 *    (a fresh TCP/TLS connection per POST was most of a webhook hop). A request
 *    that fails on a reused socket before any response (the server closed it meanwhile) is sent
 *    once more on a fresh connection.
 */

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to all its addresses. Injected in tests (private answers, rebinding). */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => ({
    address: entry.address,
    family: entry.family === 6 ? 6 : 4,
  }));

export type VettedTarget =
  | { readonly ok: true; readonly url: URL; readonly host: string; readonly address: ResolvedAddress }
  | {
      readonly ok: false;
      /** `refused`: the policy forbids it; `unresolved`: DNS failed (may be transient). */
      readonly kind: 'refused' | 'unresolved';
      readonly reason: string;
      readonly addressClass?: AddressClass;
    };

/** Checks the URL, resolves its host once and vets every address (steps 1–2 above). */
export const vetTarget = async (
  rawUrl: string,
  policy: WebhookPolicy,
  resolve: Resolver = systemResolver,
): Promise<VettedTarget> => {
  const check = checkWebhookUrl(rawUrl, policy);
  if (!check.ok) {
    return {
      ok: false,
      kind: 'refused',
      reason: check.problem,
      ...(check.addressClass ? { addressClass: check.addressClass } : {}),
    };
  }
  const literalFamily = isIP(check.host);
  if (literalFamily !== 0) {
    return {
      ok: true,
      url: check.url,
      host: check.host,
      address: { address: check.host, family: literalFamily === 6 ? 6 : 4 },
    };
  }
  let addresses: readonly ResolvedAddress[];
  try {
    addresses = await resolve(check.host);
  } catch (error) {
    return { ok: false, kind: 'unresolved', reason: `dns: ${errorCode(error)}` };
  }
  if (addresses.length === 0) return { ok: false, kind: 'unresolved', reason: 'dns: no address' };
  for (const entry of addresses) {
    const kind = classifyAddress(entry.address) ?? 'reserved';
    if (!isAllowedAddress(kind, policy)) {
      return { ok: false, kind: 'refused', reason: 'forbidden-address', addressClass: kind };
    }
  }
  return { ok: true, url: check.url, host: check.host, address: addresses[0]! };
};

const errorCode = (error: unknown): string =>
  typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : error instanceof Error
      ? error.name
      : 'error';

/** A socket lookup that always answers with the vetted address (no second resolution). */
export const pinnedLookup = (pinned: ResolvedAddress): LookupFunction =>
  ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  }) as LookupFunction;

export interface GuardedPostOptions {
  readonly policy: WebhookPolicy;
  readonly resolve?: Resolver;
  /** The whole request, connect to response headers (default 10 s, docs/protocol.md §7). */
  readonly timeoutMs?: number;
}

/** Keep-alive agents by vetted target (point 5); past the bound, a new target gets no pooling. */
const pooledAgents = new Map<string, HttpAgent>();
const maxPooledTargets = 64;
/** Free sockets are dropped after this long, before a typical server's keep-alive timeout (5 s). */
const idleSocketMs = 4_000;

const agentFor = (url: URL, host: string, address: ResolvedAddress): HttpAgent | false => {
  const key = `${url.protocol}//${host}:${url.port}@${address.address}`;
  const pooled = pooledAgents.get(key);
  if (pooled !== undefined) return pooled;
  if (pooledAgents.size >= maxPooledTargets) return false;
  const options = { keepAlive: true, timeout: idleSocketMs };
  const agent = url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
  pooledAgents.set(key, agent);
  return agent;
};

/** Errors of a reused keep-alive socket the server had already closed. */
const staleSocketCodes = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** POSTs `body` to `url` through the guard. Never throws: every outcome is a WebhookResult. */
export const guardedPost = async (
  request: WebhookRequest,
  options: GuardedPostOptions,
): Promise<WebhookResult> => {
  const target = await vetTarget(request.url, options.policy, options.resolve);
  if (!target.ok) {
    return target.kind === 'refused'
      ? {
          kind: 'refused',
          reason: target.addressClass ? `${target.reason}: ${target.addressClass}` : target.reason,
        }
      : { kind: 'failed', reason: target.reason };
  }
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const agent = agentFor(target.url, target.host, target.address);
  const first = await postOnce(request, target, agent, deadline);
  return first === 'stale' ? ((await postOnce(request, target, false, deadline)) as WebhookResult) : first;
};

const postOnce = (
  request: WebhookRequest,
  { url, host, address }: Extract<VettedTarget, { ok: true }>,
  agent: HttpAgent | false,
  deadline: number,
): Promise<WebhookResult | 'stale'> => {
  const body = Buffer.from(request.body, 'utf8');
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<WebhookResult | 'stale'>((resolve) => {
    let answered = false;
    const done = (result: WebhookResult | 'stale'): void => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      resolve(result);
    };
    let outgoing: ClientRequest;
    const timer = setTimeout(
      () => {
        done({ kind: 'failed', reason: 'timeout' });
        outgoing?.destroy();
      },
      Math.max(0, deadline - Date.now()),
    );
    try {
      outgoing = send(
        {
          protocol: url.protocol,
          host,
          port: url.port === '' ? undefined : Number(url.port),
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers: { ...request.headers, host: url.host, 'content-length': String(body.byteLength) },
          lookup: pinnedLookup(address),
          agent,
          // SNI names the URL's host (never an IP literal); the certificate is checked against it.
          ...(url.protocol === 'https:' && isIP(host) === 0 ? { servername: host } : {}),
        },
        (response: IncomingMessage) => {
          const status = response.statusCode ?? 0;
          // The body is not needed; read it so the socket can be reused or close cleanly.
          response.resume();
          response.on('error', () => {});
          if (status >= 200 && status < 300) done({ kind: 'delivered', status });
          else if (status >= 300 && status < 400)
            done({ kind: 'failed', reason: 'redirect not followed', status });
          else done({ kind: 'failed', reason: 'http status', status });
        },
      );
    } catch (error) {
      done({ kind: 'failed', reason: `request: ${errorCode(error)}` });
      return;
    }
    outgoing.on('error', (error) => {
      if (outgoing.reusedSocket && staleSocketCodes.has(errorCode(error))) done('stale');
      else done({ kind: 'failed', reason: `network: ${errorCode(error)}` });
    });
    outgoing.end(body);
  });
};

/** The WebhookSender of the deliverer: every POST through the guard, with the installation's policy. */
export const createGuardedWebhookSender = (options: GuardedPostOptions): WebhookSender => ({
  post: (request) => guardedPost(request, options),
});
