import { AsyncLocalStorage } from 'node:async_hooks';
import { Readable } from 'node:stream';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayRequestAuthorizerEvent,
  Context,
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
  ScheduledEvent,
  SQSBatchResponse,
  SQSEvent,
  SQSRecord,
} from 'aws-lambda';
import type { FunctionMetrics } from './metrics.ts';
import { type FunctionLogger, sanitizedError } from './powertools-logger.ts';
import {
  type TraceContext,
  traceOfSqsRecord,
  traceOfStreamRecord,
  validTraceparent,
  withTrace,
} from './trace-context.ts';

/**
 * One middy preset per trigger type. Every preset puts the Lambda context into
 * each log line of the invocation (Powertools `injectLambdaContext`) and, where the function has
 * metrics, flushes them once when the invocation returns or throws (Powertools `logMetrics`).
 * A handler module wires its use case and picks its preset; nothing else wraps a handler.
 */

export interface FunctionTools {
  readonly logger: FunctionLogger;
  readonly metrics?: FunctionMetrics;
}

type Handler<E, R> = (event: E, context: Context) => Promise<R>;

/**
 * The common stack. middy's early timeout is off: the use cases bound their own work (run lease,
 * blocking-wait deadline), and an early answer would leave that work running behind it. An error
 * that leaves the handler is sanitised first (`sanitizeErrors`).
 */
const withPreset = <E, R>(tools: FunctionTools, handler: Handler<E, R>, streamifyResponse = false) =>
  middy<E, R>(handler, {
    timeoutEarlyInMillis: 0,
    streamifyResponse,
    // middy calls it once the response stream has ended: the invocation lasts until it returns.
    ...(streamifyResponse && { requestEnd: awaitKeptWork }),
  })
    .use(sanitizeErrors)
    .use(injectLambdaContext(tools.logger))
    .use(tools.metrics ? [logMetrics(tools.metrics)] : []);

/**
 * The Lambda runtime prints an error that leaves the handler with its enumerable properties
 * (docs/security.md, control 5): what leaves is `sanitizedError`'s copy. First in the stack, so its
 * `onError` runs last, after Powertools' own.
 */
const sanitizeErrors: middy.MiddlewareObj = {
  onError: async (request) => {
    if (request.error) request.error = sanitizedError(request.error);
  },
};

/**
 * SQS with partial batch responses (executor, deliverer): the batch strategy reports the failed
 * records; `inSqsTrace` runs each record in its task's trace (trace-context.ts).
 */
export const sqsBatchFunction = (tools: FunctionTools, handler: Handler<SQSEvent, SQSBatchResponse>) =>
  withPreset(tools, handler);

/** `handle`, run in the trace of its first argument (a record, a task's records, a request). */
const traced =
  <A, Rest extends unknown[], R>(
    traceOf: (first: A) => TraceContext,
    handle: (first: A, ...rest: Rest) => Promise<R>,
  ) =>
  (first: A, ...rest: Rest): Promise<R> =>
    withTrace(traceOf(first), () => handle(first, ...rest));

/** A queue record's handler, run in the trace its message attributes carry. */
export const inSqsTrace = <Rest extends unknown[], R>(
  handle: (record: SQSRecord, ...rest: Rest) => Promise<R>,
) => traced(traceOfSqsRecord, handle);

/**
 * DynamoDB streams with partial batch responses (projector, pusher); `inStreamTrace` and
 * `inStreamGroupTrace` run a record, or one task's records, in that task's trace.
 */
export const dynamoDbStreamFunction = (
  tools: FunctionTools,
  handler: Handler<DynamoDBStreamEvent, DynamoDBBatchResponse>,
) => withPreset(tools, handler);

export const inStreamTrace = (handle: (record: DynamoDBRecord) => Promise<void>) =>
  traced(traceOfStreamRecord, handle);

export const inStreamGroupTrace = (handle: (records: readonly DynamoDBRecord[]) => Promise<void>) =>
  traced((records: readonly DynamoDBRecord[]) => (records[0] ? traceOfStreamRecord(records[0]) : {}), handle);

/** Work a streaming invocation keeps running after its answer, per invocation. */
const keptWork = new AsyncLocalStorage<Set<Promise<unknown>>>();
const keptByInvocation = new WeakMap<Context, Set<Promise<unknown>>>();

/**
 * Keeps the current streaming invocation alive after its answer until `work` ends: the rpc's
 * run of a blocking send that outlasts the blocking cap. Lambda ends a streaming
 * invocation when its handler returns, not when its response stream ends, so the answer reaches
 * the client while the run goes on. Outside a streaming invocation (tests) the work just runs.
 */
export const keepAliveAfterAnswer = (work: Promise<unknown>): void => {
  keptWork.getStore()?.add(work.catch(() => undefined));
};

const awaitKeptWork = async (request: { readonly context: Context }): Promise<void> => {
  const kept = keptByInvocation.get(request.context);
  if (kept !== undefined) await Promise.all(kept);
};

/** The response a streaming function returns: status and headers first, then the body as it is read. */
export interface StreamingResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string | Readable;
}

const requestTrace = (event: APIGatewayProxyEvent): TraceContext => {
  const header = Object.entries(event.headers ?? {}).find(([name]) => name.toLowerCase() === 'traceparent');
  const traceparent = validTraceparent(header?.[1]);
  return traceparent === undefined ? {} : { traceparent };
};

/**
 * A text body as one UTF-8 buffer. middy (6.4 and 7.9 alike) writes a string body of 16,384 or
 * more UTF-16 code units in slices of 16,384 units, and each slice is encoded on its own: a
 * character outside the BMP (an emoji, 𝔘) whose surrogate pair straddles a slice boundary
 * reached the client as two U+FFFD — a changed answer. Bytes are never split.
 */
const asBytes = (response: StreamingResponse): StreamingResponse =>
  typeof response.body === 'string'
    ? { ...response, body: Readable.from([Buffer.from(response.body, 'utf8')]) }
    : response;

/**
 * API Gateway REST with Lambda response streaming (rpc): middy pipes the returned body into the
 * runtime's response stream after writing status and headers (`streamifyResponse`). The
 * request runs in the caller's `traceparent`, when it sent a valid one: its log lines and the run
 * messages it queues carry it.
 */
export const streamingHttpFunction = (
  tools: FunctionTools,
  handler: Handler<APIGatewayProxyEvent, StreamingResponse>,
) =>
  withPreset(
    tools,
    traced(requestTrace, async (event: APIGatewayProxyEvent, context: Context) => {
      const kept = new Set<Promise<unknown>>();
      keptByInvocation.set(context, kept);
      return keptWork.run(kept, async () => asBytes(await handler(event, context)));
    }),
    true,
  );

/** The API Gateway REQUEST authorizer: logging context only (no metrics of its own). */
export const authorizerFunction = (
  tools: Pick<FunctionTools, 'logger'>,
  handler: Handler<APIGatewayRequestAuthorizerEvent, APIGatewayAuthorizerResult>,
) => withPreset(tools, handler);

/** An EventBridge schedule (reaper). The event is optional: the local stack calls it without one. */
export const scheduledFunction = <R>(tools: FunctionTools, handler: Handler<ScheduledEvent | undefined, R>) =>
  withPreset(tools, handler);
