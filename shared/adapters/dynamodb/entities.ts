import { taskStates } from '../../domain/a2a.ts';
import { type ApprovalRecord, approvalDecisions } from '../../domain/approvals.ts';
import {
  eventFields,
  type JournalEvent,
  type JournalView,
  type StoredTask,
  viewFields,
} from '../../domain/projection.ts';
import type { StoredPushConfig } from '../../domain/push.ts';
import { type Owner, type RunRecord, rootAgent, runStatuses } from '../../domain/task.ts';
import * as z from '../../zod.ts';
import { counterKeys, keys, runPrefix } from './keys.ts';
import { packSealedHeaders, unpackSealedHeaders } from './sealed-headers.ts';

/**
 * Every DynamoDB entity declared once: its keys (`keys.ts`, where they are built and parsed), and
 * a table of its domain fields with each one's schema as an item attribute. Item schemas and types, and the mappers' field copy, derive from
 * that table; a mapper adds only what its item holds beyond the fields (keys, index attributes).
 * The same schemas parse items read back and stream images (untrusted input at the projector's
 * edge). All items of a task share its partition, so a purge is one query.
 */

/**
 * How an item names a domain field: as the domain does, but a sealed blob drops its `sealed`
 * prefix (`sealedHistory` is `history`) and a task's `owner` is two attributes, `tenant` and
 * `principal`. A field table maps each field to its attribute's schema (the owner to the
 * schemas of its two); items hold the attributes in the table's order, which numbers the
 * headers their sealed blobs share (docs/data-model.md, "Sealing").
 */
type AttributeName<F> = F extends `sealed${infer Name}` ? Uncapitalize<Name> : F;

const attributeName = (field: string): string =>
  field.startsWith('sealed') ? `${field.charAt(6).toLowerCase()}${field.slice(7)}` : field;

/** The attribute schemas of some fields of a table: the shape of the item's schema. */
type ItemShape<Table, F extends keyof Table> = {
  [K in F as K extends 'owner' ? never : AttributeName<K>]: Table[K];
} & ('owner' extends F ? Table['owner' & keyof Table] : unknown);

const itemShape = <Table extends object, F extends keyof Table & string>(
  table: Table,
  fields: readonly F[],
): ItemShape<Table, F> => {
  const shape: Record<string, unknown> = {};
  for (const field of fields) {
    if (field === 'owner') Object.assign(shape, table[field]);
    else shape[attributeName(field)] = table[field];
  }
  return shape as ItemShape<Table, F>;
};

const fieldsOf = <Table extends object>(table: Table) => Object.keys(table) as (keyof Table & string)[];

/**
 * Some fields of a record as item attributes, typed as the domain types them: a mapper's item
 * type must accept them and its schema's output must be them, so a table cannot drift from its
 * domain type.
 */
type Attributes<T, F extends keyof T> = {
  [K in keyof Pick<T, F> as K extends 'owner' ? never : AttributeName<K>]: T[K];
} & ('owner' extends F ? Owner : unknown);

const toAttributes = <T, F extends keyof T & string>(record: T, fields: readonly F[]): Attributes<T, F> => {
  const attributes: Record<string, unknown> = {};
  for (const field of fields) {
    if (field === 'owner') Object.assign(attributes, record[field]);
    else attributes[attributeName(field)] = record[field];
  }
  return attributes as Attributes<T, F>;
};

const fromAttributes = <T, F extends keyof T & string>(
  item: Attributes<T, F>,
  fields: readonly F[],
): Pick<T, F> => {
  const attributes: Record<string, unknown> = item;
  const record: Record<string, unknown> = {};
  for (const field of fields) {
    record[field] =
      field === 'owner'
        ? { tenant: attributes.tenant, principal: attributes.principal }
        : attributes[attributeName(field)];
  }
  return record as Pick<T, F>;
};

/** The item without its undefined attributes (DynamoDB stores no undefined). */
export const withoutUndefined = <T extends Record<string, unknown>>(item: T): T =>
  Object.fromEntries(Object.entries(item).filter(([, value]) => value !== undefined)) as T;

/** Binary attributes arrive as Uint8Array from the SDK and as base64 strings in Lambda stream events. */
const blob = z.pipe(
  z.transform((value: unknown) =>
    typeof value === 'string' ? Uint8Array.from(Buffer.from(value, 'base64')) : value,
  ),
  z.custom<Uint8Array>((value) => value instanceof Uint8Array),
);

/**
 * An item with sealed blobs: its attributes, and the headers its blobs share, stored once
 * (docs/data-model.md, "Sealing"). Parsing re-assembles the blobs byte for byte (`unpackSealedHeaders`).
 */
const sealedItem = <S extends z.core.$ZodLooseShape>(shape: S) =>
  z.object({ ...shape, sealHeaders: z.optional(z.array(blob)) }).check(z.overwrite(unpackSealedHeaders));

/** An item with sealed blobs as stored: no undefined attributes, shared blob headers once. */
const toSealedItem = <T extends Record<string, unknown>>(item: T): T =>
  packSealedHeaders(withoutUndefined(item));

const jsonObject = z.record(z.string(), z.json());

const ceiling = z.enum(['none', 'metadata', 'redacted', 'full']);

/** The push mark attribute of the task row and of its journal events (docs/data-model.md, "State table"). */
export const pushMark = 'pushConfigured' satisfies keyof StoredTask;

/** `historyWrite` is a write's instruction, never an attribute. */
type TaskField = Exclude<keyof StoredTask, typeof pushMark | 'historyWrite'>;

/**
 * A stored task's fields but the push mark: the task row holds them all, its view and its events
 * the fields their domain types name (domain/projection.ts).
 */
const taskFields = {
  taskId: z.string(),
  contextId: z.string(),
  owner: { tenant: z.string(), principal: z.string() },
  profileId: z.string(),
  state: z.enum(taskStates),
  revision: z.int().check(z.positive()),
  generation: z.optional(z.int().check(z.positive())),
  currentRunId: z.string(),
  statusTimestamp: z.string(),
  createdAt: z.string(),
  metadata: z.optional(jsonObject),
  expiresAt: z.number(),
  sealedStatusMessage: z.optional(blob),
  sealedArtifacts: z.optional(blob),
  artifactCount: z.optional(z.int().check(z.nonnegative())),
  sealedHistory: z.optional(blob),
  historyFrom: z.optional(z.int().check(z.positive())),
  historyExpiresAt: z.optional(z.number()),
  answerChunk: z.optional(z.object({ artifactId: z.string(), from: z.int().check(z.nonnegative()) })),
  /** The creator's W3C traceparent, on the row and its events (docs/operations.md): for logs only. */
  traceparent: z.optional(z.string()),
} satisfies Record<TaskField, unknown>;

type RunField = Exclude<keyof RunRecord, 'taskId' | 'leaseUntil'>;

/**
 * A run's own fields: the current run inside its task row (docs/data-model.md, "State table"), whose
 * `leaseUntil` is its lease; an earlier run in its own `RUN#` row. The row holding it carries the task id and
 * lease.
 */
const runFields = {
  runId: z.string(),
  profileId: z.string(),
  status: z.enum(runStatuses),
  version: z.int().check(z.nonnegative()),
  answerCeiling: ceiling,
  auditCeiling: ceiling,
  attempts: z.array(
    z.object({
      providerId: z.string(),
      outcome: z.enum(['succeeded', 'failed', 'refused']),
      startedAt: z.string(),
      durationMs: z.number(),
      inputTokens: z.optional(z.number()),
      outputTokens: z.optional(z.number()),
    }),
  ),
  startBy: z.optional(z.number()),
  requeues: z.optional(z.int().check(z.nonnegative())),
  cancelRequested: z.boolean(),
  createdAt: z.string(),
  endedAt: z.optional(z.string()),
  expiresAt: z.number(),
  /** The sealed suspended state, bound to (task, `suspension:<runId>`). */
  sealedSuspension: z.optional(blob),
  approval: z.optional(
    z.object({
      approvalId: z.string(),
      digest: z.string(),
      verdict: z.optional(z.enum(['approved', 'denied'])),
      reason: z.optional(z.string()),
    }),
  ),
  /** A saved profile's settings as the run was accepted with them (docs/operations.md, "Saved profiles"). */
  profile: z.optional(
    z.object({
      providers: z.array(z.string()),
      instructions: z.string(),
      tools: z.array(z.object({ name: z.string(), requiresApproval: z.boolean() })),
      mcp: z.optional(
        z.record(
          z.string(),
          z.object({
            tools: z.record(
              z.string(),
              z.object({
                effect: z.optional(z.enum(['read-only', 'idempotent', 'write', 'destructive'])),
                requiresApproval: z.optional(z.boolean()),
              }),
            ),
          }),
        ),
      ),
      agents: z.optional(
        z.record(
          z.string(),
          z.object({ description: z.optional(z.string()), requiresApproval: z.boolean() }),
        ),
      ),
      maxToolRounds: z.number(),
      output: z.optional(
        z.object({
          progressive: z.boolean(),
          cadence: z.object({ ms: z.number(), bytes: z.number() }),
        }),
      ),
    }),
  ),
  fence: z.optional(z.object({ callId: z.string(), tool: z.string(), at: z.string() })),
  delegation: z.optional(
    z.object({
      callId: z.string(),
      tool: z.string(),
      remoteTaskId: z.string(),
      at: z.string(),
      tokenHash: z.optional(z.string()),
      parked: z.optional(z.boolean()),
      settled: z.optional(z.boolean()),
    }),
  ),
} satisfies Record<RunField, unknown>;

const approvalFields = {
  approvalId: z.string(),
  taskId: z.string(),
  runId: z.string(),
  digest: z.string(),
  toolNames: z.array(z.string()),
  requestedAt: z.string(),
  decision: z.enum(approvalDecisions),
  decidedBy: z.optional(z.string()),
  decidedAt: z.optional(z.string()),
  reason: z.optional(z.string()),
  expiresAt: z.number(),
} satisfies Record<keyof ApprovalRecord, unknown>;

const pushConfigFields = {
  taskId: z.string(),
  configId: z.string(),
  url: z.string(),
  scheme: z.optional(z.string()),
  sealedCredentials: z.optional(blob),
  sealedToken: z.optional(blob),
  createdAt: z.string(),
  protocolVersion: z.optional(z.enum(['1.0', '0.3', '1.1'])),
  expiresAt: z.number(),
  afterRevision: z.optional(z.number()),
} satisfies Record<keyof StoredPushConfig, unknown>;

const allTaskFields = fieldsOf(taskFields);
const allRunFields = fieldsOf(runFields);
const allApprovalFields = fieldsOf(approvalFields);
const allPushConfigFields = fieldsOf(pushConfigFields);

const embeddedRunShape = itemShape(runFields, allRunFields);

export const embeddedRunSchema = z.object(embeddedRunShape);
export type EmbeddedRun = z.infer<typeof embeddedRunSchema>;

/** A run's lease, set exactly while it has one, and the key of the sparse lease index with it. */
const leaseShape = { leaseUntil: z.optional(z.number()), leaseShard: z.optional(z.string()) };

/**
 * A run that is not its task's current run (a follow-up replaced it), or one stored before task
 * rows held their run: its own row in the task's partition.
 */
export const runItemSchema = z.object({
  ...embeddedRunShape,
  pk: z.string(),
  sk: z.string().check(z.startsWith(runPrefix)),
  taskId: z.string(),
  ...leaseShape,
});
export type RunItem = z.infer<typeof runItemSchema>;

export const taskItemSchema = sealedItem({
  pk: z.string(),
  sk: z.enum(['TASK']),
  ...itemShape(taskFields, allTaskFields),
  /** The task's current run: one item, so one write commits both. */
  run: z.optional(embeddedRunSchema),
  /** The current run's lease. */
  ...leaseShape,
  /**
   * The push mark: set by the write that stores the task's first push config,
   * never by a task write (`toTaskRowUpdate` leaves it out), never removed.
   */
  pushConfigured: z.optional(z.boolean()),
});
export type TaskItem = z.infer<typeof taskItemSchema>;

export const viewItemSchema = sealedItem({
  pk: z.string(),
  sk: z.enum(['VIEW']),
  ...itemShape(taskFields, viewFields),
  /** The task's agent; absent for the root agent, and on views written before. */
  profileId: z.optional(z.string()),
  /** The keys of the ListTasks index. */
  ownerKey: z.string(),
  ownerSort: z.string(),
});
export type ViewItem = z.infer<typeof viewItemSchema>;

export const eventItemSchema = sealedItem({
  pk: z.string(),
  sk: z.string().check(z.startsWith(keys.eventPrefix)),
  ...itemShape(taskFields, eventFields),
  /** The task row's push mark at this revision; absent when unmarked. */
  pushConfigured: z.optional(z.boolean()),
});
export type EventItem = z.infer<typeof eventItemSchema>;

/** A part of a history segment; its first part says how many parts and messages the segment has. */
export const historySegmentItemSchema = z.object({
  pk: z.string(),
  sk: z.string().check(z.startsWith(keys.historyPrefix)),
  revision: z.int().check(z.positive()),
  part: z.int().check(z.nonnegative()),
  parts: z.int().check(z.positive()),
  messages: z.int().check(z.nonnegative()),
  data: blob,
  expiresAt: z.number(),
});
export type HistorySegmentItem = z.infer<typeof historySegmentItemSchema>;

export const approvalItemSchema = z.object({
  pk: z.string(),
  sk: z.string().check(z.startsWith(keys.approvalPrefix)),
  ...itemShape(approvalFields, allApprovalFields),
  /** Key of the sparse pending index: set exactly while the decision is PENDING. */
  pendingKey: z.optional(z.string()),
});
export type ApprovalItem = z.infer<typeof approvalItemSchema>;

export const pushConfigItemSchema = sealedItem({
  pk: z.string(),
  sk: z.string().check(z.startsWith(keys.pushPrefix)),
  ...itemShape(pushConfigFields, allPushConfigFields),
});
export type PushConfigItem = z.infer<typeof pushConfigItemSchema>;

/** A saved profile (no TTL: it lives until it is replaced or deleted). */
export const profileItemSchema = z.object({
  pk: z.enum(['PROFILES']),
  sk: z.string().check(z.startsWith(keys.profilePrefix)),
  profileId: z.string(),
  profile: jsonObject,
  updatedAt: z.string(),
});
export type ProfileItem = z.infer<typeof profileItemSchema>;

export const counterItemSchema = z.looseObject({
  pk: z.string(),
  sk: z.string().check(z.startsWith(counterKeys.prefix)),
  n: z.optional(z.number()),
  expiresAt: z.number(),
});
export type CounterItem = z.infer<typeof counterItemSchema>;

export const toTaskItem = (task: StoredTask): TaskItem =>
  toSealedItem({ ...keys.task(task.taskId), ...toAttributes(task, allTaskFields) });

export const fromTaskItem = (item: TaskItem): StoredTask => ({
  ...fromAttributes<StoredTask, TaskField>(item, allTaskFields),
  ...(item.pushConfigured === true && { pushConfigured: true }),
});

export const toViewItem = (view: JournalView): ViewItem =>
  toSealedItem({
    ...keys.view(view.taskId),
    ...toAttributes(view, viewFields),
    profileId: view.profileId === rootAgent ? undefined : view.profileId,
    ownerKey: keys.ownerKey(view.owner.tenant, view.owner.principal, view.profileId),
    ownerSort: keys.ownerSort(view.statusTimestamp, view.taskId),
  });

export const fromViewItem = (item: ViewItem): JournalView =>
  fromAttributes<JournalView, keyof JournalView>(
    { ...item, profileId: item.profileId ?? rootAgent },
    viewFields,
  );

export const toEventItem = (event: JournalEvent): EventItem =>
  toSealedItem({
    ...keys.event(event.taskId, event.revision),
    ...toAttributes(event, eventFields),
    pushConfigured: event.pushConfigured,
  });

export const fromEventItem = (item: EventItem): JournalEvent => ({
  ...fromAttributes<JournalEvent, (typeof eventFields)[number]>(item, eventFields),
  ...(item.pushConfigured === true && { pushConfigured: true }),
});

/** A run's own attributes, without keys or lease (the row that holds it carries those). */
export const toEmbeddedRun = (run: RunRecord): EmbeddedRun =>
  withoutUndefined({
    ...toAttributes(run, allRunFields),
    // The same shapes; the item's type only drops `readonly`.
    attempts: [...run.attempts],
    approval: run.approval && withoutUndefined({ ...run.approval }),
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

const fromRunFields = (run: EmbeddedRun, taskId: string, leaseUntil: number | undefined): RunRecord => ({
  ...fromAttributes<RunRecord, RunField>(run, allRunFields),
  taskId,
  leaseUntil,
});

export const fromRunItem = (item: RunItem): RunRecord => fromRunFields(item, item.taskId, item.leaseUntil);

/** The current run its task row holds, if any. */
export const runOfTaskItem = (item: TaskItem): RunRecord | undefined =>
  item.run && fromRunFields(item.run, item.taskId, item.leaseUntil);

export const toApprovalItem = (approval: ApprovalRecord): ApprovalItem =>
  withoutUndefined({
    ...keys.approval(approval.taskId, approval.approvalId),
    ...toAttributes(approval, allApprovalFields),
    toolNames: [...approval.toolNames],
    pendingKey: approval.decision === 'PENDING' ? keys.pendingApprovals : undefined,
  });

export const fromApprovalItem = (item: ApprovalItem): ApprovalRecord =>
  fromAttributes<ApprovalRecord, keyof ApprovalRecord>(item, allApprovalFields);

export const toPushConfigItem = (config: StoredPushConfig): PushConfigItem =>
  toSealedItem({
    ...keys.push(config.taskId, config.configId),
    ...toAttributes(config, allPushConfigFields),
  });

export const fromPushConfigItem = (item: PushConfigItem): StoredPushConfig =>
  fromAttributes<StoredPushConfig, keyof StoredPushConfig>(item, allPushConfigFields);
