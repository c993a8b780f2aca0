import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromEventItem, pushMark, toEventItem } from '../../shared/adapters/dynamodb/entities.ts';
import {
  assignedItem,
  rowUpdateOf,
  toTaskRowUpdate,
  toTransactWriteInput,
} from '../../shared/adapters/dynamodb/write-plan.ts';
import { taskStates, withoutGenerations } from '../../shared/domain/a2a.ts';
import type { WritePlan } from '../../shared/domain/ports.ts';
import { projectRevision, type StoredTask } from '../../shared/domain/projection.ts';
import { runAloneWrite } from '../../shared/domain/row-writes.ts';
import {
  advanceTask,
  appendHistory,
  canTransitionRun,
  canTransitionTask,
  historyAsOf,
  IllegalTransitionError,
  moveRun,
  type RunRecord,
  runStatuses,
  settleRun,
  taskStateForRun,
} from '../../shared/domain/task.ts';
import { InMemoryJournalRepository } from '../support/in-memory-repositories.ts';

const task = (revision: number, extra: Partial<StoredTask> = {}): StoredTask => ({
  taskId: 't1',
  contextId: 'c1',
  owner: { tenant: 'a', principal: 'b' },
  profileId: 'default',
  state: 'TASK_STATE_WORKING',
  revision,
  currentRunId: 'r1',
  statusTimestamp: new Date(1_700_000_000_000 + revision).toISOString(),
  createdAt: '2026-11-30T00:00:00.000Z',
  expiresAt: 2_000_000_000,
  ...extra,
});

const run: RunRecord = {
  runId: 'r1',
  taskId: 't1',
  profileId: 'default',
  status: 'RUNNING',
  version: 2,
  answerCeiling: 'full',
  auditCeiling: 'metadata',
  attempts: [],
  cancelRequested: false,
  createdAt: '2026-11-30T00:00:00.000Z',
  expiresAt: 2_000_000_000,
};

describe('write plans → DynamoDB writes (decisions 0038, 0042)', () => {
  const completing: WritePlan = {
    row: {
      taskId: 't1',
      task: task(3, { sealedArtifacts: new Uint8Array([1, 2]) }),
      run: { ...run, status: 'COMPLETED' as const, version: 3 },
      expect: { revision: 2, runVersion: 2 },
      before: task(2),
    },
  };

  it('writes a task and its current run as one update of the task row, conditioned on both (I-LOCK)', () => {
    const row = rowUpdateOf(completing);
    expect(row).toBeDefined();
    const { input, sets, removes } = toTaskRowUpdate(row!, 'state');
    expect(input).toMatchObject({ TableName: 'state', Key: { pk: 'TASK#t1', sk: 'TASK' } });
    expect(input.ConditionExpression).toBe(
      '#revision = :expectedRevision AND #run.#runId = :runId AND #run.#version = :expectedVersion',
    );
    expect(input.ExpressionAttributeValues).toMatchObject({
      ':expectedRevision': 2,
      ':runId': 'r1',
      ':expectedVersion': 2,
    });
    expect(sets).toMatchObject({
      revision: 3,
      artifacts: new Uint8Array([1, 2]),
      run: { runId: 'r1', status: 'COMPLETED', version: 3 },
    });
    // The settled run has no lease: the lease index entry goes with it.
    expect(removes).toEqual(expect.arrayContaining(['leaseUntil', 'leaseShard', 'statusMessage']));
    expect(input.UpdateExpression).toMatch(/^SET .* REMOVE /);
  });

  it("a task write alone keeps the row's run and lease; a run write alone keeps the task", () => {
    const taskOnly = toTaskRowUpdate({ taskId: 't1', task: task(4), expect: { revision: 3 } }, 's');
    expect(Object.keys(taskOnly.sets)).not.toContain('run');
    expect([...taskOnly.removes, ...Object.keys(taskOnly.sets)]).not.toContain('leaseUntil');
    const runOnly = toTaskRowUpdate(
      { taskId: 't1', run: { ...run, leaseUntil: 5 }, expect: { runVersion: 2, leaseExpiredBefore: 9 } },
      's',
    );
    expect(Object.keys(runOnly.sets).sort()).toEqual(['leaseShard', 'leaseUntil', 'run']);
    expect(runOnly.removes).toEqual([]);
    expect(runOnly.input.ConditionExpression).toBe(
      '#run.#runId = :runId AND #run.#version = :expectedVersion AND #leaseUntil < :leaseExpiredBefore',
    );
  });

  it("an answer chunk's write sets the run's version and lease only, so the row's run keeps what others marked on it", () => {
    const chunk = toTaskRowUpdate(
      {
        taskId: 't1',
        task: task(4),
        run: { ...run, version: 3, leaseUntil: 7 },
        runChanges: 'version-and-lease',
        expect: { revision: 3, runVersion: 2 },
        before: task(3),
      },
      's',
    );
    expect(chunk.sets).toMatchObject({ 'run.version': 3, leaseUntil: 7 });
    expect(Object.keys(chunk.sets)).not.toContain('run');
    expect(chunk.removes).not.toContain('run');
    expect(chunk.input.UpdateExpression).toContain('#run.#version = :run_version');
    expect(chunk.input.ExpressionAttributeValues).toMatchObject({ ':run_version': 3, ':expectedVersion': 2 });
    expect(assignedItem(chunk.input)).toMatchObject({ revision: 4, 'run.version': 3 });
  });

  it('creates with attribute_not_exists and leaves absent fields out of the row', () => {
    const { input, sets } = toTaskRowUpdate(
      {
        taskId: 't1',
        task: task(1),
        run: { ...run, status: 'QUEUED', version: 0 },
        expect: { revision: 'absent' },
      },
      's',
    );
    expect(input.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(Object.keys(sets)).not.toContain('artifacts');
    expect(Object.values(sets)).not.toContain(undefined);
    expect(Object.values(input.ExpressionAttributeValues ?? {})).not.toContain(undefined);
  });

  it('keeps a run that is not the current one, approvals and push configs as items of their own', () => {
    const plan: WritePlan = {
      ...completing,
      items: [{ entity: 'run', item: { ...run, runId: 'r0' }, expect: { version: 2 } }],
    };
    const input = toTransactWriteInput(plan, 'state', 'token-1');
    expect(input.ClientRequestToken).toBe('token-1');
    expect(input.TransactItems!.map((item) => Object.keys(item)[0])).toEqual(['Update', 'Put']);
    expect(input.TransactItems![1]!.Put).toMatchObject({
      ConditionExpression: '#version = :expectedVersion',
      Item: { pk: 'TASK#t1', sk: 'RUN#r0' },
    });
    // A run alone goes to the task row while it is the current run, else to its own row.
    expect(runAloneWrite(task(2), run, { ...run, version: 3 })).toEqual({
      row: { taskId: 't1', run: { ...run, version: 3 }, expect: { runVersion: 2 } },
    });
    expect(runAloneWrite(task(2, { currentRunId: 'r9' }), run, { ...run, version: 3 }).items).toEqual([
      { entity: 'run', item: { ...run, version: 3 }, expect: { version: 2 } },
    ]);
  });

  it('conditions a follow-up on the run it replaces', () => {
    const row = { ...completing.row!, archive: { ...run, runId: 'r0', version: 4 } };
    expect(toTaskRowUpdate(row, 's').input.ConditionExpression).toContain(
      '#run.#runId = :replacedRunId AND #run.#version = :replacedVersion',
    );
    expect(toTaskRowUpdate({ ...row, archive: 'none' }, 's').input.ConditionExpression).toContain(
      'attribute_not_exists(#run)',
    );
  });
});

describe('the push mark on the task row (decision 0041)', () => {
  const pushConfig = {
    taskId: 't1',
    configId: 'hook',
    url: 'https://hooks.example/in',
    createdAt: '2026-11-30T00:00:00.000Z',
    expiresAt: 2_000_000_000,
    afterRevision: 0,
  };
  const touchesMark = (update: ReturnType<typeof toTaskRowUpdate>) =>
    pushMark in update.sets ||
    update.removes.includes(pushMark) ||
    Object.values(update.input.ExpressionAttributeNames ?? {}).includes(pushMark);

  it('a task write never sets nor removes it, whether the task it writes was read with or without it', () => {
    for (const pushConfigured of [undefined, true] as const) {
      const written = task(4, pushConfigured ? { pushConfigured } : {});
      const plans: WritePlan[] = [
        { row: { taskId: 't1', task: written, expect: { revision: 3 } } },
        { row: { taskId: 't1', task: written, expect: { revision: 'absent' } } },
        {
          row: {
            taskId: 't1',
            task: written,
            run: { ...run, version: 3 },
            expect: { revision: 3, runVersion: 2 },
          },
        },
        { row: { taskId: 't1', run: { ...run, version: 3 }, expect: { runVersion: 2 } } },
      ];
      for (const plan of plans) expect(touchesMark(toTaskRowUpdate(rowUpdateOf(plan)!, 's'))).toBe(false);
    }
  });

  it('a push config committed with its task sets it in the same update of the task row', () => {
    const plan: WritePlan = {
      row: {
        taskId: 't1',
        task: task(1),
        run: { ...run, status: 'QUEUED', version: 1 },
        expect: { revision: 'absent' },
      },
      items: [{ entity: 'push', item: pushConfig, expect: 'any' }],
    };
    const update = toTaskRowUpdate(rowUpdateOf(plan)!, 's');
    expect(update.sets).toMatchObject({ [pushMark]: true, revision: 1 });
    expect(update.input.ConditionExpression).toBe('attribute_not_exists(pk)');
    const transaction = toTransactWriteInput(plan, 's', 'token');
    expect(transaction.TransactItems?.[0]?.Update?.UpdateExpression).toContain(`#${pushMark} = :${pushMark}`);
    expect(transaction.TransactItems?.[1]?.Put?.Item).toMatchObject({ sk: 'PUSH#hook' });
    // A config without its task's write would leave the row unmarked: refused, never committed.
    expect(() => rowUpdateOf({ items: [{ entity: 'push', item: pushConfig, expect: 'any' }] })).toThrow(
      /decision 0041/,
    );
  });

  it('set alone, it sets only the mark, on an existing row', () => {
    const update = toTaskRowUpdate({ taskId: 't1', marksPush: true }, 's');
    expect(update.sets).toEqual({ [pushMark]: true });
    expect(update.removes).toEqual([]);
    expect(update.input.ConditionExpression).toBe('attribute_exists(#pk)');
  });

  it('the projector copies it from the task image into the event, and only when the image carries it', () => {
    const marked = projectRevision(task(1, { pushConfigured: true }), task(2, { pushConfigured: true }));
    expect(marked?.event.pushConfigured).toBe(true);
    expect(toEventItem(marked!.event)).toMatchObject({ [pushMark]: true });
    expect(fromEventItem(toEventItem(marked!.event)).pushConfigured).toBe(true);
    // The write that set the mark on a task's row carries it from then on; earlier ones do not.
    expect(projectRevision(task(1), task(2, { pushConfigured: true }))?.event.pushConfigured).toBe(true);
    const unmarked = projectRevision(task(1), task(2));
    expect(unmarked?.event).not.toHaveProperty('pushConfigured');
    expect(toEventItem(unmarked!.event)).not.toHaveProperty(pushMark);
  });
});

describe('projection core', () => {
  it('projects a new revision into a view and one event, copying sealed blobs as they are', () => {
    const blob = new Uint8Array([9, 9, 9]);
    const projection = projectRevision(
      task(2),
      task(3, { state: 'TASK_STATE_COMPLETED', sealedArtifacts: blob }),
    );
    expect(projection?.view).toMatchObject({ revision: 3, state: 'TASK_STATE_COMPLETED' });
    expect(projection?.view.sealedArtifacts).toBe(blob);
    expect(projection?.event.sealedArtifacts).toBe(blob);
  });

  it('marks artifacts only on the revision that changed them', () => {
    const blob = new Uint8Array([1]);
    const projection = projectRevision(
      task(3, { sealedArtifacts: blob }),
      task(4, { sealedArtifacts: new Uint8Array([1]) }),
    );
    expect(projection?.event.sealedArtifacts).toBeUndefined();
    expect(projection?.view.sealedArtifacts).toEqual(blob);
  });

  it('skips removals and writes that did not advance the revision (in-place scrubs)', () => {
    expect(projectRevision(task(2), undefined)).toBeUndefined();
    expect(projectRevision(task(2), task(2, { sealedHistory: new Uint8Array([1]) }))).toBeUndefined();
  });

  it('yields each revision once and never moves the view backwards, whatever the delivery order (I-ORDER)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 40 }),
        async (revisions, picks) => {
          const journal = new InMemoryJournalRepository();
          const images = Array.from({ length: revisions }, (_, i) => task(i + 1));
          // Deliveries: in order once (as a stream would), plus arbitrary replays of any record.
          const deliveries = [...images.keys(), ...picks.map((pick) => pick % revisions)];
          for (const index of deliveries) {
            const projection = projectRevision(images[index - 1], images[index]);
            if (projection) await journal.putRevision(projection);
          }
          const events = await journal.listEvents('t1', 0);
          expect(events.map((event) => event.revision)).toEqual(images.map((image) => image.revision));
          expect((await journal.getView('t1'))?.revision).toBe(revisions);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('state machines', () => {
  it('never leaves a terminal task state, and every non-terminal state can end', () => {
    for (const from of taskStates) {
      for (const to of taskStates) {
        const terminal = [
          'TASK_STATE_COMPLETED',
          'TASK_STATE_FAILED',
          'TASK_STATE_CANCELED',
          'TASK_STATE_REJECTED',
        ];
        if (terminal.includes(from)) expect(canTransitionTask(from, to)).toBe(false);
      }
      if (
        !['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'].includes(
          from,
        )
      ) {
        expect(canTransitionTask(from, 'TASK_STATE_CANCELED')).toBe(true);
      }
    }
  });

  it('settles a run at most once', () => {
    for (const settled of ['COMPLETED', 'FAILED', 'CANCELED'] as const) {
      for (const to of runStatuses) expect(canTransitionRun(settled, to)).toBe(false);
    }
    expect(canTransitionRun('QUEUED', 'RUNNING')).toBe(true);
    expect(canTransitionRun('RUNNING', 'QUEUED')).toBe(false);
  });
});

describe('transition builders (decision 0042)', () => {
  it('change a task state exactly when the task table allows it, one revision at a time', () => {
    fc.assert(
      fc.property(fc.constantFrom(...taskStates), fc.constantFrom(...taskStates), (from, to) => {
        const now = new Date(1_800_000_000_000);
        const before = task(5, { state: from });
        if (!canTransitionTask(from, to)) {
          expect(() => advanceTask(before, to, now)).toThrow(IllegalTransitionError);
          return;
        }
        const after = advanceTask(before, to, now, { metadata: { reason: 'X' } });
        expect(after).toEqual({
          ...before,
          state: to,
          revision: 6,
          statusTimestamp: now.toISOString(),
          metadata: { reason: 'X' },
        });
      }),
    );
  });

  it('change a run status exactly when the run table allows it, always under a new version (I-LOCK)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...runStatuses), fc.constantFrom(...runStatuses), (from, to) => {
        const before = { ...run, status: from };
        if (!canTransitionRun(from, to)) {
          expect(() => moveRun(before, to)).toThrow(IllegalTransitionError);
          return;
        }
        expect(moveRun(before, to)).toEqual({ ...before, status: to, version: before.version + 1 });
      }),
    );
  });

  it('a settled run has ended, holds no lease and is kept at least as long as before', () => {
    const now = new Date(1_800_000_000_000);
    for (const status of ['COMPLETED', 'FAILED', 'CANCELED'] as const) {
      const settled = settleRun({ ...run, leaseUntil: 5 }, status, now, 1);
      expect(settled).toMatchObject({
        status,
        version: 3,
        endedAt: now.toISOString(),
        expiresAt: run.expiresAt,
      });
      expect(settled.leaseUntil).toBeUndefined();
      expect(taskStateForRun(status)).toBe(`TASK_STATE_${status}`);
      expect(() => settleRun(settled, status, now, 1)).toThrow(IllegalTransitionError);
    }
  });
});

describe('history', () => {
  const message = (id: string) => ({ messageId: id, role: 'ROLE_USER' as const, parts: [{ text: id }] });

  it('deduplicates by messageId and cuts at a revision (I-HISTORY)', () => {
    const history = appendHistory(appendHistory([], 1, [message('a')]), 3, [
      message('a'),
      message('b'),
      undefined,
    ]);
    expect(history.map((entry) => [entry.revision, entry.message.messageId])).toEqual([
      [1, 'a'],
      [3, 'b'],
    ]);
    expect(historyAsOf(history, 2).map((m) => m.messageId)).toEqual(['a']);
    expect(historyAsOf(history, 3).map((m) => m.messageId)).toEqual(['a', 'b']);
  });
});

describe('task generation (A2A 1.1, docs/protocol.md §16)', () => {
  const now = new Date('2026-12-05T00:00:00.000Z');
  const blob = (byte: number) => new Uint8Array([byte, byte, byte]);

  it('a revision adds the events it shows: its status, plus its artifacts when it changed them', () => {
    const created = task(1, { generation: 1 });
    const claimed = advanceTask(created, 'TASK_STATE_WORKING', now);
    expect(claimed.generation).toBe(2);
    // An answer chunk: one artifact update and the WORKING status.
    const chunk = advanceTask(claimed, 'TASK_STATE_WORKING', now, {
      sealedArtifacts: blob(1),
      artifactCount: 1,
    });
    expect(chunk.generation).toBe(4);
    // Completed with three artifacts: three artifact updates and the status.
    const done = advanceTask(chunk, 'TASK_STATE_COMPLETED', now, {
      sealedArtifacts: blob(2),
      artifactCount: 3,
    });
    expect(done.generation).toBe(8);
    // The same artifact bytes carried on are no change: the status alone.
    const carried = advanceTask(
      task(3, { generation: 5, sealedArtifacts: blob(3), artifactCount: 2 }),
      'TASK_STATE_INPUT_REQUIRED',
      now,
    );
    expect(carried.generation).toBe(6);
    // A task from before generations were kept stays without one.
    expect(advanceTask(task(4), 'TASK_STATE_COMPLETED', now).generation).toBeUndefined();
  });

  it('the projection carries the generation into the view and the event', () => {
    const before = task(2, { generation: 2 });
    const after = advanceTask(before, 'TASK_STATE_COMPLETED', now, {
      sealedArtifacts: blob(4),
      artifactCount: 1,
    });
    const projection = projectRevision(before, after);
    expect(projection?.view.generation).toBe(4);
    expect(projection?.event.generation).toBe(4);
  });

  it('withoutGenerations: every shape that carries one, and nothing else', () => {
    const status = { state: 'TASK_STATE_WORKING' as const, timestamp: 'x' };
    const t = { id: 't', contextId: 'c', status, generation: 3, metadata: { generation: 'kept' } };
    expect(withoutGenerations(t)).toEqual({
      id: 't',
      contextId: 'c',
      status,
      metadata: { generation: 'kept' },
    });
    expect(withoutGenerations({ task: t })).toEqual({ task: withoutGenerations(t) });
    expect(withoutGenerations({ tasks: [t], nextPageToken: '' })).toEqual({
      tasks: [withoutGenerations(t)],
      nextPageToken: '',
    });
    expect(
      withoutGenerations({ statusUpdate: { taskId: 't', contextId: 'c', status, generation: 4 } }),
    ).toEqual({
      statusUpdate: { taskId: 't', contextId: 'c', status },
    });
    const artifactUpdate = {
      taskId: 't',
      contextId: 'c',
      artifact: { artifactId: 'a', parts: [] },
      generation: 5,
    };
    expect(withoutGenerations({ artifactUpdate })).toEqual({
      artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [] } },
    });
    const message = {
      message: { messageId: 'm', role: 'ROLE_AGENT', parts: [], metadata: { generation: 1 } },
    };
    expect(withoutGenerations(message)).toBe(message);
  });
});
