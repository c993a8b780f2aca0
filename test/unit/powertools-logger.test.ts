import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { withTrace } from '../../shared/adapters/trace-context.ts';
import type { Logger } from '../../shared/domain/logger.ts';
import { type CapturedOutput, captureOutput } from '../support/captured-output.ts';

let output: CapturedOutput;

beforeEach(() => {
  output = captureOutput();
});

afterEach(() => {
  output.restore();
});

const lines = () => output.jsonLines();

describe('FunctionLogger', () => {
  it('is the Logger port: JSON lines with the service, level, message and fields', () => {
    const logger: Logger = createLogger('a2a-executor', { logLevel: 'DEBUG' });
    logger.debug('one', { taskId: 't-1' });
    logger.info('two');
    logger.warn('three', { count: 2 });
    logger.error('four', { error: 'TimeoutError' });
    expect(lines()).toMatchObject([
      { level: 'DEBUG', message: 'one', service: 'a2a-executor', taskId: 't-1' },
      { level: 'INFO', message: 'two', service: 'a2a-executor' },
      { level: 'WARN', message: 'three', count: 2 },
      { level: 'ERROR', message: 'four', error: 'TimeoutError' },
    ]);
  });

  it('leaves out what the log group says: the function ARN, name, memory size and a zero sampling rate', () => {
    const logger = createLogger('a2a-rpc');
    logger.addContext({
      functionName: 'a2a-rpc',
      functionVersion: '$LATEST',
      invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:a2a-rpc',
      memoryLimitInMB: '256',
      awsRequestId: 'req-1',
      callbackWaitsForEmptyEventLoop: true,
      logGroupName: '/aws/lambda/a2a-rpc',
      logStreamName: 'stream',
      getRemainingTimeInMillis: () => 1_000,
      done: () => {},
      fail: () => {},
      succeed: () => {},
    });
    logger.info('handled', { correlation_id: 't-1' });
    const [line] = lines();
    expect(line).toMatchObject({
      level: 'INFO',
      message: 'handled',
      service: 'a2a-rpc',
      function_request_id: 'req-1',
      correlation_id: 't-1',
    });
    for (const key of ['function_arn', 'function_name', 'function_memory_size', 'sampling_rate'])
      expect(line).not.toHaveProperty(key);
  });

  it('adds the fields of the record in hand to every line, each concurrent record its own', async () => {
    const logger = createLogger('a2a-deliverer');
    const handle = (taskId: string, turns: number) =>
      withTrace({ correlation_id: taskId }, async () => {
        for (let turn = 0; turn < turns; turn++) {
          await new Promise((resolve) => setImmediate(resolve));
          logger.info('step', { turn });
        }
      });
    await Promise.all([handle('t-a', 3), handle('t-b', 2)]);
    logger.info('after the batch');
    const written = lines();
    expect(written.filter((line) => line.correlation_id === 't-a').map((line) => line.turn)).toEqual([
      0, 1, 2,
    ]);
    expect(written.filter((line) => line.correlation_id === 't-b').map((line) => line.turn)).toEqual([0, 1]);
    expect(written.at(-1)).toMatchObject({ message: 'after the batch' });
    expect(written.at(-1)).not.toHaveProperty('correlation_id');
  });

  it('keeps the record fields when a line is given an error instead of fields', async () => {
    const logger = createLogger('a2a-rpc');
    await withTrace({ correlation_id: 't-c' }, async () => {
      logger.error('failed', new Error('boom'));
    });
    expect(lines()).toMatchObject([{ message: 'failed', correlation_id: 't-c', error: { message: 'boom' } }]);
  });
});
