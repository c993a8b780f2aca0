import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ChunkedContentSealer } from '../shared/adapters/dynamodb/dynamodb-chunked-sealer.ts';
import { KmsSealer } from '../shared/adapters/kms-sealer.ts';
import { createKmsClient } from '../shared/adapters/sdk-clients.ts';
import type { RuntimeEnv } from '../shared/config/runtime-env.ts';
import type { Sealer } from '../shared/domain/ports.ts';
import { type WebhookPolicy, webhookPolicyFor } from '../shared/domain/webhook-address.ts';

/**
 * The wiring several composition roots (functions/<name>/handler.ts) share. Each root builds
 * its adapters itself, once per cold start, from one document client and one sealer, so a
 * function has one connection pool and one data-key cache and bundles only the adapters it uses.
 */

/**
 * The function's one sealer: task content, push configs and audit entries share its data-key
 * cache. It opens content kept in chunk items of the state table as well (docs/data-model.md, "Large
 * content").
 */
export const createSealer = (env: RuntimeEnv, documents: DynamoDBDocumentClient): Sealer =>
  new ChunkedContentSealer(
    new KmsSealer({ kms: createKmsClient(), keyId: env.kmsKeyId, installation: env.installation }),
    documents,
    env.stateTableName,
  );

/** Local mode relaxes https and (unless `webhooks.allowLoopback: false`) loopback; deployments never. */
export const webhookPolicyOf = (env: Pick<RuntimeEnv, 'config' | 'localMode'>): WebhookPolicy =>
  webhookPolicyFor(env.localMode, env.config.webhooks.allowLoopback);
