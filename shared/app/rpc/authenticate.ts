import { createHash, timingSafeEqual } from 'node:crypto';
import { type AuthSettings, hasAuthScheme, isIdentityPart, type JwtConfig } from '../../config/auth.ts';
import type { TokenRejection, TokenVerifier } from '../../domain/ports.ts';
import type { Owner } from '../../domain/task.ts';

/**
 * Who calls (docs/security.md). One function decides it for the Lambda authorizer and
 * for the local harness alike: a request's headers in, an identity (tenant, principal) out, or
 * "unauthenticated". Credentials:
 * - `Authorization: Bearer <token>`: a static token (local mode) or a JWT (verified by the port);
 * - `Authorization: ApiKey <key>` or `X-API-Key: <key>`: an API key, matched by its SHA-256.
 * A request that presents more than one credential is refused rather than guessed at.
 */

export type Identity = Owner;

export type CredentialScheme = 'token' | 'jwt' | 'api-key';

/** Why a request is not authenticated; content-free, for logs. */
export type AuthFailure =
  | 'missing'
  | 'malformed'
  | 'ambiguous'
  | 'unknown-token'
  | 'unknown-api-key'
  | 'scheme-not-configured'
  | 'identity-claims'
  | TokenRejection;

export type Authentication =
  | {
      readonly kind: 'authenticated';
      readonly identity: Identity;
      readonly scheme: CredentialScheme;
      /** A JWT's `exp` (epoch seconds): the credential is not valid from then on, cached or not. */
      readonly expiresAt?: number;
    }
  /** The installation configures no scheme: everyone is `local`/`local` (docs/configuration.md). */
  | { readonly kind: 'anonymous'; readonly identity: Identity }
  | { readonly kind: 'unauthenticated'; readonly reason: AuthFailure };

/** Everyone, in an installation without authentication. */
export const localCaller: Identity = { tenant: 'local', principal: 'local' };

/** Header maps as API Gateway or node:http give them; names are matched case-insensitively. */
export type HeaderLookup = Readonly<Record<string, string | readonly string[] | undefined>>;

export type Authenticate = (headers: HeaderLookup) => Promise<Authentication>;

export interface AuthenticateDeps {
  /** Required when `jwt` is configured. */
  readonly verifier?: TokenVerifier;
}

/** No credential is longer: API Gateway caps a header at 10 KB, and nothing this long is hashed. */
const maxCredentialLength = 8192;
const jwtShape = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

interface DigestEntry {
  readonly digest: Buffer;
  readonly identity: Identity;
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * Scans every entry with a constant-time comparison and no early exit, so neither which entry
 * matched nor how much of a digest did shows in the time taken.
 */
const findByDigest = (entries: readonly DigestEntry[], digest: Buffer): Identity | undefined => {
  let found: Identity | undefined;
  for (const entry of entries) {
    const equal = timingSafeEqual(entry.digest, digest);
    if (equal && found === undefined) found = entry.identity;
  }
  return found;
};

type HeaderValue =
  | { readonly kind: 'absent' }
  | { readonly kind: 'one'; readonly value: string }
  | { readonly kind: 'many' };

const headerOf = (headers: HeaderLookup, name: string): HeaderValue => {
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    values.push(...(typeof value === 'string' ? [value] : value));
  }
  const present = values.filter((value) => value.trim() !== '');
  if (present.length === 0) return { kind: 'absent' };
  if (present.length > 1) return { kind: 'many' };
  return { kind: 'one', value: present[0]!.trim() };
};

/**
 * The identity a verified JWT names: `principalClaim` (default `sub`) and `tenantClaim` (default
 * `tenant`), or the configured fixed `tenant` when the token has no tenant claim at all. A claim
 * that is present but not a usable identity part fails closed, without falling back.
 */
export const identityFromClaims = (
  claims: Readonly<Record<string, unknown>>,
  jwt: Pick<JwtConfig, 'tenantClaim' | 'principalClaim' | 'tenant'>,
): Identity | undefined => {
  const principal = Object.hasOwn(claims, jwt.principalClaim) ? claims[jwt.principalClaim] : undefined;
  const tenantClaimed = Object.hasOwn(claims, jwt.tenantClaim) ? claims[jwt.tenantClaim] : undefined;
  const tenant = tenantClaimed === undefined ? jwt.tenant : tenantClaimed;
  return isIdentityPart(tenant) && isIdentityPart(principal) ? { tenant, principal } : undefined;
};

/** Builds the authentication function of one installation from its `auth` settings. */
export const createAuthenticator = (settings: AuthSettings, deps: AuthenticateDeps = {}): Authenticate => {
  const toEntries = (
    table: AuthSettings['tokens'],
    digestOf: (key: string) => Buffer,
  ): readonly DigestEntry[] =>
    Object.entries(table ?? {}).map(([key, { tenant, principal }]) => ({
      digest: digestOf(key),
      identity: { tenant, principal },
    }));
  const tokens = toEntries(settings.tokens, sha256);
  const apiKeys = toEntries(settings.apiKeys, (hex) => Buffer.from(hex, 'hex'));
  const { jwt } = settings;
  const { verifier } = deps;
  if (jwt !== undefined && verifier === undefined) {
    throw new Error('auth.jwt is configured, but no token verifier was given');
  }
  const open = !hasAuthScheme(settings);

  const fail = (reason: AuthFailure): Authentication => ({ kind: 'unauthenticated', reason });
  const ok = (identity: Identity, scheme: CredentialScheme, expiresAt?: number): Authentication => ({
    kind: 'authenticated',
    identity,
    scheme,
    ...(expiresAt !== undefined && { expiresAt }),
  });

  const byApiKey = (key: string): Authentication => {
    if (apiKeys.length === 0) return fail('scheme-not-configured');
    const identity = findByDigest(apiKeys, sha256(key));
    return identity ? ok(identity, 'api-key') : fail('unknown-api-key');
  };

  const byBearer = async (token: string): Promise<Authentication> => {
    const identity = tokens.length > 0 ? findByDigest(tokens, sha256(token)) : undefined;
    if (identity) return ok(identity, 'token');
    if (jwt === undefined || verifier === undefined) {
      return fail(tokens.length > 0 ? 'unknown-token' : 'scheme-not-configured');
    }
    if (!jwtShape.test(token)) return fail('malformed');
    const verified = await verifier.verify(token);
    if (!verified.ok) return fail(verified.reason);
    const fromClaims = identityFromClaims(verified.claims, jwt);
    const { exp } = verified.claims;
    return fromClaims
      ? ok(fromClaims, 'jwt', typeof exp === 'number' && Number.isFinite(exp) ? exp : undefined)
      : fail('identity-claims');
  };

  return async (headers) => {
    if (open) return { kind: 'anonymous', identity: localCaller };
    const authorization = headerOf(headers, 'authorization');
    const apiKey = headerOf(headers, 'x-api-key');
    if (authorization.kind === 'many' || apiKey.kind === 'many') return fail('ambiguous');
    if (authorization.kind === 'one' && apiKey.kind === 'one') return fail('ambiguous');
    if (apiKey.kind === 'one') {
      return apiKey.value.length > maxCredentialLength ? fail('malformed') : byApiKey(apiKey.value);
    }
    if (authorization.kind === 'absent') return fail('missing');
    if (authorization.value.length > maxCredentialLength) return fail('malformed');
    const parsed = /^([A-Za-z][A-Za-z0-9-]*) +(\S+)$/.exec(authorization.value);
    if (!parsed) return fail('malformed');
    const [, scheme, credential] = parsed as unknown as [string, string, string];
    switch (scheme.toLowerCase()) {
      case 'bearer':
        return byBearer(credential);
      case 'apikey':
        return byApiKey(credential);
      default:
        return fail('malformed');
    }
  };
};
