import { describe, expect, it, vi } from 'vitest';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import type { StreamItem } from '../../shared/app/rpc/dispatcher.ts';
import { executeClaimedRun } from '../../shared/app/runs/execute-run.ts';
import type { RunsHere } from '../../shared/app/tasks/send-message.ts';
import { sendStreamingMessage, subscribeToTask } from '../../shared/app/tasks/stream-task.ts';
import type { StreamResponse } from '../../shared/domain/a2a.ts';
import type { JournalEvent } from '../../shared/domain/projection.ts';
import { alice, createCore, testConfig, userMessage } from '../support/core-fixture.ts';

/**
 * A streaming send whose run runs here (docs/how-a-task-flows.md §1): the run feeds the stream
 * each revision once it journaled it (`RunFeed`), so the stream reads no journal; at a gap in the
 * fed revisions, or when the run ends without the closing revision, it reads the journal. Either
 * way it shows exactly the journal's revisions, in revision order (I-COMMITTED, I-ORDER).
 */

const config = testConfig({
  providers: {
    local: { type: 'scripted', behavior: 'echo' },
    streamer: { type: 'scripted', behavior: 'stream', paceMs: 0 },
  },
  profiles: {
    default: { name: 'Echo', description: 'x', providers: ['local'] },
    chunks: {
      name: 'Chunks',
      description: 'x',
      providers: ['streamer'],
      output: { progressive: true, cadence: { ms: 100, bytes: 256 } },
    },
  },
});

type Feed = (event: JournalEvent) => void;

const setup = (options: { feedThrough?: (feed: Feed) => Feed } = {}) => {
  const core = createCore({ config });
  const writeThrough = new WriteThrough(core.tasks, core.journal);
  const listEvents = vi.spyOn(core.journal, 'listEvents');
  const kept: Promise<unknown>[] = [];
  const runDeps = { ...core.deps, writeThrough };
  const runsHere: RunsHere = {
    canRun: () => true,
    run: (image, onJournaled) =>
      executeClaimedRun(
        runDeps,
        image,
        onJournaled && options.feedThrough ? options.feedThrough(onJournaled) : onJournaled,
      ),
    keepAlive: (work) => void kept.push(work),
  };
  // Real time: the stream waits on its feed, or polls the journal, as deployed.
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const deps = { ...core.deps, writeThrough, runsHere, sleep };
  const stream = async (text: string, profileId = 'default') => {
    const items: StreamItem[] = [];
    for await (const item of await sendStreamingMessage(deps, {
      caller: alice,
      profileId,
      message: userMessage(text),
    }))
      items.push(item);
    return items;
  };
  /** The same task's revisions after the first, as a re-attach reads them from the journal. */
  const replayed = async (taskId: string) => {
    const items: StreamItem[] = [];
    for await (const item of await subscribeToTask(deps, alice, taskId, { lastEventId: '1' }))
      items.push(item);
    return items.slice(1);
  };
  return { core, kept, listEvents, stream, replayed };
};

const taskIdOf = (items: readonly StreamItem[]): string => {
  const first = items[0];
  if (first === undefined || !('response' in first) || !('task' in first.response))
    throw new Error('no task first');
  return first.response.task.id;
};

const stateOf = (item: StreamItem): string | undefined => {
  const response = 'response' in item ? item.response : (item as StreamResponse);
  if ('statusUpdate' in response) return response.statusUpdate.status.state;
  if ('task' in response) return response.task.status.state;
  return undefined;
};

describe('a streaming send fed by its run here', () => {
  it('shows the revisions its run journaled, as the journal holds them, with no journal read', async () => {
    const s = setup();
    const items = await s.stream('hello');
    expect(items.map(stateOf)).toEqual(['TASK_STATE_WORKING', undefined, 'TASK_STATE_COMPLETED']);
    expect(s.listEvents).not.toHaveBeenCalled();
    await Promise.all(s.kept);
    expect(await s.replayed(taskIdOf(items))).toEqual(items.slice(1));
  });

  it('streams every chunk of a progressive answer in revision order, identical to the journal', async () => {
    const s = setup();
    const text = Array.from({ length: 150 }, (_, index) => `word${index}`).join(' ');
    const items = await s.stream(text, 'chunks');
    const ids = items.flatMap((item) => ('eventId' in item ? [Number(item.eventId)] : []));
    // Revision 1 (the snapshot), then each revision once, one after the other.
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, index) => index + 1));
    expect(ids.length).toBeGreaterThan(3);
    expect(s.listEvents).not.toHaveBeenCalled();
    await Promise.all(s.kept);
    // Every revision the journal holds, and the same states.
    const journaled = await s.core.journal.listEvents(taskIdOf(items), 0);
    expect(journaled.map((event) => event.revision)).toEqual(ids);
    expect(items.filter((item) => 'eventId' in item).map(stateOf)).toEqual(
      journaled.map((event) => event.state),
    );
  }, 20_000);

  it('at a gap in the fed revisions, reads the journal and shows every revision in order', async () => {
    // The run's second revision is not fed (as one left to the backstop): the feed has a gap.
    const s = setup({
      feedThrough: (feed) => {
        let fed = 0;
        return (event) => {
          if (++fed !== 2) feed(event);
        };
      },
    });
    const text = Array.from({ length: 150 }, (_, index) => `word${index}`).join(' ');
    const items = await s.stream(text, 'chunks');
    const ids = items.flatMap((item) => ('eventId' in item ? [Number(item.eventId)] : []));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, index) => index + 1));
    expect(ids.length).toBeGreaterThan(3);
    expect(s.listEvents).toHaveBeenCalled();
    await Promise.all(s.kept);
    // Every revision the journal holds, and the same states.
    const journaled = await s.core.journal.listEvents(taskIdOf(items), 0);
    expect(journaled.map((event) => event.revision)).toEqual(ids);
    expect(items.filter((item) => 'eventId' in item).map(stateOf)).toEqual(
      journaled.map((event) => event.state),
    );
  }, 20_000);

  it('when the run ends without the closing revision fed, reads it from the journal', async () => {
    // The completing revision is not fed: the stream learns it from the journal after the run's end.
    const s = setup({ feedThrough: () => () => undefined });
    const items = await s.stream('hello');
    expect(items.map(stateOf)).toEqual(['TASK_STATE_WORKING', undefined, 'TASK_STATE_COMPLETED']);
    expect(s.listEvents).toHaveBeenCalled();
    await Promise.all(s.kept);
    expect(await s.replayed(taskIdOf(items))).toEqual(items.slice(1));
  });
});
