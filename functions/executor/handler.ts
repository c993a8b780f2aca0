import type { SQSRecord } from 'aws-lambda';
import {
  createAuditTrail,
  createContentCodec,
  createProviderFor,
  createRunLeases,
  createTaskRepository,
  createToolRegistry,
  systemClock,
  webhookPolicyOf,
} from '../../shared/adapters/composition.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { sqsBatchFunction } from '../../shared/adapters/middy-presets.ts';
import { processPartialBatch } from '../../shared/adapters/partial-batch.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { runMessageSchema } from '../../shared/adapters/sqs-run-queue.ts';
import { executeRun } from '../../shared/app/execute-run.ts';
import { failpoint } from '../../shared/app/failpoints.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-executor');
const metrics = createFunctionMetrics(env, 'executor');
const deps = {
  tasks: createTaskRepository(env),
  codec: createContentCodec(env),
  clock: systemClock,
  config: env.config,
  providerFor: createProviderFor(env),
  leases: createRunLeases(env),
  ...(env.runLeaseMs ? { leaseMs: env.runLeaseMs } : {}),
  tools: createToolRegistry(webhookPolicyOf(env)),
  audit: createAuditTrail(env),
  logger,
  metrics,
};

/** One queue message = one run; a thrown record is reported as a partial failure and redelivered. */
const runRecord = async (record: SQSRecord): Promise<void> => {
  const message = runMessageSchema.parse(JSON.parse(record.body));
  const result = await executeRun(deps, message);
  failpoint('executor.beforeDelete');
  logger.info('run handled', { taskId: message.taskId, runId: message.runId, result });
};

export const handler = sqsBatchFunction({ logger, metrics }, async (event) =>
  processPartialBatch(event.Records, runRecord, (record) => record.messageId),
);
