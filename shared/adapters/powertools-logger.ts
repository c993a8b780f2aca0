import { LogFormatter, LogItem, Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type {
  LogAttributes,
  LogItemExtraInput,
  LogItemMessage,
  LogLevel,
  UnformattedAttributes,
} from '@aws-lambda-powertools/logger/types';
import type { LogFields, Logger } from '../domain/logger.ts';
import { currentTrace } from './trace-context.ts';

/**
 * The functions' logger, the adapter of the `Logger` port (shared/domain/logger.ts), with the one
 * sanitiser every log line passes (docs/security.md, "Logs"). Powertools logs an error with all its enumerable properties, and an AWS SDK exception carries
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
  /** A whole batch's failure: each record's error, sanitised (shared/adapters/partial-batch.ts). */
  readonly recordErrors?: readonly (SafeError | string)[];
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
    readonly recordErrors?: unknown;
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
    ...(Array.isArray(fields.recordErrors) && {
      recordErrors: fields.recordErrors.map((recordError: unknown) =>
        recordError instanceof Error ? safeError(recordError, depth + 1) : typeof recordError,
      ),
    }),
  };
};

/**
 * An error fit to leave a handler (docs/security.md, control 5). The Lambda runtime prints a thrown
 * error as "Invoke Error" with all its enumerable properties, past the logger: a failed conditional
 * write's `Item` would reach the log. This one keeps the error's class (`instanceof` and the
 * runtime's errorType hold), name, message and stack, and of the rest only what `safeError` keeps.
 */
export const sanitizedError = (thrown: unknown): Error => {
  if (!(thrown instanceof Error)) return new Error(`A ${typeof thrown} was thrown`);
  const { name, message, stack, ...kept } = safeError(thrown);
  const clean = Object.create(Object.getPrototypeOf(thrown)) as Error;
  for (const [key, value] of Object.entries({ name, message, stack })) {
    Object.defineProperty(clean, key, { value, writable: true, configurable: true, enumerable: false });
  }
  return Object.assign(clean, kept);
};

/** The logger's JSON replacer: errors become `SafeError`s, returned items vanish. */
export const logReplacer = (key: string, value: unknown): unknown => {
  if (storedItemKeys.has(key)) return undefined;
  return value instanceof Error ? safeError(value) : value;
};

/**
 * Powertools' line without what the log group already says: its standard keys minus
 * `function_arn`, `function_memory_size`, `function_name` (one log group per function) and a
 * zero `sampling_rate` — about 170 B of every line, a third of a task's log bytes
 * (docs/operations.md lists the keys; the cost is in bench/results/latest.md).
 */
class HouseLogFormatter extends LogFormatter {
  formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const context = attributes.lambdaContext;
    return new LogItem({
      attributes: {
        level: attributes.logLevel,
        message: attributes.message,
        timestamp: this.formatTimestamp(attributes.timestamp),
        service: attributes.serviceName,
        cold_start: context?.coldStart,
        function_request_id: context?.awsRequestId,
        ...(attributes.sampleRateValue ? { sampling_rate: attributes.sampleRateValue } : {}),
        xray_trace_id: attributes.xRayTraceId,
      },
    }).addAttributes(additional);
  }
}

/** Powertools' extra inputs, or the port's one optional fields object. */
type Extra = LogItemExtraInput | [fields?: LogFields];

const scoped = (extra: Extra): LogItemExtraInput => {
  const trace = currentTrace();
  const fields: LogFields | undefined = trace && { ...trace };
  const [first] = extra;
  if (typeof first === 'string' || first instanceof Error) {
    return fields ? [{ ...fields, error: first }] : [first];
  }
  const given = (extra as Array<LogFields | undefined>).filter((entry) => entry !== undefined);
  return fields ? [fields, ...given] : given;
};

/**
 * A function's `Logger`: Powertools Logger (JSON lines with the Lambda context that the preset's
 * `injectLambdaContext` adds) with the sanitiser, plus the trace of the task in hand
 * (trace-context.ts: `correlation_id`, `traceparent`).
 */
export class FunctionLogger extends PowertoolsLogger implements Logger {
  /** The level defaults to POWERTOOLS_LOG_LEVEL (or the Lambda application log level), else INFO. */
  constructor(serviceName: string, options: { readonly logLevel?: LogLevel } = {}) {
    super({ serviceName, jsonReplacerFn: logReplacer, logFormatter: new HouseLogFormatter(), ...options });
  }

  override debug(input: LogItemMessage, ...extra: Extra): void {
    super.debug(input, ...scoped(extra));
  }

  override info(input: LogItemMessage, ...extra: Extra): void {
    super.info(input, ...scoped(extra));
  }

  override warn(input: LogItemMessage, ...extra: Extra): void {
    super.warn(input, ...scoped(extra));
  }

  override error(input: LogItemMessage, ...extra: Extra): void {
    super.error(input, ...scoped(extra));
  }
}

export const createLogger = (
  serviceName: string,
  options: { readonly logLevel?: LogLevel } = {},
): FunctionLogger => new FunctionLogger(serviceName, options);
