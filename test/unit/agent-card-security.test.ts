import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../functions/rpc/http-app.ts';
import {
  buildAgentCard,
  buildExtendedAgentCard,
  declaresExtendedCard,
  securityOf,
} from '../../shared/app/profiles/agent-card.ts';
import { createA2aMethods } from '../../shared/app/rpc/a2a-methods.ts';
import { type Caller, createDispatcher } from '../../shared/app/rpc/dispatcher.ts';
import type { SendMessageDeps } from '../../shared/app/tasks/send-message.ts';
import { type Config, parseConfig } from '../../shared/config/config.ts';

/**
 * The card's security declaration and GetExtendedAgentCard (docs/protocol.md §9, decision 0007): schemes
 * match what the installation accepts, and the extended card is declared and served only where
 * a caller can be authenticated.
 */

const digest = createHash('sha256').update('some-api-key-with-enough-entropy').digest('hex');
const alice = { tenant: 't1', principal: 'alice' };
const jwt = { issuer: 'https://issuer.example', audience: 'a2a', jwksUrl: 'https://issuer.example/jwks' };
const baseUrl = 'https://agents.example.com/v1';

const configWith = (auth: unknown, extendedCard?: unknown): Config =>
  parseConfig({
    auth,
    providers: { local: { type: 'scripted' } },
    profiles: {
      default: {
        name: 'Echo',
        description: 'Public description',
        providers: ['local'],
        privacyLevel: 'full',
        skills: [{ id: 'echo', name: 'Echo', description: 'Repeats', tags: ['echo'] }],
        ...(extendedCard === undefined ? {} : { extendedCard }),
      },
      plain: { name: 'Plain', description: 'No extended card', providers: ['local'], privacyLevel: 'full' },
    },
  });

const extendedCard = {
  description: 'For partners: the full description',
  skills: [
    { id: 'audit', name: 'Audit', description: 'Partner-only skill', tags: ['partner'] },
    { id: 'echo', name: 'Echo+', description: 'Echo with extras', tags: ['echo'] },
  ],
};

describe('securitySchemes on the card', () => {
  it('declares nothing when the installation authenticates no one', () => {
    expect(securityOf({})).toEqual({});
    const card = buildAgentCard(configWith({}), 'default', baseUrl)!;
    expect(card).not.toHaveProperty('securitySchemes');
    expect(card).not.toHaveProperty('securityRequirements');
  });

  it('declares bearer (JWT) and the X-API-Key header as alternatives, in v1.0 shape', () => {
    const card = buildAgentCard(configWith({ jwt, apiKeys: { [digest]: alice } }), 'default', baseUrl)!;
    // The v0.3 keys ride in the same entries (decision 0026, rpc-v03.test.ts); the v1.0 ones are these.
    expect(card.securitySchemes).toMatchObject({
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } },
      apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } },
    });
    expect(card.securityRequirements).toEqual([
      { schemes: { bearer: { list: [] } } },
      { schemes: { apiKey: { list: [] } } },
    ]);
  });

  it('declares an opaque bearer scheme for static tokens, and only what is configured', () => {
    expect(securityOf({ tokens: { t: alice } })).toEqual({
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    });
    expect(securityOf({ apiKeys: { [digest]: alice } }).securitySchemes).toEqual({
      apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } },
    });
  });
});

describe('capabilities.extendedAgentCard', () => {
  it('is declared only for a profile with an extendedCard in an authenticating installation', () => {
    const secured = configWith({ tokens: { t: alice } }, extendedCard);
    expect(declaresExtendedCard(secured, 'default')).toBe(true);
    expect(buildAgentCard(secured, 'default', baseUrl)!.capabilities.extendedAgentCard).toBe(true);
    expect(buildAgentCard(secured, 'plain', baseUrl)!.capabilities.extendedAgentCard).toBe(false);
    // The same profile without any scheme: nobody could be authenticated to receive it.
    const open = configWith({}, extendedCard);
    expect(declaresExtendedCard(open, 'default')).toBe(false);
    expect(buildAgentCard(open, 'default', baseUrl)!.capabilities.extendedAgentCard).toBe(false);
  });

  it('builds the extended card: public card, extended description, extra skills replacing by id', () => {
    const secured = configWith({ apiKeys: { [digest]: alice } }, extendedCard);
    const card = buildExtendedAgentCard(secured, 'default', baseUrl)!;
    const publicCard = buildAgentCard(secured, 'default', baseUrl)!;
    expect(card).toEqual({
      ...publicCard,
      description: 'For partners: the full description',
      skills: [
        { id: 'audit', name: 'Audit', description: 'Partner-only skill', tags: ['partner'] },
        { id: 'echo', name: 'Echo+', description: 'Echo with extras', tags: ['echo'] },
      ],
    });
    expect(buildExtendedAgentCard(configWith({}, extendedCard), 'default', baseUrl)).toBeUndefined();
    expect(buildExtendedAgentCard(secured, 'plain', baseUrl)).toBeUndefined();
  });
});

describe('GetExtendedAgentCard over JSON-RPC', () => {
  const call = async (config: Config, caller: Caller | null, profileId = 'default') => {
    const methods = createA2aMethods({ config } as unknown as SendMessageDeps);
    const dispatcher = createDispatcher(methods, { errorDomain: 'test.local', logger: { error: () => {} } });
    const result = await dispatcher.dispatch(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }),
      { 'content-type': 'application/json', 'a2a-version': '1.0' },
      { caller, profileId, baseUrl },
    );
    if (result.kind !== 'json') throw new Error('expected a JSON answer');
    return result.body as {
      result?: Record<string, unknown>;
      error?: { code: number; data?: { reason?: string; metadata?: Record<string, string> }[] };
    };
  };

  it('returns the extended card to an authenticated caller', async () => {
    const secured = configWith({ tokens: { t: alice } }, extendedCard);
    const answer = await call(secured, alice);
    expect(answer.error).toBeUndefined();
    expect(answer.result).toMatchObject({
      name: 'Echo',
      description: 'For partners: the full description',
      capabilities: { extendedAgentCard: true },
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
    });
    expect((answer.result!.skills as { id: string }[]).map((skill) => skill.id)).toEqual(['audit', 'echo']);
  });

  it('answers -32004 when the card does not declare it: unauthenticated installation, or no extendedCard', async () => {
    const open = await call(configWith({}, extendedCard), { tenant: 'local', principal: 'local' });
    expect(open.error?.code).toBe(-32004);
    expect(open.error?.data?.[0]).toMatchObject({
      reason: 'UNSUPPORTED_OPERATION',
      metadata: { method: 'GetExtendedAgentCard', requires: expect.stringMatching(/authentication/) },
    });
    const plain = await call(configWith({ tokens: { t: alice } }, extendedCard), alice, 'plain');
    expect(plain.error?.code).toBe(-32004);
    expect(plain.error?.data?.[0]?.metadata?.requires).toMatch(/extendedCard/);
  });

  it('never serves it to a request without an identity', async () => {
    const answer = await call(configWith({ tokens: { t: alice } }, extendedCard), null);
    expect(answer.error?.code).toBe(-32004);
    expect(answer.result).toBeUndefined();
  });
});

describe('the rpc edge when callers must authenticate', () => {
  const request = (caller: Caller | null) => ({
    method: 'POST',
    path: '/agents/default',
    headers: { 'content-type': 'application/json' },
    query: {},
    body: '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
    caller,
    requestId: 'r1',
    baseUrl,
  });

  it('refuses a JSON-RPC request without an identity (a route without the authorizer) with 401', async () => {
    let dispatched = 0;
    const dispatcher = {
      dispatch: async () => {
        dispatched += 1;
        return { kind: 'json', status: 200, body: { jsonrpc: '2.0', id: 1, result: {} } } as const;
      },
      invoke: async () => {
        dispatched += 1;
        return { kind: 'value', value: {} } as const;
      },
    };
    const secured = createHttpApp({ config: configWith({ apiKeys: { [digest]: alice } }), dispatcher });
    const refused = await secured(request(null));
    expect(refused).toMatchObject({ status: 401, headers: { 'WWW-Authenticate': 'Bearer' } });
    expect(dispatched).toBe(0);
    expect((await secured(request(alice))).status).toBe(200);
    // Cards stay public.
    expect(
      (await secured({ ...request(null), method: 'GET', path: '/.well-known/agent-card.json' })).status,
    ).toBe(200);
    // Without any scheme, a request without an identity is the anonymous local caller.
    const open = createHttpApp({ config: configWith({}), dispatcher });
    expect((await open(request(null))).status).toBe(200);
    expect(dispatched).toBe(2);
  });
});
