import { createJoseTokenVerifier } from '../../shared/adapters/jose-token-verifier.ts';
import { authorizerFunction } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createAuthenticator } from '../../shared/app/rpc/authenticate.ts';
import { readAuthorizerEnv } from '../../shared/config/runtime-env.ts';
import { createAuthorizer } from './authorizer.ts';

/**
 * Lambda authorizer of the REST API: JWT bearer tokens (verified against the configured JWKS,
 * cached per container) and API keys → (tenant, principal). No table, queue or KMS access.
 */

const { auth } = readAuthorizerEnv().config;
const logger = createLogger('a2a-authorizer');
const verifier = auth.jwt ? createJoseTokenVerifier(auth.jwt) : undefined;

export const handler = authorizerFunction(
  { logger },
  createAuthorizer({
    auth,
    authenticate: createAuthenticator(auth, verifier ? { verifier } : {}),
    logger,
  }),
);
