import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedPost, type ResolvedAddress } from '../../shared/adapters/ssrf-guard.ts';
import { strictWebhookPolicy, webhookPolicyFor } from '../../shared/domain/webhook-address.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * The SSRF guard's connection behaviour against real loopback servers: the socket goes to the
 * address that was vetted (no second DNS answer), redirects are not followed, one deadline.
 */

const local = webhookPolicyFor(true, undefined);
const request = (url: string) => ({
  url,
  headers: { 'content-type': 'application/a2a+json' },
  body: '{"x":1}',
});

let target: WebhookReceiver;
let redirecting: WebhookReceiver;
let hanging: WebhookReceiver;

beforeAll(async () => {
  target = await startWebhookReceiver();
  redirecting = await startWebhookReceiver({
    respond: () => 302,
    redirectTo: `${'http://127.0.0.1'}/elsewhere`,
  });
  hanging = await startWebhookReceiver({
    respond: () => new Promise((answer) => setTimeout(() => answer(200), 3_000)),
  });
});
afterAll(async () => {
  await Promise.all([target?.close(), redirecting?.close(), hanging?.close()]);
});

const portOf = (receiver: WebhookReceiver) => new URL(receiver.url).port;

describe('guardedPost', () => {
  it('connects to the vetted address, keeps the Host header, and never resolves twice (DNS rebinding)', async () => {
    // First answer: loopback (allowed locally). Any later answer would be a private address.
    const answers: ResolvedAddress[][] = [
      [{ address: '127.0.0.1', family: 4 }],
      [{ address: '10.9.8.7', family: 4 }],
    ];
    let lookups = 0;
    const rebinding = async () => answers[Math.min(lookups++, 1)]!;
    const url = `http://rebind.example:${portOf(target)}/hook?x=1`;
    const result = await guardedPost(request(url), { policy: local, resolve: rebinding });
    expect(result).toEqual({ kind: 'delivered', status: 200 });
    expect(lookups).toBe(1);
    const post = target.posts.at(-1);
    expect(post?.path).toBe('/hook?x=1');
    expect(post?.headers.host).toBe(`rebind.example:${portOf(target)}`);
    expect(post?.body).toEqual({ x: 1 });
  });

  it('keeps a connection alive per vetted target, never across addresses, and resends once on a stale socket (decision 0028)', async () => {
    const connections: string[] = [];
    const requestsOn = new WeakSet<object>();
    let dropReused = false;
    // One receiver on two loopback addresses (two listeners, one port).
    const listen = async (host: string, port: number): Promise<Server> => {
      const server = createServer((req, res) => {
        // A server that closed the connection meanwhile: a reused socket gets no answer.
        if (dropReused && requestsOn.has(req.socket)) {
          req.socket.destroy();
          return;
        }
        requestsOn.add(req.socket);
        req.resume();
        req.on('end', () => res.end());
      });
      server.on('connection', (socket) => connections.push(socket.localAddress ?? ''));
      await new Promise<void>((listening) => server.listen(port, host, () => listening()));
      return server;
    };
    const server = await listen('127.0.0.1', 0);
    const port = (server.address() as AddressInfo).port;
    const second = await listen('127.0.0.2', port);
    try {
      const url = `http://pooled.example:${port}/hook`;
      const resolveTo = (address: string) => async () => [{ address, family: 4 as const }];
      for (let i = 0; i < 3; i++) {
        const result = await guardedPost(request(url), { policy: local, resolve: resolveTo('127.0.0.1') });
        expect(result).toEqual({ kind: 'delivered', status: 200 });
      }
      // Three POSTs, one connection: the pooled socket was reused.
      expect(connections).toHaveLength(1);
      // The same name vetted to another (allowed) address never rides the first address's socket.
      const other = await guardedPost(request(url), { policy: local, resolve: resolveTo('127.0.0.2') });
      expect(other).toEqual({ kind: 'delivered', status: 200 });
      expect(connections).toEqual(['127.0.0.1', '127.0.0.2']);
      // The pooled socket is dead on the server's side: the POST is sent again on a new connection.
      dropReused = true;
      const again = await guardedPost(request(url), { policy: local, resolve: resolveTo('127.0.0.1') });
      expect(again).toEqual({ kind: 'delivered', status: 200 });
      expect(connections).toEqual(['127.0.0.1', '127.0.0.2', '127.0.0.1']);
    } finally {
      for (const listener of [server, second]) {
        await new Promise<void>((closed) => {
          listener.close(() => closed());
          listener.closeAllConnections();
        });
      }
    }
  });

  it('refuses when the name resolves to a forbidden address at delivery time', async () => {
    const before = target.posts.length;
    const privateDns = async () => [{ address: '192.168.1.20', family: 4 as const }];
    const result = await guardedPost(request(`http://moved.example:${portOf(target)}/`), {
      policy: local,
      resolve: privateDns,
    });
    expect(result).toEqual({ kind: 'refused', reason: 'forbidden-address: private' });
    const noLoopback = await guardedPost(request(`${target.url}/`), {
      policy: webhookPolicyFor(true, false),
    });
    expect(noLoopback).toEqual({ kind: 'refused', reason: 'forbidden-address: loopback' });
    const deployed = await guardedPost(request(`${target.url}/`), { policy: strictWebhookPolicy });
    expect(deployed).toEqual({ kind: 'refused', reason: 'https-required' });
    expect(target.posts.length).toBe(before);
  });

  it('does not follow redirects', async () => {
    const before = target.posts.length;
    redirecting.posts.length = 0;
    const result = await guardedPost(request(`${redirecting.url}/hook`), { policy: local });
    expect(result).toEqual({ kind: 'failed', reason: 'redirect not followed', status: 302 });
    expect(redirecting.posts).toHaveLength(1);
    expect(target.posts.length).toBe(before);
  });

  it('fails a request that outlives its deadline, and reports non-2xx and refused connections as failures', async () => {
    expect(await guardedPost(request(`${hanging.url}/slow`), { policy: local, timeoutMs: 200 })).toEqual({
      kind: 'failed',
      reason: 'timeout',
    });
    const failing = await startWebhookReceiver({ respond: () => 503 });
    try {
      expect(await guardedPost(request(`${failing.url}/`), { policy: local })).toEqual({
        kind: 'failed',
        reason: 'http status',
        status: 503,
      });
    } finally {
      await failing.close();
    }
    const closed = await guardedPost(request(`${failing.url}/`), { policy: local });
    expect(closed).toMatchObject({ kind: 'failed', reason: expect.stringMatching(/^network: /) });
  });
});
