import { createHash } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { allowedResource, createAuthorizer, unauthorized } from '../../functions/authorizer/authorizer.ts';
import { toHttpRequest } from '../../functions/rpc/api-gateway.ts';
import { createHttpApp } from '../../functions/rpc/http-app.ts';
import { TokenVerifierUnavailableError } from '../../shared/adapters/jose-token-verifier.ts';
import { createAuthenticator } from '../../shared/app/rpc/authenticate.ts';
import { defaultConfig, parseConfig } from '../../shared/config/config.ts';
import { readAuthorizerEnv } from '../../shared/config/runtime-env.ts';

/** The API Gateway REQUEST authorizer around the authenticate core (decision 0007). */

const methodArn = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/POST/agents/default';
const apiKey = 'ak_test_5b0e9c1d2f3a4b5c6d7e8f90a1b2c3d4';
const digest = createHash('sha256').update(apiKey).digest('hex');
const auth = { tokens: {}, apiKeys: { [digest]: { tenant: 'acme', principal: 'ci-bot' } }, public: false };

const event = (
  headers: Record<string, string>,
  multiValueHeaders?: Record<string, string[]>,
): APIGatewayRequestAuthorizerEvent =>
  ({
    type: 'REQUEST',
    methodArn,
    resource: '/agents/{profileId}',
    path: '/agents/default',
    httpMethod: 'POST',
    headers,
    multiValueHeaders:
      multiValueHeaders ?? Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    pathParameters: { profileId: 'default' },
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: { requestId: 'req-1' },
  }) as unknown as APIGatewayRequestAuthorizerEvent;

const logs: { level: string; message: string; attributes: Record<string, unknown> }[] = [];
const logger = {
  info: (message: string, attributes: Readonly<Record<string, unknown>>) =>
    void logs.push({ level: 'info', message, attributes: { ...attributes } }),
  error: (message: string, attributes: Readonly<Record<string, unknown>>) =>
    void logs.push({ level: 'error', message, attributes: { ...attributes } }),
};

describe('the Lambda authorizer', () => {
  const authorize = createAuthorizer({ auth, authenticate: createAuthenticator(auth), logger });

  it('allows a known API key for the whole stage, with tenant and principal in the context', async () => {
    expect(await authorize(event({ 'X-API-Key': apiKey }))).toEqual({
      principalId: 'ci-bot',
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Action: 'execute-api:Invoke',
            Effect: 'Allow',
            Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/*',
          },
        ],
      },
      context: { tenant: 'acme', principal: 'ci-bot' },
    });
  });

  it('throws Unauthorized (API Gateway: 401) and logs only the reason', async () => {
    logs.length = 0;
    await expect(authorize(event({}))).rejects.toThrow(new Error(unauthorized));
    await expect(authorize(event({ 'x-api-key': `${apiKey}x` }))).rejects.toThrow(unauthorized);
    // A header sent twice arrives in multiValueHeaders: refused, not picked.
    await expect(
      authorize(event({ 'X-API-Key': apiKey }, { 'X-API-Key': [apiKey, 'other'] })),
    ).rejects.toThrow(unauthorized);
    expect(logs.map((entry) => entry.attributes.reason)).toEqual(['missing', 'unknown-api-key', 'ambiguous']);
    expect(JSON.stringify(logs)).not.toContain(apiKey);
  });

  it('lets an outage of the key set through as an error (API Gateway: 500), not a 401', async () => {
    const failing = createAuthorizer({
      auth,
      authenticate: async () => {
        throw new TokenVerifierUnavailableError('down');
      },
      logger,
    });
    await expect(failing(event({ Authorization: 'Bearer a.b.c' }))).rejects.toThrow(
      TokenVerifierUnavailableError,
    );
  });

  it('fails closed when deployed without any scheme and without auth.public', async () => {
    const none = { tokens: {}, apiKeys: {}, public: false };
    const closed = createAuthorizer({ auth: none, authenticate: createAuthenticator(none), logger });
    await expect(closed(event({}))).rejects.toThrow(unauthorized);
    const open = { tokens: {}, apiKeys: {}, public: true };
    const allowed = await createAuthorizer({ auth: open, authenticate: createAuthenticator(open), logger })(
      event({}),
    );
    expect(allowed.context).toEqual({ tenant: 'local', principal: 'local' });
  });

  it('widens the method ARN to the stage, and leaves anything unexpected as it is', () => {
    expect(allowedResource(methodArn)).toBe('arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/*');
    expect(allowedResource('arn:aws:execute-api:r:a:api/stage/GET/')).toBe(
      'arn:aws:execute-api:r:a:api/stage/*',
    );
    expect(allowedResource('not-an-arn')).toBe('not-an-arn');
  });
});

describe("a JWT's expiry and the authorizer cache (issue 38)", () => {
  const config = parseConfig({
    auth: {
      jwt: { issuer: 'https://issuer.example', audience: 'a2a', jwksUrl: 'https://issuer.example/jwks' },
    },
    providers: { local: { type: 'scripted' } },
    profiles: { default: { name: 'Echo', description: 'echo', providers: ['local'] } },
  });
  const exp = 1_900_000_000;
  const authorizeJwt = createAuthorizer({
    auth: config.auth,
    // The verifier's answer for a valid token (jose checks the signature and `exp` at this moment).
    authenticate: createAuthenticator(config.auth, {
      verifier: { verify: async () => ({ ok: true, claims: { sub: 'alice', tenant: 't1', exp } }) },
    }),
    logger,
  });
  /** The request API Gateway hands the rpc function with an authorizer answer, cached or fresh. */
  const proxyEvent = (authorizer: Record<string, unknown>): APIGatewayProxyEvent =>
    ({
      httpMethod: 'POST',
      path: '/agents/default',
      headers: { 'content-type': 'application/json', host: 'api.example' },
      queryStringParameters: null,
      isBase64Encoded: false,
      body: '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
      requestContext: { requestId: 'r1', path: '/v1/agents/default', authorizer },
    }) as unknown as APIGatewayProxyEvent;

  it("carries the token's exp in the context; the rpc refuses the cached allow from that second on", async () => {
    const answer = await authorizeJwt(event({ Authorization: 'Bearer a.b.c' }));
    expect(answer.context).toEqual({ tenant: 't1', principal: 'alice', exp });
    let dispatched = 0;
    const app = createHttpApp({
      config,
      dispatcher: {
        dispatch: async () => {
          dispatched += 1;
          return { kind: 'json', status: 200, body: { jsonrpc: '2.0', id: 1, result: {} } } as const;
        },
        invoke: async () => {
          dispatched += 1;
          return { kind: 'value', value: {} } as const;
        },
      },
    });
    // API Gateway passes context values on as strings; a number is read alike.
    for (const context of [answer.context ?? {}, { ...answer.context, exp: String(exp) }]) {
      const before = await app(toHttpRequest(proxyEvent(context), false, exp * 1000 - 1));
      expect(before.status).toBe(200);
      for (const at of [exp * 1000, exp * 1000 + 59_000]) {
        const after = await app(toHttpRequest(proxyEvent(context), false, at));
        expect(after).toMatchObject({ status: 401, headers: { 'WWW-Authenticate': 'Bearer' } });
      }
    }
    expect(dispatched).toBe(2);
    // An unreadable exp is no identity either; API keys and static tokens carry none and are not affected.
    expect(toHttpRequest(proxyEvent({ ...answer.context, exp: 'soon' }), false).caller).toBeNull();
    expect(toHttpRequest(proxyEvent({ tenant: 't1', principal: 'alice' }), false).caller).toEqual({
      tenant: 't1',
      principal: 'alice',
    });
  });
});

describe("the authorizer's environment", () => {
  it('is the validated configuration, and a missing A2A_CONFIG fails the cold start with its name', () => {
    const config = { ...JSON.parse(JSON.stringify(defaultConfig)), auth: { apiKeys: auth.apiKeys } };
    expect(readAuthorizerEnv({ A2A_CONFIG: JSON.stringify(config) }).config.auth.apiKeys).toEqual(
      config.auth.apiKeys,
    );
    expect(() => readAuthorizerEnv({})).toThrow('Missing environment variable A2A_CONFIG');
  });
});
