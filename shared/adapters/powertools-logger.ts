import { Logger } from '@aws-lambda-powertools/logger';

/**
 * The functions' logger, with the one sanitiser every log line passes (docs/security.md, "Logs").
 * Powertools logs an error with all its enumerable properties, and an AWS SDK exception carries
 * what the service returned with it: a failed conditional write's `Item` (ALL_OLD: a sealed task
 * row with its owner and context ids), a cancelled transaction's `CancellationReasons[].Item`, the
 * raw `$response`. A logged error keeps only its name, message, stack, the SDK's status and
 * request id, cancellation reason codes, a domain error's public `details`, and its cause,
 * sanitised the same way; a member named like a returned item is dropped wherever it appears.
 */

/** Members of SDK outputs and exceptions that hold stored attributes. */
const storedItemKeys = new Set(['Item', 'Items', 'Attributes', 'UnprocessedItems', 'ItemCollectionMetrics']);

/** Error chains deeper than this are cut (a cause cycle would otherwise never end). */
const maxCauseDepth = 5;

export interface SafeError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
  readonly code?: string;
  readonly httpStatusCode?: number;
  readonly requestId?: string;
  readonly cancellationReasons?: readonly (string | undefined)[];
  readonly details?: Readonly<Record<string, string>>;
  readonly cause?: SafeError | string;
}

const stringOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

const isStringRecord = (value: unknown): value is Record<string, string> =>
  typeof value === 'object' &&
  value !== null &&
  Object.values(value).every((entry) => typeof entry === 'string');

/** What of an error may be logged: names, codes and ids, never what a service returned with it. */
export const safeError = (error: Error, depth = 0): SafeError => {
  const fields = error as Error & {
    readonly code?: unknown;
    readonly $metadata?: { readonly httpStatusCode?: number; readonly requestId?: string };
    readonly CancellationReasons?: readonly { readonly Code?: string }[];
    readonly details?: unknown;
  };
  const { cause } = error;
  return {
    name: error.name,
    message: error.message,
    ...(error.stack !== undefined && { stack: error.stack }),
    ...(stringOf(fields.code) !== undefined && { code: stringOf(fields.code) }),
    ...(fields.$metadata?.httpStatusCode !== undefined && {
      httpStatusCode: fields.$metadata.httpStatusCode,
    }),
    ...(fields.$metadata?.requestId !== undefined && { requestId: fields.$metadata.requestId }),
    ...(Array.isArray(fields.CancellationReasons) && {
      cancellationReasons: fields.CancellationReasons.map((reason) => stringOf(reason?.Code)),
    }),
    ...(isStringRecord(fields.details) && { details: fields.details }),
    ...(cause instanceof Error && depth < maxCauseDepth && { cause: safeError(cause, depth + 1) }),
    ...(cause !== undefined && !(cause instanceof Error) && { cause: typeof cause }),
  };
};

/** The logger's JSON replacer: errors become `SafeError`s, returned items vanish. */
export const logReplacer = (key: string, value: unknown): unknown => {
  if (storedItemKeys.has(key)) return undefined;
  return value instanceof Error ? safeError(value) : value;
};

export const createLogger = (serviceName: string): Logger =>
  new Logger({ serviceName, jsonReplacerFn: logReplacer });
