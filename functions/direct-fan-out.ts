import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsDeliveryQueue } from '../shared/adapters/sqs-delivery-queue.ts';
import { systemClock } from '../shared/adapters/system.ts';
import type { WriteThroughOptions } from '../shared/app/journal/write-through.ts';
import { fanOutAfterProjection } from '../shared/app/push/fan-out-events.ts';
import type { RuntimeEnv } from '../shared/config/runtime-env.ts';
import type { PushConfigRepository } from '../shared/domain/ports.ts';

/**
 * The write-through option of a writer that queues the webhook deliveries of each revision it
 * projected itself, without the journal stream's pusher: rpc, executor and
 * reaper. The pusher stays the backstop; the deliverer keeps each webhook's order. Its own module,
 * not compose.ts: only these three bundles carry the SQS delivery queue.
 */
export const directFanOutOf = (
  env: Pick<RuntimeEnv, 'deliveryQueueUrl'>,
  adapters: {
    readonly pushConfigs: PushConfigRepository;
    readonly sqs: SQSClient;
    readonly logger: { warn(message: string, fields: Record<string, unknown>): void };
  },
): Pick<WriteThroughOptions, 'afterProjected'> =>
  // Without the variable (tests that wire no delivery queue) the pusher queues every revision.
  env.deliveryQueueUrl
    ? {
        afterProjected: fanOutAfterProjection({
          pushConfigs: adapters.pushConfigs,
          deliveries: new SqsDeliveryQueue(adapters.sqs, env.deliveryQueueUrl),
          clock: systemClock,
          logger: adapters.logger,
        }),
      }
    : {};
