import { ProviderUnavailableError } from '../../domain/errors.ts';

export interface ExtensionApiKeyOptions {
  readonly providerId: string;
  /** A secret name or ARN, as `providers.<id>.apiKeySecret.secretId`. */
  readonly secretId: string;
  /** The field of a JSON secret that holds the key; absent: the whole SecretString is the key. */
  readonly jsonKey?: string;
  /** The extension's root, `http://localhost:<PARAMETERS_SECRETS_EXTENSION_HTTP_PORT or 2773>`. */
  readonly endpoint: string;
  /** `AWS_SESSION_TOKEN`: the extension answers only requests that carry it. */
  readonly sessionToken: string;
}

/** How long a key read is reused: a rotated key is in use at most this long after the rotation. */
export const API_KEY_TTL_MS = 300_000;

/**
 * An API key kept in Secrets Manager (docs/deployment.md), read through the AWS Parameters and Secrets
 * Lambda Extension: one GET on its localhost port (`/secretsmanager/get?secretId=…` with the
 * `X-Aws-Parameters-Secrets-Token` header), so no Secrets Manager SDK is bundled. Read at first
 * use, then reused for API_KEY_TTL_MS (concurrent callers share one read). Any failure — the extension
 * unreachable, a non-2xx answer (no access, no such secret), no SecretString, a missing JSON field —
 * is a ProviderUnavailableError without a cause: the provider call fails like an unreachable
 * provider (fallback, then FAILED), and nothing of the answer, which may hold the key, is kept.
 * The next call reads again.
 */
export const extensionApiKey = (options: ExtensionApiKeyOptions): (() => Promise<string>) => {
  let cached: { readonly key: Promise<string>; readonly until: number } | undefined;
  return () => {
    if (cached === undefined || cached.until <= Date.now()) {
      const key = readKey(options);
      cached = { key, until: Date.now() + API_KEY_TTL_MS };
      key.catch(() => {
        if (cached?.key === key) cached = undefined;
      });
    }
    return cached.key;
  };
};

const readKey = async (options: ExtensionApiKeyOptions): Promise<string> => {
  let key: unknown;
  try {
    const response = await fetch(
      `${options.endpoint}/secretsmanager/get?secretId=${encodeURIComponent(options.secretId)}`,
      {
        headers: { 'x-aws-parameters-secrets-token': options.sessionToken },
        signal: AbortSignal.timeout(5000),
      },
    );
    if (response.ok) {
      key = ((await response.json()) as { SecretString?: unknown }).SecretString;
      if (options.jsonKey !== undefined) key = JSON.parse(key as string)[options.jsonKey];
    } else await response.body?.cancel();
  } catch {
    key = undefined;
  }
  if (typeof key !== 'string' || key === '') throw new ProviderUnavailableError(options.providerId);
  return key;
};
