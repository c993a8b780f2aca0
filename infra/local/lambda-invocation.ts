import { randomUUID } from 'node:crypto';
import type {
  Context,
  DynamoDBBatchResponse,
  DynamoDBStreamEvent,
  SQSBatchResponse,
  SQSEvent,
} from 'aws-lambda';

/**
 * Event-source mapping emulation for the local stack: the same handler modules that run in
 * Lambda are invoked with Lambda-shaped events, and their partial batch responses are honoured
 * the way Lambda honours them (SQS: delete what succeeded, leave the rest to reappear after the
 * visibility timeout and to the queue's redrive policy; DynamoDB streams: retry from the first
 * failed record, bisect on errors, bounded retries, then an on-failure destination).
 */

/** What the pollers and the HTTP harness share: Lambda contexts, invocation observers, the log, batch-response parsing. */

export type LocalLogLevel = 'info' | 'warn' | 'error';
/** Ids, counts and error names only: never record content (docs/security.md). */
export type LocalLog = (level: LocalLogLevel, message: string, data?: Record<string, unknown>) => void;

export const consoleLog: LocalLog = (level, message, data) => {
  const line = data ? `${message} ${JSON.stringify(data)}` : message;
  if (level === 'info') console.log(line);
  else if (level === 'warn') console.warn(line);
  else console.error(line);
};

export interface LambdaContextOptions {
  readonly functionName: string;
  /** The function timeout the context counts down from. */
  readonly timeoutMs?: number;
  readonly memoryMb?: number;
  readonly region?: string;
}

/** A fresh invocation context, as the Lambda runtime hands one to every invocation. */
export const createLambdaContext = ({
  functionName,
  timeoutMs = 60_000,
  memoryMb = 1024,
  region = 'us-east-1',
}: LambdaContextOptions): Context => {
  const deadline = Date.now() + timeoutMs;
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  const deprecated = (): void => {
    throw new Error('context.done/fail/succeed are not supported by async handlers');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `${day}/[$LATEST]${randomUUID().replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: deprecated,
    fail: deprecated,
    succeed: deprecated,
  };
};

// biome-ignore lint/suspicious/noConfusingVoidType: the same result type as aws-lambda's SQSHandler.
export type SqsLambdaHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void>;
export type DynamoDbStreamLambdaHandler = (
  event: DynamoDBStreamEvent,
  context: Context,
  // biome-ignore lint/suspicious/noConfusingVoidType: the same result type as aws-lambda's DynamoDBStreamHandler.
) => Promise<DynamoDBBatchResponse | void>;

/** One handler invocation as the local event sources and the HTTP harness make it. */
export interface InvocationRecord {
  readonly functionName: string;
  /** Wall time from the call until the handler returned (a streamed response: until its last chunk). */
  readonly durationMs: number;
  readonly ok: boolean;
  /** Records in the event; 1 for an HTTP request. */
  readonly records: number;
}

export type InvocationObserver = (record: InvocationRecord) => void;

const invocationObservers = new Set<InvocationObserver>();

/**
 * Instrumentation for the benchmark (bench/run.ts): every invocation made by a poller or the
 * HTTP harness in this process is reported to the observers. None are registered by default.
 * Returns the function that removes the observer.
 */
export const observeInvocations = (observer: InvocationObserver): (() => void) => {
  invocationObservers.add(observer);
  return () => {
    invocationObservers.delete(observer);
  };
};

export const reportInvocation = (record: InvocationRecord): void => {
  for (const observer of invocationObservers) observer(record);
};

/** A poller's invocation as it starts, with its event (SQS records or stream records). */
export interface InvocationStart {
  readonly functionName: string;
  readonly event: { readonly Records: readonly unknown[] };
}

export type InvocationStartObserver = (start: InvocationStart) => void;

const invocationStartObservers = new Set<InvocationStartObserver>();

/**
 * Instrumentation for the per-hop trace (bench/lib/hop-trace.ts): every poller invocation in this
 * process is reported with its event just before the handler is called. None are registered by
 * default. Returns the function that removes the observer.
 */
export const observeInvocationStarts = (observer: InvocationStartObserver): (() => void) => {
  invocationStartObservers.add(observer);
  return () => {
    invocationStartObservers.delete(observer);
  };
};

/** The handler, reporting each call's start and duration to the observers. */
export const observed =
  <E extends { readonly Records: readonly unknown[] }, R>(
    functionName: string,
    handler: (event: E, context: Context) => Promise<R>,
  ) =>
  async (event: E, context: Context): Promise<R> => {
    for (const observer of invocationStartObservers) observer({ functionName, event });
    if (invocationObservers.size === 0) return handler(event, context);
    const began = performance.now();
    let ok = false;
    try {
      const result = await handler(event, context);
      ok = true;
      return result;
    } finally {
      reportInvocation({
        functionName,
        durationMs: performance.now() - began,
        ok,
        records: event.Records.length,
      });
    }
  };

export interface Poller {
  start(): Promise<void>;
  /** Stops polling and waits for in-flight invocations to finish. */
  stop(): Promise<void>;
}

/** Sleeps that `stop()` can cut short. */
export class Sleeper {
  private readonly wakers = new Set<() => void>();

  sleep(ms: number): Promise<void> {
    return new Promise((resolveSleep) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolveSleep();
      };
      const timer = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  wakeAll(): void {
    for (const wake of [...this.wakers]) wake();
  }
}

export const errorName = (error: unknown): string =>
  typeof error === 'object' && error !== null && 'name' in error ? String(error.name) : 'Error';

/** For errors of the SDK and of this harness; a handler's error is logged by name only (its message may quote content). */
export const errorSummary = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

/** Indexes of the reported failures, or 'all' when the response is not a valid partial response. */
export const failedIndexes = (response: unknown, ids: readonly string[]): number[] | 'all' => {
  if (response === undefined || response === null) return [];
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return [];
  if (!Array.isArray(failures)) return 'all';
  const indexes: number[] = [];
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    const index = typeof id === 'string' ? ids.indexOf(id) : -1;
    // Lambda treats a missing or unknown identifier as a failure of the whole batch.
    if (index === -1) return 'all';
    indexes.push(index);
  }
  return indexes;
};
