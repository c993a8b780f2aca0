import { rootAgent } from '../../domain/task.ts';

/**
 * Every key of the state, journal and audit tables, built and parsed here and nowhere else
 * (docs/data-model.md). The item schemas beside their keys are in `entities.ts` (and the
 * delivery and audit adapters); this module is plain strings and functions, so a function that
 * only reads a key (a stream record's trace, an expired item) bundles no schema.
 * All items of a task share its partition `TASK#<taskId>`, so a purge is one query.
 */

/** Every task's partition key starts with this; the rest is its id. */
export const taskPrefix = 'TASK#';
/** Every run row's sort key starts with this (they sort before the task row, `TASK`). */
export const runPrefix = 'RUN#';
const eventPrefix = 'EVT#';
const historyPrefix = 'HIST#';
/** The task row's sort key: the projector's stream filter passes only these items. */
export const taskRowSort = 'TASK';
const taskPk = (taskId: string): string => `TASK#${taskId}`;

export const leaseShards = 4;

/** The partition of one shard of the lease index. */
export const leasePartition = (shard: number): string => `LEASE#${shard}`;

/** A stable small hash (FNV-1a) of an id into [0, shards). */
const shardOf = (id: string, shards: number): number => {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return hash % shards;
};

export const keys = {
  task: (taskId: string) => ({ pk: taskPk(taskId), sk: 'TASK' as const }),
  run: (taskId: string, runId: string) => ({ pk: taskPk(taskId), sk: `RUN#${runId}` }),
  /**
   * A chunk of content too large for its item (docs/data-model.md, "Large content"); `sk` from
   * `chunkSortKey`.
   */
  chunk: (taskId: string, sk: string) => ({ pk: taskPk(taskId), sk }),
  /**
   * A part of a history segment (docs/data-model.md, "History"): the sealed entries of one revision,
   * in parts of at most `historyPartBytes`. Keys sort by revision, then part.
   */
  historySegment: (taskId: string, revision: number, part: number) => ({
    pk: taskPk(taskId),
    sk: `${historyPrefix}${String(revision).padStart(10, '0')}#${String(part).padStart(3, '0')}`,
  }),
  historyPrefix,
  view: (taskId: string) => ({ pk: taskPk(taskId), sk: 'VIEW' as const }),
  event: (taskId: string, revision: number) => ({
    pk: taskPk(taskId),
    sk: `EVT#${String(revision).padStart(10, '0')}`,
  }),
  eventPrefix,
  /**
   * Partition of the sparse lease index: only RUNNING runs carry it. A few
   * shards spread the index's writes; the reaper queries each.
   */
  leaseShard: (runId: string) => leasePartition(shardOf(runId, leaseShards)),
  /** Approval records live in their task's partition, so the purge takes them with it (I-PURGE). */
  approval: (taskId: string, approvalId: string) => ({ pk: taskPk(taskId), sk: `APPROVAL#${approvalId}` }),
  approvalPrefix: 'APPROVAL#',
  /** Partition of the sparse pending-approvals index: only PENDING records carry it. */
  pendingApprovals: 'APPROVALS#PENDING',
  /** Push configs live in the task's partition of the state table (the projector's filter passes only sk = TASK). */
  push: (taskId: string, configId: string) => ({ pk: taskPk(taskId), sk: `PUSH#${configId}` }),
  pushPrefix: 'PUSH#',
  /** Profiles saved by the admin command: one small partition, so listing them is one query. */
  profile: (profileId: string) => ({ pk: 'PROFILES' as const, sk: `PROFILE#${profileId}` }),
  profilePrefix: 'PROFILE#',
  /**
   * The ListTasks index partition of one owner at one agent (I-OWNER). The root agent keeps
   * the key without an agent part; identity parts and profile ids never contain `#`, so keys
   * cannot collide.
   */
  ownerKey: (tenant: string, principal: string, profileId: string) =>
    profileId === rootAgent ? `OWNER#${tenant}#${principal}` : `OWNER#${tenant}#${principal}#${profileId}`,
  ownerSort: (statusTimestamp: string, taskId: string) => `${statusTimestamp}#${taskId}`,
} as const;

/*
 * Parsers are separate functions (not members of `keys`), so a bundle carries only those it uses.
 */

/** The task a partition key names, when it is a task's partition. */
export const taskIdOfKey = (pk: string | undefined): string | undefined =>
  pk?.startsWith(taskPrefix) ? pk.slice(taskPrefix.length) : undefined;

/** The run a sort key names, when it is a run row's. */
export const runIdOfKey = (sk: string): string | undefined =>
  sk.startsWith(runPrefix) ? sk.slice(runPrefix.length) : undefined;

export const isTaskRowKey = (sk: string | undefined): boolean => sk === taskRowSort;

export const isViewKey = (sk: string | undefined): boolean => sk === 'VIEW';

export const isEventKey = (sk: string | undefined): boolean => sk?.startsWith(eventPrefix) === true;

/** The revision an event's sort key names. */
export const revisionOfEventKey = (sk: string): number => Number(sk.slice(eventPrefix.length));

/**
 * Per-owner view counters (docs/protocol.md §6), per agent: one item per owner, agent and expiry
 * day (UTC). Counter items share the owner's index key string as partition, but carry no
 * `ownerSort`, so the byOwner index never sees them.
 */
export const counterKeys = {
  prefix: 'COUNT#',
  item: (owner: { tenant: string; principal: string; profileId: string }, day: string) => ({
    pk: keys.ownerKey(owner.tenant, owner.principal, owner.profileId),
    sk: `COUNT#${day}`,
  }),
} as const;

/** A chunk item's sort key: its blob's hash and its index (docs/data-model.md, "Large content"). */
export const chunkSortKey = (hash: string, index: number): string =>
  `CHUNK#${hash}#${String(index).padStart(3, '0')}`;

/** Delivery records in their task's partition: `DELIVERY#<configId>#<revision, 10 digits>`. */
export const deliveryKeys = {
  prefix: 'DELIVERY#',
  /** Config ids never contain `#` (push-configs.ts), so a config's records share this prefix alone. */
  configPrefix: (configId: string) => `DELIVERY#${configId}#`,
  item: (taskId: string, configId: string, revision: number) => ({
    pk: taskPk(taskId),
    sk: `DELIVERY#${configId}#${String(revision).padStart(10, '0')}`,
  }),
} as const;

/**
 * The audit table (docs/data-model.md, "Audit table"): `pk = TASK#<taskId>`,
 * `sk = AUDIT#<runId>#<at>#<seq>`; a run's start slots `AUDIT#<runId>#0#<version>` sort before
 * every timestamp, so they lead the run's rows in key order.
 */
export const auditKeys = {
  pk: taskPk,
  prefix: 'AUDIT#',
  sk: (runId: string, at: string, seq: number) => `AUDIT#${runId}#${at}#${String(seq).padStart(6, '0')}`,
  startPrefix: (runId: string) => `AUDIT#${runId}#0#`,
  start: (runId: string, version: number) => `AUDIT#${runId}#0#${String(version).padStart(8, '0')}`,
} as const;

/** The sequence number that ends an audit row's sort key. */
export const auditSeqOfKey = (sk: string): number => Number(sk.slice(sk.lastIndexOf('#') + 1));
