import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ItemTooLargeError, VersionConflictError } from '../../domain/errors.ts';
import type {
  CommitResult,
  DelegationMarkOutcome,
  ItemWrite,
  TaskRepository,
  WritePlan,
} from '../../domain/ports.ts';
import type { HistorySegment, SealedBlob, StoredTask } from '../../domain/projection.ts';
import { transactedImage } from '../../domain/row-writes.ts';
import type { RunDelegation, RunFence, RunRecord } from '../../domain/task.ts';
import { isCanceledByCondition, isItemTooLarge } from './condition-failures.ts';
import {
  type ChunkedTaskWrite,
  chunkTaskWrite,
  transactionContentBytes,
  transactionItems,
} from './content-chunks.ts';
import { DynamoDbHistorySegments } from './dynamodb-history-segments.ts';
import {
  fromRunItem,
  fromTaskItem,
  runItemSchema,
  runOfTaskItem,
  type TaskItem,
  taskItemSchema,
  toRunItem,
} from './entities.ts';
import { keys } from './keys.ts';
import {
  type RowUpdate,
  rowUpdateOf,
  toPutInput,
  toTaskRowUpdate,
  toTransactWriteInput,
} from './write-plan.ts';

/**
 * Tasks and runs in the state table. A task's current run lives in the task's row (docs/data-model.md,
 * "State table"), so the writes that move both are one conditional UpdateItem; an earlier run has its own
 * `RUN#` row. A use case's plan names the row write and the items of their own;
 * a plan that touches several items is one transaction (a single item is atomic at half a
 * transaction's units).
 */
export class DynamoDbTaskRepository implements TaskRepository {
  private readonly history: DynamoDbHistorySegments;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {
    this.history = new DynamoDbHistorySegments(client, tableName);
  }

  /**
   * A plan of one write is one conditional write; the row write returns the row as
   * committed (`ALL_NEW`, no read units). More writes are one transaction, which returns nothing:
   * its row's image is then the task it wrote, when that is certain (`transactedImage`).
   * A follow-up's replaced run is copied to its own row first (a plain put: the copy of a run the
   * row still holds is harmless, reads prefer the row).
   */
  async commit(plan: WritePlan): Promise<CommitResult> {
    try {
      return await this.write(plan);
    } catch (error) {
      if (isItemTooLarge(error)) {
        throw new ItemTooLargeError('An item of the write is over the item size limit', {}, { cause: error });
      }
      throw error;
    }
  }

  private async write(planned: WritePlan): Promise<CommitResult> {
    const { plan, chunks } = this.withChunks(await this.withHistorySegments(planned));
    const row = rowUpdateOf(plan);
    const items = plan.items ?? [];
    if (row?.archive !== undefined && row.archive !== 'none')
      await this.client.send(new PutCommand({ TableName: this.tableName, Item: toRunItem(row.archive) }));
    const [onlyItem] = items;
    if (chunks.length === 0 && row !== undefined && items.length === 0)
      return { committed: await this.updateRow(row) };
    if (chunks.length === 0 && row === undefined && onlyItem !== undefined && items.length === 1) {
      await this.put(onlyItem);
      return {};
    }
    try {
      const input = toTransactWriteInput(plan, this.tableName, randomUUID());
      await this.client.send(
        new TransactWriteCommand({ ...input, TransactItems: [...(input.TransactItems ?? []), ...chunks] }),
      );
      const committed = row && transactedImage(row, row.marksPush === true);
      return committed === undefined ? {} : { committed };
    } catch (error) {
      if (isCanceledByCondition(error)) {
        throw new VersionConflictError('A concurrent write changed the task or run', {}, { cause: error });
      }
      throw error;
    }
  }

  /**
   * The plan after its history segment writes, which go before the row write that refers to them
   * (docs/data-model.md, "History"): its task as the row stores it.
   */
  private async withHistorySegments(plan: WritePlan): Promise<WritePlan> {
    const row = plan.row;
    if (row?.task === undefined) return plan;
    const task = await this.history.beforeRowWrite(row.task, row.before);
    return task === row.task ? plan : { ...plan, row: { ...row, task } };
  }

  readHistorySegments(taskId: string, below: number, last?: number): Promise<readonly HistorySegment[]> {
    return this.history.read(taskId, below, last);
  }

  /**
   * The plan with its task's content as the row stores it, and the chunk writes that go with it
   * (docs/data-model.md, "Large content"): none for a task whose content fits its row, so its write is as
   * before.
   */
  private withChunks(plan: WritePlan): { plan: WritePlan; chunks: ChunkedTaskWrite['writes'] } {
    const row = plan.row;
    if (row?.task === undefined) return { plan, chunks: [] };
    const chunked = chunkTaskWrite(row.task, row.before, this.tableName);
    const count = chunked.writes.length + (plan.items?.length ?? 0) + 1;
    if (chunked.writes.length > 0 && (chunked.bytes > transactionContentBytes || count > transactionItems)) {
      throw new ItemTooLargeError('The content of the write is over the transaction size limit', {
        bytes: String(chunked.bytes),
        items: String(count),
      });
    }
    return { plan: { ...plan, row: { ...row, task: chunked.task } }, chunks: chunked.writes };
  }

  /** The row as the update left it; undefined when a retried update found its own write applied. */
  private async updateRow(row: RowUpdate): Promise<StoredTask | undefined> {
    const update = toTaskRowUpdate(row, this.tableName);
    try {
      const { Attributes } = await this.client.send(
        new UpdateCommand({ ...update.input, ReturnValues: 'ALL_NEW' }),
      );
      return Attributes && fromTaskItem(taskItemSchema.parse(Attributes));
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const stored = error.Item && unmarshall(error.Item);
      // The SDK retried an update whose first answer was lost: if the row already holds what this
      // update writes, the write happened (what a transaction's ClientRequestToken gives).
      if (retried(error) && stored !== undefined && holds(stored, update.sets, update.removes))
        return undefined;
      throw new VersionConflictError('A concurrent write changed the task or run', {}, { cause: error });
    }
  }

  private async put(write: ItemWrite): Promise<void> {
    const input = toPutInput(write, this.tableName);
    try {
      await this.client.send(new PutCommand(input));
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // As in `updateRow`: a retried put that meets its own write has happened.
      const stored = error.Item && unmarshall(error.Item);
      if (retried(error) && stored !== undefined && sameItem(stored, input.Item)) return;
      throw new VersionConflictError('A concurrent write changed the task or run', {}, { cause: error });
    }
  }

  async getTask(taskId: string): Promise<StoredTask | undefined> {
    return (await this.readTaskRow(taskId)).task;
  }

  async markPushConfigured(taskId: string): Promise<StoredTask | undefined> {
    const { input } = toTaskRowUpdate({ taskId, marksPush: true }, this.tableName);
    try {
      // An update's returned image costs no read units.
      const { Attributes } = await this.client.send(new UpdateCommand({ ...input, ReturnValues: 'ALL_NEW' }));
      return Attributes && fromTaskItem(taskItemSchema.parse(Attributes));
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }

  /**
   * A RUNNING run is its task's current run (docs/data-model.md, "State table"): the fence is one
   * update of the task row's `run.fence`, conditioned on that run, its status, its version and no
   * cancel request; the version stays, so the executor's next write keeps its expected version.
   */
  async fenceRun(run: RunRecord, fence: RunFence): Promise<'fenced' | 'lost' | 'canceled'> {
    const outcome = await this.updateRunInPlace(
      run,
      'SET #run.#fence = :fence',
      { '#fence': 'fence' },
      {
        ':fence': fence,
      },
    );
    return outcome === 'updated' ? 'fenced' : outcome;
  }

  async holdDelegation(
    run: RunRecord,
    hold: { readonly delegation: RunDelegation; readonly sealedSuspension: SealedBlob } | undefined,
  ): Promise<'held' | 'lost' | 'canceled'> {
    const names = { '#delegation': 'delegation', '#suspension': 'suspension', '#fence': 'fence' };
    const outcome =
      hold === undefined
        ? await this.updateRunInPlace(run, 'REMOVE #run.#delegation, #run.#suspension', {
            '#delegation': 'delegation',
            '#suspension': 'suspension',
          })
        : await this.updateRunInPlace(
            run,
            'SET #run.#delegation = :delegation, #run.#suspension = :suspension REMOVE #run.#fence',
            names,
            { ':delegation': hold.delegation, ':suspension': hold.sealedSuspension },
          );
    return outcome === 'updated' ? 'held' : outcome;
  }

  /**
   * The two marks of a delegated wait (docs/reliability.md "Delegated calls") as one update of the
   * task row's `run.delegation` each, neither moving the version: `parked` on the run at the
   * version its executor holds, not asked to cancel, waiting for the same remote task, not
   * `settled`; `settled` on the run waiting with the same token hash, not `parked`. Each one's
   * condition excludes the other's mark, so exactly one of a park and an early notification
   * writes, and the loser reads which one won from the old image.
   */
  async markDelegation(run: RunRecord, mark: 'parked' | 'settled'): Promise<DelegationMarkOutcome> {
    const delegation = run.delegation;
    if (delegation === undefined) return 'lost';
    const names = {
      '#run': 'run',
      '#runId': 'runId',
      '#status': 'status',
      '#delegation': 'delegation',
      '#parked': 'parked',
      '#settled': 'settled',
    };
    const common = '#run.#runId = :runId AND #run.#status = :running';
    const input =
      mark === 'parked'
        ? {
            UpdateExpression: 'SET #run.#delegation.#parked = :true',
            ConditionExpression: `${common} AND #run.#version = :version AND #run.#cancelRequested = :false AND #run.#delegation.#remoteTaskId = :remoteTaskId AND attribute_not_exists(#run.#delegation.#settled)`,
            ExpressionAttributeNames: {
              ...names,
              '#version': 'version',
              '#cancelRequested': 'cancelRequested',
              '#remoteTaskId': 'remoteTaskId',
            },
            ExpressionAttributeValues: {
              ':runId': run.runId,
              ':running': 'RUNNING',
              ':true': true,
              ':false': false,
              ':version': run.version,
              ':remoteTaskId': delegation.remoteTaskId,
            },
          }
        : {
            UpdateExpression: 'SET #run.#delegation.#settled = :true',
            ConditionExpression: `${common} AND #run.#delegation.#tokenHash = :tokenHash AND attribute_not_exists(#run.#delegation.#parked)`,
            ExpressionAttributeNames: { ...names, '#tokenHash': 'tokenHash' },
            ExpressionAttributeValues: {
              ':runId': run.runId,
              ':running': 'RUNNING',
              ':true': true,
              ':tokenHash': delegation.tokenHash ?? '',
            },
          };
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.task(run.taskId),
          ...input,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'marked';
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const old = error.Item?.run?.M;
      const waiting =
        old?.runId?.S === run.runId &&
        old.status?.S === 'RUNNING' &&
        old.delegation?.M?.remoteTaskId?.S === delegation.remoteTaskId;
      if (!waiting) return 'lost';
      const marks = old.delegation?.M;
      if (mark === 'settled') return marks?.parked?.BOOL === true ? 'parked' : 'lost';
      // A cancel's flag moves the version too; it is named before the version is compared.
      if (old.cancelRequested?.BOOL === true) return 'canceled';
      if (old.version?.N !== String(run.version)) return 'lost';
      return marks?.settled?.BOOL === true ? 'settled' : 'lost';
    }
  }

  /**
   * One write on a RUNNING run at the version its executor holds, not asked to cancel, that
   * does not move the version (I-LOCK: it changes no status, ceiling or answer).
   */
  private async updateRunInPlace(
    run: RunRecord,
    update: string,
    names: Record<string, string>,
    values: Record<string, unknown> = {},
  ): Promise<'updated' | 'lost' | 'canceled'> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.task(run.taskId),
          UpdateExpression: update,
          ConditionExpression:
            '#run.#runId = :runId AND #run.#status = :running AND #run.#version = :version AND #run.#cancelRequested = :false',
          ExpressionAttributeNames: {
            '#run': 'run',
            ...names,
            '#runId': 'runId',
            '#status': 'status',
            '#version': 'version',
            '#cancelRequested': 'cancelRequested',
          },
          ExpressionAttributeValues: {
            ...values,
            ':runId': run.runId,
            ':running': 'RUNNING',
            ':version': run.version,
            ':false': false,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'updated';
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const old = error.Item?.run?.M;
      return old?.runId?.S === run.runId &&
        old.status?.S === 'RUNNING' &&
        old.version?.N === String(run.version) &&
        old.cancelRequested?.BOOL === true
        ? 'canceled'
        : 'lost';
    }
  }

  async getRun(taskId: string, runId: string): Promise<RunRecord | undefined> {
    return (await this.getRunWithTask(taskId, runId)).run;
  }

  /**
   * The run and its task in one strongly consistent read of the task row when the run is the
   * task's current one (docs/data-model.md, "State table"); an earlier run is read from its own row.
   */
  async getRunWithTask(
    taskId: string,
    runId: string,
  ): Promise<{ run: RunRecord | undefined; task: StoredTask | undefined }> {
    const row = await this.readTaskRow(taskId);
    if (row.run?.runId === runId) return row;
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.run(taskId, runId), ConsistentRead: true }),
    );
    return { run: Item ? fromRunItem(runItemSchema.parse(Item)) : undefined, task: row.task };
  }

  private async readTaskRow(
    taskId: string,
  ): Promise<{ task: StoredTask | undefined; run: RunRecord | undefined }> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.task(taskId), ConsistentRead: true }),
    );
    if (Item === undefined) return { task: undefined, run: undefined };
    const item: TaskItem = taskItemSchema.parse(Item);
    return { task: fromTaskItem(item), run: runOfTaskItem(item) };
  }
}

const retried = (error: ConditionalCheckFailedException): boolean => (error.$metadata?.attempts ?? 1) > 1;

/** A value as canonical JSON: attributes sorted, binary as base64, so two copies of one value compare equal. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, function (this: Record<string, unknown>, key: string, item: unknown) {
    const raw = this[key];
    if (raw instanceof Uint8Array) return Buffer.from(raw).toString('base64');
    return item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : 1)))
      : item;
  });

const sameItem = (stored: Record<string, unknown>, sent: Record<string, unknown> | undefined): boolean =>
  canonical(stored) === canonical(sent);

/**
 * The stored item (as DynamoDB returned it on the failed condition) holds what a write sets and
 * removes; a dotted name is a path into a map (`run.version`).
 */
const holds = (
  stored: Record<string, unknown>,
  sets: Readonly<Record<string, unknown>> | undefined,
  removes: readonly string[],
): boolean =>
  Object.entries(sets ?? {}).every(
    ([name, value]) => canonical(valueAt(stored, name)) === canonical(value),
  ) && removes.every((name) => valueAt(stored, name) === undefined);

const valueAt = (item: Record<string, unknown>, path: string): unknown =>
  path
    .split('.')
    .reduce<unknown>(
      (map, part) =>
        map !== null && typeof map === 'object' ? (map as Record<string, unknown>)[part] : undefined,
      item,
    );
