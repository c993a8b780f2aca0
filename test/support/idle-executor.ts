import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';

/**
 * A local stack's executor that never starts a run: it hands every message back (it reappears
 * after the visibility timeout), so the run stays QUEUED and its task SUBMITTED until the reaper
 * settles it at its start deadline.
 */
export const executorThatNeverRuns = async (event: SQSEvent): Promise<SQSBatchResponse> => ({
  batchItemFailures: event.Records.map((record) => ({ itemIdentifier: record.messageId })),
});
