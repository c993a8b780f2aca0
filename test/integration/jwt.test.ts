import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiGatewayLambdaHandler,
  type HttpHarness,
  startHttpHarness,
  staticTokenAuthorizer,
} from '../../infra/local/http-harness.ts';
import type { LocalLog } from '../../infra/local/lambda-invocation.ts';
import { parseConfig } from '../../shared/config/config.ts';

/**
 * JWT bearer authentication end to end at the HTTP edge (decision 0007): a real JWKS served by a
 * local node:http server with keys made by jose, the local harness with the same authorizer
 * core as the Lambda authorizer, and a stand-in rpc handler that records what reaches it. Every
 * bad token is a 401 and the handler is never called; a good one carries its identity.
 */

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

const issuer = 'https://issuer.test';
const audience = 'a2a-serverless';
const quiet: LocalLog = () => {};

let jwksServer: Server;
let jwksUrl: string;
let jwksRequests = 0;
let jwksStatus = 200;
let published: JWK[] = [];
let harness: HttpHarness;
let events: APIGatewayProxyEvent[] = [];
let signing: KeyPair;
let rsa: KeyPair;
let stranger: KeyPair;
let rsa512: KeyPair;

const apiKey = 'ak_test_9f8e7d6c5b4a39281706f5e4d3c2b1a0';

const rpc: ApiGatewayLambdaHandler = async (event) => {
  events.push(event);
  return { statusCode: 200, body: JSON.stringify(event.requestContext.authorizer) };
};

const now = (): number => Math.floor(Date.now() / 1000);

interface SignOptions {
  readonly key?: KeyPair['privateKey'];
  readonly alg?: 'ES256' | 'RS256' | 'RS512';
  readonly kid?: string;
}

const sign = (claims: Record<string, unknown> = {}, options: SignOptions = {}): Promise<string> =>
  new SignJWT({
    iss: issuer,
    aud: audience,
    sub: 'alice',
    tenant: 'acme',
    iat: now(),
    exp: now() + 300,
    ...claims,
  })
    .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: options.kid ?? 'ec-1', typ: 'JWT' })
    .sign(options.key ?? signing.privateKey);

const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

const post = (headers: Record<string, string>): Promise<Response> =>
  fetch(`${harness.url}/agents/default`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
  });

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  [signing, rsa, stranger, rsa512] = await Promise.all([
    generateKeyPair('ES256'),
    generateKeyPair('RS256'),
    generateKeyPair('ES256'),
    generateKeyPair('RS512'),
  ]);
  published = [
    { ...(await exportJWK(signing.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' },
    { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
    // Published by the issuer, but not among the algorithms this installation allows.
    { ...(await exportJWK(rsa512.publicKey)), kid: 'rsa-512', alg: 'RS512', use: 'sig' },
  ];
  jwksServer = createServer((req, res) => {
    jwksRequests += 1;
    if (req.url !== '/.well-known/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(jwksStatus, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ keys: published }));
  });
  await new Promise<void>((listening) => jwksServer.listen(0, '127.0.0.1', listening));
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/.well-known/jwks.json`;

  const config = parseConfig({
    auth: {
      apiKeys: {
        [createHash('sha256').update(apiKey).digest('hex')]: { tenant: 'acme', principal: 'ci-bot' },
      },
      jwt: { issuer, audience, jwksUrl, tenant: 'default-tenant' },
    },
    providers: { local: { type: 'scripted' } },
    profiles: { default: { name: 'x', description: 'x', providers: ['local'] } },
  });
  harness = await startHttpHarness({ handler: rpc, authorize: staticTokenAuthorizer(config), log: quiet });
});

afterAll(async () => {
  await harness?.stop();
  await new Promise<void>((closed) => (jwksServer ? jwksServer.close(() => closed()) : closed()));
});

describe('JWT bearer tokens against a real JWKS', () => {
  it('accepts a good token (ES256 and RS256) and passes its identity to the handler', async () => {
    events = [];
    const response = await post(bearer(await sign()));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ tenant: 'acme', principal: 'alice' });
    const rsaToken = await sign(
      { sub: 'bob', tenant: 'beta' },
      { key: rsa.privateKey, alg: 'RS256', kid: 'rsa-1' },
    );
    expect(await (await post(bearer(rsaToken))).json()).toMatchObject({ tenant: 'beta', principal: 'bob' });
    expect(events).toHaveLength(2);
    expect(jwksRequests).toBeGreaterThanOrEqual(1);
  });

  it('uses the configured fixed tenant for a token without a tenant claim', async () => {
    const response = await post(bearer(await sign({ tenant: undefined, sub: 'carol' })));
    expect(await response.json()).toMatchObject({ tenant: 'default-tenant', principal: 'carol' });
  });

  it('answers 401 without calling the handler for every kind of bad token', async () => {
    const good = await sign();
    const [, payload] = good.split('.') as [string, string];
    const bad: Record<string, string> = {
      'wrong issuer': await sign({ iss: 'https://evil.test' }),
      'wrong audience': await sign({ aud: 'someone-else' }),
      expired: await sign({ iat: now() - 600, exp: now() - 120 }),
      'not yet valid': await sign({ nbf: now() + 600 }),
      'no expiry': await sign({ exp: undefined }),
      'alg none': `${base64url({ alg: 'none', typ: 'JWT' })}.${payload}.`,
      'alg HS256 with the public key as secret': `${base64url({ alg: 'HS256', kid: 'ec-1' })}.${payload}.AAAA`,
      'RS512 (not an allowed algorithm)': await sign(
        {},
        { key: rsa512.privateKey, alg: 'RS512', kid: 'rsa-512' },
      ),
      'bad signature': await sign({}, { key: stranger.privateKey }),
      'payload swapped under a good signature': `${good.split('.')[0]}.${base64url({ iss: issuer, aud: audience, sub: 'mallory', tenant: 'acme', exp: now() + 300 })}.${good.split('.')[2]}`,
      'unknown kid': await sign({}, { key: stranger.privateKey, kid: 'ec-unknown' }),
      'tenant claim with #': await sign({ tenant: 'acme#other' }),
      'no subject': await sign({ sub: undefined }),
      'not a JWT': 'opaque-token-value',
    };
    events = [];
    for (const [name, token] of Object.entries(bad)) {
      const response = await post(bearer(token));
      expect(response.status, name).toBe(401);
      expect(response.headers.get('www-authenticate'), name).toBe('Bearer');
      expect(await response.json(), name).toEqual({ message: 'Unauthorized' });
    }
    expect(await post({}).then((response) => response.status)).toBe(401);
    expect(events).toHaveLength(0);
  });

  it('picks up a rotated key after the cooldown of an unknown kid', async () => {
    const rotated = await generateKeyPair('ES256');
    const token = await sign({ sub: 'dave' }, { key: rotated.privateKey, kid: 'ec-2' });
    published = [...published, { ...(await exportJWK(rotated.publicKey)), kid: 'ec-2', alg: 'ES256' }];
    // jose refetches for an unknown kid at most every 30 s; a fresh authorizer (a cold start) sees it now.
    const config = parseConfig({
      auth: { jwt: { issuer, audience, jwksUrl, tenant: 't' } },
      providers: { local: { type: 'scripted' } },
      profiles: { default: { name: 'x', description: 'x', providers: ['local'] } },
    });
    const authorize = staticTokenAuthorizer(config);
    expect(await authorize({ authorization: `Bearer ${token}` }, { method: 'POST', path: '/' })).toEqual({
      tenant: 'acme',
      principal: 'dave',
    });
  });

  it('answers 500, not 401, when the key set cannot be fetched (an outage is not a bad caller)', async () => {
    const config = parseConfig({
      auth: { jwt: { issuer, audience, jwksUrl, tenant: 't' } },
      providers: { local: { type: 'scripted' } },
      profiles: { default: { name: 'x', description: 'x', providers: ['local'] } },
    });
    const outage = await startHttpHarness({
      handler: rpc,
      authorize: staticTokenAuthorizer(config),
      log: quiet,
    });
    jwksStatus = 503;
    try {
      events = [];
      const response = await fetch(`${outage.url}/agents/default`, {
        method: 'POST',
        headers: bearer(await sign()),
        body: '{}',
      });
      expect(response.status).toBe(500);
      expect(events).toHaveLength(0);
    } finally {
      jwksStatus = 200;
      await outage.stop();
    }
  });
});

describe('API keys and public cards next to JWTs', () => {
  it('accepts the API key in X-API-Key and as Authorization: ApiKey', async () => {
    const ways: Record<string, string>[] = [{ 'X-API-Key': apiKey }, { Authorization: `ApiKey ${apiKey}` }];
    for (const headers of ways) {
      const response = await post(headers);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ tenant: 'acme', principal: 'ci-bot' });
    }
    expect((await post({ 'X-API-Key': `${apiKey}0` })).status).toBe(401);
    expect((await post({ 'X-API-Key': apiKey, ...bearer(await sign()) })).status).toBe(401);
  });

  it('serves agent card routes without a credential, and nothing else', async () => {
    events = [];
    for (const path of ['/.well-known/agent-card.json', '/agents/default/.well-known/agent-card.json']) {
      expect((await fetch(`${harness.url}${path}`)).status).toBe(200);
      expect((await fetch(`${harness.url}${path}`, { method: 'POST', body: '{}' })).status).toBe(401);
    }
    expect((await fetch(`${harness.url}/agents/default/.well-known/other.json`)).status).toBe(401);
    expect(events.map((event) => event.requestContext.authorizer?.principal)).toEqual([
      'anonymous',
      'anonymous',
    ]);
  });
});

type SigningKey = Parameters<typeof crypto.subtle.sign>[1];

/** A compact JWS with any protected header, ES256-signed by hand (jose refuses to sign some of these). */
const forge = async (
  header: Record<string, unknown>,
  claims: Record<string, unknown> | string,
  key: SigningKey = signing.privateKey as SigningKey,
): Promise<string> => {
  const payload =
    typeof claims === 'string'
      ? Buffer.from(claims).toString('base64url')
      : base64url({
          iss: issuer,
          aud: audience,
          sub: 'mallory',
          tenant: 'acme',
          exp: now() + 300,
          ...claims,
        });
  const input = `${base64url(header)}.${payload}`;
  const signature = await crypto.subtle.sign(
    { name: 'ECDSA', hash: 'SHA-256' },
    key,
    new TextEncoder().encode(input),
  );
  return `${input}.${Buffer.from(signature).toString('base64url')}`;
};

describe('forged JWTs (issue 7): each a 401, never a 500, and the handler is never called', () => {
  it('refuses header tricks, key confusion and odd claims under a valid signature', async () => {
    const attacker = await generateKeyPair('ES256', { extractable: true });
    const attackerJwk = { ...(await exportJWK(attacker.publicKey)), kid: 'ec-1' };
    let attackerFetches = 0;
    const attackerServer = createServer((_req, res) => {
      attackerFetches += 1;
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys: [attackerJwk] }));
    });
    await new Promise<void>((listening) => attackerServer.listen(0, '127.0.0.1', listening));
    const attackerJku = `http://127.0.0.1:${(attackerServer.address() as AddressInfo).port}/jwks.json`;
    const rsaPem = await exportSPKI(rsa.publicKey);
    const ecJwk = JSON.stringify(published[0]);
    const hs256 = async (secret: string, kid: string) =>
      new SignJWT({ iss: issuer, aud: audience, sub: 'mallory', tenant: 'acme', exp: now() + 300 })
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(new TextEncoder().encode(secret));
    try {
      const bad: Record<string, string> = {
        // HS256 keyed with the installation's own public keys (RS/ES → HS confusion), signed for real.
        'HS256 keyed with the RSA public key PEM': await hs256(rsaPem, 'rsa-1'),
        'HS256 keyed with the EC public JWK': await hs256(ecJwk, 'ec-1'),
        // The token brings its own key: an embedded JWK, or a key set URL of the attacker's.
        'embedded jwk header': await forge(
          { alg: 'ES256', kid: 'ec-1', jwk: attackerJwk },
          {},
          attacker.privateKey as SigningKey,
        ),
        'jku header to the attacker’s key set': await forge(
          { alg: 'ES256', kid: 'ec-1', jku: attackerJku },
          {},
          attacker.privateKey as SigningKey,
        ),
        'x5u header': await forge(
          { alg: 'ES256', kid: 'ec-1', x5u: attackerJku },
          {},
          attacker.privateKey as SigningKey,
        ),
        // Key ids that name another key, no key, or an Object.prototype member.
        'kid of the RSA key on an ES256 token': await forge({ alg: 'ES256', kid: 'rsa-1' }, {}),
        'RS256 header on the EC key': await forge({ alg: 'RS256', kid: 'ec-1' }, {}),
        'kid __proto__': await forge(
          { alg: 'ES256', kid: '__proto__' },
          {},
          attacker.privateKey as SigningKey,
        ),
        'kid constructor': await forge(
          { alg: 'ES256', kid: 'constructor' },
          {},
          attacker.privateKey as SigningKey,
        ),
        'kid a number': await forge({ alg: 'ES256', kid: 1 }, {}, attacker.privateKey as SigningKey),
        // Headers the verifier must not skip over.
        'alg a number': await forge({ alg: 5, kid: 'ec-1' }, {}),
        'alg None': await forge({ alg: 'None', kid: 'ec-1' }, {}),
        'alg ES256 with none-style empty signature': `${(await forge({ alg: 'ES256', kid: 'ec-1' }, {})).split('.').slice(0, 2).join('.')}.`,
        'crit naming an unknown extension': await forge(
          { alg: 'ES256', kid: 'ec-1', crit: ['x-evil'], 'x-evil': 1 },
          {},
        ),
        'crit naming a registered header': await forge({ alg: 'ES256', kid: 'ec-1', crit: ['exp'] }, {}),
        'b64 false': await forge({ alg: 'ES256', kid: 'ec-1', b64: false, crit: ['b64'] }, {}),
        // Claims of the wrong shape under a valid signature.
        'payload not an object': await forge({ alg: 'ES256', kid: 'ec-1' }, '[1,2]'),
        'payload not JSON': await forge({ alg: 'ES256', kid: 'ec-1' }, 'not json'),
        'exp as a string': await forge({ alg: 'ES256', kid: 'ec-1' }, { exp: String(now() + 300) }),
        'nbf in the future': await forge({ alg: 'ES256', kid: 'ec-1' }, { nbf: now() + 3_600 }),
        'iss with a trailing slash': await forge({ alg: 'ES256', kid: 'ec-1' }, { iss: `${issuer}/` }),
        'aud as an object': await forge({ alg: 'ES256', kid: 'ec-1' }, { aud: { 0: audience } }),
        'sub not a string': await forge({ alg: 'ES256', kid: 'ec-1' }, { sub: 42 }),
        'tenant an object': await forge({ alg: 'ES256', kid: 'ec-1' }, { tenant: { id: 'acme' } }),
        'two dots only': '..',
        'header not JSON': `${Buffer.from('{"alg":').toString('base64url')}.e30.AAAA`,
      };
      events = [];
      const failures: string[] = [];
      for (const [name, token] of Object.entries(bad)) {
        const response = await post(bearer(token));
        if (response.status !== 401) failures.push(`${name}: HTTP ${response.status}`);
        await response.arrayBuffer();
      }
      expect(failures).toEqual([]);
      expect(events).toHaveLength(0);
      expect(attackerFetches).toBe(0);
      // The positive control: the same forge with the installation's key is accepted.
      const control = await post(
        bearer(await forge({ alg: 'ES256', kid: 'ec-1', typ: 'JWT' }, { sub: 'alice' })),
      );
      expect(control.status).toBe(200);
      expect(await control.json()).toMatchObject({ tenant: 'acme', principal: 'alice' });
    } finally {
      await new Promise<void>((closed) => attackerServer.close(() => closed()));
    }
  });
});
