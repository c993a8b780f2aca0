import { createJoseTokenVerifier } from '../../shared/adapters/jose-token-verifier.ts';
import { createAuthenticator } from '../../shared/app/rpc/authenticate.ts';
import { type AuthSettings, hasAuthScheme } from '../../shared/config/auth.ts';
import type { TokenVerifier } from '../../shared/domain/ports.ts';
import { type Authorize, anonymousIdentity } from './http-harness.ts';
import type { LocalLog } from './lambda-invocation.ts';

/**
 * The local stand-in for the Lambda authorizer (functions/authorizer/handler.ts), over the same
 * `authenticate` core: static tokens, API keys and JWTs (verified against the configured JWKS
 * URL) all work under `npm start`. Agent cards stay public, as in API Gateway, where their
 * methods have no authorizer: a credential sent with a card request is not even looked at.
 */

const publicCardPath = /^(?:\/agents\/[^/]+)?\/\.well-known\/agent-card\.json$/;

export const isPublicRoute = (method: string, path: string): boolean =>
  (method === 'GET' || method === 'HEAD') && publicCardPath.test(path);

export interface LocalAuthorizerOptions {
  /** Default: jose against `auth.jwt.jwksUrl`, when `auth.jwt` is configured. */
  readonly verifier?: TokenVerifier;
  readonly log?: LocalLog;
}

export const createLocalAuthorizer = (
  config: { readonly auth: AuthSettings },
  options: LocalAuthorizerOptions = {},
): Authorize => {
  const { jwt } = config.auth;
  const verifier = options.verifier ?? (jwt ? createJoseTokenVerifier(jwt) : undefined);
  const authenticate = createAuthenticator(config.auth, verifier ? { verifier } : {});
  const secured = hasAuthScheme(config.auth);
  return async (headers, request) => {
    if (secured && isPublicRoute(request.method, request.path)) return anonymousIdentity;
    const result = await authenticate(headers);
    if (result.kind !== 'unauthenticated') return result.identity;
    options.log?.('info', 'authorizer: unauthenticated', { reason: result.reason, method: request.method });
    return 'unauthorized';
  };
};
