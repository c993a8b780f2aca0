import { describe, expect, it } from 'vitest';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { armFailpoints, disarmFailpoints } from '../../shared/app/operations/failpoints.ts';
import {
  type DeliverDeps,
  DeliveryNotRecordedError,
  deliverPush,
  FinalHere,
  RevisionNotProjectedError,
  WebhookDeliveryFailedError,
} from '../../shared/app/push/deliver-push.ts';
import {
  fanOutAfterProjection,
  fanOutEvents,
  fanOutProjected,
  recentConfigsMaxAgeMs,
} from '../../shared/app/push/fan-out-events.ts';
import { buildPushConfig, PushConfigCodec } from '../../shared/app/push/push-configs.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import type { WebhookResult } from '../../shared/domain/ports.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
import {
  type AttemptContext,
  owedRevisions,
  type PushDelivery,
  type StoredPushConfig,
} from '../../shared/domain/push.ts';
import { alice } from '../support/core-fixture.ts';
import { InMemoryJournalRepository, InMemoryPushDeliveryLog } from '../support/in-memory-repositories.ts';

/**
 * Order per (task, webhook) when a revision can reach the delivery queue ahead of an older one
 * (decision 0045): the writer fans a revision out directly while an older revision, whose direct
 * fan-out failed, still waits for the stream backstop. The deliverer delivers what is owed in
 * revision order and nothing at or below what is settled.
 */

const context = (attempt: number, maxAttempts = 10): AttemptContext => ({
  attempt,
  maxAttempts,
  retryBaseSeconds: 2,
  attemptId: `m-${attempt}#${attempt}`,
});

describe('owedRevisions', () => {
  it('owes every wanted revision after the settled one, up to the message’s, oldest first', () => {
    expect(owedRevisions({ afterRevision: 0 }, 3, undefined)).toEqual([1, 2, 3]);
    expect(owedRevisions({ afterRevision: 0 }, 3, 1)).toEqual([2, 3]);
    expect(owedRevisions({ afterRevision: 0 }, 3, 2)).toEqual([3]);
    // A config created at revision 3 never gets 1–3, whatever is settled.
    expect(owedRevisions({ afterRevision: 3 }, 5, undefined)).toEqual([4, 5]);
    expect(owedRevisions({ afterRevision: 3 }, 5, 1)).toEqual([4, 5]);
    // Configs stored before decision 0031 want every revision.
    expect(owedRevisions({}, 2, undefined)).toEqual([1, 2]);
  });

  it('owes nothing for a revision already final or not wanted: a late duplicate posts nothing', () => {
    expect(owedRevisions({ afterRevision: 0 }, 2, 2)).toEqual([]);
    expect(owedRevisions({ afterRevision: 0 }, 2, 3)).toEqual([]);
    expect(owedRevisions({ afterRevision: 4 }, 3, undefined)).toEqual([]);
  });
});

const states = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'] as const;

/** A task at revisions 1–3 in the journal (only `projected` of them), one config, a scripted webhook. */
const fixture = async (options: { projected?: number[]; answers?: WebhookResult[] } = {}) => {
  const sealer = new FakeSealer();
  const codec = new TaskContentCodec(sealer);
  const journal = new InMemoryJournalRepository();
  const taskId = 'task-order';
  const expiresAt = Math.floor(Date.now() / 1000) + 3_600;
  const image = (revision: number): StoredTask => ({
    taskId,
    contextId: 'ctx-order',
    owner: alice,
    profileId: 'default',
    state: states[revision - 1] ?? 'TASK_STATE_COMPLETED',
    revision,
    currentRunId: 'run-1',
    statusTimestamp: new Date(Date.UTC(2026, 11, 1, 10, 0, revision)).toISOString(),
    createdAt: new Date().toISOString(),
    expiresAt,
  });
  for (const revision of options.projected ?? [1, 2, 3]) {
    await projectRecord(journal, revision > 1 ? image(revision - 1) : undefined, image(revision));
  }
  const pushCodec = new PushConfigCodec(sealer);
  const config = await buildPushConfig(
    { pushCodec, clock: { now: () => new Date() }, ids: { newId: () => 'hook' } },
    { taskId, expiresAt },
    { url: 'https://hooks.example/in' },
    0,
  );
  const answers = [...(options.answers ?? [])];
  const posted: string[] = [];
  const deliveryLog = new InMemoryPushDeliveryLog();
  const deps: DeliverDeps = {
    pushConfigs: {
      get: async () => config,
      list: async () => ({ configs: [config], more: false }),
      put: async () => {},
      delete: async () => {},
    },
    journal,
    codec,
    pushCodec,
    sender: {
      post: async (request): Promise<WebhookResult> => {
        const answer = answers.shift() ?? { kind: 'delivered', status: 200 };
        const body = JSON.parse(request.body) as { statusUpdate: { status: { state: string } } };
        if (answer.kind === 'delivered') posted.push(body.statusUpdate.status.state);
        return answer;
      },
    },
    clock: { now: () => new Date() },
    deliveryLog,
  };
  const records = () =>
    [...deliveryLog.records.values()].map((record) => [
      record.revision,
      record.state,
      record.attempts.map((attempt) => attempt.attempt),
    ]);
  const project = (revision: number) =>
    projectRecord(journal, revision > 1 ? image(revision - 1) : undefined, image(revision));
  return { taskId, deps, posted, deliveryLog, records, project };
};

const message = (taskId: string, revision: number) => ({ taskId, configId: 'hook', revision });

/** The fixture's deps with a delivery log that refuses to record the revision `refused()` names. */
const refusingRecords = (f: Awaited<ReturnType<typeof fixture>>, refused: () => number): DeliverDeps => {
  const log = f.deliveryLog;
  return {
    ...f.deps,
    deliveryLog: {
      append: async (entry: Parameters<typeof log.append>[0]) =>
        entry.revision === refused() ? Promise.reject(new Error('throttled')) : log.append(entry),
      finalThrough: log.finalThrough.bind(log),
      list: log.list.bind(log),
    },
  };
};

describe('deliverPush keeps the webhook’s order when a message overtook an older one', () => {
  it('revision 3 queued first (1 and 2 still on the backstop): 1, 2, 3 in order; their late messages post nothing', async () => {
    const f = await fixture();
    expect(await deliverPush(f.deps, message(f.taskId, 3), context(1))).toEqual({
      kind: 'delivered',
      posts: 3,
      earlier: [1, 2],
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(f.records()).toEqual([
      [1, 'DELIVERED', [1]],
      [2, 'DELIVERED', [1]],
      [3, 'DELIVERED', [1]],
    ]);
    // The backstop's messages for 1 and 2 arrive after SQS's 5-minute window: nothing is posted.
    for (const revision of [1, 2, 3]) {
      expect(await deliverPush(f.deps, message(f.taskId, revision), context(1))).toEqual({
        kind: 'not-owed',
      });
    }
    expect(f.posted).toHaveLength(3);
  });

  it('in order, the first message also delivers the newer revisions the journal holds; their messages post nothing (decision 0093)', async () => {
    const f = await fixture();
    expect(await deliverPush(f.deps, message(f.taskId, 1), context(1))).toEqual({
      kind: 'delivered',
      posts: 3,
      ahead: [2, 3],
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    // Each revision delivered ahead counts as its own first attempt.
    expect(f.records()).toEqual([
      [1, 'DELIVERED', [1]],
      [2, 'DELIVERED', [1]],
      [3, 'DELIVERED', [1]],
    ]);
    for (const revision of [2, 3]) {
      expect(await deliverPush(f.deps, message(f.taskId, revision), context(1))).toEqual({
        kind: 'not-owed',
      });
    }
    expect(f.posted).toHaveLength(3);
  });

  it('a message whose journal holds nothing newer delivers its own revision only', async () => {
    const f = await fixture({ projected: [1] });
    expect(await deliverPush(f.deps, message(f.taskId, 1), context(1))).toEqual({
      kind: 'delivered',
      posts: 1,
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED']);
  });

  it('a revision committed while the last one was posted is read and delivered; a read that finds nothing ends it', async () => {
    const f = await fixture({ projected: [1] });
    let reads = 0;
    const journal = f.deps.journal;
    const deps: DeliverDeps = {
      ...f.deps,
      journal: Object.assign(Object.create(journal), {
        listEvents: (taskId: string, after: number) => {
          reads += 1;
          return journal.listEvents(taskId, after);
        },
      }),
      sender: {
        // Each POST sees the task move on: revision 2 is committed while 1 is posted, 3 while 2 is.
        post: async (request) => {
          const answer = await f.deps.sender.post(request);
          if (f.posted.length < 3) await f.project(f.posted.length + 1);
          return answer;
        },
      },
    };
    expect(await deliverPush(deps, message(f.taskId, 1), context(1))).toEqual({
      kind: 'delivered',
      posts: 3,
      ahead: [2, 3],
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    // The message's own read and one per revision found; none after COMPLETED (terminal).
    expect(reads).toBe(3);
  });

  it('the read of what follows a revision posted ahead runs beside its record; a read that found nothing is made again after the record (decision 0094)', async () => {
    const f = await fixture({ projected: [1, 2] });
    const log = f.deliveryLog;
    const steps: string[] = [];
    let releaseRecord: () => void = () => {};
    let committed = false;
    const deps: DeliverDeps = {
      ...f.deps,
      journal: Object.assign(Object.create(f.deps.journal), {
        listEvents: async (taskId: string, after: number) => {
          steps.push(`read after ${after}`);
          const events = await f.deps.journal.listEvents(taskId, after);
          // Revision 3 is committed once the read beside revision 2's record found nothing.
          if (after === 2 && !committed) {
            committed = true;
            await f.project(3);
            releaseRecord();
          }
          return events;
        },
      }),
      deliveryLog: {
        append: async (entry: Parameters<typeof log.append>[0]) => {
          steps.push(`record ${entry.revision} begins`);
          // Revision 2's record does not end before the read beside it returned.
          if (entry.revision === 2) await new Promise<void>((resolve) => (releaseRecord = resolve));
          const result = await log.append(entry);
          steps.push(`record ${entry.revision} written`);
          return result;
        },
        finalThrough: log.finalThrough.bind(log),
        list: log.list.bind(log),
      },
    };
    expect(await deliverPush(deps, message(f.taskId, 1), context(1))).toEqual({
      kind: 'delivered',
      posts: 3,
      ahead: [2, 3],
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(steps).toEqual([
      'read after 0',
      'record 1 begins',
      'record 1 written',
      // Revision 2 was in the message's own read; its record and the read after it at once.
      'read after 2',
      'record 2 begins',
      'record 2 written',
      // Found nothing beside the record: read again once it is written, and 3 is there.
      'read after 2',
      'record 3 begins',
      'record 3 written',
    ]);
  });

  it('a message whose revision this container recorded settled posts nothing and reads nothing (decision 0094)', async () => {
    const f = await fixture();
    let reads = 0;
    const counting = <T extends object>(target: T): T =>
      new Proxy(target, {
        get: (object, key, receiver) => {
          const value = Reflect.get(object, key, receiver);
          return typeof value === 'function'
            ? (...args: unknown[]) => {
                reads += 1;
                return value.apply(object, args);
              }
            : value;
        },
      });
    const finalHere = new FinalHere();
    const deps: DeliverDeps = { ...f.deps, finalHere };
    expect(await deliverPush(deps, message(f.taskId, 1), context(1))).toMatchObject({ ahead: [2, 3] });
    const quiet: DeliverDeps = {
      ...deps,
      journal: counting(f.deps.journal),
      pushConfigs: counting(f.deps.pushConfigs),
      deliveryLog: counting(f.deliveryLog),
    };
    for (const revision of [1, 2, 3]) {
      expect(await deliverPush(quiet, message(f.taskId, revision), context(1))).toEqual({ kind: 'not-owed' });
    }
    expect(reads).toBe(0);
    expect(f.posted).toHaveLength(3);
    // Another config of the task is read as before (and owed every revision).
    expect(
      await deliverPush(quiet, { ...message(f.taskId, 3), configId: 'other' }, context(1)),
    ).toMatchObject({
      kind: 'delivered',
      earlier: [1, 2],
    });
    expect(reads).toBeGreaterThanOrEqual(3);
    expect(f.posted).toHaveLength(6);
  });

  it('only a written settled record is remembered: an unrecorded delivery is delivered again by its next message', async () => {
    const f = await fixture({ projected: [1] });
    const finalHere = new FinalHere();
    const refusing = { ...refusingRecords(f, () => 1), finalHere };
    expect(await deliverPush(refusing, message(f.taskId, 1), context(1))).toEqual({
      kind: 'delivered',
      posts: 1,
    });
    expect(finalHere.covers(message(f.taskId, 1))).toBe(false);
    expect(await deliverPush({ ...f.deps, finalHere }, message(f.taskId, 1), context(2))).toEqual({
      kind: 'delivered',
      posts: 1,
    });
    expect(finalHere.covers(message(f.taskId, 1))).toBe(true);
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_SUBMITTED']);
  });

  it('a newer revision whose POST fails ends the run ahead unrecorded: its own message makes its first counted attempt', async () => {
    const f = await fixture({
      answers: [
        { kind: 'delivered', status: 200 },
        { kind: 'failed', reason: 'http status', status: 503 },
      ],
    });
    expect(await deliverPush(f.deps, message(f.taskId, 1), context(1))).toEqual({
      kind: 'delivered',
      posts: 1,
    });
    expect(f.records()).toEqual([[1, 'DELIVERED', [1]]]);
    expect(await deliverPush(f.deps, message(f.taskId, 2), context(1))).toEqual({
      kind: 'delivered',
      posts: 2,
      ahead: [3],
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(f.records()).toEqual([
      [1, 'DELIVERED', [1]],
      [2, 'DELIVERED', [1]],
      [3, 'DELIVERED', [1]],
    ]);
  });

  it('no run ahead past a record not written: the own revision’s, or a newer one’s (decision 0062)', async () => {
    const f = await fixture();
    let refuse = 1;
    const refusing = refusingRecords(f, () => refuse);
    // The own revision's record lost: nothing newer is posted (a later message could post 1 again).
    expect(await deliverPush(refusing, message(f.taskId, 1), context(1))).toEqual({
      kind: 'delivered',
      posts: 1,
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED']);
    // Revision 2 delivered ahead but not recorded: 3 waits; 2's own message posts it again, then 3.
    refuse = 2;
    expect(await deliverPush(refusing, message(f.taskId, 1), context(2))).toEqual({
      kind: 'delivered',
      posts: 1,
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);
    expect(await deliverPush(f.deps, message(f.taskId, 2), context(1))).toEqual({
      kind: 'delivered',
      posts: 2,
      ahead: [3],
    });
    expect(f.posted.slice(3)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
  });

  it('an older revision that fails stops the message before its own: the retry goes on from the older one', async () => {
    const f = await fixture({
      answers: [
        { kind: 'delivered', status: 200 },
        { kind: 'failed', reason: 'timeout' },
      ],
    });
    await expect(deliverPush(f.deps, message(f.taskId, 3), context(1))).rejects.toBeInstanceOf(
      WebhookDeliveryFailedError,
    );
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED']);
    expect(f.records()).toEqual([
      [1, 'DELIVERED', [1]],
      [2, 'RETRYING', [1]],
    ]);
    expect(await deliverPush(f.deps, message(f.taskId, 3), context(2))).toEqual({
      kind: 'delivered',
      posts: 2,
      earlier: [2],
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    expect(f.records()).toEqual([
      [1, 'DELIVERED', [1]],
      [2, 'DELIVERED', [1, 2]],
      [3, 'DELIVERED', [2]],
    ]);
  });

  it('at the last attempt an older revision that fails is given up and the message’s own is still tried', async () => {
    const f = await fixture({ answers: [{ kind: 'failed', reason: 'http status', status: 503 }] });
    expect(await deliverPush(f.deps, message(f.taskId, 2), context(10, 10))).toEqual({
      kind: 'delivered',
      posts: 2,
      ahead: [3],
    });
    expect(f.records()).toEqual([
      [1, 'GAVE_UP', [10]],
      [2, 'DELIVERED', [10]],
      [3, 'DELIVERED', [1]],
    ]);
    expect(f.posted).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
  });

  it('an older revision’s record not written: the newer one is not posted; the retry posts the older again, then the newer (decision 0062)', async () => {
    const f = await fixture();
    let refuse = 2;
    const refusing = refusingRecords(f, () => refuse);
    const failure = deliverPush(refusing, message(f.taskId, 3), context(1));
    await expect(failure).rejects.toBeInstanceOf(DeliveryNotRecordedError);
    await expect(failure).rejects.toMatchObject({ revision: 2, reason: 'delivery record not written' });
    // Revision 3 waits: posted now, a retry (or 2's own late message) would post 2 after it.
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']);
    refuse = 3;
    // The message's own revision stays best effort: its record lost costs a duplicate later, not the order.
    expect(await deliverPush(refusing, message(f.taskId, 3), context(2))).toEqual({
      kind: 'delivered',
      posts: 2,
      earlier: [2],
    });
    expect(f.posted).toEqual([
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_WORKING',
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
    expect(f.records()).toEqual([
      [1, 'DELIVERED', [1]],
      [2, 'DELIVERED', [2]],
    ]);
    // Revision 2's late message: settled through 2, nothing posted.
    expect(await deliverPush(f.deps, message(f.taskId, 2), context(1))).toEqual({ kind: 'not-owed' });
  });

  it('an older revision not in the journal yet: nothing is posted, the message is retried', async () => {
    // Revision 2's projection waits for the stream backstop; 3 is in the journal (a stand-in for
    // a journal gap, which the write-through never leaves behind).
    const f = await fixture({ projected: [1, 3] });
    await deliverPush(f.deps, message(f.taskId, 1), context(1));
    const failure = deliverPush(f.deps, message(f.taskId, 3), context(1));
    await expect(failure).rejects.toBeInstanceOf(RevisionNotProjectedError);
    await expect(failure).rejects.toMatchObject({
      revision: 2,
      reason: 'revision not in the journal yet',
    });
    expect(f.posted).toEqual(['TASK_STATE_SUBMITTED']);
    expect(f.records()).toEqual([[1, 'DELIVERED', [1]]]);
  });

  it('a message for a revision not in the journal yet (fanned out before its projection) is retried, never dropped', async () => {
    const f = await fixture({ projected: [1] });
    await expect(deliverPush(f.deps, message(f.taskId, 2), context(1))).rejects.toMatchObject({
      name: 'RevisionNotProjectedError',
      revision: 1 + 1,
    });
    expect(f.posted).toEqual([]);
  });

  it('without a delivery log, a message delivers its own revision only (as before decision 0045)', async () => {
    const f = await fixture();
    const { deliveryLog: _log, ...withoutLog } = f.deps;
    expect(await deliverPush(withoutLog, message(f.taskId, 3), context(1))).toEqual({
      kind: 'delivered',
      posts: 1,
    });
    expect(f.posted).toEqual(['TASK_STATE_COMPLETED']);
  });
});

/** A stored push config of `taskId` that wants every revision (the fan-out reads no secret). */
const storedConfig = (configId: string, taskId = 't'): StoredPushConfig => ({
  taskId,
  configId,
  url: 'https://x',
  createdAt: '',
  expiresAt: 4e9,
  afterRevision: 0,
});

/** A config repository whose list answers `configs(taskId)` in one page, each read noted in `reads`. */
const listedConfigs = (configs: (taskId: string) => readonly StoredPushConfig[], reads: string[] = []) => ({
  get: async () => undefined,
  list: async (taskId: string) => {
    reads.push(taskId);
    return { configs: [...configs(taskId)], more: false };
  },
  put: async () => {},
  delete: async () => {},
});

describe('fanOutProjected: the writer’s direct fan-out never fails the writer', () => {
  const deps = () => {
    const queued: PushDelivery[][] = [];
    const reads: string[] = [];
    const warnings: Record<string, unknown>[] = [];
    return {
      queued,
      reads: () => reads.length,
      warnings,
      deps: {
        pushConfigs: listedConfigs(() => [storedConfig('hook')], reads),
        deliveries: {
          enqueue: async (deliveries: readonly PushDelivery[]) => void queued.push([...deliveries]),
        },
        clock: { now: () => new Date() },
        logger: { warn: (_message: string, fields: Record<string, unknown>) => void warnings.push(fields) },
      },
    };
  };
  const event = { taskId: 't', revision: 2, expiresAt: 4e9, pushConfigured: true as const };

  it('queues the revision for each config of a marked task; an unmarked one reads nothing', async () => {
    const f = deps();
    expect(await fanOutProjected(f.deps, event)).toBe('queued');
    expect(f.queued).toEqual([[{ taskId: 't', configId: 'hook', revision: 2 }]]);
    const { pushConfigured: _mark, ...unmarked } = event;
    expect(await fanOutProjected(f.deps, unmarked)).toBe('nothing-to-queue');
    expect(f.reads()).toBe(1);
  });

  it('a failure (failpoint, a queue that refuses) is logged and answered, never thrown', async () => {
    const f = deps();
    armFailpoints('push.directFanOut=#1');
    try {
      expect(await fanOutProjected(f.deps, event)).toBe('failed');
    } finally {
      disarmFailpoints();
    }
    const refusing = {
      ...f.deps,
      deliveries: { enqueue: async () => Promise.reject(new Error('throttled')) },
    };
    expect(await fanOutProjected(refusing, event)).toBe('failed');
    expect(f.queued).toEqual([]);
    expect(f.warnings).toEqual([
      { taskId: 't', revision: 2, error: 'InjectedFaultError' },
      { taskId: 't', revision: 2, error: 'Error' },
    ]);
  });
});

describe('fanOutAfterProjection: the write-through hook', () => {
  it('fans the projected event out, and resolves when the fan-out fails', async () => {
    const queued: PushDelivery[] = [];
    const deps = {
      pushConfigs: listedConfigs(() => [storedConfig('hook')]),
      deliveries: { enqueue: async (deliveries: readonly PushDelivery[]) => void queued.push(...deliveries) },
      clock: { now: () => new Date() },
    };
    const event = { taskId: 't', revision: 3, expiresAt: 4e9, pushConfigured: true as const };
    await fanOutAfterProjection(deps)({ event });
    expect(queued).toEqual([{ taskId: 't', configId: 'hook', revision: 3 }]);
    const refusing = { ...deps, deliveries: { enqueue: async () => Promise.reject(new Error('down')) } };
    await expect(fanOutAfterProjection(refusing)({ event })).resolves.toBeUndefined();
  });

  it('reuses a task’s configs for the next revision within their age, reads them again after it or past a gap (decision 0081)', async () => {
    let nowMs = Date.parse('2026-12-01T12:00:00Z');
    const reads: string[] = [];
    const queued: PushDelivery[] = [];
    let stored = [storedConfig('first')];
    const deps = {
      pushConfigs: listedConfigs(() => stored, reads),
      deliveries: { enqueue: async (deliveries: readonly PushDelivery[]) => void queued.push(...deliveries) },
      clock: { now: () => new Date(nowMs) },
    };
    const fanOut = fanOutAfterProjection(deps);
    const revision = (n: number) => ({
      event: { taskId: 't', revision: n, expiresAt: 4e9, pushConfigured: true as const },
    });
    await fanOut(revision(2));
    // A config stored after the read: the backstop's (the pusher reads the configs every time).
    stored = [storedConfig('first'), storedConfig('second')];
    nowMs += recentConfigsMaxAgeMs - 1;
    await fanOut(revision(3));
    expect(reads).toEqual(['t']);
    nowMs += 1;
    await fanOut(revision(4));
    expect(reads).toEqual(['t', 't']);
    // Revision 5 was another writer's: 6 reads them again, however young the read for 4 is.
    await fanOut(revision(6));
    expect(reads).toEqual(['t', 't', 't']);
    expect(queued.map((delivery) => `${delivery.configId}@${delivery.revision}`)).toEqual([
      'first@2',
      'first@3',
      'first@4',
      'second@4',
      'first@6',
      'second@6',
    ]);
    // The backstop's fan-out reads them each time.
    await fanOutEvents(deps, [revision(7).event]);
    await fanOutEvents(deps, [revision(8).event]);
    expect(reads).toHaveLength(5);
  });

  it('fans the revision that created its task out to the configs its plan wrote, without reading them, and reuses them for the next (decision 0095)', async () => {
    const reads: string[] = [];
    const queued: string[] = [];
    const deps = {
      pushConfigs: listedConfigs((taskId) => [storedConfig('stored', taskId)], reads),
      deliveries: {
        enqueue: async (deliveries: readonly PushDelivery[]) =>
          void queued.push(...deliveries.map((d) => `${d.taskId}:${d.configId}@${d.revision}`)),
      },
      clock: { now: () => new Date() },
    };
    const fanOut = fanOutAfterProjection(deps);
    const event = (taskId: string, revision: number) => ({
      event: { taskId, revision, expiresAt: 4e9, pushConfigured: true as const },
    });
    const created = (taskId: string) => ({
      row: { taskId, expect: { revision: 'absent' as const } },
      items: [{ entity: 'push' as const, item: storedConfig('inline', taskId), expect: 'any' as const }],
    });
    await fanOut(event('new', 1), created('new'));
    await fanOut(event('new', 2), { row: { taskId: 'new', expect: { revision: 1 } } });
    expect(reads).toEqual([]);
    // A plan on a row that was there (a follow-up with a config): the task may have others, read.
    await fanOut(event('old', 4), {
      row: { taskId: 'old', expect: { revision: 3 } },
      items: [{ entity: 'push' as const, item: storedConfig('inline', 'old'), expect: 'any' as const }],
    });
    expect(reads).toEqual(['old']);
    expect(queued).toEqual(['new:inline@1', 'new:inline@2', 'old:stored@4']);
  });
});
