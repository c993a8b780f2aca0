import { BoundedMap } from '../../domain/bounded-map.ts';
import type { CommitResult, JournalWriter, RunQueue, TaskRepository, WritePlan } from '../../domain/ports.ts';
import {
  type JournalView,
  type Projection,
  projectRevision,
  type StoredTask,
} from '../../domain/projection.ts';
import { failpoint } from '../operations/failpoints.ts';

/**
 * Write-through projection (decision 0043): a writer projects the revision it committed into the
 * journal itself, right after its conditional write returned, from the committed image, through
 * the projector's own pure `projectRevision` — so a reader does not wait for the state stream's
 * poll. The stream projector stays the backstop (`projectRecord`).
 *
 * Gapless: every writer puts a revision's event before its view, so a view at N−1 proves events
 * 1…N−1 are there. The write-through writes revision N only when it knows N−1 is projected —
 * it projected N−1 itself, or the view reads N−1 — and otherwise leaves N to the backstop, which
 * projects in stream order. No channel sees N before N−1, nor anything uncommitted.
 *
 * A new task whose run its writer runs at once (`viewWithNext`, decision 0097) has only its first
 * event put: that writer's next revision is written as the backstop writes one (`putRevision`,
 * expecting no view), so it creates the view (a view at N proves events 1…N, and the event of N−1
 * is there), or moves on from the one the backstop put meanwhile.
 *
 * A failure here never fails the caller's request and never runs the model or a tool again:
 * it is logged (ids only) and left to the backstop.
 */

/** 'event': the revision's event is in the journal, its view left to the next revision (decision 0097). */
export type WriteThroughResult = 'written' | 'duplicate' | 'event' | 'gap' | 'failed';

export interface WriteThroughOptions {
  readonly logger?: { warn(message: string, fields: Record<string, unknown>): void };
  /**
   * Called with each revision whose event this writer put, beside its view put (the view may turn
   * out written by another projector first); a hook for the webhook fan-out of tasks that carry
   * the push mark, with the plan that committed it. Its failure is logged like the write's.
   */
  readonly afterProjected?: (projection: Projection, plan: WritePlan) => Promise<void>;
}

/** A revision committed and projected by this container: its view, and the task as committed. */
export interface JournaledRevision {
  readonly view: JournalView;
  readonly task: StoredTask;
}

/** Tasks whose last projected revision this container remembers (the claim → settle path). */
const rememberedTasks = 1_000;

/**
 * A `TaskRepository` whose commits project their revision through: the one home of the
 * write-through, wired in by the composition roots of the functions that commit task revisions
 * (rpc, executor, reaper). Reads pass through.
 */
export class WriteThroughTaskRepository implements TaskRepository {
  /** taskId → the revision this container projected last, fully (event and view). */
  private readonly projectedRevisions = new BoundedMap<string, number>(rememberedTasks);
  /** taskId → its first revision, whose event only this container put (`viewWithNext`). */
  private readonly eventsOnly = new BoundedMap<string, number>(rememberedTasks);
  /** Tasks a caller of this container watches (`watch`), with the newest revision projected here. */
  private readonly watched = new Map<string, JournaledRevision | undefined>();

  constructor(
    private readonly tasks: TaskRepository,
    private readonly journal: JournalWriter,
    private readonly options: WriteThroughOptions = {},
  ) {}

  async commit(plan: WritePlan): Promise<CommitResult> {
    const result = await this.tasks.commit(plan);
    await this.writeThrough(plan, result);
    return result;
  }

  /** Projects the plan's committed revision; never throws. */
  async writeThrough(plan: WritePlan, result: CommitResult): Promise<WriteThroughResult | undefined> {
    const row = plan.row;
    if (row?.task === undefined) return undefined;
    try {
      failpoint('writeThrough.afterCommit');
      const committed = result.committed ?? (await this.committedImage(plan));
      const projection = committed && projectRevision(row.before, committed);
      // A scrub in place, or a row that moved on before it could be read: the backstop has it.
      if (projection === undefined) return undefined;
      const outcome =
        row.viewWithNext && projection.previous === undefined
          ? await this.projectEvent(projection, plan)
          : await this.project(projection, plan);
      // 'written' or 'duplicate': this revision's event and view are in the journal.
      if (committed && this.watched.has(row.taskId) && (outcome === 'written' || outcome === 'duplicate'))
        this.watched.set(row.taskId, { view: projection.view, task: committed });
      return outcome;
    } catch (error) {
      this.options.logger?.warn('write-through left to the projector', {
        taskId: row.taskId,
        revision: row.task.revision,
        error: error instanceof Error ? error.name : 'unknown',
      });
      return 'failed';
    }
  }

  /**
   * The commit's image when it returned none (a transaction that could not know a push mark set
   * meanwhile): the planned task is what it committed (the condition proves it), with the mark
   * the row has — read, and used only while the row still holds the planned revision.
   */
  private async committedImage(plan: WritePlan): Promise<StoredTask | undefined> {
    const task = plan.row?.task;
    if (task === undefined) return undefined;
    const { pushConfigured: _planned, ...planned } = task;
    const stored = await this.tasks.getTask(task.taskId);
    if (stored?.revision !== task.revision) return undefined;
    return stored.pushConfigured ? { ...planned, pushConfigured: true } : planned;
  }

  /** A new task's first event only (`viewWithNext`): its view comes with the next revision. */
  private async projectEvent(projection: Projection, plan: WritePlan): Promise<'event'> {
    const { taskId, revision } = projection.view;
    await this.journal.putEvent(projection.event);
    failpoint('writeThrough.afterEvent');
    this.eventsOnly.set(taskId, revision);
    await this.options.afterProjected?.(projection, plan);
    return 'event';
  }

  /** The event, then the view, of the revision that directly follows the last one projected. */
  private async project(
    projection: Projection,
    plan: WritePlan,
  ): Promise<Exclude<WriteThroughResult, 'failed'>> {
    const { taskId, revision } = projection.view;
    const previous = projection.previous;
    if (previous !== undefined && this.eventsOnly.get(taskId) === previous.revision) {
      this.eventsOnly.delete(taskId);
      // No view was put for N−1: this revision's view is created expecting none, or, when the
      // backstop put one meanwhile or a write in flight took the condition, the view is read again
      // and moved on from where it is — never taken as written unless it is at N or past it.
      const outcome = this.remember(
        taskId,
        revision,
        await this.journal.putRevision({ ...projection, previous: undefined }),
      );
      // The hook runs once the event is in (the deliverer reads events).
      await this.options.afterProjected?.(projection, plan);
      return outcome;
    }
    if (previous !== undefined && this.projectedRevisions.get(taskId) !== previous.revision) {
      // A possibly stale read is safe: what it shows is there (events stay, views move forward).
      const journaled = await this.journal.projected(taskId, previous.revision);
      const viewRevision = journaled.viewRevision ?? 0;
      if (!journaled.event || viewRevision < previous.revision) return 'gap';
      // Projected already (its event is written before its view), or past a gap: the backstop's.
      if (viewRevision >= revision)
        return (await this.journal.projected(taskId, revision)).event
          ? this.remember(taskId, revision, 'duplicate')
          : 'gap';
    }
    await this.journal.putEvent(projection.event);
    failpoint('writeThrough.afterEvent');
    // The hook needs the event only (the deliverer reads events, never the view): it runs beside
    // the view put rather than after it (decision 0074).
    const [view, hook] = await Promise.allSettled([
      this.journal.putView(projection),
      this.options.afterProjected?.(projection, plan),
    ]);
    if (view.status === 'rejected') throw view.reason;
    // Moved: another projector wrote this revision's view (after its event) first. Remembered
    // even when the hook failed, so the next revision is still written through.
    const outcome = this.remember(taskId, revision, view.value === 'written' ? 'written' : 'duplicate');
    if (hook.status === 'rejected') throw hook.reason;
    return outcome;
  }

  /**
   * A run queue whose messages carry the revision this container projected in full for their
   * task (decision 0071): the executor that claims the run then knows the claim's previous
   * revision is projected without reading the journal. Nothing is claimed it does not remember.
   */
  announcing(queue: RunQueue): RunQueue {
    return {
      enqueue: (message) => {
        const journaled = this.projectedRevisions.get(message.taskId);
        return queue.enqueue(journaled === undefined ? message : { ...message, journaled });
      },
    };
  }

  /**
   * Starts watching a task's commits in this container: `unwatch` then says which of its revisions
   * this container committed last with its event and view in the journal (decision 0091).
   */
  watch(taskId: string): void {
    this.watched.set(taskId, undefined);
  }

  /**
   * Stops watching; the newest revision committed here since `watch` that is in the journal, with
   * the task as committed. A revision left to the backstop is not one: its reader waits for it.
   */
  unwatch(taskId: string): JournaledRevision | undefined {
    const newest = this.watched.get(taskId);
    this.watched.delete(taskId);
    return newest;
  }

  /** What a run message's sender projected in full (`announcing`): remembered as if projected here. */
  learnProjected(taskId: string, revision: number): void {
    if ((this.projectedRevisions.get(taskId) ?? 0) < revision) this.remember(taskId, revision, undefined);
  }

  private remember<T>(taskId: string, revision: number, outcome: T): T {
    this.projectedRevisions.set(taskId, revision);
    return outcome;
  }

  getTask(taskId: string) {
    return this.tasks.getTask(taskId);
  }

  markPushConfigured(taskId: string) {
    return this.tasks.markPushConfigured(taskId);
  }

  getRun(taskId: string, runId: string) {
    return this.tasks.getRun(taskId, runId);
  }

  getRunWithTask(taskId: string, runId: string) {
    return this.tasks.getRunWithTask(taskId, runId);
  }
}
