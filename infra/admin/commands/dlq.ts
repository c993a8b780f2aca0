import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord } from 'aws-lambda';
import { DynamoDbBackstopJournal } from '../../../shared/adapters/dynamodb/dynamodb-backstop-journal.ts';
import { DynamoDbPushConfigRepository } from '../../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import {
  isJournalEventInsert,
  isTaskItemRecord,
  parseEventRecord,
  processStreamByTask,
  processStreamTaskGroups,
} from '../../../shared/adapters/dynamodb/journal-stream.ts';
import { batchImagesOf } from '../../../shared/adapters/dynamodb/stream-images.ts';
import { DynamoDbStreamRangeReader } from '../../../shared/adapters/dynamodb/stream-records.ts';
import { SqsDeadLetters } from '../../../shared/adapters/sqs-dead-letters.ts';
import { SqsDeliveryQueue } from '../../../shared/adapters/sqs-delivery-queue.ts';
import { systemClock } from '../../../shared/adapters/system.ts';
import { batchJournalState, projectRecord } from '../../../shared/app/journal/project-record.ts';
import {
  type ConsumedRange,
  type ReplayReport,
  replayDeadLetters,
} from '../../../shared/app/operations/replay-dead-letters.ts';
import { type FanOutDeps, fanOutEvents } from '../../../shared/app/push/fan-out-events.ts';
import { table } from '../../text-table.ts';
import {
  type AdminIo,
  clientConfig,
  documentClient,
  type Options,
  sqsClientOf,
  tableNameOf,
  UsageError,
} from '../admin-context.ts';

/** The `dlq replay` command: replay the dead letters of the projector or the pusher. */

const dlqConsumers = ['projector', 'pusher'] as const;
type DlqConsumer = (typeof dlqConsumers)[number];

/**
 * A queue's URL: given as a URL, or as the ARN the stack outputs name (GetQueueUrl), or found by
 * the name an installation of `--prefix` gives it.
 */
const queueUrlOf = async (
  sqs: SQSClient,
  given: string | undefined,
  queueName: string | undefined,
  what: string,
): Promise<string> => {
  const arn = given === undefined ? undefined : /^arn:[^:]+:sqs:[^:]*:(\d*):(.+)$/.exec(given);
  if (given !== undefined && !arn) return given;
  const name = arn ? arn[2] : queueName;
  if (name === undefined) throw new UsageError(`No ${what}: pass its URL or ARN, or --prefix`);
  const { QueueUrl } = await sqs.send(
    new GetQueueUrlCommand({ QueueName: name, ...(arn?.[1] ? { QueueOwnerAWSAccountId: arn[1] } : {}) }),
  );
  if (!QueueUrl) throw new Error(`GetQueueUrl answered no URL for ${name}`);
  return QueueUrl;
};

/** The projector's use case per task-row record, behind its event-source filter (`sk = TASK`). */
const projectorReplay =
  (journal: DynamoDbBackstopJournal) =>
  async (records: readonly DynamoDBRecord[]): Promise<ConsumedRange> => {
    const taskRecords = records.filter(isTaskItemRecord);
    // Replayed records are long committed: no grace for a writer's journal write.
    const images = batchImagesOf(taskRecords);
    const stateOf = await batchJournalState(journal, images.all);
    const { batchItemFailures } = await processStreamByTask(taskRecords, () => async (record) => {
      const { oldImage, newImage } = images.of(record);
      await projectRecord(journal, oldImage, newImage, stateOf);
    });
    return { handled: taskRecords.length, failed: batchItemFailures.length };
  };

/** The pusher's fan-out per task, behind its event-source filter (inserted `EVT#` items). */
const pusherReplay =
  (deps: FanOutDeps) =>
  async (records: readonly DynamoDBRecord[]): Promise<ConsumedRange> => {
    const events = records.filter(isJournalEventInsert);
    const { batchItemFailures } = await processStreamTaskGroups(events, async (group) => {
      await fanOutEvents(deps, group.map(parseEventRecord));
    });
    return { handled: events.length, failed: batchItemFailures.length };
  };

const formatReplay = (consumer: DlqConsumer, report: ReplayReport): string[] => {
  const { outcomes } = report;
  const given = consumer === 'projector' ? 'projected' : 'fanned out';
  const summary = report.dryRun
    ? `Dry run of the ${consumer}'s dead letters: ${report.messages} message(s), ${outcomes.replayable} replayable (${report.records.read} stream record(s) read); nothing replayed, nothing deleted.`
    : `Replayed the ${consumer}'s dead letters: ${report.messages} message(s), ${outcomes.replayed} replayed and deleted, ${report.kept} kept; ${report.records.read} stream record(s) read, ${report.records.handled} ${given} again.`;
  const kept = [
    outcomes.failed ? `${outcomes.failed} failed again (fix the cause, then replay)` : '',
    outcomes.trimmed
      ? `${outcomes.trimmed} no longer in the stream (older than 24 h: see docs/operations.md)`
      : '',
    outcomes.unreadable ? `${outcomes.unreadable} not an on-failure record` : '',
  ].filter(Boolean);
  return [
    summary,
    ...(kept.length > 0 ? [`Kept: ${kept.join('; ')}.`] : []),
    ...(report.letters.length > 0
      ? table(
          ['MESSAGE', 'OUTCOME', 'SHARD', 'SEQUENCES', 'RECORDS', 'HANDLED', 'ERROR'],
          report.letters.map((letter) => [
            letter.messageId,
            letter.outcome,
            letter.shardId ?? '-',
            letter.startSequenceNumber ? `${letter.startSequenceNumber}…${letter.endSequenceNumber}` : '-',
            letter.records === undefined ? '-' : String(letter.records),
            letter.handled === undefined ? '-' : String(letter.handled),
            letter.error ?? '',
          ]),
        )
      : []),
  ];
};

export const dlqReplayCommand = async (
  extra: string | undefined,
  options: Options,
  io: AdminIo,
): Promise<number> => {
  if (extra !== undefined) throw new UsageError('dlq replay takes no arguments');
  const consumer = options.queue as DlqConsumer;
  if (!dlqConsumers.includes(consumer)) throw new UsageError('dlq replay needs --queue projector|pusher');
  const { env } = io;
  const client = documentClient(options, env);
  const sqs = sqsClientOf(options, env);
  const streams = new DynamoDBStreamsClient(
    clientConfig(
      options.streamsEndpoint ??
        env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS ??
        options.endpoint ??
        env.AWS_ENDPOINT_URL_DYNAMODB ??
        env.AWS_ENDPOINT_URL,
      options,
      env,
    ),
  );
  try {
    const dlqId = consumer === 'projector' ? 'ProjectorDlq' : 'PusherDlq';
    const dlqUrl = await queueUrlOf(
      sqs,
      options.dlq ?? env[`${consumer.toUpperCase()}_DLQ_URL`],
      options.prefix && `${options.prefix}-${dlqId}`,
      `${consumer} dead-letter queue (--dlq)`,
    );
    const consume =
      consumer === 'projector'
        ? projectorReplay(new DynamoDbBackstopJournal(client, tableNameOf(options, env, 'Journal')))
        : pusherReplay({
            pushConfigs: new DynamoDbPushConfigRepository(client, tableNameOf(options, env, 'State')),
            deliveries: new SqsDeliveryQueue(
              sqs,
              await queueUrlOf(
                sqs,
                options.deliveryQueue ?? env.DELIVERY_QUEUE_URL,
                options.prefix && `${options.prefix}-DeliveryQueue.fifo`,
                'delivery queue (--delivery-queue)',
              ),
            ),
            clock: systemClock,
          });
    const report = await replayDeadLetters(
      {
        deadLetters: new SqsDeadLetters(sqs, dlqUrl),
        stream: new DynamoDbStreamRangeReader(streams, await streams.config.region()),
        consume,
      },
      { dryRun: options.dryRun },
    );
    if (options.json) io.out(JSON.stringify({ queue: consumer, ...report }, null, 2));
    else for (const line of formatReplay(consumer, report)) io.out(line);
    return report.dryRun || report.kept === 0 ? 0 : 1;
  } finally {
    client.destroy();
    sqs.destroy();
    streams.destroy();
  }
};
