import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { createJournalRepository } from '../../shared/adapters/composition.ts';
import { parseTaskImage } from '../../shared/adapters/dynamodb/stream-images.ts';
import { createFunctionMetrics, recordProjection, withMetrics } from '../../shared/adapters/metrics.ts';
import { failpoint } from '../../shared/app/failpoints.ts';
import { projectRecord } from '../../shared/app/project-record.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';

const env = readRuntimeEnv();
const logger = new Logger({ serviceName: 'a2a-projector' });
const metrics = createFunctionMetrics(env, 'projector');
const processor = new BatchProcessor(EventType.DynamoDBStreams);
const journal = createJournalRepository(env);

/** One stream record = one committed revision; failures bisect and retry from the committed images. */
const projectStreamRecord = async (record: DynamoDBRecord): Promise<void> => {
  failpoint('projector.midBatch');
  const images = {
    oldImage: parseTaskImage(record.dynamodb?.OldImage),
    newImage: parseTaskImage(record.dynamodb?.NewImage),
  };
  const result = await projectRecord(journal, images.oldImage, images.newImage);
  recordProjection(metrics, record, images, result);
  const task = images.newImage ?? images.oldImage;
  logger.debug('record projected', { taskId: task?.taskId, revision: task?.revision, result });
};

export const handler = withMetrics(
  metrics,
  async (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> =>
    processPartialResponse(event, projectStreamRecord, processor, { context }),
);
