import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import type { Authenticate, AuthFailure, HeaderLookup } from '../../shared/app/rpc/authenticate.ts';
import { type AuthConfig, hasAuthScheme } from '../../shared/config/auth.ts';
import type { Logger } from '../../shared/domain/logger.ts';

/**
 * The API Gateway REQUEST authorizer (docs/security.md): request headers → `authenticate` → an
 * Allow policy whose context carries `{ tenant, principal }` (and a JWT's `exp`) to the rpc function
 * (`requestContext.authorizer`), or the error `Unauthorized`, which API Gateway answers with
 * 401 without calling the rpc function. Any other failure (the JWKS unreachable) is thrown as
 * it is, and API Gateway answers 500: an outage is not a bad caller.
 */

/** The message API Gateway maps to 401 (anything else thrown is a 500). */
export const unauthorized = 'Unauthorized';

/**
 * `arn:aws:execute-api:<region>:<account>:<api>/<stage>/*`: a cached result is reused for any
 * method of the API that uses this authorizer (the cache key is the credential, not the route),
 * so the policy must not name only the method that happened to be called first.
 */
export const allowedResource = (methodArn: string): string => {
  const [apiArn, stage] = methodArn.split('/') as [string, string?];
  if (!stage || !apiArn.startsWith('arn:')) return methodArn;
  return `${apiArn}/${stage}/*`;
};

/** Every header value, so that a credential sent twice is seen (and refused) rather than picked. */
const headersOf = (event: APIGatewayRequestAuthorizerEvent): HeaderLookup => {
  const headers: Record<string, string | string[] | undefined> = { ...(event.headers ?? {}) };
  for (const [name, values] of Object.entries(event.multiValueHeaders ?? {})) {
    if (values) headers[name] = values;
  }
  return headers;
};

export interface AuthorizerDeps {
  readonly auth: Pick<AuthConfig, 'public'> & Parameters<typeof hasAuthScheme>[0];
  readonly authenticate: Authenticate;
  readonly logger: Pick<Logger, 'info' | 'error'>;
}

export const createAuthorizer = ({ auth, authenticate, logger }: AuthorizerDeps) => {
  // Synth refuses such an installation; should one run anyway, it fails closed.
  const misconfigured = !hasAuthScheme(auth) && !auth.public;
  return async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
    const requestId = event.requestContext?.requestId;
    if (misconfigured) {
      logger.error('authorizer: no authentication scheme configured and not public; refusing', { requestId });
      throw new Error(unauthorized);
    }
    const result = await authenticate(headersOf(event));
    if (result.kind === 'unauthenticated') {
      const reason: AuthFailure = result.reason;
      logger.info('authorizer: unauthenticated', { requestId, reason });
      throw new Error(unauthorized);
    }
    const { tenant, principal } = result.identity;
    // API Gateway reuses this answer for the cache TTL: the rpc refuses it past the token's `exp`.
    const expiry =
      result.kind === 'authenticated' && result.expiresAt !== undefined ? { exp: result.expiresAt } : {};
    return {
      principalId: principal,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          { Action: 'execute-api:Invoke', Effect: 'Allow', Resource: allowedResource(event.methodArn) },
        ],
      },
      context: { tenant, principal, ...expiry },
    };
  };
};
