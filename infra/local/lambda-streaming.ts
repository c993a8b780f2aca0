import { PassThrough, type Writable } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import type { HarnessProxyResult } from './http-harness.ts';

/**
 * The Lambda Node.js runtime's response-streaming API (`awslambda.streamifyResponse`,
 * `awslambda.HttpResponseStream.from`) for the local stack, so the rpc handler that runs in
 * Lambda runs here unchanged. In Lambda the runtime provides the global; here it is installed
 * before the handler module is imported.
 */

const streamingMarker = Symbol.for('a2a-serverless.local.streamify');
const metadataSink = Symbol.for('a2a-serverless.local.metadata');

type StreamingHandler = (event: APIGatewayProxyEvent, stream: Writable, context: Context) => Promise<unknown>;

interface MetadataSink {
  [metadataSink]?: (metadata: Record<string, unknown>) => void;
}

const LocalHttpResponseStream = {
  /** Like the runtime's: records status and headers, then returns the same writable for the body. */
  from(writable: Writable, metadata: Record<string, unknown>): Writable {
    (writable as Writable & MetadataSink)[metadataSink]?.(metadata);
    return writable;
  },
};

/**
 * Installs the streaming API on `globalThis.awslambda` unless a real runtime provided it. Other
 * libraries (the invoke store of Powertools) may have created the object already; it is extended.
 */
export const installLocalAwsLambdaGlobal = (): void => {
  const global = globalThis as { awslambda?: Record<string, unknown> };
  const awslambda = global.awslambda ?? {};
  global.awslambda = awslambda;
  if (typeof awslambda.streamifyResponse === 'function') return;
  awslambda.streamifyResponse = (handler: StreamingHandler) =>
    Object.assign(handler, { [streamingMarker]: true });
  awslambda.HttpResponseStream = LocalHttpResponseStream;
};

export const isStreamingHandler = (handler: unknown): handler is StreamingHandler =>
  typeof handler === 'function' && streamingMarker in handler;

/**
 * Adapts a streaming handler to the harness: the result resolves once status and headers are
 * known, and its body yields every chunk the handler writes, as it writes it.
 */
export const toHarnessHandler =
  (handler: StreamingHandler) =>
  (event: APIGatewayProxyEvent, context: Context): Promise<HarnessProxyResult> =>
    new Promise((resolve, reject) => {
      const body = new PassThrough();
      let answered = false;
      const answer = (metadata: Record<string, unknown>) => {
        if (answered) return;
        answered = true;
        resolve({
          statusCode: typeof metadata.statusCode === 'number' ? metadata.statusCode : 200,
          headers: (metadata.headers ?? {}) as Record<string, string>,
          body: body as AsyncIterable<Uint8Array>,
        });
      };
      (body as PassThrough & MetadataSink)[metadataSink] = answer;
      handler(event, body, context).then(
        () => {
          answer({ statusCode: 200 });
          if (!body.writableEnded) body.end();
        },
        (error: unknown) => {
          if (!answered) reject(error);
          else body.destroy(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
