import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLambdaContext } from '../../infra/local/lambda-invocation.ts';
import { scheduledFunction, sqsBatchFunction } from '../../shared/adapters/middy-presets.ts';
import { FullBatchFailureError, processPartialBatch } from '../../shared/adapters/partial-batch.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { invokeErrorJson, invokeErrorText } from '../support/lambda-runtime-output.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';

/**
 * Nothing stored leaks through a thrown error (docs/security.md, control 5): the Lambda runtime
 * prints an error that leaves a handler with its enumerable properties, and a failed conditional
 * write with `ReturnValuesOnConditionCheckFailure: ALL_OLD` carries the stored item. DynamoDB
 * Local produces the real exception; each preset's handler throws it; the runtime's own
 * formatting (test/support/lambda-runtime-output.ts) shows what its log would hold.
 */

const marker = `ctx-stored-${randomUUID()}`;
let env: TestResources;
let conditionalFailure: ConditionalCheckFailedException;

beforeAll(async () => {
  env = await createTestResources('handler-errors');
  const item = { pk: `TASK#${randomUUID()}`, sk: 'TASK', contextId: marker, revision: 1 };
  const put = (condition?: string) =>
    env.clients.doc.send(
      new PutCommand({
        TableName: env.resources.tables.State.name,
        Item: item,
        ...(condition && {
          ConditionExpression: condition,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      }),
    );
  await put();
  conditionalFailure = await put('attribute_not_exists(pk)').then(
    () => {
      throw new Error('the conditional write succeeded');
    },
    (error: unknown) => error as ConditionalCheckFailedException,
  );
});
afterAll(() => env?.destroy());

const context = () => createLambdaContext({ functionName: 'errors-test' });

/** What `invoke` rejects with. */
const thrownBy = async (invoke: () => Promise<unknown>): Promise<Error> => {
  try {
    await invoke();
  } catch (error) {
    return error as Error;
  }
  throw new Error('the handler did not throw');
};

const outputs = (error: Error) => [invokeErrorText(error), invokeErrorJson(error)];

describe('an error leaving a handler, as the Lambda runtime prints it', () => {
  it('would print the stored item without the presets (the control)', () => {
    expect(conditionalFailure).toBeInstanceOf(ConditionalCheckFailedException);
    for (const output of outputs(conditionalFailure)) expect(output).toContain(marker);
  });

  it('prints a conditional failure thrown out of a handler by its class, name, message and request id only', async () => {
    const handler = scheduledFunction({ logger: createLogger('a2a-errors-test') }, async () => {
      throw conditionalFailure;
    });
    const error = await thrownBy(() => handler(undefined, context()));
    // Its class still holds for the caller (the runtime's errorType).
    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    for (const output of outputs(error)) {
      expect(output).not.toContain(marker);
      expect(output).not.toContain('"Item"');
      expect(output).toContain('ConditionalCheckFailedException');
      expect(output).toContain(conditionalFailure.message);
    }
    expect(JSON.parse(invokeErrorText(error).split('\t')[1] ?? '')).toMatchObject({
      errorType: 'ConditionalCheckFailedException',
      httpStatusCode: 400,
      requestId: expect.any(String),
    });
  });

  it('prints a whole batch failure with each record error sanitised (recordErrors)', async () => {
    const record = (messageId: string) => ({ messageId, body: '{}' }) as SQSRecord;
    const handler = sqsBatchFunction({ logger: createLogger('a2a-errors-test') }, async (event: SQSEvent) =>
      processPartialBatch(
        event.Records,
        async () => {
          throw conditionalFailure;
        },
        (one) => one.messageId,
      ),
    );
    const error = await thrownBy(() => handler({ Records: [record('a'), record('b')] }, context()));
    expect(error).toBeInstanceOf(FullBatchFailureError);
    for (const output of outputs(error)) {
      expect(output).not.toContain(marker);
      expect(output).not.toContain('"Item"');
    }
    expect((error as FullBatchFailureError).recordErrors).toEqual([
      expect.objectContaining({ name: 'ConditionalCheckFailedException' }),
      expect.objectContaining({ name: 'ConditionalCheckFailedException' }),
    ]);
    // Sanitised where it is made, not only when it leaves: a logger or a caller sees the same.
    expect(JSON.stringify(new FullBatchFailureError([conditionalFailure]))).not.toContain(marker);
  });
});
