import type { BackstopJournal, JournalLedger, TaskRevision } from '../../domain/ports.ts';
import { batchGetAll } from './batch-get-all.ts';
import { DynamoDbJournalWriter } from './dynamodb-journal-writer.ts';
import { isViewKey, keys, revisionOfEventKey } from './keys.ts';

/**
 * The stream projector's journal: the writer's writes and reads, and the one
 * read per stream batch. Apart from the writer so that the functions that only write through
 * (rpc, executor, reaper) neither bundle nor need `dynamodb:BatchGetItem`.
 */
export class DynamoDbBackstopJournal extends DynamoDbJournalWriter implements BackstopJournal {
  /**
   * The backstop's read per stream batch: one eventually consistent BatchGetItem
   * (per 100 keys) of every asked revision's event and every task's view, projected to their
   * keys and revision — one request for the whole batch instead of one per task. Each found item
   * is billed like a GetItem of it.
   */
  async projectedAll(revisions: readonly TaskRevision[]): Promise<ReadonlyMap<string, JournalLedger>> {
    const taskIds = [...new Set(revisions.map((entry) => entry.taskId))];
    const eventKeys = new Map(
      revisions.map((entry) => [
        `${entry.taskId}#${entry.revision}`,
        keys.event(entry.taskId, entry.revision),
      ]),
    );
    const items = await batchGetAll(
      this.client,
      this.tableName,
      [...taskIds.map((taskId) => keys.view(taskId)), ...eventKeys.values()],
      { projection: 'pk, sk, #revision', names: { '#revision': 'revision' } },
    );
    const found = new Map<string, { events: Set<number>; viewRevision?: number }>();
    for (const taskId of taskIds) found.set(keys.view(taskId).pk, { events: new Set() });
    for (const item of items) {
      const ledger = found.get(String(item.pk));
      if (ledger === undefined) continue;
      if (isViewKey(String(item.sk))) ledger.viewRevision = Number(item.revision);
      else ledger.events.add(revisionOfEventKey(String(item.sk)));
    }
    return new Map(
      taskIds.map((taskId) => {
        const { events, viewRevision } = found.get(keys.view(taskId).pk) ?? { events: new Set<number>() };
        return [taskId, { events, ...(viewRevision !== undefined && { viewRevision }) }];
      }),
    );
  }
}
