import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { EnqueueFailedError } from '../domain/errors.ts';
import type { RunMessage, RunQueue } from '../domain/ports.ts';
import * as z from '../zod.ts';
import { traceMessageAttributes } from './trace-context.ts';

/**
 * The run queue message: ids only (the run row is the state), and the revision the sender knows
 * projected. Parsed at the executor's edge.
 */
export const runMessageSchema = z.object({
  taskId: z.string().check(z.minLength(1)),
  runId: z.string().check(z.minLength(1)),
  journaled: z.optional(z.int().check(z.gte(1))),
});

export class SqsRunQueue implements RunQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async enqueue(message: RunMessage): Promise<void> {
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: this.queueUrl,
          MessageBody: JSON.stringify({
            taskId: message.taskId,
            runId: message.runId,
            ...(message.journaled !== undefined && { journaled: message.journaled }),
          }),
          MessageAttributes: traceMessageAttributes(message.taskId),
        }),
      );
    } catch (error) {
      throw new EnqueueFailedError('The run could not be queued', { runId: message.runId }, { cause: error });
    }
  }
}
