import { randomUUID } from 'node:crypto';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { PushConfigCodec } from '../app/push-configs.ts';
import { TaskContentCodec } from '../app/task-content.ts';
import { ToolLoopAgent } from '../app/tool-loop-agent.ts';
import type { RuntimeEnv } from '../config/runtime-env.ts';
import type { AgentProvider, Clock, IdGenerator } from '../domain/ports.ts';
import { type WebhookPolicy, webhookPolicyFor } from '../domain/webhook-address.ts';
import { DynamoDbAuditTrail } from './dynamodb/dynamodb-audit-trail.ts';
import { DynamoDbJournalRepository } from './dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbPushConfigRepository } from './dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbRunLeases } from './dynamodb/dynamodb-run-leases.ts';
import { DynamoDbSavedProfiles } from './dynamodb/dynamodb-saved-profiles.ts';
import { DynamoDbTaskRepository } from './dynamodb/dynamodb-task-repository.ts';
import { KmsSealer } from './kms-sealer.ts';
import { BedrockProvider } from './providers/bedrock-provider.ts';
import { OpenAiProvider } from './providers/openai-provider.ts';
import { ScriptedProvider } from './providers/scripted-provider.ts';
import { extensionApiKey } from './providers/secret-api-key.ts';
import { SqsDeliveryQueue } from './sqs-delivery-queue.ts';
import { SqsRunQueue } from './sqs-run-queue.ts';
import { createGuardedWebhookSender } from './ssrf-guard.ts';

/**
 * Builds the adapters a function needs from its validated environment, once per cold start.
 * Clients find their endpoints through the SDK's own AWS_ENDPOINT_URL_* variables, so the same
 * code runs against AWS, LocalStack and the embedded emulators.
 */

export const systemClock: Clock = { now: () => new Date() };
export const uuidGenerator: IdGenerator = { newId: () => randomUUID() };

/** The SDK clients this module creates. */
export type SdkClient = DynamoDBClient | SQSClient | KMSClient;
export type SdkClientHook = (client: SdkClient) => void;

const sdkClientHooks = new Set<SdkClientHook>();

/**
 * Instrumentation seam for the local stack's benchmark (bench/run.ts): a hook sees every SDK
 * client created here from now on (handler modules create theirs at import, so register it
 * before importing them) and may add middleware to it. Nothing registers one in Lambda, where
 * this is an empty loop. Returns the function that removes the hook.
 */
export const addSdkClientHook = (hook: SdkClientHook): (() => void) => {
  sdkClientHooks.add(hook);
  return () => {
    sdkClientHooks.delete(hook);
  };
};

const hooked = <T extends SdkClient>(client: T): T => {
  for (const hook of sdkClientHooks) hook(client);
  return client;
};

export const createDocumentClient = (): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(hooked(new DynamoDBClient({})), {
    marshallOptions: { removeUndefinedValues: true },
  });

export const createTaskRepository = (env: RuntimeEnv, client = createDocumentClient()) =>
  new DynamoDbTaskRepository(client, env.stateTableName);

/** The tools profiles may enable (decision 0011). */
export { createToolRegistry } from './tools/static-tool-registry.ts';

export const createRunLeases = (env: RuntimeEnv, client = createDocumentClient()) =>
  new DynamoDbRunLeases(client, env.stateTableName);

export const createJournalRepository = (env: RuntimeEnv, client = createDocumentClient()) =>
  new DynamoDbJournalRepository(client, env.journalTableName);

export const createRunQueue = (env: RuntimeEnv) =>
  new SqsRunQueue(hooked(new SQSClient({})), env.runQueueUrl);

/** The profiles saved by the admin command, read only (decision 0024). */
export const createSavedProfiles = (env: RuntimeEnv, client = createDocumentClient()) =>
  new DynamoDbSavedProfiles(client, env.stateTableName);

/** Push configs and webhook delivery (decision 0009). */
export const createPushConfigRepository = (env: RuntimeEnv, client = createDocumentClient()) =>
  new DynamoDbPushConfigRepository(client, env.stateTableName);

export const createPushConfigCodec = (env: RuntimeEnv) =>
  new PushConfigCodec(
    new KmsSealer({ kms: hooked(new KMSClient({})), keyId: env.kmsKeyId, installation: env.installation }),
  );

/** Local mode relaxes https and (unless `webhooks.allowLoopback: false`) loopback; deployments never. */
export const webhookPolicyOf = (env: RuntimeEnv): WebhookPolicy =>
  webhookPolicyFor(env.localMode, env.config.webhooks.allowLoopback);

export const createDeliveryQueue = (env: RuntimeEnv) => {
  if (!env.deliveryQueueUrl) throw new Error('Missing environment variable DELIVERY_QUEUE_URL');
  return new SqsDeliveryQueue(hooked(new SQSClient({})), env.deliveryQueueUrl);
};

export const createWebhookSender = (env: RuntimeEnv) =>
  createGuardedWebhookSender({ policy: webhookPolicyOf(env), timeoutMs: 10_000 });

export const createContentCodec = (env: RuntimeEnv) =>
  new TaskContentCodec(
    new KmsSealer({ kms: hooked(new KMSClient({})), keyId: env.kmsKeyId, installation: env.installation }),
  );

/** The audit table (decision 0010); content above `metadata` is sealed with the installation's key. */
export const createAuditTrail = (env: RuntimeEnv, client = createDocumentClient()) =>
  new DynamoDbAuditTrail(
    client,
    env.auditTableName,
    new KmsSealer({ kms: new KMSClient({}), keyId: env.kmsKeyId, installation: env.installation }),
  );

/**
 * The provider of each configured id. Bedrock and OpenAI-compatible models run under the tool
 * loop (decision 0011); their SDK client makes one attempt, since the fallback is the retry.
 * An OpenAI key comes, in a deployment, from the secret `apiKeySecret` names, through the
 * Parameters and Secrets Lambda Extension (decision 0026); in local mode, and without a secret,
 * from the variable `apiKeyEnv` names, whose absence fails the cold start with its name.
 */
export const createProviderFor = (
  env: RuntimeEnv,
  processEnv: NodeJS.ProcessEnv = process.env,
): ((providerId: string) => AgentProvider) => {
  const providers = new Map<string, AgentProvider>();
  for (const [providerId, provider] of Object.entries(env.config.providers)) {
    if (provider.type === 'scripted')
      providers.set(providerId, new ScriptedProvider(providerId, provider.behavior));
    if (provider.type === 'bedrock') {
      const client = new BedrockRuntimeClient({
        ...(provider.region ? { region: provider.region } : {}),
        maxAttempts: 1,
      });
      providers.set(
        providerId,
        new ToolLoopAgent(
          new BedrockProvider({ providerId, model: provider.model, client, timeoutMs: provider.timeoutMs }),
        ),
      );
    }
    if (provider.type === 'openai') {
      const secret = env.localMode ? undefined : provider.apiKeySecret;
      const apiKey = secret
        ? extensionApiKey({
            providerId,
            ...secret,
            endpoint: `http://localhost:${processEnv.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT ?? 2773}`,
            sessionToken: processEnv.AWS_SESSION_TOKEN ?? '',
          })
        : provider.apiKeyEnv && processEnv[provider.apiKeyEnv];
      if (provider.apiKeyEnv && !apiKey) {
        throw new Error(
          `Missing environment variable ${provider.apiKeyEnv} (API key of provider ${providerId})`,
        );
      }
      providers.set(
        providerId,
        new ToolLoopAgent(
          new OpenAiProvider({
            providerId,
            baseUrl: provider.baseUrl,
            model: provider.model,
            timeoutMs: provider.timeoutMs,
            ...(apiKey ? { apiKey } : {}),
          }),
        ),
      );
    }
  }
  return (providerId) => {
    const provider = providers.get(providerId);
    if (provider === undefined) throw new Error(`Provider ${providerId} has no adapter in this build`);
    return provider;
  };
};
