import {
  type AttributeDefinition,
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateAliasCommand,
  CreateKeyCommand,
  DescribeKeyCommand,
  type KMSClient,
} from '@aws-sdk/client-kms';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  type QueueDefinition,
  queueDefinitions,
  type TableDefinition,
  tableDefinitions,
} from '../../shared/adapters/dynamodb/tables.ts';

/**
 * Creates the tables, queues and key of one installation in local emulators (or LocalStack),
 * built only from the declarations the CDK app uses, so the two cannot drift. Idempotent: an
 * existing table, queue, key alias or TTL setting is taken as it is.
 */

export interface ResourceClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly kms: KMSClient;
}

export interface CreatedTable {
  readonly name: string;
  readonly arn: string;
  /** Present for tables declared with a stream. */
  readonly streamArn?: string;
  /** False when the table existed already (its stream may hold older records). */
  readonly created: boolean;
}

export interface CreatedQueue {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
}

export interface CreatedKey {
  readonly keyId: string;
  readonly arn: string;
  readonly alias: string;
}

/** The variables of shared/config/runtime-env.ts that name resources. */
export interface ResourceEnv {
  readonly STATE_TABLE_NAME: string;
  readonly JOURNAL_TABLE_NAME: string;
  readonly AUDIT_TABLE_NAME: string;
  readonly RUN_QUEUE_URL: string;
  readonly DELIVERY_QUEUE_URL: string;
  readonly KMS_KEY_ID: string;
}

export interface LocalResources {
  readonly prefix: string;
  readonly tables: Readonly<Record<TableDefinition['id'], CreatedTable>>;
  readonly queues: Readonly<Record<QueueDefinition['id'], CreatedQueue>>;
  readonly key: CreatedKey;
  readonly env: ResourceEnv;
}

export interface CreateResourcesOptions {
  /** Names every resource: `<prefix>-State`, `<prefix>-RunQueue`, `alias/<prefix>-content`. */
  readonly prefix: string;
  readonly clients: ResourceClients;
}

export const tableName = (prefix: string, definition: TableDefinition): string =>
  `${prefix}-${definition.id}`;

export const queueName = (prefix: string, definition: QueueDefinition): string =>
  `${prefix}-${definition.id}${definition.fifo ? '.fifo' : ''}`;

export const keyAlias = (prefix: string): string => `alias/${prefix}-content`;

export const createResources = async ({
  prefix,
  clients,
}: CreateResourcesOptions): Promise<LocalResources> => {
  const [tableList, queues, key] = await Promise.all([
    Promise.all(tableDefinitions.map((definition) => ensureTable(clients.dynamodb, prefix, definition))),
    ensureQueues(clients.sqs, prefix),
    ensureKey(clients.kms, prefix),
  ]);
  const tables = Object.fromEntries(
    tableDefinitions.map((definition, i) => [definition.id, tableList[i]]),
  ) as Record<TableDefinition['id'], CreatedTable>;
  return {
    prefix,
    tables,
    queues,
    key,
    env: {
      STATE_TABLE_NAME: tables.State.name,
      JOURNAL_TABLE_NAME: tables.Journal.name,
      AUDIT_TABLE_NAME: tables.Audit.name,
      RUN_QUEUE_URL: queues.RunQueue.url,
      DELIVERY_QUEUE_URL: queues.DeliveryQueue.url,
      KMS_KEY_ID: key.keyId,
    },
  };
};

// ---- tables

const errorName = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && 'name' in error ? String(error.name) : undefined;

const attributeDefinitions = (definition: TableDefinition): AttributeDefinition[] => {
  const keys = [
    definition.partitionKey,
    definition.sortKey,
    ...definition.globalSecondaryIndexes.flatMap((index) => [index.partitionKey, index.sortKey]),
  ];
  const byName = new Map(keys.map((key) => [key.name, key.type]));
  return [...byName].map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType }));
};

const ensureTable = async (
  dynamodb: DynamoDBClient,
  prefix: string,
  definition: TableDefinition,
): Promise<CreatedTable> => {
  const name = tableName(prefix, definition);
  let created = true;
  try {
    await dynamodb.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: attributeDefinitions(definition),
        KeySchema: [
          { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: definition.sortKey.name, KeyType: 'RANGE' },
        ],
        ...(definition.stream
          ? { StreamSpecification: { StreamEnabled: true, StreamViewType: definition.stream } }
          : {}),
        ...(definition.globalSecondaryIndexes.length > 0
          ? {
              GlobalSecondaryIndexes: definition.globalSecondaryIndexes.map((index) => ({
                IndexName: index.indexName,
                KeySchema: [
                  { AttributeName: index.partitionKey.name, KeyType: 'HASH' as const },
                  { AttributeName: index.sortKey.name, KeyType: 'RANGE' as const },
                ],
                Projection: { ProjectionType: index.projection },
              })),
            }
          : {}),
      }),
    );
  } catch (error) {
    if (errorName(error) !== 'ResourceInUseException') throw error;
    created = false;
  }
  const table = await waitUntilActive(dynamodb, name);
  await ensureTimeToLive(dynamodb, name, definition.timeToLiveAttribute);
  if (definition.stream && !table.LatestStreamArn) {
    throw new Error(`Table ${name} exists without the stream its declaration requires`);
  }
  return {
    name,
    arn: table.TableArn ?? '',
    ...(table.LatestStreamArn ? { streamArn: table.LatestStreamArn } : {}),
    created,
  };
};

/** DynamoDB Local creates tables ACTIVE at once; LocalStack and AWS take a moment. */
const waitUntilActive = async (dynamodb: DynamoDBClient, name: string): Promise<TableDescription> => {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: name }));
    const indexesReady = (Table?.GlobalSecondaryIndexes ?? []).every(
      (index) => index.IndexStatus === 'ACTIVE',
    );
    if (Table?.TableStatus === 'ACTIVE' && indexesReady) return Table;
    if (Date.now() > deadline) throw new Error(`Table ${name} is not ACTIVE after 60 s`);
    await new Promise((wake) => setTimeout(wake, 200));
  }
};

const ensureTimeToLive = async (dynamodb: DynamoDBClient, name: string, attribute: string): Promise<void> => {
  const { TimeToLiveDescription } = await dynamodb.send(new DescribeTimeToLiveCommand({ TableName: name }));
  const status = TimeToLiveDescription?.TimeToLiveStatus;
  if ((status === 'ENABLED' || status === 'ENABLING') && TimeToLiveDescription?.AttributeName === attribute)
    return;
  await dynamodb.send(
    new UpdateTimeToLiveCommand({
      TableName: name,
      TimeToLiveSpecification: { Enabled: true, AttributeName: attribute },
    }),
  );
};

// ---- queues

const ensureQueues = async (
  sqs: SQSClient,
  prefix: string,
): Promise<Record<QueueDefinition['id'], CreatedQueue>> => {
  const created = new Map<QueueDefinition['id'], CreatedQueue>();
  // Dead-letter targets first: a redrive policy names its target's ARN.
  const pending = [...queueDefinitions];
  while (pending.length > 0) {
    const ready = pending.filter((queue) => !queue.deadLetter || created.has(queue.deadLetter.queueId));
    if (ready.length === 0) throw new Error('queueDefinitions has a dead-letter cycle or an unknown target');
    const made = await Promise.all(ready.map((definition) => ensureQueue(sqs, prefix, definition, created)));
    ready.forEach((definition, i) => {
      created.set(definition.id, made[i]!);
      pending.splice(pending.indexOf(definition), 1);
    });
  }
  return Object.fromEntries(created) as Record<QueueDefinition['id'], CreatedQueue>;
};

const ensureQueue = async (
  sqs: SQSClient,
  prefix: string,
  definition: QueueDefinition,
  created: ReadonlyMap<QueueDefinition['id'], CreatedQueue>,
): Promise<CreatedQueue> => {
  const name = queueName(prefix, definition);
  const attributes: Record<string, string> = {
    VisibilityTimeout: String(definition.visibilityTimeoutSeconds),
  };
  if (definition.fifo) attributes.FifoQueue = 'true';
  if (definition.deadLetter) {
    const target = created.get(definition.deadLetter.queueId)!;
    attributes.RedrivePolicy = JSON.stringify({
      deadLetterTargetArn: target.arn,
      maxReceiveCount: definition.deadLetter.maxReceiveCount,
    });
  }
  // CreateQueue with the same attributes is idempotent in SQS; it answers with the existing URL.
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!QueueUrl) throw new Error(`CreateQueue ${name} returned no URL`);
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  const arn = Attributes?.QueueArn;
  if (!arn) throw new Error(`Queue ${name} has no ARN`);
  return { name, url: QueueUrl, arn };
};

// ---- key

const ensureKey = async (kms: KMSClient, prefix: string): Promise<CreatedKey> => {
  const alias = keyAlias(prefix);
  const existing = await describeKey(kms, alias);
  if (existing) return { ...existing, alias };
  const { KeyMetadata } = await kms.send(
    new CreateKeyCommand({
      Description: `a2a-serverless content key (${prefix})`,
      KeySpec: 'SYMMETRIC_DEFAULT',
      KeyUsage: 'ENCRYPT_DECRYPT',
    }),
  );
  if (!KeyMetadata?.KeyId || !KeyMetadata.Arn) throw new Error('CreateKey returned no key');
  try {
    await kms.send(new CreateAliasCommand({ AliasName: alias, TargetKeyId: KeyMetadata.KeyId }));
  } catch (error) {
    if (errorName(error) !== 'AlreadyExistsException') throw error;
    // A concurrent caller won; use its key (ours stays unused, as an orphan key would in AWS).
    const winner = await describeKey(kms, alias);
    if (winner) return { ...winner, alias };
    throw error;
  }
  return { keyId: KeyMetadata.KeyId, arn: KeyMetadata.Arn, alias };
};

const describeKey = async (kms: KMSClient, keyId: string): Promise<Omit<CreatedKey, 'alias'> | undefined> => {
  try {
    const { KeyMetadata } = await kms.send(new DescribeKeyCommand({ KeyId: keyId }));
    if (!KeyMetadata?.KeyId || !KeyMetadata.Arn) return undefined;
    return { keyId: KeyMetadata.KeyId, arn: KeyMetadata.Arn };
  } catch (error) {
    if (errorName(error) === 'NotFoundException') return undefined;
    throw error;
  }
};
