import type { CredentialConfig, McpServerConfig } from '../../config/config.ts';
import { extensionApiKey } from '../providers/secret-api-key.ts';
import type { GuardedFetch } from './guarded-fetch.ts';

/** Reads one credential when a request needs it. */
export type ReadCredential = () => Promise<string>;

/** A credential's value could not be had: the tool call fails with this message, the run does not. */
export class CredentialUnavailableError extends Error {
  override readonly name = 'CredentialUnavailableError';
}

export interface CredentialSources {
  /** Local mode reads `env`; a deployment reads `secret` (and `env` only for a credential without one). */
  readonly localMode: boolean;
  readonly env: NodeJS.ProcessEnv;
  /** The Parameters and Secrets Lambda Extension's root, `http://localhost:<port>`. */
  readonly extensionEndpoint: string;
  readonly sessionToken: string;
}

/**
 * A credential of `mcpServers.<id>` (docs/configuration.md, "Credentials"): from Secrets Manager
 * in a deployment, through the extension the provider keys use (read at first use, reused for
 * five minutes), from the environment locally. A missing value fails the request that needed it
 * (the model reads the error), never the cold start: a profile's other tools keep working.
 */
export const credentialReader = (
  sources: CredentialSources,
  setting: string,
  credential: CredentialConfig,
): ReadCredential => {
  if (!sources.localMode && credential.secret !== undefined) {
    const read = extensionApiKey({
      providerId: setting,
      ...credential.secret,
      endpoint: sources.extensionEndpoint,
      sessionToken: sources.sessionToken,
    });
    return async () => {
      try {
        return await read();
      } catch {
        throw new CredentialUnavailableError(`the secret of ${setting} could not be read`);
      }
    };
  }
  return async () => {
    const value = credential.env === undefined ? undefined : sources.env[credential.env];
    if (value === undefined || value === '') {
      throw new CredentialUnavailableError(
        credential.env === undefined
          ? `${setting} names only a secret, which is read when deployed`
          : `${setting}: environment variable ${credential.env} is not set`,
      );
    }
    return value;
  };
};

/** How long before its expiry a token is renewed. */
const renewBeforeMs = 30_000;

/**
 * The headers of every request to one MCP server: its static headers, and with `oauth` a bearer
 * token from the OAuth 2.0 client-credentials grant (RFC 6749 §4.4; client authenticated with
 * HTTP Basic), requested through the same guarded fetch and kept until shortly before it expires.
 */
export const serverHeaders = (
  sources: CredentialSources,
  serverId: string,
  server: Pick<McpServerConfig, 'headers' | 'oauth'>,
  fetch: GuardedFetch,
  now: () => number = Date.now,
  /** The configuration section the server is in: `mcpServers` or `a2aAgents`. */
  section = 'mcpServers',
): (() => Promise<Record<string, string>>) => {
  const headers = Object.entries(server.headers).map(([name, value]) => ({
    name,
    read:
      typeof value === 'string'
        ? async () => value
        : credentialReader(sources, `${section}.${serverId}.headers.${name}`, value),
  }));
  const { oauth } = server;
  let token: { readonly value: Promise<string>; readonly until: number } | undefined;
  const bearer = async (): Promise<string | undefined> => {
    if (oauth === undefined) return undefined;
    if (token === undefined || token.until <= now()) {
      const secret = credentialReader(
        sources,
        `${section}.${serverId}.oauth.clientSecret`,
        oauth.clientSecret,
      );
      const value = requestToken(fetch, oauth, await secret(), (expiresInS) => {
        if (token?.value === value) token = { value, until: now() + expiresInS * 1000 - renewBeforeMs };
      });
      token = { value, until: Number.POSITIVE_INFINITY };
      value.catch(() => {
        if (token?.value === value) token = undefined;
      });
    }
    return token.value;
  };
  return async () => {
    const entries = await Promise.all(headers.map(async ({ name, read }) => [name, await read()] as const));
    const access = await bearer();
    return {
      ...Object.fromEntries(entries),
      ...(access !== undefined && { authorization: `Bearer ${access}` }),
    };
  };
};

const requestToken = async (
  fetch: GuardedFetch,
  oauth: NonNullable<McpServerConfig['oauth']>,
  clientSecret: string,
  expiresIn: (seconds: number) => void,
): Promise<string> => {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (oauth.scope !== undefined) form.set('scope', oauth.scope);
  if (oauth.audience !== undefined) form.set('audience', oauth.audience);
  const basic = Buffer.from(
    `${encodeURIComponent(oauth.clientId)}:${encodeURIComponent(clientSecret)}`,
    'utf8',
  ).toString('base64');
  let response: Response;
  try {
    response = await fetch(oauth.tokenUrl, {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form.toString(),
    });
  } catch (error) {
    throw new CredentialUnavailableError(`the OAuth token request failed (${errorName(error)})`);
  }
  const body = (await response.json().catch(() => undefined)) as
    | { access_token?: unknown; expires_in?: unknown }
    | undefined;
  if (!response.ok || typeof body?.access_token !== 'string' || body.access_token === '') {
    // The answer is not kept: it may echo the client secret.
    throw new CredentialUnavailableError(`the OAuth token endpoint answered ${response.status}`);
  }
  expiresIn(typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600);
  return body.access_token;
};

const errorName = (error: unknown): string => (error instanceof Error ? error.message : 'error');
