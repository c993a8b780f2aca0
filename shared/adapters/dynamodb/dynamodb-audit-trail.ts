import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  type AuditContent,
  type AuditEntry,
  type AuditRowSummary,
  type AuditTrail,
  auditContentAt,
  auditStepKinds,
  type RunStarts,
  type StartOutcome,
  type StartSlot,
} from '../../domain/audit.ts';
import type { Sealer } from '../../domain/ports.ts';
import { isAtLeast, type PrivacyLevel } from '../../domain/privacy.ts';
import { toolEffects } from '../../domain/tools.ts';
import * as z from '../../zod.ts';
import { withoutUndefined } from './entities.ts';
import { auditKeys, auditSeqOfKey } from './keys.ts';
import { queryAll } from './query-all.ts';

/**
 * The audit table (docs/data-model.md): one item per run step, in the task's partition so the purge
 * and the admin command find them with one query. Metadata is stored as attributes; content,
 * present only at `redacted`/`full`, is sealed like task content (bound to the row), so a scan
 * of the table shows no plaintext at any ceiling.
 *
 * Entity: `pk = TASK#<taskId>`, `sk = AUDIT#<runId>#<at>#<seq>` (ordered by time within a run;
 * `seq` is a per-process counter that keeps two steps of the same millisecond apart — a run is
 * worked by one claimed executor at a time). A claim's start marker (docs/data-model.md, "Audit table") has a
 * key the reaper can compute from the run row, `AUDIT#<runId>#0#<version>`, and carries its `seq` as an
 * attribute; `listForTask` puts every row in time order.
 */

const level = z.enum(['none', 'metadata', 'redacted', 'full']);
const ceilings = z.object({ audit: level, answer: level });
const lengths = z.object({ parts: z.number(), characters: z.number() });

export const auditItemSchema = z.object({
  pk: z.string(),
  sk: z.string().check(z.startsWith(auditKeys.prefix)),
  kind: z.enum(auditStepKinds),
  taskId: z.string(),
  runId: z.string(),
  at: z.string(),
  level: z.enum(['metadata', 'redacted', 'full']),
  providerId: z.optional(z.string()),
  outcome: z.optional(z.string()),
  reason: z.optional(z.string()),
  durationMs: z.optional(z.number()),
  inputTokens: z.optional(z.number()),
  outputTokens: z.optional(z.number()),
  toolNames: z.optional(z.array(z.string())),
  effect: z.optional(z.enum(toolEffects)),
  from: z.optional(ceilings),
  to: z.optional(ceilings),
  messageLength: z.optional(lengths),
  artifactsLength: z.optional(lengths),
  toolLength: z.optional(lengths),
  /** A start marker's place among the run's rows of the same millisecond (its key has no `seq`). */
  seq: z.optional(z.number()),
  /** Sealed JSON of the content; only at `redacted`/`full`. */
  content: z.optional(z.custom<Uint8Array>((value) => value instanceof Uint8Array)),
  expiresAt: z.number(),
});
export type AuditItem = z.infer<typeof auditItemSchema>;

/** The seal context field of a row's content: a blob moved to another row fails to open. */
export const auditContentField = (sk: string): string => `audit:${sk}`;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

let sequence = 0;
const nextSequence = (): number => {
  sequence = (sequence + 1) % 1_000_000;
  return sequence;
};

/** Time order within a run (runs in key order), then the order of writing within a millisecond. */
const inTimeOrder = (a: AuditItem, b: AuditItem): number =>
  compare(`${a.runId}#`, `${b.runId}#`) || compare(a.at, b.at) || seqOf(a) - seqOf(b);
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const seqOf = (item: AuditItem): number => item.seq ?? auditSeqOfKey(item.sk);

/** A start slot is written only while free (docs/data-model.md, "Audit table"). */
const slotFree = 'attribute_not_exists(sk)';

export class DynamoDbAuditTrail implements AuditTrail, RunStarts {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly sealer: Sealer,
  ) {}

  async record(entry: AuditEntry): Promise<void> {
    await this.put(entry, auditKeys.sk(entry.runId, entry.at, nextSequence()));
  }

  async recordStart(entry: AuditEntry, version: number): Promise<StartOutcome> {
    // Only the claim whose last write made `version` writes a `claim` row there: one found is its own.
    return (await this.intoSlot(entry, version)) === 'claim' ? 'recorded' : 'taken';
  }

  async take(entry: AuditEntry, version: number): Promise<boolean> {
    // A `requeue` row found is the reaper's own, from a tick whose slot could not be freed.
    return (await this.intoSlot(entry, version)) === 'requeue';
  }

  async anyStarted(taskId: string, runId: string): Promise<boolean> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': auditKeys.pk(taskId), ':prefix': auditKeys.startPrefix(runId) },
      ProjectionExpression: '#kind',
      ExpressionAttributeNames: { '#kind': 'kind' },
      ConsistentRead: true,
    });
    return items.some((item) => item.kind === 'claim');
  }

  /** Writes the entry into the start slot of `version` if it is free; the kind of the entry the slot then holds. */
  private async intoSlot(entry: AuditEntry, version: number): Promise<string | undefined> {
    const sk = auditKeys.start(entry.runId, version);
    try {
      await this.put(entry, sk, { seq: nextSequence() });
      return entry.kind;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // A read of the slot's kind alone, not ReturnValuesOnConditionCheckFailure: that returns the
      // whole row, and the reaper must not receive a claim's sealed content. Only on a lost race.
      const { Item } = await this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: auditKeys.pk(entry.taskId), sk },
          ProjectionExpression: '#kind',
          ExpressionAttributeNames: { '#kind': 'kind' },
          ConsistentRead: true,
        }),
      );
      return typeof Item?.kind === 'string' ? Item.kind : undefined;
    }
  }

  async release(slot: StartSlot): Promise<void> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: auditKeys.pk(slot.taskId), sk: auditKeys.start(slot.runId, slot.version) },
          // Only the reaper's own entry: a claim's marker is never removed here.
          ConditionExpression: '#kind = :requeue',
          ExpressionAttributeNames: { '#kind': 'kind' },
          ExpressionAttributeValues: { ':requeue': 'requeue' },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  /** A start slot (`start` given) is written only if free. */
  private async put(entry: AuditEntry, sk: string, start?: { readonly seq: number }): Promise<void> {
    const { content, ...metadata } = entry;
    const sealed = await this.sealContent(entry, sk, content);
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          ...withoutUndefined(metadata),
          pk: auditKeys.pk(entry.taskId),
          sk,
          ...(sealed ? { content: sealed } : {}),
          ...(start ? { seq: start.seq } : {}),
        },
        ...(start ? { ConditionExpression: slotFree } : {}),
      }),
    );
  }

  /** Content only above `metadata`; never written in plaintext. A sealing failure rejects: nothing is written. */
  private async sealContent(
    entry: AuditEntry,
    sk: string,
    content: AuditContent | undefined,
  ): Promise<Uint8Array | undefined> {
    if (content === undefined || entry.level === 'metadata') return undefined;
    return this.sealer.seal(encoder.encode(JSON.stringify(content)), {
      taskId: entry.taskId,
      field: auditContentField(sk),
    });
  }

  async listForTask(taskId: string): Promise<AuditRowSummary[]> {
    return (await this.queryItems(taskId, auditKeys.prefix))
      .sort(inTimeOrder)
      .map(({ pk: _pk, sk: _sk, seq: _seq, content, ...row }) => ({
        ...row,
        hasContent: content !== undefined,
      }));
  }

  async scrubRun(taskId: string, runId: string, ceiling: PrivacyLevel): Promise<void> {
    for (const item of await this.queryItems(taskId, `${auditKeys.prefix}${runId}#`)) {
      if (isAtLeast(ceiling, item.level)) continue;
      const key = { pk: item.pk, sk: item.sk };
      if (ceiling === 'none') {
        await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: key }));
      } else if (ceiling === 'metadata' || item.content === undefined) {
        await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: key,
            UpdateExpression: 'SET #level = :level REMOVE #content',
            ExpressionAttributeNames: { '#level': 'level', '#content': 'content' },
            ExpressionAttributeValues: { ':level': ceiling },
          }),
        );
      } else {
        // full → redacted: open, redact with the same rules as answers, seal again in place.
        const context = { taskId, field: auditContentField(item.sk) };
        const content = JSON.parse(decoder.decode(await this.sealer.open(item.content, context)));
        const sealed = await this.sealer.seal(
          encoder.encode(JSON.stringify(auditContentAt('redacted', content))),
          context,
        );
        await this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: key,
            UpdateExpression: 'SET #level = :level, #content = :content',
            ExpressionAttributeNames: { '#level': 'level', '#content': 'content' },
            ExpressionAttributeValues: { ':level': 'redacted', ':content': sealed },
          }),
        );
      }
    }
  }

  private async queryItems(taskId: string, prefix: string): Promise<AuditItem[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': auditKeys.pk(taskId), ':prefix': prefix },
      ConsistentRead: true,
    });
    return items.map((raw) => auditItemSchema.parse(raw));
  }
}
