import type { CommitResult, JournalWriter, TaskRepository, WritePlan } from '../../domain/ports.ts';
import {
  type JournalEvent,
  type JournalView,
  type Projection,
  projectRevision,
  type StoredTask,
} from '../../domain/projection.ts';
import { failpoint } from '../operations/failpoints.ts';

/**
 * The journal write (docs/architecture.md "The journal write"): a writer commits a task revision,
 * then projects that revision into the journal itself, from the committed image, through the
 * projector's own pure `projectRevision`, so a reader does not wait for the state stream's poll.
 * The stream projector stays the backstop (`projectRecord`).
 *
 * Gapless (I-COMMITTED): every writer puts a revision's event before its view, so a view at N−1
 * proves events 1…N−1 are there. The write-through writes revision N only when N−1 is in the
 * journal — its caller says so (`JournalPlace`), or the journal reads so — and otherwise leaves N
 * to the backstop, which projects in stream order. No channel sees N before N−1, nor anything
 * uncommitted.
 *
 * Which requests a projection makes is decided by `projectionStep`, a pure function of the
 * committed revision, what the caller passes and what the caller knows of the revision before;
 * nothing is remembered between calls.
 *
 * A failure here never fails the caller's request and never runs the model or a tool again:
 * it is logged (ids only) and left to the backstop.
 */

/**
 * Where a task's newest revision is in the journal, as its writer knows it: its event is there,
 * and its view too when `view` (a view at N proves events 1…N). Passed from one write of a task
 * to the next by the code that makes both (a run, a create and its run message).
 */
export interface JournalPlace {
  readonly revision: number;
  readonly view: boolean;
}

/**
 * A revision committed with its event and view in the journal: its view, its event (as every
 * projector projects it from the same committed images, `projectRevision`), and the task as committed.
 */
export interface JournaledRevision {
  readonly view: JournalView;
  readonly event: JournalEvent;
  readonly task: StoredTask;
}

/** What the journal write did with a commit. */
export type Projected =
  /** The write made no new revision (a run-only write, a scrub in place): nothing to project. */
  | { readonly kind: 'no-revision' }
  /** The revision's event and view are in the journal (written here, or found written by another projector). */
  | { readonly kind: 'journaled'; readonly revision: number; readonly journaled: JournaledRevision }
  /** Its event only: its view comes with the writer's next revision of the task (`eventOnly`). */
  | { readonly kind: 'event-only'; readonly revision: number }
  /**
   * Left to the backstop: the revision before it is not known to be projected (`gap`), the write
   * failed (`failed`), the row moved on before its image could be read (`moved-on`), or this
   * writer has no write-through (`off`).
   */
  | {
      readonly kind: 'backstop';
      readonly revision: number;
      readonly reason: 'gap' | 'failed' | 'moved-on' | 'off';
    };

/**
 * How a committed revision is projected, from what its caller passes:
 * - `event-only`: a new task whose view its writer's next revision brings (`eventOnly`);
 * - `event-then-view`: a new task, or one whose previous revision's view the caller knows is there;
 * - `create-view`: the previous revision's event only is there (its caller put it): this revision
 *   is written as the backstop writes one, expecting no view, so it creates the view or moves on
 *   from the one the backstop put meanwhile;
 * - `read-first`: the caller does not know where the previous revision is: one read of the
 *   journal decides (`projected`).
 */
export type ProjectionStep = 'event-only' | 'event-then-view' | 'create-view' | 'read-first';

export const projectionStep = (
  projection: Projection,
  after: JournalPlace | undefined,
  eventOnly = false,
): ProjectionStep => {
  const previous = projection.previous;
  if (previous === undefined) return eventOnly ? 'event-only' : 'event-then-view';
  if (after?.revision !== previous.revision) return 'read-first';
  return after.view ? 'event-then-view' : 'create-view';
};

/** Where the journal is after a projection, for the writer's next revision of the task. */
export const placeAfter = (
  projected: Projected,
  before: JournalPlace | undefined,
): JournalPlace | undefined => {
  switch (projected.kind) {
    case 'no-revision':
      return before;
    case 'journaled':
      return { revision: projected.revision, view: true };
    case 'event-only':
      return { revision: projected.revision, view: false };
    case 'backstop':
      return undefined;
  }
};

/** The revision a run message may say its sender projected in full (`RunMessage.journaled`). */
export const journaledRevisionOf = (place: JournalPlace | undefined): { journaled?: number } =>
  place?.view ? { journaled: place.revision } : {};

export interface WriteThroughOptions {
  readonly logger?: { warn(message: string, fields: Record<string, unknown>): void };
  /**
   * Called with each revision whose event this writer put, beside its view put (the view may turn
   * out written by another projector first); a hook for the webhook fan-out of tasks that carry
   * the push mark, with the plan that committed it. Its failure is logged like the write's.
   */
  readonly afterProjected?: (projection: Projection, plan: WritePlan) => Promise<void>;
}

/** What a use case needs to commit and project: the state table, and this function's journal write. */
export interface CommitDeps {
  readonly tasks: TaskRepository;
  /** Absent: every revision is left to the backstop (tests whose stand-in projector is the backstop). */
  readonly writeThrough?: WriteThrough;
}

/** What a commit committed, and what its journal write projected. */
export interface Committed {
  /** The task row as committed, when the commit returned it (`CommitResult.committed`). */
  readonly task?: StoredTask;
  readonly projected: Projected;
}

/**
 * Commits a plan, then projects the revision it committed: the one way a use case writes a task
 * row. `after` is where the caller knows the task's previous revision is in the journal;
 * `eventOnly` puts a new task's first event only (its writer's next revision brings the view).
 */
export const commitAndProject = async (
  deps: CommitDeps,
  plan: WritePlan,
  how: { readonly after?: JournalPlace | undefined; readonly eventOnly?: boolean } = {},
): Promise<Committed> => {
  const result = await deps.tasks.commit(plan);
  const projected =
    deps.writeThrough === undefined
      ? offProjection(plan)
      : await deps.writeThrough.project(plan, result, how.after, how.eventOnly);
  return { ...(result.committed && { task: result.committed }), projected };
};

const offProjection = (plan: WritePlan): Projected => {
  const task = plan.row?.task;
  if (task === undefined || plan.row?.before?.revision === task.revision) return { kind: 'no-revision' };
  return { kind: 'backstop', revision: task.revision, reason: 'off' };
};

/**
 * The write-through of one function (rpc, executor, reaper): projects a committed revision into
 * the journal. It holds no memory of earlier projections; its caller says what it knows.
 */
export class WriteThrough {
  constructor(
    /** The state table, read only for a commit that returned no image (`committedImage`). */
    private readonly tasks: Pick<TaskRepository, 'getTask'>,
    private readonly journal: JournalWriter,
    private readonly options: WriteThroughOptions = {},
  ) {}

  /** Projects the plan's committed revision; never throws. */
  async project(
    plan: WritePlan,
    result: CommitResult,
    after?: JournalPlace,
    eventOnly = false,
  ): Promise<Projected> {
    const row = plan.row;
    if (row?.task === undefined || row.before?.revision === row.task.revision) return { kind: 'no-revision' };
    const revision = row.task.revision;
    try {
      failpoint('writeThrough.afterCommit');
      const committed = result.committed ?? (await this.committedImage(plan));
      const projection = committed && projectRevision(row.before, committed);
      // A row that moved on before it could be read: the backstop has it.
      if (committed === undefined || projection === undefined)
        return { kind: 'backstop', revision, reason: 'moved-on' };
      switch (projectionStep(projection, after, eventOnly)) {
        case 'event-only':
          return await this.putEventOnly(projection, plan);
        case 'create-view':
          return await this.createView(projection, plan, committed);
        case 'read-first':
          return await this.readFirst(projection, plan, committed);
        case 'event-then-view':
          return await this.putEventThenView(projection, plan, committed);
      }
    } catch (error) {
      this.options.logger?.warn('write-through left to the projector', {
        taskId: row.taskId,
        revision,
        error: error instanceof Error ? error.name : 'unknown',
      });
      return { kind: 'backstop', revision, reason: 'failed' };
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

  /** A new task's first event only: its view comes with its writer's next revision. */
  private async putEventOnly(projection: Projection, plan: WritePlan): Promise<Projected> {
    await this.journal.putEvent(projection.event);
    failpoint('writeThrough.afterEvent');
    await this.afterProjected(projection, plan);
    return { kind: 'event-only', revision: projection.view.revision };
  }

  /**
   * No view was put for N−1: this revision's view is created expecting none, or, when the
   * backstop put one meanwhile or a write in flight took the condition, the view is read again and
   * moved on from where it is — never taken as written unless it is at N or past it.
   */
  private async createView(projection: Projection, plan: WritePlan, task: StoredTask): Promise<Projected> {
    await this.journal.putRevision({ ...projection, previous: undefined });
    // The hook runs once the event is in (the deliverer reads events).
    await this.afterProjected(projection, plan);
    return journaled(projection, task);
  }

  /**
   * Reads where N−1 is first. A possibly stale read is safe: what it shows is there (events stay,
   * views move forward).
   */
  private async readFirst(projection: Projection, plan: WritePlan, task: StoredTask): Promise<Projected> {
    const { taskId, revision } = projection.view;
    const previous = projection.previous?.revision ?? 0;
    const state = await this.journal.projected(taskId, previous);
    const viewRevision = state.viewRevision ?? 0;
    if (!state.event || viewRevision < previous) return { kind: 'backstop', revision, reason: 'gap' };
    // Projected already (its event is written before its view), or past a gap: the backstop's.
    if (viewRevision >= revision)
      return (await this.journal.projected(taskId, revision)).event
        ? journaled(projection, task)
        : { kind: 'backstop', revision, reason: 'gap' };
    return this.putEventThenView(projection, plan, task);
  }

  /** The event, then the view, of the revision that directly follows one whose view is there. */
  private async putEventThenView(
    projection: Projection,
    plan: WritePlan,
    task: StoredTask,
  ): Promise<Projected> {
    await this.journal.putEvent(projection.event);
    failpoint('writeThrough.afterEvent');
    // The hook needs the event only (the deliverer reads events, never the view): it runs beside
    // the view put rather than after it. A view 'moved' was written by another projector (after
    // its event) first: this revision is in the journal all the same.
    const [view] = await Promise.all([
      this.journal.putView(projection).then(
        (outcome) => ({ outcome }),
        (error: unknown) => ({ error }),
      ),
      this.afterProjected(projection, plan),
    ]);
    if ('error' in view) throw view.error;
    return journaled(projection, task);
  }

  /**
   * The fan-out hook of a revision whose event is in. Its failure is logged and does not undo the
   * projection: the revision is in the journal, and the pusher (the backstop) queues its deliveries.
   */
  private async afterProjected(projection: Projection, plan: WritePlan): Promise<void> {
    try {
      await this.options.afterProjected?.(projection, plan);
    } catch (error) {
      this.options.logger?.warn('write-through fan-out left to the pusher', {
        taskId: projection.view.taskId,
        revision: projection.view.revision,
        error: error instanceof Error ? error.name : 'unknown',
      });
    }
  }
}

const journaled = (projection: Projection, task: StoredTask): Projected => ({
  kind: 'journaled',
  revision: projection.view.revision,
  journaled: { view: projection.view, event: projection.event, task },
});
