import type { DynamoDBRecord } from 'aws-lambda';
import { DynamoDbBackstopJournal } from '../../shared/adapters/dynamodb/dynamodb-backstop-journal.ts';
import { processStreamByTask } from '../../shared/adapters/dynamodb/journal-stream.ts';
import { batchImagesOf, type TaskImages } from '../../shared/adapters/dynamodb/stream-images.ts';
import { createFunctionMetrics, recordProjection } from '../../shared/adapters/metrics.ts';
import { dynamoDbStreamFunction, inStreamTrace } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createDocumentClient } from '../../shared/adapters/sdk-clients.ts';
import { systemClock, systemSleep } from '../../shared/adapters/system.ts';
import {
  batchJournalState,
  type JournalStateOf,
  projectRecord,
} from '../../shared/app/journal/project-record.ts';
import { failpoint } from '../../shared/app/operations/failpoints.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';

const env = readRuntimeEnv();
const logger = createLogger('a2a-projector');
const metrics = createFunctionMetrics(env, 'projector');
const journal = new DynamoDbBackstopJournal(createDocumentClient(), env.journalTableName);
const backstopTiming = { clock: systemClock, sleep: systemSleep };

/** One stream record = one committed revision; a failure is retried from the committed images. */
const projectStreamRecord =
  (stateOf: JournalStateOf, imagesOf: (record: DynamoDBRecord) => TaskImages) =>
  async (record: DynamoDBRecord): Promise<void> => {
    failpoint('projector.midBatch');
    const images = imagesOf(record);
    const result = await projectRecord(journal, images.oldImage, images.newImage, stateOf);
    recordProjection(metrics, record, images, result);
    const task = images.newImage ?? images.oldImage;
    logger.debug('record projected', { taskId: task?.taskId, revision: task?.revision, result });
  };

/**
 * A task's records in stream order, stopping at its first failure (I-ORDER): a later revision
 * projected before an earlier one that failed would reach the journal stream first, and the
 * webhooks fed from it would get the task's revisions out of order. One backstop read for the
 * whole batch, after the write-through's grace (docs/how-a-task-flows.md §3).
 */
export const handler = dynamoDbStreamFunction({ logger, metrics }, async (event) => {
  const images = batchImagesOf(event.Records);
  const stateOf = await batchJournalState(journal, images.all, backstopTiming);
  return processStreamByTask(event.Records, () => inStreamTrace(projectStreamRecord(stateOf, images.of)));
});
