import type { Readable } from 'node:stream';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayRequestAuthorizerEvent,
  Context,
  DynamoDBBatchResponse,
  DynamoDBStreamEvent,
  ScheduledEvent,
  SQSBatchResponse,
  SQSEvent,
} from 'aws-lambda';
import type { FunctionMetrics } from './metrics.ts';
import type { FunctionLogger } from './powertools-logger.ts';

/**
 * One middy preset per trigger type (decision 0058). Every preset puts the Lambda context into
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
 * blocking-wait deadline), and an early answer would leave that work running behind it.
 */
const withPreset = <E, R>(tools: FunctionTools, handler: Handler<E, R>, streamifyResponse = false) =>
  middy<E, R>(handler, { timeoutEarlyInMillis: 0, streamifyResponse })
    .use(injectLambdaContext(tools.logger))
    .use(tools.metrics ? [logMetrics(tools.metrics)] : []);

/** SQS with partial batch responses (executor, deliverer): the batch strategy reports the failed records. */
export const sqsBatchFunction = (tools: FunctionTools, handler: Handler<SQSEvent, SQSBatchResponse>) =>
  withPreset(tools, handler);

/** DynamoDB streams with partial batch responses (projector, pusher). */
export const dynamoDbStreamFunction = (
  tools: FunctionTools,
  handler: Handler<DynamoDBStreamEvent, DynamoDBBatchResponse>,
) => withPreset(tools, handler);

/** The response a streaming function returns: status and headers first, then the body as it is read. */
export interface StreamingResponse {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string | Readable;
}

/**
 * API Gateway REST with Lambda response streaming (rpc): middy pipes the returned body into the
 * runtime's response stream after writing status and headers (`streamifyResponse`).
 */
export const streamingHttpFunction = (
  tools: FunctionTools,
  handler: Handler<APIGatewayProxyEvent, StreamingResponse>,
) => withPreset(tools, handler, true);

/** The API Gateway REQUEST authorizer: logging context only (no metrics of its own). */
export const authorizerFunction = (
  tools: Pick<FunctionTools, 'logger'>,
  handler: Handler<APIGatewayRequestAuthorizerEvent, APIGatewayAuthorizerResult>,
) => withPreset(tools, handler);

/** An EventBridge schedule (reaper). The event is optional: the local stack calls it without one. */
export const scheduledFunction = <R>(tools: FunctionTools, handler: Handler<ScheduledEvent | undefined, R>) =>
  withPreset(tools, handler);
