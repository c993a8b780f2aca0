import type { JournalEvent } from '../../domain/projection.ts';

/**
 * The revisions a run running in this function journals, handed to the stream beside it
 * (docs/how-a-task-flows.md §1): the run passes each revision's event to `journaled` once its
 * event and view are in the journal, so the stream shows it without reading the journal back.
 * Only such revisions are fed (I-COMMITTED), in the order the run committed them, which is
 * revision order (I-ORDER).
 *
 * The feed knows only the run's own revisions. When what it holds does not continue the stream
 * (a revision after the stream's cursor that the run did not journal: another writer's, or one
 * it left to the backstop) or the run ended without the stream's closing revision, the stream
 * reads the rest from the journal.
 */

/** What the feed hands the stream after its cursor. */
export interface Fed {
  /** The fed revisions that directly follow the cursor, in revision order. */
  readonly events: readonly JournalEvent[];
  /**
   * After `events`, the rest comes from the journal: the next fed revision does not follow them
   * (a gap), or the run has ended. Otherwise more may be fed (`changed`).
   */
  readonly thenJournal: boolean;
}

export class RunFeed {
  private fed: JournalEvent[] = [];
  private ended = false;
  private wake: () => void = () => undefined;
  private next: Promise<void> = this.renewed();

  /** The run's callback: one revision it journaled (its event and view are in the journal). */
  readonly journaled = (event: JournalEvent): void => {
    this.fed.push(event);
    this.wake();
  };

  /** The run has ended: nothing more is fed. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** Resolves once something is fed or the run ends (at once when either is there to take). */
  changed(): Promise<void> {
    return this.ended || this.fed.length > 0 ? Promise.resolve() : this.next;
  }

  /**
   * Takes what was fed after `cursor`: revisions at or before it are dropped (the stream has shown
   * them), and the revisions that follow it one by one are handed over. A revision that does not
   * follow (a gap) is dropped with everything after it: the journal holds them too.
   */
  take(cursor: number): Fed {
    const taken = this.fed;
    this.fed = [];
    this.next = this.renewed();
    const events: JournalEvent[] = [];
    let at = cursor;
    for (const event of taken) {
      if (event.revision <= at) continue;
      if (event.revision !== at + 1) return { events, thenJournal: true };
      events.push(event);
      at = event.revision;
    }
    return { events, thenJournal: this.ended };
  }

  private renewed(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }
}
