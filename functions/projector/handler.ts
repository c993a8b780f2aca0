import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { createJournalRepository } from '../../shared/adapters/composition.ts';
import { parseTaskImage } from '../../shared/adapters/dynamodb/stream-images.ts';
import { failpoint } from '../../shared/app/failpoints.ts';
import { projectRecord } from '../../shared/app/project-record.ts';
import { readRuntimeEnv } from '../../shared/config/runtime-env.ts';

const env = readRuntimeEnv();
const logger = new Logger({ serviceName: 'a2a-projector' });
const processor = new BatchProcessor(EventType.DynamoDBStreams);
const journal = createJournalRepository(env);

/** One stream record = one committed revision; failures bisect and retry from the committed images. */
const projectStreamRecord = async (record: DynamoDBRecord): Promise<void> => {
  failpoint('projector.midBatch');
  const result = await projectRecord(
    journal,
    parseTaskImage(record.dynamodb?.OldImage),
    parseTaskImage(record.dynamodb?.NewImage),
  );
  logger.debug('record projected', { eventId: record.eventID, result });
};

export const handler = async (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> =>
  processPartialResponse(event, projectStreamRecord, processor, { context });
