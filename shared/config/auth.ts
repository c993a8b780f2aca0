import * as z from '../zod.ts';

/**
 * The `auth` section of the configuration (docs/security.md; docs/configuration.md). Three ways
 * to prove who calls, each mapping to one identity (tenant, principal):
 * - `tokens`: static bearer tokens, local mode only (left out of a deployment);
 * - `apiKeys`: SHA-256 hex digest of a key → identity (the key itself is never configured);
 * - `jwt`: bearer JWTs verified against an issuer's JWKS.
 * Without any of them the installation is unauthenticated and every caller is `local`/`local`;
 * a deployment then refuses to synthesize unless `public: true` says so on purpose.
 */

/**
 * Printable ASCII without space and `#`, at most 256 characters. `#` separates the parts of
 * DynamoDB keys (`OWNER#<tenant>#<principal>`), so an identity part that contained it could
 * collide with another caller's (tenant `a#b` + principal `c` vs tenant `a` + principal `b#c`).
 */
export const identityPartPattern = /^[\x21\x22\x24-\x7e]{1,256}$/;

export const isIdentityPart = (value: unknown): value is string =>
  typeof value === 'string' && identityPartPattern.test(value);

const identityPart = z
  .string()
  .check(z.regex(identityPartPattern, 'printable ASCII without spaces or "#", 1-256 characters'));

export const identitySchema = z.object({ tenant: identityPart, principal: identityPart });

/** Asymmetric JWS algorithms only: no `none`, and no HMAC (it would need the issuer's secret here). */
export const jwtAlgorithms = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

export const nonEmptyString = z.string().check(z.minLength(1));

export const jwtConfigSchema = z.object({
  /** Expected `iss`, exactly. */
  issuer: nonEmptyString,
  /** Expected `aud` (one of them, when a list). */
  audience: z.union([nonEmptyString, z.array(nonEmptyString).check(z.minLength(1))]),
  /** Where the issuer publishes its signing keys (https in a deployment). */
  jwksUrl: z.url({ protocol: /^https?$/ }),
  /** Claim that names the tenant. */
  tenantClaim: z._default(nonEmptyString, 'tenant'),
  /** Tenant of tokens that do not carry `tenantClaim` (a single-tenant issuer). */
  tenant: z.optional(identityPart),
  /** Claim that names the principal. */
  principalClaim: z._default(nonEmptyString, 'sub'),
  algorithms: z._default(z.array(z.enum(jwtAlgorithms)).check(z.minLength(1)), ['RS256', 'ES256']),
});

export const apiKeyDigestPattern = /^[0-9a-f]{64}$/;

export const authConfigSchema = z
  .object({
    /** Static bearer tokens, local mode only (`npm start`); stripped from a deployment. */
    tokens: z._default(z.record(nonEmptyString, identitySchema), {}),
    /** `sha256(key)` as 64 lowercase hex characters → identity. */
    apiKeys: z._default(z.record(z.string(), identitySchema), {}),
    jwt: z.optional(jwtConfigSchema),
    /** A deployment without any scheme must say `public: true`: every caller is then `local`/`local`. */
    public: z._default(z.boolean(), false),
  })
  .check(
    z.superRefine((auth, context) => {
      // Reported by position: an entry that is not a digest may be the key itself, never echoed.
      Object.keys(auth.apiKeys).forEach((digest, index) => {
        if (!apiKeyDigestPattern.test(digest)) {
          context.addIssue({
            code: 'custom',
            path: ['apiKeys'],
            message: `entry ${index + 1} is not a SHA-256 hex digest (64 lowercase hex characters); configure sha256(key), never the key`,
          });
        }
      });
      if (auth.public && hasAuthScheme(auth)) {
        context.addIssue({
          code: 'custom',
          path: ['public'],
          message: 'public: true means no authentication; remove it or remove tokens, apiKeys and jwt',
        });
      }
    }),
  );

export type AuthConfig = z.infer<typeof authConfigSchema>;
export type JwtConfig = z.infer<typeof jwtConfigSchema>;

/** What the authentication code reads; the parsed `AuthConfig` is assignable to it. */
export interface AuthSettings {
  readonly tokens?: Readonly<Record<string, { readonly tenant: string; readonly principal: string }>>;
  readonly apiKeys?: Readonly<Record<string, { readonly tenant: string; readonly principal: string }>>;
  readonly jwt?: Readonly<JwtConfig>;
}

/** True when callers must authenticate (some scheme is configured). */
export const hasAuthScheme = (auth: AuthSettings): boolean =>
  Object.keys(auth.tokens ?? {}).length > 0 ||
  Object.keys(auth.apiKeys ?? {}).length > 0 ||
  auth.jwt !== undefined;

/** The `auth` section as a deployment gets it: static tokens are local-only. */
export const deployedAuth = (auth: AuthConfig): AuthConfig => ({ ...auth, tokens: {} });

/**
 * Why an `auth` section cannot be deployed, as messages naming the setting; empty when it can.
 * A deployment authenticates with API keys or JWTs, or is explicitly public.
 */
export const deploymentAuthProblems = (auth: AuthConfig): string[] => {
  const problems: string[] = [];
  const deployed = deployedAuth(auth);
  if (!hasAuthScheme(deployed) && !auth.public) {
    problems.push(
      Object.keys(auth.tokens).length > 0
        ? 'auth: tokens are for local mode only; a deployment needs auth.apiKeys or auth.jwt (or auth.public: true to serve everyone as local/local)'
        : 'auth: a deployment needs auth.apiKeys or auth.jwt (or auth.public: true to serve everyone as local/local)',
    );
  }
  if (auth.jwt && new URL(auth.jwt.jwksUrl).protocol !== 'https:') {
    problems.push('auth.jwt.jwksUrl: a deployment fetches signing keys over https only');
  }
  return problems;
};
