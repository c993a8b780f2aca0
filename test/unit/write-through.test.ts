import { afterEach, describe, expect, it } from 'vitest';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { WriteThroughTaskRepository } from '../../shared/app/journal/write-through.ts';
import { armFailpoints, disarmFailpoints } from '../../shared/app/operations/failpoints.ts';
import type { RunMessage } from '../../shared/domain/ports.ts';
import type { Projection, StoredTask } from '../../shared/domain/projection.ts';
import { advanceTask, type RunRecord } from '../../shared/domain/task.ts';
import { InMemoryJournalRepository, InMemoryTaskRepository } from '../support/in-memory-repositories.ts';

/**
 * Decision 0043: a commit projects its revision into the journal itself; the stream projector
 * (`projectRecord`) is the backstop. In-memory fakes with the adapters' semantics; the journal's
 * writes are recorded in order, so the tests assert on order, never on time.
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

const setup = () => {
  const state = new InMemoryTaskRepository();
  const journal = new RecordingJournal();
  const warnings: Record<string, unknown>[] = [];
  const projected: number[] = [];
  const tasks = new WriteThroughTaskRepository(state, journal, {
    logger: { warn: (_message, fields) => void warnings.push(fields) },
    afterProjected: async (projection) => void projected.push(projection.view.revision),
  });
  const r1 = created();
  const r2 = advanceTask(r1, 'TASK_STATE_WORKING', new Date(now.getTime() + 1));
  const r3 = advanceTask(r2, 'TASK_STATE_COMPLETED', new Date(now.getTime() + 2));
  const create = { row: { taskId: 't1', task: r1, run, expect: { revision: 'absent' as const } } };
  const next = (before: StoredTask, after: StoredTask) => ({
    row: { taskId: 't1', task: after, expect: { revision: before.revision }, before },
  });
  return { state, journal, tasks, warnings, projected, r1, r2, r3, create, next };
};

afterEach(() => disarmFailpoints());

describe('write-through projection (decision 0043)', () => {
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

  it('a new task whose run its writer runs at once has its first event only; the next revision creates the view (decision 0097)', async () => {
    const { tasks, journal, projected, r1, r2, create, next } = setup();
    await tasks.commit({ row: { ...create.row, viewWithNext: true } });
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

  it('after an event-only revision, a view the backstop put meanwhile is moved on from, not lost (decision 0097)', async () => {
    const { tasks, journal, r1, r2, r3, create, next } = setup();
    await tasks.commit({ row: { ...create.row, viewWithNext: true } });
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
    const tasks = new WriteThroughTaskRepository(state, journal, {
      logger: { warn: (_message, fields) => void warnings.push(fields) },
      afterProjected: async (projection) => {
        if (projection.view.revision === 1) throw new Error('delivery queue down');
      },
    });
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
    // Revision 1 committed without its write-through (another writer, cut off).
    await state.commit(create);
    await tasks.commit(next(r1, r2));
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
    await expect(tasks.commit(create)).resolves.toBeDefined();
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

  it('a run message says which revision its sender projected; the claim that follows reads nothing (decision 0071)', async () => {
    const { state, journal, tasks: rpc, r1, r2, create, next } = setup();
    const sent: RunMessage[] = [];
    const queue = rpc.announcing({ enqueue: async (message) => void sent.push(message) });
    await rpc.commit(create);
    await queue.enqueue({ taskId: 't1', runId: 'r1' });
    expect(sent).toEqual([{ taskId: 't1', runId: 'r1', journaled: 1 }]);
    // The executor is another container: told, it projects the claim without a journal read.
    const executor = new WriteThroughTaskRepository(state, journal);
    executor.learnProjected('t1', sent[0]?.journaled ?? 0);
    journal.writes.length = 0;
    await executor.commit(next(r1, r2));
    expect(journal.writes).toEqual(['event 2', 'view 2 written']);
    expect(journal.reads).toEqual([]);
  });

  it('a run message claims nothing its sender did not project, and an untold claim reads first', async () => {
    const { state, journal, tasks: rpc, r1, r2, create, next } = setup();
    const sent: RunMessage[] = [];
    journal.failEvents = true;
    await rpc.commit(create);
    await rpc
      .announcing({ enqueue: async (message) => void sent.push(message) })
      .enqueue({ taskId: 't1', runId: 'r1' });
    expect(sent).toEqual([{ taskId: 't1', runId: 'r1' }]);
    journal.failEvents = false;
    // Revision 1 is the backstop's; the executor, told nothing, reads and leaves 2 to it too.
    const executor = new WriteThroughTaskRepository(state, journal);
    journal.writes.length = 0;
    await executor.commit(next(r1, r2));
    expect(journal.reads).toEqual([1]);
    expect(journal.writes).toEqual([]);
  });
});
