import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import {
  AttributeType,
  Billing,
  Capacity,
  type GlobalSecondaryIndexPropsV2,
  type ITableV2,
  ProjectionType,
  StreamViewType,
  TableEncryptionV2,
  TableV2,
} from 'aws-cdk-lib/aws-dynamodb';
import { type IKey, Key } from 'aws-cdk-lib/aws-kms';
import {
  DeduplicationScope,
  FifoThroughputLimit,
  type IQueue,
  Queue,
  QueueEncryption,
} from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  auditTable,
  type IndexDefinition,
  journalTable,
  type KeyDefinition,
  type QueueDefinition,
  queueDefinitions,
  stateTable,
  type TableDefinition,
} from '../shared/adapters/dynamodb/tables.ts';
import { type DynamodbCapacityConfig, defaultDynamodbCapacity } from '../shared/config/config.ts';

/** What the service stack needs from the stateful one: object references, never names. */
export interface StatefulResources {
  readonly stateTable: ITableV2;
  readonly journalTable: ITableV2;
  readonly auditTable: ITableV2;
  /** Customer-managed key that seals content (docs/data-model.md "Sealing"); tables use AWS-managed keys. */
  readonly contentKey: IKey;
  readonly runQueue: IQueue;
  readonly runDlq: IQueue;
  readonly projectorDlq: IQueue;
  /** FIFO webhook deliveries (decision 0009), grouped by (task, config). */
  readonly deliveryQueue: IQueue;
  readonly deliveryDlq: IQueue;
  /** The pusher's on-failure destination (journal stream batches it could not fan out). */
  readonly pusherDlq: IQueue;
  /** Every dead-letter queue, by its declared id: each gets an alarm (decision 0020). */
  readonly deadLetterQueues: Readonly<Record<string, IQueue>>;
}

export interface StatefulStackProps extends StackProps {
  /** Names the installation: key alias `alias/<prefix>-content`. */
  readonly prefix: string;
  /** DynamoDB deletion protection on the three tables. @default true */
  readonly deletionProtection?: boolean;
  /** On-demand or provisioned capacity with auto scaling (decision 0048). @default on demand */
  readonly capacity?: DynamodbCapacityConfig;
}

/** Dead-letter queues keep what failed for the longest time SQS allows. */
const DLQ_RETENTION = Duration.days(14);

const attributeTypes: Record<KeyDefinition['type'], AttributeType> = {
  S: AttributeType.STRING,
  N: AttributeType.NUMBER,
  B: AttributeType.BINARY,
};

const streamViewTypes: Record<NonNullable<TableDefinition['stream']>, StreamViewType> = {
  NEW_AND_OLD_IMAGES: StreamViewType.NEW_AND_OLD_IMAGES,
  NEW_IMAGE: StreamViewType.NEW_IMAGE,
};

const projectionTypes: Record<IndexDefinition['projection'], ProjectionType> = {
  ALL: ProjectionType.ALL,
  KEYS_ONLY: ProjectionType.KEYS_ONLY,
};

const toAttribute = (key: KeyDefinition) => ({ name: key.name, type: attributeTypes[key.type] });

/** Auto-scaled read and write capacity, tracking the target utilisation (provisioned billing only). */
interface Throughput {
  readonly readCapacity: Capacity;
  readonly writeCapacity: Capacity;
}

/**
 * A table's capacity (and each of its indexes', the same) from the configuration: undefined for
 * on-demand billing. TableV2 declares the auto scaling on its AWS::DynamoDB::GlobalTable (target
 * tracking on the table's and each index's consumed units, as `Table.autoScaleReadCapacity` and
 * `autoScaleWriteCapacity` do with scalable targets of their own), so nothing else is created.
 */
export const throughputOf = (
  capacity: DynamodbCapacityConfig,
  tableId: TableDefinition['id'],
): Throughput | undefined => {
  if (capacity.billing !== 'provisioned') return undefined;
  const override = capacity.tables[tableId];
  const autoscaled = (range: { min: number; max: number }) =>
    Capacity.autoscaled({
      minCapacity: range.min,
      maxCapacity: range.max,
      targetUtilizationPercent: capacity.targetUtilizationPercent,
    });
  return {
    readCapacity: autoscaled(override?.read ?? capacity.read),
    writeCapacity: autoscaled(override?.write ?? capacity.write),
  };
};

const toIndex = (index: IndexDefinition, throughput?: Throughput): GlobalSecondaryIndexPropsV2 => ({
  indexName: index.indexName,
  partitionKey: toAttribute(index.partitionKey),
  sortKey: toAttribute(index.sortKey),
  projectionType: projectionTypes[index.projection],
  ...(throughput ?? {}),
});

/**
 * Tables, the content key and the queues: everything that holds data. Deployed on its own and
 * retained, so the service stack can be replaced or destroyed freely. Every resource is built
 * from the declarations in `shared/adapters/dynamodb/tables.ts`, the same ones the local stack
 * uses. Construct ids are the declarations' ids: changing one replaces a table or queue.
 */
export class StatefulStack extends Stack implements StatefulResources {
  readonly stateTable: TableV2;
  readonly journalTable: TableV2;
  readonly auditTable: TableV2;
  readonly contentKey: Key;
  readonly runQueue: Queue;
  readonly runDlq: Queue;
  readonly projectorDlq: Queue;
  readonly deliveryQueue: Queue;
  readonly deliveryDlq: Queue;
  readonly pusherDlq: Queue;
  readonly deadLetterQueues: Readonly<Record<string, Queue>>;
  /** Every queue of `queueDefinitions`, by its declared id. */
  readonly queues: Readonly<Record<QueueDefinition['id'], Queue>>;

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, props);
    const deletionProtection = props.deletionProtection ?? true;

    this.contentKey = new Key(this, 'ContentKey', {
      description: `${props.prefix}: envelope key that seals task content`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
      alias: `alias/${props.prefix}-content`,
    });

    const capacity = props.capacity ?? defaultDynamodbCapacity;
    const createTable = (definition: TableDefinition): TableV2 => {
      const throughput = throughputOf(capacity, definition.id);
      return new TableV2(this, definition.id, {
        partitionKey: toAttribute(definition.partitionKey),
        sortKey: toAttribute(definition.sortKey),
        // On demand (PAY_PER_REQUEST, TableV2's default) unless the configuration provisions it.
        ...(throughput ? { billing: Billing.provisioned(throughput) } : {}),
        ...(definition.stream ? { dynamoStream: streamViewTypes[definition.stream] } : {}),
        timeToLiveAttribute: definition.timeToLiveAttribute,
        globalSecondaryIndexes: definition.globalSecondaryIndexes.map((index) => toIndex(index, throughput)),
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        // Content is already sealed with the content key; an AWS-managed table key keeps
        // stream readers (the projector) free of any permission on the content key.
        encryption: TableEncryptionV2.awsManagedKey(),
        deletionProtection,
        removalPolicy: RemovalPolicy.RETAIN,
      });
    };

    this.stateTable = createTable(stateTable);
    this.journalTable = createTable(journalTable);
    this.auditTable = createTable(auditTable);

    const queues = new Map<QueueDefinition['id'], Queue>();
    const createQueue = (definition: QueueDefinition): Queue => {
      const existing = queues.get(definition.id);
      if (existing) return existing;
      const deadLetterDefinition = definition.deadLetter
        ? queueDefinitions.find((candidate) => candidate.id === definition.deadLetter?.queueId)
        : undefined;
      if (definition.deadLetter && !deadLetterDefinition) {
        throw new Error(
          `Queue ${definition.id}: dead-letter queue ${definition.deadLetter.queueId} is not declared`,
        );
      }
      const deadLetterQueue =
        definition.deadLetter && deadLetterDefinition
          ? {
              queue: createQueue(deadLetterDefinition),
              maxReceiveCount: definition.deadLetter.maxReceiveCount,
            }
          : undefined;
      const queue = new Queue(this, definition.id, {
        fifo: definition.fifo ? true : undefined,
        // High-throughput FIFO: limits apply per message group (one per task and webhook).
        ...(definition.fifo
          ? {
              deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
              fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
            }
          : {}),
        visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        // Messages in flight and dead letters outlive a stack deletion, like the tables.
        removalPolicy: RemovalPolicy.RETAIN,
        ...(isDeadLetterQueue(definition) ? { retentionPeriod: DLQ_RETENTION } : {}),
        ...(deadLetterQueue ? { deadLetterQueue } : {}),
      });
      if (isDeadLetterQueue(definition) && !isRedriveTarget(definition)) {
        Validations.of(queue).acknowledge({
          id: 'AwsSolutions-SQS3',
          reason:
            'A dead-letter queue itself: the on-failure destination of a stream event source mapping (projector, pusher), which no redrive policy names.',
        });
      }
      queues.set(definition.id, queue);
      return queue;
    };
    for (const definition of queueDefinitions) createQueue(definition);

    const queueById = (queueId: QueueDefinition['id']): Queue => {
      const queue = queues.get(queueId);
      if (!queue) throw new Error(`Queue ${queueId} is not declared in queueDefinitions`);
      return queue;
    };
    this.runQueue = queueById('RunQueue');
    this.runDlq = queueById('RunDlq');
    this.projectorDlq = queueById('ProjectorDlq');
    this.deliveryQueue = queueById('DeliveryQueue');
    this.deliveryDlq = queueById('DeliveryDlq');
    this.pusherDlq = queueById('PusherDlq');
    this.queues = Object.fromEntries(queues) as Record<QueueDefinition['id'], Queue>;
    this.deadLetterQueues = Object.fromEntries(
      queueDefinitions
        .filter(isDeadLetterQueue)
        .map((definition) => [definition.id, queueById(definition.id)]),
    );

    // What an operator needs by name: the admin command's tables, the DLQs to redrive or replay (docs/operations.md).
    for (const table of [this.stateTable, this.journalTable, this.auditTable]) {
      new CfnOutput(this, `${table.node.id}TableName`, { value: table.tableName });
    }
    new CfnOutput(this, 'ContentKeyArn', { value: this.contentKey.keyArn });
    for (const [queueId, queue] of Object.entries(this.deadLetterQueues)) {
      new CfnOutput(this, `${queueId}Arn`, { value: queue.queueArn });
    }
    // The replay of the pusher's DLQ queues deliveries there (decision 0068).
    new CfnOutput(this, 'DeliveryQueueArn', { value: this.deliveryQueue.queueArn });
  }
}

/** A queue is a dead-letter queue when another queue redrives to it, or it is a stream consumer's on-failure destination. */
export const isDeadLetterQueue = (definition: QueueDefinition): boolean =>
  definition.id === 'ProjectorDlq' || definition.id === 'PusherDlq' || isRedriveTarget(definition);

const isRedriveTarget = (definition: QueueDefinition): boolean =>
  queueDefinitions.some((candidate) => candidate.deadLetter?.queueId === definition.id);
