import { DynamoDbAuditTrail } from '../../shared/adapters/dynamodb/dynamodb-audit-trail.ts';
import { DynamoDbJournalWriter } from '../../shared/adapters/dynamodb/dynamodb-journal-writer.ts';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbRunLeases } from '../../shared/adapters/dynamodb/dynamodb-run-leases.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { scheduledFunction } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createDocumentClient, createSqsClient } from '../../shared/adapters/sdk-clients.ts';
import { SqsRunQueue } from '../../shared/adapters/sqs-run-queue.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import { inTaskTrace } from '../../shared/adapters/trace-context.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import { type ReapReport, reapExpiredRuns } from '../../shared/app/runs/reap-runs.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';
import { createSealer } from '../compose.ts';
import { directFanOutOf } from '../direct-fan-out.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-reaper');
const metrics = createFunctionMetrics(env, 'reaper');
const client = createDocumentClient();
const sqs = createSqsClient();
const sealer = createSealer(env, client);
const tasks = new DynamoDbTaskRepository(client, env.stateTableName);
const deps = {
  tasks,
  // A reaped run's revision is projected into the journal by the reaper itself, and its webhook
  // deliveries queued without the journal stream's pusher (docs/architecture.md "The journal write").
  writeThrough: new WriteThrough(tasks, new DynamoDbJournalWriter(client, env.journalTableName), {
    logger,
    ...directFanOutOf(env, {
      pushConfigs: new DynamoDbPushConfigRepository(client, env.stateTableName),
      sqs,
      logger,
    }),
  }),
  leases: new DynamoDbRunLeases(client, env.stateTableName),
  // A never-started run is queued again instead of failed, a bounded number of times.
  requeue: new SqsRunQueue(sqs, env.runQueueUrl),
  ...(env.runStartDeadlineMs ? { runStartDeadlineMs: env.runStartDeadlineMs } : {}),
  // A claimed run whose claims wrote no start marker is queued again too (I-ONCE); its
  // rows carry ids and a reason only, so this sealer never seals audit content.
  starts: new DynamoDbAuditTrail(client, env.auditTableName, sealer),
  codec: new TaskContentCodec(sealer),
  clock: systemClock,
  config: env.config,
  logger,
  // Each expired run in its task's trace: the task id and its creator's traceparent (docs/operations.md,
  // "Follow one task through the logs").
  inTaskTrace,
};

/**
 * Every minute (EventBridge schedule): runs whose lease expired are settled FAILED, never run
 * again — unless they provably never called their provider (never claimed, or no start marker):
 * those are queued again, a bounded number of times (docs/reliability.md, "Faults, behaviour, proof").
 */
export const handler = scheduledFunction({ logger, metrics }, async (): Promise<ReapReport> => {
  const report = await reapExpiredRuns(deps);
  if (report.found > 0) logger.info('expired leases handled', { ...report });
  if (report.reaped > 0) metrics.add('RunsReaped', report.reaped);
  if (report.requeued > 0) metrics.add('RunsRequeued', report.requeued);
  return report;
});
