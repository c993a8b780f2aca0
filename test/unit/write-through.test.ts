import { afterEach, describe, expect, it } from 'vitest';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import {
  type Committed,
  commitAndProject,
  type JournalPlace,
  journaledRevisionOf,
  placeAfter,
  projectionStep,
  WriteThrough,
} from '../../shared/app/journal/write-through.ts';
import { armFailpoints, disarmFailpoints } from '../../shared/app/operations/failpoints.ts';
import type { RunMessage, WritePlan } from '../../shared/domain/ports.ts';
import type { Projection, StoredTask } from '../../shared/domain/projection.ts';
import { advanceTask, type RunRecord } from '../../shared/domain/task.ts';
import { InMemoryJournalRepository, InMemoryTaskRepository } from '../support/in-memory-repositories.ts';

/**
 * The journal write (docs/architecture.md "The journal write"): a writer commits a revision, then
 * projects it into the journal itself; the stream projector (`projectRecord`) is the backstop.
 * In-memory fakes with the adapters' semantics; the journal's writes are recorded in order, so the
 * tests assert on order, never on time.
 */

const now = new Date('2026-12-01T10:00:00.000Z');

const created = (taskId = 't1'): StoredTask => ({
  taskId,
  contextId: 'c1',
  owner: { tenant: 'acme', principal: 'alice' },
  profileId: 'default',
  state: 'TASK_STATE_SUBMITTED',
  revision: 1,
  currentRunId: 'r1',
  statusTimestamp: now.toISOString(),
  createdAt: now.toISOString(),
  expiresAt: 2_000_000_000,
});

const run: RunRecord = {
  runId: 'r1',
  taskId: 't1',
  profileId: 'default',
  status: 'QUEUED',
  version: 1,
  answerCeiling: 'full',
  auditCeiling: 'metadata',
  attempts: [],
  cancelRequested: false,
  createdAt: now.toISOString(),
  expiresAt: 2_000_000_000,
};

/** A journal that records each write it receives, in order. */
class RecordingJournal extends InMemoryJournalRepository {
  readonly writes: string[] = [];
  /** The write-through's reads of where a revision is (`projected`), in order. */
  readonly reads: number[] = [];
  failEvents = false;

  override async putEvent(event: Parameters<InMemoryJournalRepository['putEvent']>[0]) {
    if (this.failEvents) throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
    this.writes.push(`event ${event.revision}`);
    return super.putEvent(event);
  }

  override async putView(projection: Projection) {
    const result = await super.putView(projection);
    this.writes.push(`view ${projection.view.revision} ${result}`);
    return result;
  }

  override async putRevision(projection: Projection) {
    this.writes.push(`revision ${projection.view.revision}`);
    return super.putRevision(projection);
  }

  override async projected(taskId: string, revision: number) {
    this.reads.push(revision);
    return super.projected(taskId, revision);
  }
}

/**
 * One writer of a task's revisions, as a run is: each commit is projected from where its previous
 * one left the journal (`placeAfter`), which the writer carries from one to the next.
 */
const writerOf = (
  deps: { tasks: InMemoryTaskRepository; writeThrough: WriteThrough },
  place?: JournalPlace,
) => {
  let known = place;
  const commit = async (plan: WritePlan, how: { eventOnly?: boolean } = {}): Promise<Committed> => {
    const committed = await commitAndProject(deps, plan, { after: known, ...how });
    known = placeAfter(committed.projected, known);
    return committed;
  };
  return { commit, place: () => known };
};

const setup = () => {
  const state = new InMemoryTaskRepository();
  const journal = new RecordingJournal();
  const warnings: Record<string, unknown>[] = [];
  const projected: number[] = [];
  const writeThrough = new WriteThrough(state, journal, {
    logger: { warn: (_message, fields) => void warnings.push(fields) },
    afterProjected: async (projection) => void projected.push(projection.view.revision),
  });
  const tasks = writerOf({ tasks: state, writeThrough });
  const r1 = created();
  const r2 = advanceTask(r1, 'TASK_STATE_WORKING', new Date(now.getTime() + 1));
  const r3 = advanceTask(r2, 'TASK_STATE_COMPLETED', new Date(now.getTime() + 2));
  const create = { row: { taskId: 't1', task: r1, run, expect: { revision: 'absent' as const } } };
  const next = (before: StoredTask, after: StoredTask) => ({
    row: { taskId: 't1', task: after, expect: { revision: before.revision }, before },
  });
  return { state, journal, writeThrough, tasks, warnings, projected, r1, r2, r3, create, next };
};

afterEach(() => disarmFailpoints());

describe('the journal write', () => {
  it('projects each committed revision right after its write: the event, then the view', async () => {
    const { tasks, journal, projected, r1, r2, r3, create, next } = setup();
    await tasks.commit(create);
    await tasks.commit(next(r1, r2));
    await tasks.commit(next(r2, r3));
    expect(journal.writes).toEqual([
      'event 1',
      'view 1 written',
      'event 2',
      'view 2 written',
      'event 3',
      'view 3 written',
    ]);
    expect((await journal.getView('t1'))?.state).toBe('TASK_STATE_COMPLETED');
    expect(projected).toEqual([1, 2, 3]);
  });

  it('a new task whose run its writer runs at once has its first event only; the next revision creates the view', async () => {
    const { tasks, journal, projected, r1, r2, create, next } = setup();
    expect((await tasks.commit(create, { eventOnly: true })).projected).toEqual({
      kind: 'event-only',
      revision: 1,
    });
    expect(journal.writes).toEqual(['event 1']);
    expect(await journal.getView('t1')).toBeUndefined();
    await tasks.commit(next(r1, r2));
    // Revision 2 is written as the backstop writes one, expecting no view, nothing read first: a
    // view at 2 proves events 1 and 2.
    expect(journal.writes).toEqual(['event 1', 'revision 2']);
    expect(journal.reads).toEqual([]);
    expect((await journal.listEvents('t1', 0)).map((event) => event.revision)).toEqual([1, 2]);
    expect((await journal.getView('t1'))?.revision).toBe(2);
    expect(projected).toEqual([1, 2]);
    // The backstop then finds both revisions projected and writes nothing.
    const before = journal.writes.length;
    expect(await projectRecord(journal, undefined, r1)).toBe('duplicate');
    expect(await projectRecord(journal, r1, r2)).toBe('duplicate');
    expect(journal.writes.slice(before)).toEqual([]);
  });

  it('after an event-only revision, a view the backstop put meanwhile is moved on from, not lost', async () => {
    const { tasks, journal, r1, r2, r3, create, next } = setup();
    await tasks.commit(create, { eventOnly: true });
    // The run is slow: the backstop projects revision 1's view before the run's next revision.
    expect(await projectRecord(journal, undefined, r1)).toBe('written');
    await tasks.commit(next(r1, r2));
    expect(journal.writes).toEqual(['event 1', 'revision 1', 'revision 2']);
    expect((await journal.getView('t1'))?.revision).toBe(2);
    await tasks.commit(next(r2, r3));
    expect((await journal.getView('t1'))?.revision).toBe(3);
    expect((await journal.listEvents('t1', 0)).map((event) => event.revision)).toEqual([1, 2, 3]);
  });

  it('a failed fan-out hook is logged and the next revision is still written through', async () => {
    const { state, journal, warnings, r1, r2, create, next } = setup();
    const writeThrough = new WriteThrough(state, journal, {
      logger: { warn: (_message, fields) => void warnings.push(fields) },
      afterProjected: async (projection) => {
        if (projection.view.revision === 1) throw new Error('delivery queue down');
      },
    });
    const tasks = writerOf({ tasks: state, writeThrough });
    await tasks.commit(create);
    await tasks.commit(next(r1, r2));
    // Revision 2 is written through without reading whether 1 is there: the writer knows it is.
    expect(journal.writes).toEqual(['event 1', 'view 1 written', 'event 2', 'view 2 written']);
    expect(journal.reads).toEqual([]);
    expect(warnings).toHaveLength(1);
  });

  it('the backstop writes nothing for a revision already projected', async () => {
    const { tasks, journal, r1, r2, create, next } = setup();
    await tasks.commit(create);
    await tasks.commit(next(r1, r2));
    const before = journal.writes.length;
    expect(await projectRecord(journal, undefined, r1)).toBe('duplicate');
    expect(await projectRecord(journal, r1, r2)).toBe('duplicate');
    expect(journal.writes.slice(before)).toEqual([]);
  });

  it('never writes revision N before N−1 is projected: a revision after an unprojected one is left to the backstop', async () => {
    const { state, tasks, journal, r1, r2, r3, create, next } = setup();
    // Revision 1 committed without its write-through (another writer, cut off): this writer knows nothing of it.
    await state.commit(create);
    expect((await tasks.commit(next(r1, r2))).projected).toEqual({
      kind: 'backstop',
      revision: 2,
      reason: 'gap',
    });
    expect(journal.writes).toEqual([]);
    // The backstop, in stream order, projects 1 and 2; the write-through of 3 follows on.
    expect(await projectRecord(journal, undefined, r1)).toBe('written');
    expect(await projectRecord(journal, r1, r2)).toBe('written');
    await tasks.commit(next(r2, r3));
    expect((await journal.listEvents('t1', 0)).map((event) => event.revision)).toEqual([1, 2, 3]);
    expect((await journal.getView('t1'))?.revision).toBe(3);
  });

  it('a crash between commit and write-through is caught by the backstop, and the next write-through follows it', async () => {
    const { tasks, journal, state, r1, r2, create, next } = setup();
    armFailpoints('writeThrough.afterCommit=#1');
    // The commit stands and the caller is answered; nothing reached the journal.
    expect((await tasks.commit(create)).projected).toEqual({
      kind: 'backstop',
      revision: 1,
      reason: 'failed',
    });
    expect(state.tasks.get('t1')?.revision).toBe(1);
    expect(journal.writes).toEqual([]);
    expect(await projectRecord(journal, undefined, r1)).toBe('written');
    await tasks.commit(next(r1, r2));
    expect(journal.writes).toEqual(['revision 1', 'event 2', 'view 2 written']);
    expect((await journal.listEvents('t1', 0)).map((event) => event.revision)).toEqual([1, 2]);
  });

  it('a write-through cut off between its event and its view is finished by the backstop; the next one waits for it', async () => {
    const { tasks, journal, r1, r2, r3, create, next } = setup();
    armFailpoints('writeThrough.afterEvent=#2');
    await tasks.commit(create);
    await tasks.commit(next(r1, r2));
    // Event 2 is there, view 2 is not: revision 3 does not follow an unfinished 2.
    await tasks.commit(next(r2, r3));
    expect((await journal.listEvents('t1', 0)).map((event) => event.revision)).toEqual([1, 2]);
    expect((await journal.getView('t1'))?.revision).toBe(1);
    expect(await projectRecord(journal, r1, r2)).toBe('written');
    expect(await projectRecord(journal, r2, r3)).toBe('written');
    expect((await journal.listEvents('t1', 0)).map((event) => event.revision)).toEqual([1, 2, 3]);
    expect((await journal.getView('t1'))?.revision).toBe(3);
  });

  it('a failed write-through never fails the commit: it is logged with ids only and left to the backstop', async () => {
    const { tasks, journal, warnings, r1, create } = setup();
    journal.failEvents = true;
    await expect(tasks.commit(create)).resolves.toBeDefined();
    expect(warnings).toEqual([{ taskId: 't1', revision: 1, error: 'ThrottlingException' }]);
    journal.failEvents = false;
    expect(await projectRecord(journal, undefined, r1)).toBe('written');
  });

  it('a transaction, which returns nothing, is projected from its plan, with the push mark its config sets', async () => {
    const { tasks, journal, create } = setup();
    const config = {
      taskId: 't1',
      configId: 'hook',
      url: 'https://hooks.example/in',
      createdAt: now.toISOString(),
      expiresAt: 2_000_000_000,
      afterRevision: 0,
    };
    await tasks.commit({ ...create, items: [{ entity: 'push', item: config, expect: 'any' }] });
    expect(await journal.listEvents('t1', 0)).toMatchObject([{ revision: 1, pushConfigured: true }]);
  });

  it('a transaction without a config reads the mark from the row, and leaves a row that moved on to the backstop', async () => {
    const { state, tasks, journal, r1, r2, create, next } = setup();
    await tasks.commit(create);
    await state.markPushConfigured('t1');
    const approval = {
      approvalId: 'a1',
      taskId: 't1',
      runId: 'r1',
      digest: 'd',
      toolNames: ['calculator'],
      requestedAt: now.toISOString(),
      decision: 'PENDING' as const,
      expiresAt: 2_000_000_000,
    };
    // The plan's task was read before the mark: the row's mark is what the event carries.
    await tasks.commit({
      ...next(r1, r2),
      items: [{ entity: 'approval', item: approval, expect: 'absent' }],
    });
    expect(await journal.listEvents('t1', 1)).toMatchObject([{ revision: 2, pushConfigured: true }]);
  });

  it('a run message says which revision its sender projected; the claim that follows reads nothing', async () => {
    const { state, journal, writeThrough, tasks: rpc, r1, r2, create, next } = setup();
    const sent: RunMessage[] = [];
    await rpc.commit(create);
    sent.push({ taskId: 't1', runId: 'r1', ...journaledRevisionOf(rpc.place()) });
    expect(sent).toEqual([{ taskId: 't1', runId: 'r1', journaled: 1 }]);
    // The executor is another container: told, it projects the claim without a journal read.
    const executor = writerOf(
      { tasks: state, writeThrough },
      { revision: sent[0]?.journaled ?? 0, view: true },
    );
    journal.writes.length = 0;
    await executor.commit(next(r1, r2));
    expect(journal.writes).toEqual(['event 2', 'view 2 written']);
    expect(journal.reads).toEqual([]);
  });

  it('a run message claims nothing its sender did not project, and an untold claim reads first', async () => {
    const { state, journal, writeThrough, tasks: rpc, r1, r2, create, next } = setup();
    const sent: RunMessage[] = [];
    journal.failEvents = true;
    await rpc.commit(create);
    sent.push({ taskId: 't1', runId: 'r1', ...journaledRevisionOf(rpc.place()) });
    expect(sent).toEqual([{ taskId: 't1', runId: 'r1' }]);
    journal.failEvents = false;
    // Revision 1 is the backstop's; the executor, told nothing, reads and leaves 2 to it too.
    const executor = writerOf({ tasks: state, writeThrough });
    journal.writes.length = 0;
    await executor.commit(next(r1, r2));
    expect(journal.reads).toEqual([1]);
    expect(journal.writes).toEqual([]);
  });

  it('decides its requests from the revision and what its caller passes alone', () => {
    const { r1, r2 } = setup();
    const first = { view: { ...r1 }, event: { ...r1 } } as never;
    const second = { view: { ...r2 }, event: { ...r2 }, previous: { revision: 1, expiresAt: 0 } } as never;
    expect(projectionStep(first, undefined)).toBe('event-then-view');
    expect(projectionStep(first, undefined, true)).toBe('event-only');
    expect(projectionStep(second, undefined)).toBe('read-first');
    expect(projectionStep(second, { revision: 1, view: true })).toBe('event-then-view');
    expect(projectionStep(second, { revision: 1, view: false })).toBe('create-view');
    expect(projectionStep(second, { revision: 0, view: true })).toBe('read-first');
  });

  it('a write that makes no revision projects nothing and keeps the place its writer knows', async () => {
    const { tasks, journal, r1, create } = setup();
    await tasks.commit(create);
    const runOnly = {
      row: { taskId: 't1', run: { ...run, status: 'RUNNING' as const }, expect: { runVersion: 1 } },
    };
    expect((await tasks.commit(runOnly)).projected).toEqual({ kind: 'no-revision' });
    expect(tasks.place()).toEqual({ revision: r1.revision, view: true });
    expect(journal.writes).toEqual(['event 1', 'view 1 written']);
  });
});
