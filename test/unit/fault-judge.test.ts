import { describe, expect, it } from 'vitest';
import {
  type Committed,
  judgeChannels,
  type Sighting,
  stallMs,
  type TaskTrace,
} from '../support/fault-drive.ts';

/**
 * The fault proofs' judge (test/support/fault-drive.ts) on hand-made traces: the shape of the soak's
 * finding at 07a71e0 (decision 0032) — a task reaped RUN_NOT_STARTED long after its streams last
 * showed anything. The judge must report a stream that stayed silent while the journal held the
 * revision it owed, and a stream that never reached the last commit, but not a stream that was
 * dropped before the revision reached the journal and re-attached afterwards.
 */

const taskId = 'task-1';
const submitted: Committed = {
  revision: 1,
  state: 'TASK_STATE_SUBMITTED',
  timestamp: '2026-11-30T15:00:00.000Z',
};
const failed: Committed = { revision: 2, state: 'TASK_STATE_FAILED', timestamp: '2026-11-30T15:01:00.000Z' };
const commits = new Map([[taskId, [submitted, failed]]]);

const shown = (commit: Committed, at: number): Sighting => ({
  state: commit.state,
  timestamp: commit.timestamp,
  revision: commit.revision,
  at,
});
const polled = (commit: Committed, at: number): Sighting => ({
  state: commit.state,
  timestamp: commit.timestamp,
  at,
});

const judge = (trace: Omit<TaskTrace, 'index' | 'kind' | 'errors' | 'taskId'>, failedVisibleAt: number) =>
  judgeChannels({
    commits,
    traces: [{ index: 0, kind: 'complete', taskId, errors: [], ...trace }],
    polls: new Map([[taskId, [polled(submitted, 1_000), polled(failed, failedVisibleAt)]]]),
    webhook: new Map([[taskId, [polled(submitted, 1_500), polled(failed, failedVisibleAt + 500)]]]),
  }).violations;

describe('judgeChannels on a task settled long after its streams went quiet', () => {
  it('passes streams dropped before the revision reached the journal, finished by a re-attach after it', () => {
    const violations = judge(
      {
        streams: [
          [shown(submitted, 1_000)],
          [shown(submitted, 61_000)],
          // finishChannels: re-attached at revision 1 after the drain.
          [shown(submitted, 200_000), shown(failed, 200_000)],
        ],
        idleDrops: [
          { stream: 0, openedAt: 1_000, at: 61_000 },
          { stream: 1, openedAt: 61_000, at: 121_000 },
        ],
      },
      // In the journal 10 s before the second drop: late, but not owed long enough to be a stall.
      111_000,
    );
    expect(violations).toEqual([]);
  });

  it('reports a stream that stayed silent for stallMs while the journal held its next revision', () => {
    const visibleAt = 70_000;
    const violations = judge(
      {
        streams: [
          [shown(submitted, 1_000)],
          [shown(submitted, 61_000)],
          [shown(submitted, 200_000), shown(failed, 200_000)],
        ],
        idleDrops: [
          { stream: 0, openedAt: 1_000, at: 61_000 },
          { stream: 1, openedAt: 61_000, at: visibleAt + stallMs + 20_000 },
        ],
      },
      visibleAt,
    );
    expect(violations).toEqual([
      `sse ${taskId}: a stream stayed silent 50 s while revision 2 was in the journal`,
    ]);
  });

  it('reports a stream that never reached the last commit, even when no stream was dropped as idle', () => {
    const violations = judge({ streams: [[shown(submitted, 1_000)]], idleDrops: [] }, 61_000);
    expect(violations).toEqual([`sse ${taskId}: ended at 1, last commit 2`]);
  });

  it('reports a re-attached stream that stayed silent although the journal held the revision when it opened', () => {
    const violations = judge(
      {
        // Re-attached at revision 1 after revision 2 was readable: it owed revision 2 at once.
        streams: [[shown(submitted, 1_000)], [shown(submitted, 90_000)], [shown(failed, 200_000)]],
        idleDrops: [{ stream: 1, openedAt: 90_000, at: 150_000 }],
      },
      80_000,
    );
    expect(violations).toEqual([
      `sse ${taskId}: a stream stayed silent 60 s while revision 2 was in the journal`,
    ]);
  });
});
