import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toTransactWriteInput } from '../../shared/adapters/dynamodb/write-plan.ts';
import { taskStates } from '../../shared/domain/a2a.ts';
import { projectRevision, type StoredTask } from '../../shared/domain/projection.ts';
import {
  appendHistory,
  canTransitionRun,
  canTransitionTask,
  historyAsOf,
  type RunRecord,
  runStatuses,
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

describe('write plans → TransactWriteItems', () => {
  it('conditions every put on the version or revision it read (I-LOCK)', () => {
    const input = toTransactWriteInput(
      {
        writes: [
          { entity: 'run', item: { ...run, status: 'COMPLETED', version: 3 }, expect: { version: 2 } },
          {
            entity: 'task',
            item: task(3, { sealedArtifacts: new Uint8Array([1, 2]) }),
            expect: { revision: 2 },
          },
        ],
      },
      'state',
      'token-1',
    );
    expect(input.ClientRequestToken).toBe('token-1');
    const [runPut, taskPut] = input.TransactItems!.map((item) => item.Put!);
    expect(runPut).toMatchObject({
      TableName: 'state',
      ConditionExpression: '#version = :expectedVersion',
      ExpressionAttributeValues: { ':expectedVersion': 2 },
      Item: { pk: 'TASK#t1', sk: 'RUN#r1', status: 'COMPLETED', version: 3 },
    });
    expect(taskPut).toMatchObject({
      ConditionExpression: '#revision = :expectedRevision',
      ExpressionAttributeValues: { ':expectedRevision': 2 },
      Item: { pk: 'TASK#t1', sk: 'TASK', revision: 3, artifacts: new Uint8Array([1, 2]) },
    });
  });

  it('creates with attribute_not_exists and leaves absent fields out of the item', () => {
    const input = toTransactWriteInput(
      { writes: [{ entity: 'task', item: task(1), expect: 'absent' }] },
      's',
      't',
    );
    const put = input.TransactItems![0]!.Put!;
    expect(put.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(Object.keys(put.Item!)).not.toContain('artifacts');
    expect(Object.values(put.Item!)).not.toContain(undefined);
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
