import { describe, expect, it } from 'vitest';
import { RunFeed } from '../../shared/app/tasks/run-feed.ts';
import type { JournalEvent } from '../../shared/domain/projection.ts';

/**
 * The feed between a run here and its stream (shared/app/tasks/run-feed.ts): it hands over the
 * revisions that directly follow the stream's cursor, in revision order (I-ORDER), and sends the
 * stream to the journal at a gap or at the run's end.
 */

const event = (revision: number): JournalEvent => ({ revision }) as JournalEvent;
const revisions = (events: readonly JournalEvent[]) => events.map((fed) => fed.revision);

describe('RunFeed', () => {
  it('hands over the fed revisions in order, once each, and waits for more while the run goes on', () => {
    const feed = new RunFeed();
    feed.journaled(event(2));
    feed.journaled(event(3));
    const first = feed.take(1);
    expect(revisions(first.events)).toEqual([2, 3]);
    expect(first.thenJournal).toBe(false);
    expect(feed.take(3)).toEqual({ events: [], thenJournal: false });
    feed.journaled(event(4));
    expect(revisions(feed.take(3).events)).toEqual([4]);
  });

  it('drops what the stream has shown (a cursor past the fed revisions)', () => {
    const feed = new RunFeed();
    for (const revision of [2, 3, 4]) feed.journaled(event(revision));
    const fed = feed.take(3);
    expect(revisions(fed.events)).toEqual([4]);
    expect(fed.thenJournal).toBe(false);
  });

  it('at a gap, hands over what precedes it and sends the stream to the journal', () => {
    const feed = new RunFeed();
    // Revision 3 was left to the backstop (or is another writer's): the feed never holds it.
    for (const revision of [2, 4, 5]) feed.journaled(event(revision));
    const fed = feed.take(1);
    expect(revisions(fed.events)).toEqual([2]);
    expect(fed.thenJournal).toBe(true);
  });

  it('a gap right after the cursor hands over nothing', () => {
    const feed = new RunFeed();
    feed.journaled(event(3));
    expect(feed.take(1)).toEqual({ events: [], thenJournal: true });
  });

  it("at the run's end, hands over the rest and sends the stream to the journal", () => {
    const feed = new RunFeed();
    feed.journaled(event(2));
    feed.end();
    const fed = feed.take(1);
    expect(revisions(fed.events)).toEqual([2]);
    expect(fed.thenJournal).toBe(true);
    expect(feed.take(2)).toEqual({ events: [], thenJournal: true });
  });

  it('wakes its stream when a revision is fed or the run ends, and at once when either waits untaken', async () => {
    const feed = new RunFeed();
    let woken = 0;
    const wake = () => feed.changed().then(() => void woken++);
    const first = wake();
    await Promise.resolve();
    expect(woken).toBe(0);
    feed.journaled(event(2));
    await first;
    expect(woken).toBe(1);
    // Fed but not taken: at once.
    await wake();
    expect(woken).toBe(2);
    feed.take(1);
    const second = wake();
    feed.end();
    await second;
    feed.take(2);
    // Ended: at once, every time.
    await wake();
    expect(woken).toBe(4);
  });
});
