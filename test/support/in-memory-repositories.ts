import type { ApprovalRecord } from '../../shared/domain/approvals.ts';
import { VersionConflictError } from '../../shared/domain/errors.ts';
import { historyExpiryOf, historyWriteOf, newestSegments } from '../../shared/domain/history.ts';
import type {
  CommitResult,
  DelegationMarkOutcome,
  JournalLedger,
  JournalRepository,
  JournalState,
  PushDeliveryLog,
  PushDeliveryPage,
  TaskRepository,
  TaskRevision,
  ViewFilter,
  ViewPage,
  ViewQuery,
  WritePlan,
} from '../../shared/domain/ports.ts';
import type {
  HistorySegment,
  JournalEvent,
  JournalView,
  Projection,
  SealedBlob,
  StoredTask,
} from '../../shared/domain/projection.ts';
import {
  type DeliveryAttemptEntry,
  isFinalDelivery,
  type PushDeliveryRecord,
  type StoredPushConfig,
} from '../../shared/domain/push.ts';
import { transactedImage } from '../../shared/domain/row-writes.ts';
import { isOwnTask, type RunDelegation, type RunFence, type RunRecord } from '../../shared/domain/task.ts';

/**
 * Fakes of the repositories with the same all-or-nothing, version-conditioned semantics as the
 * DynamoDB adapters (checked against the emulator in test/integration). For unit tests only.
 */
export class InMemoryTaskRepository implements TaskRepository {
  readonly tasks = new Map<string, StoredTask>();
  readonly runs = new Map<string, RunRecord>();
  /** Push configs committed with a task (inline SendMessage config), by `taskId#configId`. */
  readonly pushConfigs = new Map<string, StoredPushConfig>();
  readonly approvals = new Map<string, ApprovalRecord>();
  /** History segments by task and revision. */
  readonly historySegments = new Map<string, Map<number, HistorySegment>>();
  commits = 0;
  /** Runs before each commit is applied; lets a test interleave a concurrent writer. */
  beforeCommit: ((plan: WritePlan) => Promise<void> | void) | undefined;

  async commit(plan: WritePlan): Promise<CommitResult> {
    const hook = this.beforeCommit;
    if (hook) {
      this.beforeCommit = undefined;
      await hook(plan);
    }
    const row = plan.row;
    const items = plan.items ?? [];
    if (row) {
      const current = this.tasks.get(row.taskId);
      const { revision, runVersion, leaseExpiredBefore, runNotParked } = row.expect;
      if (
        revision === 'absent'
          ? current !== undefined
          : revision !== undefined && current?.revision !== revision
      )
        throw new VersionConflictError('task revision mismatch');
      // The row's run is the task's current one (as the adapter: one row holds both).
      const rowRun = current && this.runs.get(current.currentRunId);
      if (
        runVersion !== undefined &&
        (rowRun?.runId !== row.run?.runId ||
          rowRun?.version !== runVersion ||
          (leaseExpiredBefore !== undefined && !((rowRun?.leaseUntil ?? 0) < leaseExpiredBefore)))
      )
        throw new VersionConflictError('run version mismatch');
      if (runNotParked && rowRun?.delegation?.parked === true) throw new VersionConflictError('run parked');
      if (
        row.archive !== undefined &&
        (row.archive === 'none'
          ? rowRun !== undefined
          : rowRun?.runId !== row.archive.runId || rowRun.version !== row.archive.version)
      )
        throw new VersionConflictError('replaced run changed');
    }
    for (const write of items) {
      if (write.entity === 'run') {
        const current = this.runs.get(write.item.runId);
        const ok =
          write.expect === 'absent' ? current === undefined : current?.version === write.expect.version;
        if (!ok) throw new VersionConflictError('run version mismatch');
      } else if (write.entity === 'approval') {
        const current = this.approvals.get(write.item.approvalId);
        const ok =
          write.expect === 'absent'
            ? current === undefined
            : current?.decision === write.expect.decision && current.digest === write.expect.digest;
        if (!ok) throw new VersionConflictError('approval no longer pending');
      } else if (row?.task === undefined || row.taskId !== write.item.taskId) {
        throw new Error('A push config is committed with its task (decision 0041)');
      }
    }
    // As the adapter: a task write keeps the row's push mark and never sets it; a push config
    // committed with its task marks the row.
    const marked = items.some((write) => write.entity === 'push');
    let committed: StoredTask | undefined;
    if (row?.task) {
      const {
        pushConfigured: _ignored,
        historyWrite: _written,
        ...task
      } = this.writeHistory(row.task, row.before);
      const mark = marked || this.tasks.get(task.taskId)?.pushConfigured;
      committed = mark ? { ...task, pushConfigured: true } : task;
      this.tasks.set(task.taskId, committed);
    }
    // As the adapter: a write of the run's version and lease keeps the rest of the stored run.
    const storedRun = row?.run && this.runs.get(row.run.runId);
    if (row?.run)
      this.runs.set(
        row.run.runId,
        row.runChanges === 'version-and-lease' && storedRun !== undefined
          ? { ...storedRun, version: row.run.version, leaseUntil: row.run.leaseUntil }
          : row.run,
      );
    for (const write of items) {
      if (write.entity === 'run') this.runs.set(write.item.runId, write.item);
      else if (write.entity === 'approval') this.approvals.set(write.item.approvalId, write.item);
      else this.pushConfigs.set(`${write.item.taskId}#${write.item.configId}`, write.item);
    }
    this.commits++;
    // As the adapter: a single row write returns the row; a transaction, the row it wrote when its push mark is certain.
    const image = items.length === 0 ? committed : row && transactedImage(row, marked);
    return image ? { committed: image } : {};
  }

  /** As the adapter (docs/data-model.md, "History"): the segments of a task write, and the row it stores. */
  private writeHistory(task: StoredTask, before: StoredTask | undefined): StoredTask {
    const write = historyWriteOf(task, before);
    const segments = this.historySegments.get(task.taskId) ?? new Map<number, HistorySegment>();
    this.historySegments.set(task.taskId, segments);
    if (write?.drop) {
      segments.clear();
      return { ...task, historyFrom: undefined, historyExpiresAt: undefined };
    }
    for (const segment of write?.put ?? []) segments.set(segment.revision, segment);
    const expiry = historyExpiryOf(task, before);
    return expiry.expiresAt === undefined ? task : { ...task, historyExpiresAt: expiry.expiresAt };
  }

  async readHistorySegments(
    taskId: string,
    below: number,
    last?: number,
  ): Promise<readonly HistorySegment[]> {
    return newestSegments([...(this.historySegments.get(taskId)?.values() ?? [])], below, last);
  }

  async getTask(taskId: string): Promise<StoredTask | undefined> {
    return this.tasks.get(taskId);
  }

  async markPushConfigured(taskId: string): Promise<StoredTask | undefined> {
    const task = this.tasks.get(taskId);
    if (task === undefined) return undefined;
    const markedTask: StoredTask = { ...task, pushConfigured: true };
    this.tasks.set(taskId, markedTask);
    return markedTask;
  }

  async getRun(_taskId: string, runId: string): Promise<RunRecord | undefined> {
    return this.runs.get(runId);
  }

  async getRunWithTask(taskId: string, runId: string) {
    return { run: this.runs.get(runId), task: this.tasks.get(taskId) };
  }

  async fenceRun(run: RunRecord, fence: RunFence): Promise<'fenced' | 'lost' | 'canceled'> {
    const current = this.runs.get(run.runId);
    if (current?.status !== 'RUNNING' || current.version !== run.version) return 'lost';
    if (current.cancelRequested) return 'canceled';
    this.runs.set(run.runId, { ...current, fence });
    return 'fenced';
  }

  async holdDelegation(
    run: RunRecord,
    hold: { readonly delegation: RunDelegation; readonly sealedSuspension: SealedBlob } | undefined,
  ): Promise<'held' | 'lost' | 'canceled'> {
    const current = this.runs.get(run.runId);
    if (current?.status !== 'RUNNING' || current.version !== run.version) return 'lost';
    if (current.cancelRequested) return 'canceled';
    const { delegation: _delegation, sealedSuspension: _state, fence, ...rest } = current;
    this.runs.set(
      run.runId,
      hold === undefined ? { ...rest, ...(fence && { fence }) } : { ...rest, ...hold },
    );
    return 'held';
  }

  async markDelegation(run: RunRecord, mark: 'parked' | 'settled'): Promise<DelegationMarkOutcome> {
    const current = this.runs.get(run.runId);
    const delegation = current?.delegation;
    if (
      current?.status !== 'RUNNING' ||
      delegation === undefined ||
      delegation.remoteTaskId !== run.delegation?.remoteTaskId
    )
      return 'lost';
    if (mark === 'settled') {
      if (delegation.parked) return 'parked';
      if (delegation.tokenHash === undefined || delegation.tokenHash !== run.delegation.tokenHash)
        return 'lost';
    } else {
      if (current.cancelRequested) return 'canceled';
      if (current.version !== run.version) return 'lost';
      if (delegation.settled) return 'settled';
    }
    this.runs.set(run.runId, { ...current, delegation: { ...delegation, [mark]: true } });
    return 'marked';
  }
}

export class InMemoryJournalRepository implements JournalRepository {
  readonly views = new Map<string, JournalView>();
  readonly events = new Map<string, JournalEvent>();

  async putRevision(projection: Projection): Promise<'written' | 'duplicate'> {
    const key = `${projection.event.taskId}#${projection.event.revision}`;
    const duplicate = this.events.has(key);
    if (!duplicate) this.events.set(key, projection.event);
    const view = this.views.get(projection.view.taskId);
    // As the adapter: a revision whose event was there but whose view was behind is written now.
    const moves = view === undefined || view.revision < projection.view.revision;
    if (moves) this.views.set(projection.view.taskId, projection.view);
    return duplicate && !moves ? 'duplicate' : 'written';
  }

  async projected(taskId: string, revision: number): Promise<JournalState> {
    const viewRevision = this.views.get(taskId)?.revision;
    return {
      event: this.events.has(`${taskId}#${revision}`),
      ...(viewRevision !== undefined && { viewRevision }),
    };
  }

  async projectedAll(revisions: readonly TaskRevision[]): Promise<ReadonlyMap<string, JournalLedger>> {
    const ledgers = new Map<string, { events: Set<number>; viewRevision?: number }>();
    for (const { taskId, revision } of revisions) {
      const viewRevision = this.views.get(taskId)?.revision;
      const ledger = ledgers.get(taskId) ?? {
        events: new Set<number>(),
        ...(viewRevision !== undefined && { viewRevision }),
      };
      if (this.events.has(`${taskId}#${revision}`)) ledger.events.add(revision);
      ledgers.set(taskId, ledger);
    }
    return ledgers;
  }

  async putEvent(event: JournalEvent): Promise<boolean> {
    const key = `${event.taskId}#${event.revision}`;
    if (this.events.has(key)) return false;
    this.events.set(key, event);
    return true;
  }

  async putView(projection: Projection): Promise<'written' | 'moved'> {
    const view = this.views.get(projection.view.taskId);
    if (view?.revision !== projection.previous?.revision) return 'moved';
    this.views.set(projection.view.taskId, projection.view);
    return 'written';
  }

  async getView(taskId: string): Promise<JournalView | undefined> {
    return this.views.get(taskId);
  }

  async listEvents(taskId: string, afterRevision: number): Promise<JournalEvent[]> {
    return [...this.events.values()]
      .filter((event) => event.taskId === taskId && event.revision > afterRevision)
      .sort((a, b) => a.revision - b.revision);
  }

  /** The owner index as a sorted array: `statusTimestamp#taskId` descending. */
  async listViews(query: ViewQuery): Promise<ViewPage> {
    const position = query.after && `${query.after.statusTimestamp}#${query.after.taskId}`;
    const matching = this.matching(query).filter(
      (view) => position === undefined || `${view.statusTimestamp}#${view.taskId}` < position,
    );
    return { views: matching.slice(0, query.limit), more: matching.length > query.limit };
  }

  async countViews(filter: ViewFilter): Promise<number> {
    return this.matching(filter).length;
  }

  private matching(filter: ViewFilter): JournalView[] {
    const nowSeconds = Math.floor(filter.now.getTime() / 1000);
    const sortKey = (view: JournalView) => `${view.statusTimestamp}#${view.taskId}`;
    return [...this.views.values()]
      .filter(
        (view) =>
          isOwnTask(view, filter.owner) &&
          view.expiresAt > nowSeconds &&
          (filter.contextId === undefined || view.contextId === filter.contextId) &&
          (filter.state === undefined || view.state === filter.state) &&
          (filter.statusTimestampAfter === undefined || sortKey(view) >= filter.statusTimestampAfter),
      )
      .sort((a, b) => (sortKey(a) < sortKey(b) ? 1 : -1));
  }
}

/** Delivery records with the DynamoDB adapter's semantics: append per attempt, idempotent per attempt id. */
export class InMemoryPushDeliveryLog implements PushDeliveryLog {
  readonly records = new Map<string, PushDeliveryRecord & { lastAttemptId: string }>();

  private static key(taskId: string, configId: string, revision: number): string {
    return `${taskId}#${configId}#${String(revision).padStart(10, '0')}`;
  }

  async append(entry: DeliveryAttemptEntry): Promise<'recorded' | 'duplicate'> {
    const key = InMemoryPushDeliveryLog.key(entry.taskId, entry.configId, entry.revision);
    const current = this.records.get(key);
    if (current?.lastAttemptId === entry.attemptId) return 'duplicate';
    this.records.set(key, {
      taskId: entry.taskId,
      configId: entry.configId,
      revision: entry.revision,
      state: entry.state,
      attempts: [...(current?.attempts ?? []), entry.attempt],
      updatedAt: entry.attempt.at,
      expiresAt: entry.expiresAt,
      lastAttemptId: entry.attemptId,
    });
    return 'recorded';
  }

  async finalThrough(taskId: string, configId: string): Promise<number | undefined> {
    const final = [...this.records.values()]
      .filter((record) => record.taskId === taskId && record.configId === configId)
      .filter((record) => isFinalDelivery(record.state))
      .map((record) => record.revision);
    return final.length > 0 ? Math.max(...final) : undefined;
  }

  async list(
    taskId: string,
    page: PushDeliveryPage,
  ): Promise<{ records: PushDeliveryRecord[]; more: boolean }> {
    const after = page.after && InMemoryPushDeliveryLog.key(taskId, page.after.configId, page.after.revision);
    const matching = [...this.records.entries()]
      .filter(([key, record]) => record.taskId === taskId && (after === undefined || key > after))
      .filter(([, record]) => page.configId === undefined || record.configId === page.configId)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, { lastAttemptId: _id, ...record }]) => record);
    return { records: matching.slice(0, page.limit), more: matching.length > page.limit };
  }
}
