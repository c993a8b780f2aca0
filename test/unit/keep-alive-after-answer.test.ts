import { PassThrough } from 'node:stream';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { installLocalAwsLambdaGlobal } from '../../infra/local/lambda-streaming.ts';

/**
 * The rpc's streaming preset ends a streaming invocation only when the work it keeps alive has
 * settled, while the answer's stream has ended already (decision 0091): a blocking send's run that
 * outlasts the cap goes on after its answer, as Lambda runs a handler to its return, not to the end
 * of its response stream. The local runtime global stands in for Lambda's (lambda-streaming.ts).
 */

installLocalAwsLambdaGlobal();
const { keepAliveAfterAnswer, streamingHttpFunction } = await import(
  '../../shared/adapters/middy-presets.ts'
);
const { createLogger } = await import('../../shared/adapters/powertools-logger.ts');

const event = { headers: {}, body: '' } as unknown as APIGatewayProxyEvent;
const context = { awsRequestId: 'r-1', functionName: 'rpc' } as unknown as Context;

describe('keepAliveAfterAnswer (decision 0091)', () => {
  it('ends the answer first and the invocation once the kept work has settled', async () => {
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const order: string[] = [];
    const handler = streamingHttpFunction({ logger: createLogger('a2a-test') }, async () => {
      keepAliveAfterAnswer(held.then(() => void order.push('work settled')));
      return { statusCode: 200, headers: {}, body: 'the answer' };
    }) as unknown as (event: APIGatewayProxyEvent, stream: PassThrough, context: Context) => Promise<void>;
    const stream = new PassThrough();
    let body = '';
    stream.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    const answered = new Promise<void>((resolve) => stream.on('finish', () => resolve()));
    const invocation = handler(event, stream, context).then(() => void order.push('invocation ended'));
    await answered;
    order.push('answer ended');
    expect(body).toBe('the answer');
    // The invocation waits for the kept work; nothing else lets it end.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual(['answer ended']);
    release();
    await invocation;
    expect(order).toEqual(['answer ended', 'work settled', 'invocation ended']);
  });

  it('a kept work that fails still ends the invocation, without an error', async () => {
    const handler = streamingHttpFunction({ logger: createLogger('a2a-test') }, async () => {
      keepAliveAfterAnswer(Promise.reject(new Error('run failed')));
      return { statusCode: 200, headers: {}, body: 'ok' };
    }) as unknown as (event: APIGatewayProxyEvent, stream: PassThrough, context: Context) => Promise<void>;
    const stream = new PassThrough();
    stream.resume();
    await expect(handler(event, stream, context)).resolves.toBeUndefined();
  });
});
