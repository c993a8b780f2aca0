/**
 * The one declaration of every DynamoDB table. The CDK app (infra/) and the local stack
 * (infra/local/) both build their tables from these values, so they cannot drift.
 */

export type KeyType = 'S' | 'N' | 'B';

export interface KeyDefinition {
  readonly name: string;
  readonly type: KeyType;
}

export interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: KeyDefinition;
  readonly sortKey: KeyDefinition;
  /** ALL keeps reads to one query; the index is small (one item per task). */
  readonly projection: 'ALL' | 'KEYS_ONLY';
}

export interface TableDefinition {
  /** Stable logical id: CDK construct id and local table name suffix. */
  readonly id: 'State' | 'Journal' | 'Audit';
  readonly partitionKey: KeyDefinition;
  readonly sortKey: KeyDefinition;
  readonly stream?: 'NEW_AND_OLD_IMAGES' | 'NEW_IMAGE';
  readonly timeToLiveAttribute: string;
  readonly globalSecondaryIndexes: readonly IndexDefinition[];
}

const pk: KeyDefinition = { name: 'pk', type: 'S' };
const sk: KeyDefinition = { name: 'sk', type: 'S' };

/** Source of truth: tasks, runs, push configs. Its stream feeds the projector. */
export const stateTable: TableDefinition = {
  id: 'State',
  partitionKey: pk,
  sortKey: sk,
  stream: 'NEW_AND_OLD_IMAGES',
  timeToLiveAttribute: 'expiresAt',
  globalSecondaryIndexes: [
    {
      // Sparse: only RUNNING runs carry leaseShard/leaseUntil, so the reaper reads expired leases
      // with a few queries, never a scan.
      indexName: 'byLease',
      partitionKey: { name: 'leaseShard', type: 'S' },
      sortKey: { name: 'leaseUntil', type: 'N' },
      projection: 'KEYS_ONLY',
    },
    {
      // Sparse: only PENDING approval records carry pendingKey, so `approvals list` is one query.
      // One partition is enough: every item in it waits for a human (docs/operations.md, "Approvals").
      indexName: 'byPendingApproval',
      partitionKey: { name: 'pendingKey', type: 'S' },
      sortKey: { name: 'requestedAt', type: 'S' },
      projection: 'ALL',
    },
  ],
};

/** What remote parties read: task views, events per revision, and the ListTasks index. */
export const journalTable: TableDefinition = {
  id: 'Journal',
  partitionKey: pk,
  sortKey: sk,
  stream: 'NEW_IMAGE',
  timeToLiveAttribute: 'expiresAt',
  globalSecondaryIndexes: [
    {
      indexName: 'byOwner',
      partitionKey: { name: 'ownerKey', type: 'S' },
      sortKey: { name: 'ownerSort', type: 'S' },
      projection: 'ALL',
    },
  ],
};

/** Run steps at the audit ceiling; never read by remote callers. */
export const auditTable: TableDefinition = {
  id: 'Audit',
  partitionKey: pk,
  sortKey: sk,
  timeToLiveAttribute: 'expiresAt',
  globalSecondaryIndexes: [],
};

export const tableDefinitions = [stateTable, journalTable, auditTable] as const;

/** Queues, declared once for the CDK app and the local stack. */
export interface QueueDefinition {
  readonly id: 'RunQueue' | 'RunDlq' | 'ProjectorDlq' | 'DeliveryQueue' | 'DeliveryDlq' | 'PusherDlq';
  readonly fifo: boolean;
  readonly visibilityTimeoutSeconds: number;
  /** Dead-letter target and how many receives before a message moves there. */
  readonly deadLetter?: { readonly queueId: QueueDefinition['id']; readonly maxReceiveCount: number };
}

/** Attempts per webhook delivery: with backoff 2, 4, … 256, 300 s they span about 15 minutes. */
export const deliveryQueueMaxReceiveCount = 10;

export const queueDefinitions: readonly QueueDefinition[] = [
  { id: 'RunDlq', fifo: false, visibilityTimeoutSeconds: 30 },
  { id: 'ProjectorDlq', fifo: false, visibilityTimeoutSeconds: 30 },
  {
    id: 'RunQueue',
    fifo: false,
    // Six times the executor timeout, as AWS recommends for SQS event sources.
    visibilityTimeoutSeconds: 6 * 60,
    deadLetter: { queueId: 'RunDlq', maxReceiveCount: 3 },
  },
  // Webhook delivery (docs/architecture.md, "Push notifications"): FIFO, grouped by (task, config),
  // so deliveries to one webhook keep their order and a failing or slow webhook holds back only its
  // own group.
  { id: 'DeliveryDlq', fifo: true, visibilityTimeoutSeconds: 30 },
  /** The pusher's on-failure destination: stream batches it could not fan out. */
  { id: 'PusherDlq', fifo: false, visibilityTimeoutSeconds: 30 },
  {
    id: 'DeliveryQueue',
    fifo: true,
    // Six times the deliverer timeout (2 min); a failed attempt shortens it to its backoff.
    visibilityTimeoutSeconds: 6 * 120,
    deadLetter: { queueId: 'DeliveryDlq', maxReceiveCount: deliveryQueueMaxReceiveCount },
  },
];
