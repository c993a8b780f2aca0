import type { DynamoDBRecord } from 'aws-lambda';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { parseEventRecord, processStreamTaskGroups } from '../../shared/adapters/dynamodb/journal-stream.ts';
import { dynamoDbStreamFunction, inStreamGroupTrace } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createDocumentClient, createSqsClient } from '../../shared/adapters/sdk-clients.ts';
import { SqsDeliveryQueue } from '../../shared/adapters/sqs-delivery-queue.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import { failpoint } from '../../shared/app/operations/failpoints.ts';
import { fanOutEvents } from '../../shared/app/push/fan-out-events.ts';
import { deliveryQueueUrlOf, readRuntimeEnv } from '../../shared/config/runtime-env.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-pusher');
const deps = {
  pushConfigs: new DynamoDbPushConfigRepository(createDocumentClient(), env.stateTableName),
  deliveries: new SqsDeliveryQueue(createSqsClient(), deliveryQueueUrlOf(env)),
  clock: systemClock,
};

/**
 * A task's inserted journal events of one batch → one delivery message per (event, push config),
 * in revision order, from one read of the task's configs (docs/architecture.md, "Push notifications").
 */
const fanOutTask = async (records: readonly DynamoDBRecord[]): Promise<void> => {
  const events = records.map(parseEventRecord);
  try {
    for (const _ of events) failpoint('pusher.midBatch');
    const queued = await fanOutEvents(deps, events);
    logger.debug('events fanned out', {
      taskId: events[0]?.taskId,
      revisions: events.map((event) => event.revision),
      queued,
    });
  } catch (error) {
    logger.warn("fan-out failed; the stream retries from the task's first record", {
      taskId: events[0]?.taskId,
      revision: events[0]?.revision,
      error: error instanceof Error ? error.name : 'unknown',
    });
    throw error;
  }
};

/** In stream order per task; the event-source filter passes only inserted event items (`sk` begins with EVT#). */
export const handler = dynamoDbStreamFunction({ logger }, async (event) =>
  processStreamTaskGroups(event.Records, inStreamGroupTrace(fanOutTask)),
);
