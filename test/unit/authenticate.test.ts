import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { createLocalJWKSet, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  createJoseTokenVerifier,
  TokenVerifierUnavailableError,
} from '../../shared/adapters/jose-token-verifier.ts';
import {
  type Authentication,
  createAuthenticator,
  identityFromClaims,
  localCaller,
} from '../../shared/app/rpc/authenticate.ts';
import { deploymentAuthProblems, hasAuthScheme } from '../../shared/config/auth.ts';
import { defaultConfig, parseConfig } from '../../shared/config/config.ts';
import type { TokenVerification, TokenVerifier } from '../../shared/domain/ports.ts';

const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

const aliceKey = 'ak_live_4f1c2d9e8b7a6f5e4d3c2b1a0f9e8d7c';
const bobKey = 'ak_live_0a1b2c3d4e5f60718293a4b5c6d7e8f9';

const alice = { tenant: 't1', principal: 'alice' };
const bob = { tenant: 't2', principal: 'bob' };

const authenticated = (identity: { tenant: string; principal: string }, scheme: string): Authentication =>
  ({ kind: 'authenticated', identity, scheme }) as Authentication;
const refused = (reason: string): Authentication => ({ kind: 'unauthenticated', reason }) as Authentication;

/** A verifier that records what it was asked and answers from a table. */
const fakeVerifier = (answer: (token: string) => TokenVerification | Promise<TokenVerification>) => {
  const seen: string[] = [];
  const verifier: TokenVerifier = {
    verify: async (token) => {
      seen.push(token);
      return answer(token);
    },
  };
  return { verifier, seen };
};

const jwtSettings = {
  issuer: 'https://issuer.example',
  audience: 'a2a',
  jwksUrl: 'https://issuer.example/jwks.json',
  tenantClaim: 'tenant',
  principalClaim: 'sub',
  algorithms: ['RS256' as const, 'ES256' as const],
};
const someJwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';

describe('createAuthenticator without any scheme', () => {
  it('lets everyone in as local/local, whatever they send', async () => {
    const authenticate = createAuthenticator(defaultConfig.auth);
    for (const headers of [{}, { authorization: 'Bearer x' }, { 'x-api-key': 'nope' }]) {
      expect(await authenticate(headers)).toEqual({ kind: 'anonymous', identity: localCaller });
    }
    expect(localCaller).toEqual({ tenant: 'local', principal: 'local' });
  });
});

describe('static bearer tokens (local mode)', () => {
  const authenticate = createAuthenticator({ tokens: { 'token-alice': alice, 'token-bob': bob } });

  it('maps each token to its identity, header name and scheme in any case', async () => {
    expect(await authenticate({ authorization: 'Bearer token-alice' })).toEqual(
      authenticated(alice, 'token'),
    );
    expect(await authenticate({ Authorization: 'bearer token-bob' })).toEqual(authenticated(bob, 'token'));
    expect(await authenticate({ AUTHORIZATION: ['BEARER   token-bob  '] })).toEqual(
      authenticated(bob, 'token'),
    );
  });

  it('refuses a missing, unknown or malformed credential', async () => {
    expect(await authenticate({})).toEqual(refused('missing'));
    expect(await authenticate({ authorization: '   ' })).toEqual(refused('missing'));
    expect(await authenticate({ authorization: 'Bearer token-carol' })).toEqual(refused('unknown-token'));
    expect(await authenticate({ authorization: 'Bearer token-alice2' })).toEqual(refused('unknown-token'));
    expect(await authenticate({ authorization: 'Bearer' })).toEqual(refused('malformed'));
    expect(await authenticate({ authorization: 'token-alice' })).toEqual(refused('malformed'));
    expect(await authenticate({ authorization: 'Bearer token-alice extra' })).toEqual(refused('malformed'));
    expect(await authenticate({ authorization: 'Basic dG9rZW4tYWxpY2U6' })).toEqual(refused('malformed'));
    expect(await authenticate({ authorization: `Bearer ${'x'.repeat(9000)}` })).toEqual(refused('malformed'));
  });

  it('refuses two credentials instead of choosing one', async () => {
    expect(await authenticate({ authorization: ['Bearer token-alice', 'Bearer token-bob'] })).toEqual(
      refused('ambiguous'),
    );
    expect(await authenticate({ authorization: 'Bearer token-alice', 'x-api-key': aliceKey })).toEqual(
      refused('ambiguous'),
    );
  });

  it('does not accept API keys when none are configured', async () => {
    expect(await authenticate({ 'x-api-key': 'token-alice' })).toEqual(refused('scheme-not-configured'));
    expect(await authenticate({ authorization: 'ApiKey token-alice' })).toEqual(
      refused('scheme-not-configured'),
    );
  });
});

describe('API keys (by SHA-256 digest)', () => {
  const authenticate = createAuthenticator({
    apiKeys: { [sha256Hex(aliceKey)]: alice, [sha256Hex(bobKey)]: bob },
  });

  it('accepts X-API-Key and Authorization: ApiKey', async () => {
    expect(await authenticate({ 'x-api-key': aliceKey })).toEqual(authenticated(alice, 'api-key'));
    expect(await authenticate({ 'X-Api-Key': ` ${bobKey} ` })).toEqual(authenticated(bob, 'api-key'));
    expect(await authenticate({ authorization: `ApiKey ${bobKey}` })).toEqual(authenticated(bob, 'api-key'));
    expect(await authenticate({ authorization: `apikey ${aliceKey}` })).toEqual(
      authenticated(alice, 'api-key'),
    );
  });

  it('refuses a wrong key, the digest itself, and a key sent as a bearer token', async () => {
    expect(await authenticate({ 'x-api-key': `${aliceKey}x` })).toEqual(refused('unknown-api-key'));
    expect(await authenticate({ 'x-api-key': sha256Hex(aliceKey) })).toEqual(refused('unknown-api-key'));
    expect(await authenticate({ authorization: `Bearer ${aliceKey}` })).toEqual(
      refused('scheme-not-configured'),
    );
    expect(await authenticate({ 'x-api-key': [aliceKey, bobKey] })).toEqual(refused('ambiguous'));
  });
});

describe('JWT bearer tokens (through the TokenVerifier port)', () => {
  it('verifies JWT-shaped bearer tokens and maps claims to the identity', async () => {
    const { verifier, seen } = fakeVerifier(() => ({ ok: true, claims: { sub: 'carol', tenant: 't3' } }));
    const authenticate = createAuthenticator({ jwt: jwtSettings }, { verifier });
    expect(await authenticate({ authorization: `Bearer ${someJwt}` })).toEqual(
      authenticated({ tenant: 't3', principal: 'carol' }, 'jwt'),
    );
    expect(seen).toEqual([someJwt]);
  });

  it('does not call the verifier for a token that is not shaped like a JWT', async () => {
    const { verifier, seen } = fakeVerifier(() => ({ ok: true, claims: { sub: 'x', tenant: 'y' } }));
    const authenticate = createAuthenticator({ jwt: jwtSettings }, { verifier });
    expect(await authenticate({ authorization: 'Bearer not-a-jwt' })).toEqual(refused('malformed'));
    expect(await authenticate({ authorization: 'Bearer a.b.c.d' })).toEqual(refused('malformed'));
    expect(seen).toEqual([]);
  });

  it('passes the verifier rejection through as the reason', async () => {
    for (const reason of [
      'expired',
      'signature',
      'claims',
      'algorithm',
      'unknown-key',
      'malformed',
    ] as const) {
      const { verifier } = fakeVerifier(() => ({ ok: false, reason }));
      const authenticate = createAuthenticator({ jwt: jwtSettings }, { verifier });
      expect(await authenticate({ authorization: `Bearer ${someJwt}` })).toEqual(refused(reason));
    }
  });

  it('lets an outage of the verifier reject instead of calling the caller unauthenticated', async () => {
    const verifier: TokenVerifier = {
      verify: async () => {
        throw new TokenVerifierUnavailableError('down');
      },
    };
    const authenticate = createAuthenticator({ jwt: jwtSettings }, { verifier });
    await expect(authenticate({ authorization: `Bearer ${someJwt}` })).rejects.toThrow(
      TokenVerifierUnavailableError,
    );
  });

  it('checks static tokens first, then JWTs, when both are configured', async () => {
    const { verifier, seen } = fakeVerifier(() => ({ ok: false, reason: 'signature' }));
    const authenticate = createAuthenticator(
      { tokens: { 'token-alice': alice }, jwt: jwtSettings },
      { verifier },
    );
    expect(await authenticate({ authorization: 'Bearer token-alice' })).toEqual(
      authenticated(alice, 'token'),
    );
    expect(await authenticate({ authorization: `Bearer ${someJwt}` })).toEqual(refused('signature'));
    expect(seen).toEqual([someJwt]);
  });

  it('refuses to build without a verifier when jwt is configured', () => {
    expect(() => createAuthenticator({ jwt: jwtSettings })).toThrow(/token verifier/);
  });
});

describe('identityFromClaims', () => {
  const mapping = { tenantClaim: 'tenant', principalClaim: 'sub' };

  it('reads the configured claims, flat (namespaced claim names are not paths)', () => {
    expect(identityFromClaims({ sub: 'u1', tenant: 't1' }, mapping)).toEqual({
      tenant: 't1',
      principal: 'u1',
    });
    expect(
      identityFromClaims(
        { 'https://example.com/org': 'acme', email: 'a@acme.example' },
        { tenantClaim: 'https://example.com/org', principalClaim: 'email' },
      ),
    ).toEqual({ tenant: 'acme', principal: 'a@acme.example' });
  });

  it('falls back to the fixed tenant only when the tenant claim is absent', () => {
    expect(identityFromClaims({ sub: 'u1' }, { ...mapping, tenant: 'fixed' })).toEqual({
      tenant: 'fixed',
      principal: 'u1',
    });
    expect(identityFromClaims({ sub: 'u1', tenant: 't#2' }, { ...mapping, tenant: 'fixed' })).toBeUndefined();
    expect(identityFromClaims({ sub: 'u1', tenant: 7 }, { ...mapping, tenant: 'fixed' })).toBeUndefined();
    expect(identityFromClaims({ sub: 'u1' }, mapping)).toBeUndefined();
  });

  it('refuses principals that are missing, not strings, empty, too long or contain # or spaces', () => {
    for (const sub of [undefined, 42, '', 'a b', 'x#y', 'x'.repeat(257), ['u1'], { id: 'u1' }]) {
      expect(identityFromClaims({ sub, tenant: 't1' }, mapping), JSON.stringify(sub)).toBeUndefined();
    }
    expect(identityFromClaims(Object.create({ sub: 'inherited', tenant: 't' }), mapping)).toBeUndefined();
  });
});

describe('property: random headers never authenticate without a configured credential', () => {
  it('holds for 1,000 header maps', async () => {
    const { verifier } = fakeVerifier(() => ({ ok: false, reason: 'signature' }));
    const authenticate = createAuthenticator(
      { tokens: { 'token-alice': alice }, apiKeys: { [sha256Hex(aliceKey)]: alice }, jwt: jwtSettings },
      { verifier },
    );
    const name = fc.constantFrom(
      'authorization',
      'Authorization',
      'x-api-key',
      'X-API-KEY',
      'cookie',
      'host',
    );
    const value = fc.oneof(
      fc.string(),
      fc
        .constantFrom('Bearer ', 'ApiKey ', 'Basic ', 'bearer\t')
        .chain((prefix) => fc.string().map((rest) => prefix + rest)),
      fc.array(fc.string(), { maxLength: 3 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.dictionary(name, value), async (headers) => {
        const result = await authenticate(headers);
        expect(result.kind).toBe('unauthenticated');
      }),
      { numRuns: 1000 },
    );
  });
});

describe('the auth configuration', () => {
  const base = { providers: defaultConfig.providers, profiles: defaultConfig.profiles };

  it('defaults to no scheme, and accepts keys by digest and a JWT issuer', () => {
    expect(parseConfig(base).auth).toEqual({ tokens: {}, apiKeys: {}, public: false });
    const config = parseConfig({
      ...base,
      auth: {
        apiKeys: { [sha256Hex(aliceKey)]: alice },
        jwt: {
          issuer: 'https://issuer.example',
          audience: ['a2a', 'other'],
          jwksUrl: 'https://i.example/jwks',
        },
      },
    });
    expect(config.auth.jwt).toEqual({
      issuer: 'https://issuer.example',
      audience: ['a2a', 'other'],
      jwksUrl: 'https://i.example/jwks',
      tenantClaim: 'tenant',
      principalClaim: 'sub',
      algorithms: ['RS256', 'ES256'],
    });
    expect(hasAuthScheme(config.auth)).toBe(true);
    expect(deploymentAuthProblems(config.auth)).toEqual([]);
  });

  it('refuses what would weaken authentication, naming the setting', () => {
    const bad: [unknown, RegExp][] = [
      [{ apiKeys: { [aliceKey]: alice } }, /auth\.apiKeys: entry 1 is not a SHA-256/],
      [{ apiKeys: { [sha256Hex(aliceKey).toUpperCase()]: alice } }, /auth\.apiKeys/],
      [{ tokens: { t: { tenant: 'a#b', principal: 'c' } } }, /auth\.tokens\.t\.tenant/],
      [{ tokens: { t: { tenant: 'a', principal: 'with space' } } }, /auth\.tokens\.t\.principal/],
      [{ jwt: { ...jwtSettings, algorithms: ['none'] } }, /auth\.jwt\.algorithms/],
      [{ jwt: { ...jwtSettings, algorithms: ['HS256'] } }, /auth\.jwt\.algorithms/],
      [{ jwt: { ...jwtSettings, jwksUrl: 'file:///etc/jwks.json' } }, /auth\.jwt\.jwksUrl/],
      [{ jwt: { ...jwtSettings, audience: [] } }, /auth\.jwt\.audience/],
      [{ public: true, tokens: { t: alice } }, /auth\.public/],
    ];
    for (const [auth, message] of bad) {
      expect(() => parseConfig({ ...base, auth }), JSON.stringify(auth)).toThrow(message);
    }
    // A raw key configured by mistake is not echoed into the error (and so into a build log).
    const error = (() => {
      try {
        parseConfig({ ...base, auth: { apiKeys: { [aliceKey]: alice } } });
      } catch (caught) {
        return (caught as Error).message;
      }
    })();
    expect(error).toMatch(/auth\.apiKeys/);
    expect(error).not.toContain(aliceKey);
  });

  it('says why an auth section cannot be deployed', () => {
    const none = parseConfig(base).auth;
    expect(deploymentAuthProblems(none)).toEqual([expect.stringMatching(/auth\.apiKeys or auth\.jwt/)]);
    const tokensOnly = parseConfig({ ...base, auth: { tokens: { t: alice } } }).auth;
    expect(deploymentAuthProblems(tokensOnly)).toEqual([expect.stringMatching(/local mode only/)]);
    expect(deploymentAuthProblems(parseConfig({ ...base, auth: { public: true } }).auth)).toEqual([]);
    const plainJwks = parseConfig({
      ...base,
      auth: { jwt: { ...jwtSettings, jwksUrl: 'http://issuer.example/jwks' } },
    }).auth;
    expect(deploymentAuthProblems(plainJwks)).toEqual([expect.stringMatching(/jwksUrl.*https/)]);
  });
});

describe('createJoseTokenVerifier (local key set; the remote JWKS is in test/integration/jwt.test.ts)', () => {
  const setup = async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const other = await generateKeyPair('ES256');
    const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    const verifier = createJoseTokenVerifier(jwtSettings, { keys: createLocalJWKSet({ keys: [jwk] }) });
    const now = Math.floor(Date.now() / 1000);
    const sign = (
      claims: Record<string, unknown> = {},
      {
        key = privateKey,
        kid = 'k1',
        exp = now + 60,
      }: { key?: Parameters<SignJWT['sign']>[0]; kid?: string; exp?: number | null } = {},
    ) => {
      const payload = {
        iss: 'https://issuer.example',
        aud: 'a2a',
        sub: 'alice',
        iat: now,
        tenant: 't1',
        ...(exp === null ? {} : { exp }),
        ...claims,
      };
      return new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid }).sign(key);
    };
    return { verifier, sign, other, now };
  };

  it('accepts a good token and returns its claims', async () => {
    const { verifier, sign } = await setup();
    const result = await verifier.verify(await sign());
    expect(result).toMatchObject({ ok: true, claims: { sub: 'alice', tenant: 't1', aud: 'a2a' } });
  });

  it('names the reason for every kind of bad token', async () => {
    const { verifier, sign, other, now } = await setup();
    const [header, payload] = (await sign()).split('.') as [string, string];
    const cases: [string, string][] = [
      ['expired', await sign({}, { exp: now - 60 })],
      ['claims', await sign({ iss: 'https://evil.example' })],
      ['claims', await sign({ aud: 'someone-else' })],
      ['claims', await sign({}, { exp: null })],
      ['claims', await sign({ nbf: now + 600 })],
      ['signature', await sign({}, { key: other.privateKey })],
      ['unknown-key', await sign({}, { kid: 'k2' })],
      [
        'algorithm',
        `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`,
      ],
      [
        'algorithm',
        `${Buffer.from(JSON.stringify({ alg: 'HS256', kid: 'k1' })).toString('base64url')}.${payload}.c2ln`,
      ],
      ['malformed', `${header}.${payload}`],
      ['malformed', 'x.y.z'],
    ];
    for (const [reason, token] of cases) {
      expect(await verifier.verify(token), reason).toEqual({ ok: false, reason });
    }
  });

  it('tolerates a few seconds of clock skew, not more', async () => {
    const { verifier, sign, now } = await setup();
    expect((await verifier.verify(await sign({}, { exp: now - 2 }))).ok).toBe(true);
    expect(await verifier.verify(await sign({}, { exp: now - 30 }))).toEqual({
      ok: false,
      reason: 'expired',
    });
  });
});
