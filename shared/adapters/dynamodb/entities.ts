import * as z from 'zod';
import { taskStates } from '../../domain/a2a.ts';
import { type ApprovalRecord, approvalDecisions } from '../../domain/approvals.ts';
import type { JournalEvent, JournalView, StoredTask } from '../../domain/projection.ts';
import type { StoredPushConfig } from '../../domain/push.ts';
import { type RunRecord, rootAgent, runStatuses } from '../../domain/task.ts';
import { packSealedHeaders, unpackSealedHeaders } from './sealed-headers.ts';

/**
 * Every DynamoDB entity declared once: its keys and its attribute schema. Item types are derived
 * from the schemas, and the same schemas parse items read back and stream images (untrusted
 * input at the projector's edge). All items of a task share its partition, so a purge is one query.
 */

const taskPk = (taskId: string): string => `TASK#${taskId}`;

export const leaseShards = 4;

/** A stable small hash (FNV-1a) of an id into [0, shards). */
const shardOf = (id: string, shards: number): number => {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return hash % shards;
};

export const keys = {
  task: (taskId: string) => ({ pk: taskPk(taskId), sk: 'TASK' as const }),
  run: (taskId: string, runId: string) => ({ pk: taskPk(taskId), sk: `RUN#${runId}` }),
  view: (taskId: string) => ({ pk: taskPk(taskId), sk: 'VIEW' as const }),
  event: (taskId: string, revision: number) => ({
    pk: taskPk(taskId),
    sk: `EVT#${String(revision).padStart(10, '0')}`,
  }),
  eventPrefix: 'EVT#',
  /**
   * Partition of the sparse lease index (decision 0011): only RUNNING runs carry it. A few
   * shards spread the index's writes; the reaper queries each.
   */
  leaseShard: (runId: string) => `LEASE#${shardOf(runId, leaseShards)}`,
  /** Approval records live in their task's partition, so the purge takes them with it (decision 0013). */
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
   * The ListTasks index partition of one owner at one agent (decision 0049). The root agent keeps
   * the key it had before agents were told apart, so its views (and those written before) stay
   * where they are; identity parts and profile ids never contain `#`, so keys cannot collide.
   */
  ownerKey: (tenant: string, principal: string, profileId: string) =>
    profileId === rootAgent ? `OWNER#${tenant}#${principal}` : `OWNER#${tenant}#${principal}#${profileId}`,
  ownerSort: (statusTimestamp: string, taskId: string) => `${statusTimestamp}#${taskId}`,
} as const;

/** Binary attributes arrive as Uint8Array from the SDK and as base64 strings in Lambda stream events. */
const blob = z.preprocess(
  (value) => (typeof value === 'string' ? Uint8Array.from(Buffer.from(value, 'base64')) : value),
  z.custom<Uint8Array>((value) => value instanceof Uint8Array),
);

/**
 * The headers an item's sealed blobs share, stored once (decision 0039): the schemas of items
 * with blobs parse it and re-assemble the blobs byte for byte (`unpackSealedHeaders`).
 */
const sealHeaders = z.array(blob).optional();

const jsonObject = z.record(z.string(), z.json());

const taskState = z.enum(taskStates);

const ceiling = z.enum(['none', 'metadata', 'redacted', 'full']);

/**
 * A run's own attributes: the current run inside its task row (decision 0038), whose
 * `leaseUntil` is its lease; an earlier run in its own `RUN#` row.
 */
export const embeddedRunSchema = z.object({
  runId: z.string(),
  profileId: z.string(),
  status: z.enum(runStatuses),
  version: z.number().int().nonnegative(),
  answerCeiling: ceiling,
  auditCeiling: ceiling,
  attempts: z.array(
    z.object({
      providerId: z.string(),
      outcome: z.enum(['succeeded', 'failed', 'refused']),
      startedAt: z.string(),
      durationMs: z.number(),
      inputTokens: z.number().optional(),
      outputTokens: z.number().optional(),
    }),
  ),
  startBy: z.number().optional(),
  requeues: z.number().int().nonnegative().optional(),
  cancelRequested: z.boolean(),
  createdAt: z.string(),
  endedAt: z.string().optional(),
  expiresAt: z.number(),
  /** The sealed suspended state, bound to (task, `suspension:<runId>`). */
  suspension: blob.optional(),
  approval: z
    .object({
      approvalId: z.string(),
      digest: z.string(),
      verdict: z.enum(['approved', 'denied']).optional(),
      reason: z.string().optional(),
    })
    .optional(),
  /** A saved profile's settings as the run was accepted with them (decision 0024). */
  profile: z
    .object({
      providers: z.array(z.string()),
      instructions: z.string(),
      tools: z.array(z.object({ name: z.string(), requiresApproval: z.boolean() })),
      maxToolRounds: z.number(),
    })
    .optional(),
});
export type EmbeddedRun = z.infer<typeof embeddedRunSchema>;

/**
 * A run that is no longer its task's current run (a follow-up replaced it), or one written before
 * decision 0038: its own row in the task's partition.
 */
export const runItemSchema = embeddedRunSchema.extend({
  pk: z.string(),
  sk: z.string().startsWith('RUN#'),
  taskId: z.string(),
  leaseUntil: z.number().optional(),
  /** Set exactly when `leaseUntil` is: the key of the sparse lease index. */
  leaseShard: z.string().optional(),
});
export type RunItem = z.infer<typeof runItemSchema>;

/** The task row's push mark attribute (decision 0041). */
export const pushMark = 'pushConfigured' satisfies keyof TaskItem & keyof EventItem;

const taskItemFields = z.object({
  pk: z.string(),
  sk: z.literal('TASK'),
  taskId: z.string(),
  contextId: z.string(),
  tenant: z.string(),
  principal: z.string(),
  profileId: z.string(),
  state: taskState,
  revision: z.number().int().positive(),
  currentRunId: z.string(),
  statusTimestamp: z.string(),
  createdAt: z.string(),
  metadata: jsonObject.optional(),
  expiresAt: z.number(),
  statusMessage: blob.optional(),
  artifacts: blob.optional(),
  history: blob.optional(),
  sealHeaders,
  /** The task's current run: one item, so one write commits both. */
  run: embeddedRunSchema.optional(),
  /** The current run's lease, set exactly while it has one: the keys of the sparse lease index. */
  leaseUntil: z.number().optional(),
  leaseShard: z.string().optional(),
  /**
   * The push mark: set by the write that stores the task's first push config,
   * never by a task write (`toTaskRowUpdate` leaves it out), never removed.
   */
  pushConfigured: z.boolean().optional(),
});
export const taskItemSchema = taskItemFields.overwrite(unpackSealedHeaders);
export type TaskItem = z.infer<typeof taskItemSchema>;

/** A saved profile (no TTL: it lives until it is replaced or deleted). */
export const profileItemSchema = z.object({
  pk: z.literal('PROFILES'),
  sk: z.string().startsWith('PROFILE#'),
  profileId: z.string(),
  profile: jsonObject,
  updatedAt: z.string(),
});
export type ProfileItem = z.infer<typeof profileItemSchema>;

const viewItemFields = z.object({
  pk: z.string(),
  sk: z.literal('VIEW'),
  taskId: z.string(),
  contextId: z.string(),
  tenant: z.string(),
  principal: z.string(),
  /** The task's agent; absent for the root agent, and on views written before. */
  profileId: z.string().optional(),
  ownerKey: z.string(),
  ownerSort: z.string(),
  state: taskState,
  revision: z.number().int().positive(),
  statusTimestamp: z.string(),
  createdAt: z.string(),
  statusMessage: blob.optional(),
  artifacts: blob.optional(),
  metadata: jsonObject.optional(),
  expiresAt: z.number(),
  sealHeaders,
});
export const viewItemSchema = viewItemFields.overwrite(unpackSealedHeaders);
export type ViewItem = z.infer<typeof viewItemSchema>;

const eventItemFields = z.object({
  pk: z.string(),
  sk: z.string().startsWith('EVT#'),
  taskId: z.string(),
  contextId: z.string(),
  tenant: z.string(),
  principal: z.string(),
  revision: z.number().int().positive(),
  state: taskState,
  statusTimestamp: z.string(),
  statusMessage: blob.optional(),
  artifacts: blob.optional(),
  metadata: jsonObject.optional(),
  expiresAt: z.number(),
  /** The task row's push mark at this revision; absent when unmarked. */
  pushConfigured: z.boolean().optional(),
  sealHeaders,
});
export const eventItemSchema = eventItemFields.overwrite(unpackSealedHeaders);
export type EventItem = z.infer<typeof eventItemSchema>;

const pushConfigItemFields = z.object({
  pk: z.string(),
  sk: z.string().startsWith('PUSH#'),
  taskId: z.string(),
  configId: z.string(),
  url: z.string(),
  scheme: z.string().optional(),
  credentials: blob.optional(),
  token: blob.optional(),
  createdAt: z.string(),
  protocolVersion: z.enum(['1.0', '0.3']).optional(),
  expiresAt: z.number(),
  afterRevision: z.number().optional(),
  sealHeaders,
});
export const pushConfigItemSchema = pushConfigItemFields.overwrite(unpackSealedHeaders);
export type PushConfigItem = z.infer<typeof pushConfigItemSchema>;

/** The item without its undefined attributes (DynamoDB stores no undefined). */
export const withoutUndefined = <T extends Record<string, unknown>>(item: T): T =>
  Object.fromEntries(Object.entries(item).filter(([, value]) => value !== undefined)) as T;

/** An item with sealed blobs as stored: no undefined attributes, shared blob headers once. */
const toSealedItem = <T extends Record<string, unknown>>(item: T): T =>
  packSealedHeaders(withoutUndefined(item));

export const toTaskItem = (task: StoredTask): TaskItem =>
  toSealedItem({
    ...keys.task(task.taskId),
    taskId: task.taskId,
    contextId: task.contextId,
    tenant: task.owner.tenant,
    principal: task.owner.principal,
    profileId: task.profileId,
    state: task.state,
    revision: task.revision,
    currentRunId: task.currentRunId,
    statusTimestamp: task.statusTimestamp,
    createdAt: task.createdAt,
    metadata: task.metadata,
    expiresAt: task.expiresAt,
    statusMessage: task.sealedStatusMessage,
    artifacts: task.sealedArtifacts,
    history: task.sealedHistory,
  });

export const fromTaskItem = (item: TaskItem): StoredTask => ({
  taskId: item.taskId,
  contextId: item.contextId,
  owner: { tenant: item.tenant, principal: item.principal },
  profileId: item.profileId,
  state: item.state,
  revision: item.revision,
  currentRunId: item.currentRunId,
  statusTimestamp: item.statusTimestamp,
  createdAt: item.createdAt,
  metadata: item.metadata,
  expiresAt: item.expiresAt,
  sealedStatusMessage: item.statusMessage,
  sealedArtifacts: item.artifacts,
  sealedHistory: item.history,
  ...(item.pushConfigured === true && { pushConfigured: true }),
});

/** A run's own attributes, without keys or lease (the row that holds it carries those). */
export const toEmbeddedRun = (run: RunRecord): EmbeddedRun =>
  withoutUndefined({
    runId: run.runId,
    profileId: run.profileId,
    status: run.status,
    version: run.version,
    answerCeiling: run.answerCeiling,
    auditCeiling: run.auditCeiling,
    attempts: [...run.attempts],
    startBy: run.startBy,
    requeues: run.requeues,
    cancelRequested: run.cancelRequested,
    createdAt: run.createdAt,
    endedAt: run.endedAt,
    expiresAt: run.expiresAt,
    suspension: run.sealedSuspension,
    approval: run.approval && withoutUndefined({ ...run.approval }),
    // The same shape; the item's type only drops `readonly`.
    profile: run.profile as EmbeddedRun['profile'],
  });

/** The lease index keys of a run's lease: both set, or both absent. */
export const leaseAttributes = (run: RunRecord): { leaseUntil?: number; leaseShard?: string } =>
  run.leaseUntil === undefined ? {} : { leaseUntil: run.leaseUntil, leaseShard: keys.leaseShard(run.runId) };

export const toRunItem = (run: RunRecord): RunItem =>
  withoutUndefined({
    ...keys.run(run.taskId, run.runId),
    taskId: run.taskId,
    ...toEmbeddedRun(run),
    ...leaseAttributes(run),
  });

const fromRunFields = (fields: EmbeddedRun, taskId: string, leaseUntil: number | undefined): RunRecord => ({
  runId: fields.runId,
  taskId,
  profileId: fields.profileId,
  status: fields.status,
  version: fields.version,
  answerCeiling: fields.answerCeiling,
  auditCeiling: fields.auditCeiling,
  attempts: fields.attempts,
  leaseUntil,
  ...(fields.startBy !== undefined && { startBy: fields.startBy }),
  ...(fields.requeues !== undefined && { requeues: fields.requeues }),
  cancelRequested: fields.cancelRequested,
  createdAt: fields.createdAt,
  endedAt: fields.endedAt,
  expiresAt: fields.expiresAt,
  ...(fields.suspension !== undefined && { sealedSuspension: fields.suspension }),
  ...(fields.approval !== undefined && { approval: fields.approval }),
  ...(fields.profile !== undefined && { profile: fields.profile }),
});

export const fromRunItem = (item: RunItem): RunRecord => fromRunFields(item, item.taskId, item.leaseUntil);

/** The current run its task row holds, if any. */
export const runOfTaskItem = (item: TaskItem): RunRecord | undefined =>
  item.run && fromRunFields(item.run, item.taskId, item.leaseUntil);

export const approvalItemSchema = z.object({
  pk: z.string(),
  sk: z.string().startsWith('APPROVAL#'),
  approvalId: z.string(),
  taskId: z.string(),
  runId: z.string(),
  digest: z.string(),
  toolNames: z.array(z.string()),
  requestedAt: z.string(),
  decision: z.enum(approvalDecisions),
  decidedBy: z.string().optional(),
  decidedAt: z.string().optional(),
  reason: z.string().optional(),
  expiresAt: z.number(),
  /** Key of the sparse pending index: set exactly while the decision is PENDING. */
  pendingKey: z.string().optional(),
});
export type ApprovalItem = z.infer<typeof approvalItemSchema>;

export const toApprovalItem = (approval: ApprovalRecord): ApprovalItem =>
  withoutUndefined({
    ...keys.approval(approval.taskId, approval.approvalId),
    approvalId: approval.approvalId,
    taskId: approval.taskId,
    runId: approval.runId,
    digest: approval.digest,
    toolNames: [...approval.toolNames],
    requestedAt: approval.requestedAt,
    decision: approval.decision,
    decidedBy: approval.decidedBy,
    decidedAt: approval.decidedAt,
    reason: approval.reason,
    expiresAt: approval.expiresAt,
    pendingKey: approval.decision === 'PENDING' ? keys.pendingApprovals : undefined,
  });

export const fromApprovalItem = (item: ApprovalItem): ApprovalRecord => ({
  approvalId: item.approvalId,
  taskId: item.taskId,
  runId: item.runId,
  digest: item.digest,
  toolNames: item.toolNames,
  requestedAt: item.requestedAt,
  decision: item.decision,
  ...(item.decidedBy !== undefined && { decidedBy: item.decidedBy }),
  ...(item.decidedAt !== undefined && { decidedAt: item.decidedAt }),
  ...(item.reason !== undefined && { reason: item.reason }),
  expiresAt: item.expiresAt,
});

export const toViewItem = (view: JournalView): ViewItem =>
  toSealedItem({
    ...keys.view(view.taskId),
    taskId: view.taskId,
    contextId: view.contextId,
    tenant: view.owner.tenant,
    principal: view.owner.principal,
    profileId: view.profileId === rootAgent ? undefined : view.profileId,
    ownerKey: keys.ownerKey(view.owner.tenant, view.owner.principal, view.profileId),
    ownerSort: keys.ownerSort(view.statusTimestamp, view.taskId),
    state: view.state,
    revision: view.revision,
    statusTimestamp: view.statusTimestamp,
    createdAt: view.createdAt,
    statusMessage: view.sealedStatusMessage,
    artifacts: view.sealedArtifacts,
    metadata: view.metadata,
    expiresAt: view.expiresAt,
  });

export const fromViewItem = (item: ViewItem): JournalView => ({
  taskId: item.taskId,
  contextId: item.contextId,
  owner: { tenant: item.tenant, principal: item.principal },
  profileId: item.profileId ?? rootAgent,
  state: item.state,
  revision: item.revision,
  statusTimestamp: item.statusTimestamp,
  createdAt: item.createdAt,
  sealedStatusMessage: item.statusMessage,
  sealedArtifacts: item.artifacts,
  metadata: item.metadata,
  expiresAt: item.expiresAt,
});

export const toEventItem = (event: JournalEvent): EventItem =>
  toSealedItem({
    ...keys.event(event.taskId, event.revision),
    taskId: event.taskId,
    contextId: event.contextId,
    tenant: event.owner.tenant,
    principal: event.owner.principal,
    revision: event.revision,
    state: event.state,
    statusTimestamp: event.statusTimestamp,
    statusMessage: event.sealedStatusMessage,
    artifacts: event.sealedArtifacts,
    metadata: event.metadata,
    expiresAt: event.expiresAt,
    pushConfigured: event.pushConfigured,
  });

export const fromEventItem = (item: EventItem): JournalEvent => ({
  taskId: item.taskId,
  contextId: item.contextId,
  owner: { tenant: item.tenant, principal: item.principal },
  revision: item.revision,
  state: item.state,
  statusTimestamp: item.statusTimestamp,
  sealedStatusMessage: item.statusMessage,
  sealedArtifacts: item.artifacts,
  metadata: item.metadata,
  expiresAt: item.expiresAt,
  ...(item.pushConfigured === true && { pushConfigured: true }),
});

/**
 * Per-owner view counters (decision 0006), per agent: one item per owner, agent and expiry day (UTC), with the
 * day's total `n` and one attribute per expiry hour (`h00`…`h23`). The projector moves a view's
 * count in the transaction that writes the view; ListTasks sums the days still to come. Counter
 * items share the owner's index key string as partition, but carry no `ownerSort`, so the
 * byOwner index never sees them; they expire a day after the day they count.
 */
export const counterKeys = {
  prefix: 'COUNT#',
  item: (owner: { tenant: string; principal: string; profileId: string }, day: string) => ({
    pk: keys.ownerKey(owner.tenant, owner.principal, owner.profileId),
    sk: `COUNT#${day}`,
  }),
} as const;

export const counterItemSchema = z.looseObject({
  pk: z.string(),
  sk: z.string().startsWith('COUNT#'),
  n: z.number().optional(),
  expiresAt: z.number(),
});
export type CounterItem = z.infer<typeof counterItemSchema>;

export const toPushConfigItem = (config: StoredPushConfig): PushConfigItem =>
  toSealedItem({
    ...keys.push(config.taskId, config.configId),
    taskId: config.taskId,
    configId: config.configId,
    url: config.url,
    scheme: config.scheme,
    credentials: config.sealedCredentials,
    token: config.sealedToken,
    createdAt: config.createdAt,
    protocolVersion: config.protocolVersion,
    expiresAt: config.expiresAt,
    afterRevision: config.afterRevision,
  });

export const fromPushConfigItem = (item: PushConfigItem): StoredPushConfig => ({
  taskId: item.taskId,
  configId: item.configId,
  url: item.url,
  scheme: item.scheme,
  sealedCredentials: item.credentials,
  sealedToken: item.token,
  createdAt: item.createdAt,
  ...(item.protocolVersion !== undefined ? { protocolVersion: item.protocolVersion } : {}),
  expiresAt: item.expiresAt,
  ...(item.afterRevision !== undefined ? { afterRevision: item.afterRevision } : {}),
});
