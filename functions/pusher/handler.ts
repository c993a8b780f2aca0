import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import {
  createDeliveryQueue,
  createPushConfigRepository,
  systemClock,
} from '../../shared/adapters/composition.ts';
import { parseEventRecord, processStreamByTask } from '../../shared/adapters/dynamodb/journal-stream.ts';
import { fanOutEvent } from '../../shared/app/deliver-push.ts';
import { failpoint } from '../../shared/app/failpoints.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';

const env = readRuntimeEnv();
const logger = new Logger({ serviceName: 'a2a-pusher' });
const deps = {
  pushConfigs: createPushConfigRepository(env),
  deliveries: createDeliveryQueue(env),
  clock: systemClock,
};

/** One inserted journal event → one delivery message per push config of its task (decision 0009). */
const fanOutRecord = async (record: DynamoDBRecord): Promise<void> => {
  const event = parseEventRecord(record);
  try {
    failpoint('pusher.midBatch');
    const queued = await fanOutEvent(deps, event);
    logger.debug('event fanned out', { taskId: event.taskId, revision: event.revision, queued });
  } catch (error) {
    logger.warn('fan-out failed; the stream retries from this record', {
      taskId: event.taskId,
      revision: event.revision,
      error: error instanceof Error ? error.name : 'unknown',
    });
    throw error;
  }
};

/** In stream order per task; the event-source filter passes only inserted event items (`sk` begins with EVT#). */
export const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> =>
  processStreamByTask(event.Records, fanOutRecord);
