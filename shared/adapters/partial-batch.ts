import { sanitizedError } from './powertools-logger.ts';

/**
 * Lambda's ReportBatchItemFailures for an unordered batch: every record is handled
 * in parallel; the ones that throw are reported by their identifier and redelivered. When every
 * record of a non-empty batch fails the whole invocation throws instead, so the event source
 * applies its retry policy to the batch (Powertools' `processPartialResponse` semantics, which
 * this replaces).
 */
export class FullBatchFailureError extends Error {
  /** Each record's error as the logs may show it: a record's error can carry a stored item. */
  readonly recordErrors: readonly Error[];
  constructor(recordErrors: readonly unknown[]) {
    super('All records failed processing. See individual errors below.');
    this.name = 'FullBatchFailureError';
    this.recordErrors = recordErrors.map(sanitizedError);
  }
}

export const processPartialBatch = async <R>(
  records: readonly R[],
  handle: (record: R) => Promise<void>,
  idOf: (record: R) => string | undefined,
): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> => {
  const errors: unknown[] = [];
  const failed: R[] = [];
  await Promise.all(
    records.map(async (record) => {
      try {
        await handle(record);
      } catch (error) {
        errors.push(error);
        failed.push(record);
      }
    }),
  );
  if (failed.length > 0 && failed.length === records.length) throw new FullBatchFailureError(errors);
  return {
    batchItemFailures: failed.flatMap((record) => {
      const itemIdentifier = idOf(record);
      return itemIdentifier ? [{ itemIdentifier }] : [];
    }),
  };
};
