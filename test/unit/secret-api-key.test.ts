import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createProviderFor } from '../../functions/executor/providers.ts';
import { OpenAiProvider } from '../../shared/adapters/providers/openai-provider.ts';
import { API_KEY_TTL_MS, extensionApiKey } from '../../shared/adapters/providers/secret-api-key.ts';
import { parseConfig } from '../../shared/config/config.ts';
import type { RuntimeEnv } from '../../shared/config/runtime-env.ts';
import { ProviderUnavailableError } from '../../shared/domain/errors.ts';
import {
  type FakeModelServer,
  openAiText,
  type ReceivedRequest,
  type ScriptedReply,
  startFakeModelServer,
} from '../support/fake-model-servers.ts';

/**
 * OpenAI-compatible API keys from Secrets Manager (decision 0026), read through the AWS
 * Parameters and Secrets Lambda Extension. No emulator provides that extension, so a small local
 * HTTP server plays it here, speaking its documented API: `GET /secretsmanager/get?secretId=…`,
 * answered only with the `X-Aws-Parameters-Secrets-Token` header equal to the function's
 * AWS_SESSION_TOKEN, with the GetSecretValue JSON (`ARN`, `Name`, `SecretString`, `VersionId`,
 * `VersionStages`). The OpenAI side is the fake chat-completions server of the provider tests.
 */

const sessionToken = 'session-token-of-the-function-role';
const marker = 'sk-live-MARKER-7f3a9c';
const secretArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/openai+key-AbCdEf';

/** The extension's answer for one stored SecretString (or none: a binary secret). */
type StoredSecret = { readonly string?: string; readonly status?: number };

let extension: FakeModelServer;
let secrets: Record<string, StoredSecret>;

const extensionScript = (request: ReceivedRequest): ScriptedReply => {
  const url = new URL(request.path, 'http://localhost');
  if (url.pathname !== '/secretsmanager/get') return { status: 404, body: { message: 'not found' } };
  if (request.headers['x-aws-parameters-secrets-token'] !== sessionToken) {
    return { status: 400, body: { message: 'missing or wrong X-Aws-Parameters-Secrets-Token' } };
  }
  const secretId = url.searchParams.get('secretId') ?? '';
  const stored = secrets[secretId];
  if (stored === undefined) {
    return { status: 400, body: { __type: 'ResourceNotFoundException', message: `${secretId} not found` } };
  }
  if (stored.status !== undefined) {
    return { status: stored.status, body: { __type: 'AccessDeniedException', message: `denied ${marker}` } };
  }
  return {
    body: {
      ARN: secretArn,
      Name: secretId,
      VersionId: 'v-1',
      VersionStages: ['AWSCURRENT'],
      CreatedDate: '2026-11-30T12:00:00Z',
      ...(stored.string !== undefined ? { SecretString: stored.string } : { SecretBinary: 'AAEC' }),
    },
  };
};

const keyFor = (secretId: string, jsonKey?: string, endpoint = extension.url) =>
  extensionApiKey({
    providerId: 'gpt',
    secretId,
    endpoint,
    sessionToken,
    ...(jsonKey !== undefined ? { jsonKey } : {}),
  });

beforeAll(async () => {
  extension = await startFakeModelServer(extensionScript);
});
afterAll(async () => {
  await extension?.stop();
});
afterEach(() => {
  vi.useRealTimers();
});

const readsSoFar = () => extension.requests.length;

describe('extensionApiKey: reading the key', () => {
  it('GETs the secret by name or ARN with the session token header, and returns its SecretString', async () => {
    secrets = { 'openai-key': { string: marker }, [secretArn]: { string: `${marker}-arn` } };
    const before = readsSoFar();
    expect(await keyFor('openai-key')()).toBe(marker);
    expect(await keyFor(secretArn)()).toBe(`${marker}-arn`);
    const [byName, byArn] = extension.requests.slice(before);
    expect(byName?.path).toBe('/secretsmanager/get?secretId=openai-key');
    expect(byName?.headers['x-aws-parameters-secrets-token']).toBe(sessionToken);
    // The ARN travels URL-encoded (its `:`, `/` and `+` intact at the extension).
    expect(new URL(byArn?.path ?? '', 'http://x').searchParams.get('secretId')).toBe(secretArn);
  });

  it('picks one field of a JSON secret with jsonKey', async () => {
    secrets = { 'openai-json': { string: JSON.stringify({ apiKey: marker, org: 'org-1' }) } };
    expect(await keyFor('openai-json', 'apiKey')()).toBe(marker);
  });

  it('reads once per 5 minutes: concurrent first uses share one read; a rotated key is picked up after the TTL', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-11-30T13:00:00Z'));
    secrets = { rotating: { string: `${marker}-old` } };
    const key = keyFor('rotating');
    const before = readsSoFar();
    expect(await Promise.all([key(), key(), key()])).toEqual(Array(3).fill(`${marker}-old`));
    expect(readsSoFar() - before).toBe(1);
    secrets = { rotating: { string: `${marker}-new` } };
    vi.setSystemTime(new Date(Date.now() + API_KEY_TTL_MS - 1_000));
    expect(await key()).toBe(`${marker}-old`);
    expect(readsSoFar() - before).toBe(1);
    vi.setSystemTime(new Date(Date.now() + 2_000));
    expect(await key()).toBe(`${marker}-new`);
    expect(readsSoFar() - before).toBe(2);
    expect(API_KEY_TTL_MS).toBe(300_000);
  });
});

describe('extensionApiKey: failures are ProviderUnavailableError, and nothing of the secret leaks', () => {
  const closedPort = async (): Promise<string> => {
    const gone = await startFakeModelServer(() => ({}));
    await gone.stop();
    return gone.url;
  };

  interface Failure {
    readonly stored: Record<string, StoredSecret>;
    readonly secretId: string;
    readonly jsonKey?: string;
    readonly sessionToken?: string;
    readonly unreachable?: true;
  }
  const failures: Array<[string, Failure]> = [
    ['access denied (403)', { stored: { denied: { status: 403 } }, secretId: 'denied' }],
    ['no such secret', { stored: {}, secretId: 'missing' }],
    ['a wrong session token', { stored: { k: { string: marker } }, secretId: 'k', sessionToken: 'wrong' }],
    ['a binary secret (no SecretString)', { stored: { binary: {} }, secretId: 'binary' }],
    // JSON.parse's own message would quote the secret: it must not survive.
    [
      'jsonKey on a secret that is not JSON',
      { stored: { plain: { string: marker } }, secretId: 'plain', jsonKey: 'apiKey' },
    ],
    [
      'jsonKey naming no field',
      {
        stored: { json: { string: JSON.stringify({ other: marker }) } },
        secretId: 'json',
        jsonKey: 'apiKey',
      },
    ],
    ['an empty key', { stored: { empty: { string: '' } }, secretId: 'empty' }],
    ['the extension unreachable', { stored: { k: { string: marker } }, secretId: 'k', unreachable: true }],
  ];

  it.each(failures)('%s', async (_case, failure) => {
    secrets = failure.stored;
    const key = extensionApiKey({
      providerId: 'gpt',
      secretId: failure.secretId,
      endpoint: failure.unreachable ? await closedPort() : extension.url,
      sessionToken: failure.sessionToken ?? sessionToken,
      ...(failure.jsonKey !== undefined ? { jsonKey: failure.jsonKey } : {}),
    });
    const error = await key().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as ProviderUnavailableError).providerId).toBe('gpt');
    expect((error as Error).cause).toBeUndefined();
    for (const rendering of [
      String(error),
      (error as Error).stack,
      JSON.stringify(error),
      inspect(error, { depth: 9 }),
    ]) {
      expect(rendering).not.toContain(marker);
    }
  });

  it('a failed read is not cached: the next call reads again', async () => {
    secrets = { flaky: { status: 503 } };
    const key = keyFor('flaky');
    await expect(key()).rejects.toBeInstanceOf(ProviderUnavailableError);
    secrets = { flaky: { string: marker } };
    expect(await key()).toBe(marker);
  });
});

describe('the OpenAI provider with a key from the extension', () => {
  let openai: FakeModelServer;
  beforeAll(async () => {
    openai = await startFakeModelServer(() => openAiText('hello from the model'));
  });
  afterAll(async () => {
    await openai?.stop();
  });

  const request = { system: '', transcript: [{ role: 'user' as const, text: 'hi' }], tools: [] };

  it('sends the key as a bearer token; a key it cannot read fails the call before any model request', async () => {
    secrets = { 'openai-key': { string: marker } };
    const provider = new OpenAiProvider({
      providerId: 'gpt',
      baseUrl: `${openai.url}/v1`,
      model: 'gpt-test',
      apiKey: keyFor('openai-key'),
    });
    expect((await provider.complete(request)).text).toBe('hello from the model');
    expect(openai.requests.at(-1)?.headers.authorization).toBe(`Bearer ${marker}`);

    const modelCalls = openai.requests.length;
    secrets = { denied: { status: 403 } };
    const failing = new OpenAiProvider({
      providerId: 'gpt',
      baseUrl: `${openai.url}/v1`,
      model: 'gpt-test',
      apiKey: keyFor('denied'),
    });
    await expect(failing.complete(request)).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(openai.requests.length).toBe(modelCalls);
  });

  it('composition: a deployment reads apiKeySecret through the extension port; local mode uses apiKeyEnv', async () => {
    secrets = { 'prod/openai': { string: JSON.stringify({ apiKey: marker }) } };
    const config = parseConfig({
      providers: {
        o: {
          type: 'openai',
          baseUrl: `${openai.url}/v1`,
          model: 'gpt-test',
          apiKeyEnv: 'TEST_LOCAL_OPENAI_KEY',
          apiKeySecret: { secretId: 'prod/openai', jsonKey: 'apiKey' },
        },
      },
      profiles: { default: { name: 'x', description: 'x', providers: ['o'] } },
    });
    const run = {
      runId: 'r',
      taskId: 't',
      contextId: 'c',
      instructions: '',
      history: [{ messageId: 'm', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] }],
    };
    const port = new URL(extension.url).port;
    const before = readsSoFar();
    const deployed = createProviderFor({ config, localMode: false } as RuntimeEnv, {
      PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: port,
      AWS_SESSION_TOKEN: sessionToken,
    });
    expect((await deployed('o').run(run)).outcome).toMatchObject({ kind: 'completed' });
    expect(openai.requests.at(-1)?.headers.authorization).toBe(`Bearer ${marker}`);
    expect(readsSoFar() - before).toBe(1);

    const local = createProviderFor({ config, localMode: true } as RuntimeEnv, {
      TEST_LOCAL_OPENAI_KEY: 'sk-local-from-env',
      PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: port,
      AWS_SESSION_TOKEN: sessionToken,
    });
    expect((await local('o').run(run)).outcome).toMatchObject({ kind: 'completed' });
    expect(openai.requests.at(-1)?.headers.authorization).toBe('Bearer sk-local-from-env');
    expect(readsSoFar() - before).toBe(1);
  });
});
