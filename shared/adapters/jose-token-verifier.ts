import { createRemoteJWKSet, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { JwtConfig } from '../config/auth.ts';
import type { TokenRejection, TokenVerification, TokenVerifier } from '../domain/ports.ts';

/**
 * JWT bearer tokens verified with jose against the issuer's JWKS (docs/security.md): signature by
 * a key of the set (picked by `kid`/`alg`), an allowed asymmetric algorithm (never `none`), the
 * exact issuer, one of the audiences, and a lifetime (`exp` required, `nbf` honoured) with a
 * small clock tolerance. The key set is fetched lazily, cached, and refetched on an unknown
 * `kid` at most every `cooldownMs`.
 */

export interface JoseTokenVerifierOptions {
  /** Seconds of clock skew tolerated on `exp`/`nbf`/`iat`. @default 5 */
  readonly clockToleranceSeconds?: number;
  /** JWKS request timeout. @default 3000 */
  readonly timeoutMs?: number;
  /** Minimum time between refetches triggered by an unknown key id. @default 30000 */
  readonly cooldownMs?: number;
  /** How long a fetched key set is used. @default 600000 */
  readonly cacheMaxAgeMs?: number;
  /** A key resolver to use instead of the remote JWKS (tests of the mapping only). */
  readonly keys?: JWTVerifyGetKey;
}

/** The key set could not be fetched or read: an outage, not a bad caller. */
export class TokenVerifierUnavailableError extends Error {
  override readonly name = 'TokenVerifierUnavailableError';
}

/** jose error codes that say "this token is not acceptable" (everything else is an outage). */
const rejections: Readonly<Record<string, TokenRejection>> = {
  ERR_JWT_EXPIRED: 'expired',
  ERR_JWT_CLAIM_VALIDATION_FAILED: 'claims',
  ERR_JWT_INVALID: 'malformed',
  ERR_JWS_INVALID: 'malformed',
  ERR_JOSE_ALG_NOT_ALLOWED: 'algorithm',
  ERR_JOSE_NOT_SUPPORTED: 'algorithm',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'signature',
  ERR_JWKS_NO_MATCHING_KEY: 'unknown-key',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'unknown-key',
};

const rejectionOf = (error: unknown): TokenRejection | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? rejections[code] : undefined;
};

export const createJoseTokenVerifier = (
  jwt: Pick<JwtConfig, 'issuer' | 'audience' | 'jwksUrl' | 'algorithms'>,
  options: JoseTokenVerifierOptions = {},
): TokenVerifier => {
  const keys =
    options.keys ??
    createRemoteJWKSet(new URL(jwt.jwksUrl), {
      timeoutDuration: options.timeoutMs ?? 3_000,
      cooldownDuration: options.cooldownMs ?? 30_000,
      cacheMaxAge: options.cacheMaxAgeMs ?? 600_000,
    });
  const verifyOptions = {
    issuer: jwt.issuer,
    audience: typeof jwt.audience === 'string' ? jwt.audience : [...jwt.audience],
    algorithms: [...jwt.algorithms],
    clockTolerance: options.clockToleranceSeconds ?? 5,
    requiredClaims: ['exp'],
  };
  return {
    async verify(token: string): Promise<TokenVerification> {
      try {
        const { payload } = await jwtVerify(token, keys, verifyOptions);
        return { ok: true, claims: payload };
      } catch (error) {
        const reason = rejectionOf(error);
        if (reason !== undefined) return { ok: false, reason };
        throw new TokenVerifierUnavailableError('The JWT signing keys could not be obtained', {
          cause: error,
        });
      }
    },
  };
};
