import { isInterrupted, isTerminal, withoutGenerations } from '../../domain/a2a.ts';
import { BoundedMap } from '../../domain/bounded-map.ts';
import type { Logger } from '../../domain/logger.ts';
import type {
  Clock,
  JournalRepository,
  PushConfigRepository,
  PushDeliveryLog,
  WebhookSender,
} from '../../domain/ports.ts';
import type { JournalEvent } from '../../domain/projection.ts';
import {
  type AttemptContext,
  type AttemptResult,
  describeAttempt,
  isFinalDelivery,
  owedRevisions,
  type PushDelivery,
  type StoredPushConfig,
} from '../../domain/push.ts';
import { epochSeconds } from '../../domain/task.ts';
import { openStreamResponses, openTaskAt } from '../journal/journal-events.ts';
import { failpoint } from '../operations/failpoints.ts';
import { toProtoJson } from '../rpc/proto-json.ts';
import { toV03Task } from '../rpc/v03-shapes.ts';
import type { TaskContentCodec } from '../tasks/task-content.ts';
import type { PushConfigCodec } from './push-configs.ts';

/**
 * Webhook delivery (docs/protocol.md §7, I-ORDER): every journal event goes to every push config
 * of its task, at least once, in revision order per (task, config). The fan-out
 * (`fan-out-events.ts`) turns an event into one queue message per config; the deliverer turns
 * one message into POSTs.
 */

export interface DeliverDeps {
  readonly pushConfigs: PushConfigRepository;
  readonly journal: JournalRepository;
  readonly codec: TaskContentCodec;
  readonly pushCodec: PushConfigCodec;
  readonly sender: WebhookSender;
  readonly clock: Clock;
  /** Where attempts are recorded for the caller; best effort, never in the way. */
  readonly deliveryLog?: PushDeliveryLog;
  /** What this container recorded final; only with a delivery log. */
  readonly finalHere?: FinalHere;
  readonly logger?: Pick<Logger, 'warn'>;
}

/** (task, config) pairs a container remembers its final records of. */
const finalHereEntries = 10_000;

/**
 * The newest revision this container recorded final per (task, config): a lower
 * bound of what the delivery log's watermark reads (`finalThrough`), since a record stays and
 * the watermark only rises. A message at or below it owes nothing, known without its three reads —
 * the messages of revisions an earlier message delivered ahead (`runAhead`), which reach the same
 * container behind it in their group. Remembered only once a record is written.
 */
export class FinalHere {
  private readonly revisions = new BoundedMap<string, number>(finalHereEntries);

  covers(delivery: PushDelivery): boolean {
    return (this.revisions.get(keyOf(delivery)) ?? 0) >= delivery.revision;
  }

  note(delivery: PushDelivery): void {
    const key = keyOf(delivery);
    if ((this.revisions.get(key) ?? 0) < delivery.revision) this.revisions.set(key, delivery.revision);
  }
}

const keyOf = (delivery: Pick<PushDelivery, 'taskId' | 'configId'>): string =>
  `${delivery.taskId}#${delivery.configId}`;

/** What became of one delivery. Failures worth a retry are thrown as WebhookDeliveryFailedError. */
export type DeliveryOutcome =
  | {
      readonly kind: 'delivered';
      readonly posts: number;
      /** Older revisions this message delivered first, having overtaken theirs. */
      readonly earlier?: readonly number[];
      /** Newer revisions the journal held, delivered after its own. */
      readonly ahead?: readonly number[];
    }
  /** The config was deleted or expired: nothing to deliver to. */
  | { readonly kind: 'config-gone' }
  /** The event expired with its task (retention passed); the purge takes it next. */
  | { readonly kind: 'event-gone' }
  /** The SSRF guard refused the target (a private address, a redirect to it…); not retried. */
  | { readonly kind: 'refused'; readonly reason: string }
  /** Final already (a duplicate message) or not wanted by the config: nothing is posted. */
  | { readonly kind: 'not-owed' };

/** A POST failed (network, timeout, non-2xx, redirect): the queue retries it with backoff. */
export class WebhookDeliveryFailedError extends Error {
  override readonly name: string = 'WebhookDeliveryFailedError';
  constructor(
    readonly reason: string,
    readonly status?: number,
  ) {
    super(`Webhook delivery failed: ${reason}${status ? ` (HTTP ${status})` : ''}`);
  }
}

/**
 * A revision the delivery owes is not in the journal yet: its write-through failed and its
 * projection still waits for the stream backstop, or a writer fanned it out before projecting it.
 * Nothing is posted; the queue retries the message with backoff. (A wanted revision's event
 * cannot have expired while its config lives: the config carries the task's expiry as of a
 * revision at or before it, and expiries only grow.)
 */
export class RevisionNotProjectedError extends WebhookDeliveryFailedError {
  override readonly name = 'RevisionNotProjectedError';
  constructor(readonly revision: number) {
    super('revision not in the journal yet');
  }
}

/**
 * An older revision a message delivered first (it is final: delivered, refused or given up)
 * could not be recorded. The message stops before its next revision and is retried: the record is
 * the watermark that keeps every later message from posting this revision again after a newer one
 * (I-ORDER). The retry posts the revision again, a duplicate, never out of order.
 */
export class DeliveryNotRecordedError extends WebhookDeliveryFailedError {
  override readonly name = 'DeliveryNotRecordedError';
  constructor(readonly revision: number) {
    super('delivery record not written');
  }
}

export const a2aJsonMediaType = 'application/a2a+json';

/**
 * The bodies of one revision's webhook POSTs in the config's protocol version (docs/protocol.md §7): one
 * v1.0 StreamResponse each (artifact updates, then the status update; with generations for a
 * config created through 1.1); for a config created
 * through v0.3, one v0.3 Task as of the revision (`kind: "task"`, lowercase state), what v0.3
 * servers POST (a2a-js 0.3 `DefaultPushNotificationSender`), as `application/json`.
 */
const openWebhookBodies = async (
  codec: TaskContentCodec,
  config: Pick<StoredPushConfig, 'protocolVersion'>,
  events: readonly JournalEvent[],
  event: JournalEvent,
): Promise<string[]> =>
  config.protocolVersion === '0.3'
    ? [JSON.stringify(toProtoJson(toV03Task(await openTaskAt(codec, events, event))))]
    : (await openStreamResponses(codec, event)).map((response) =>
        // Task generations only to a config created through 1.1 (docs/protocol.md §16).
        JSON.stringify(
          toProtoJson(config.protocolVersion === '1.1' ? response : withoutGenerations(response)),
        ),
      );

/** The headers of a webhook POST (docs/protocol.md §7): media type, the auth scheme and credentials, the notification token. */
export const webhookHeaders = (
  config: Pick<StoredPushConfig, 'scheme' | 'protocolVersion'>,
  secrets: { readonly credentials?: string; readonly token?: string },
): Record<string, string> => ({
  'content-type': config.protocolVersion === '0.3' ? 'application/json' : a2aJsonMediaType,
  ...(config.scheme !== undefined && secrets.credentials !== undefined
    ? { authorization: `${config.scheme} ${secrets.credentials}` }
    : {}),
  ...(secrets.token !== undefined ? { 'x-a2a-notification-token': secrets.token } : {}),
});

/** The revision's bodies POSTed in order; the first POST that does not answer 2xx ends it. */
const postRevision = async (
  deps: DeliverDeps,
  config: StoredPushConfig,
  events: readonly JournalEvent[],
  event: JournalEvent,
): Promise<Exclude<AttemptResult, { kind: 'error' }>> => {
  const [bodies, secrets] = await Promise.all([
    openWebhookBodies(deps.codec, config, events, event),
    deps.pushCodec.open(config),
  ]);
  const headers = webhookHeaders(config, secrets);
  let status = 0;
  for (const body of bodies) {
    const result = await deps.sender.post({ url: config.url, headers, body });
    if (result.kind !== 'delivered') return result;
    status = result.status;
    failpoint('deliverer.post');
  }
  return { kind: 'delivered', status, posts: bodies.length };
};

/**
 * Appends the attempt to the delivery's record. A record that cannot be written is logged (ids
 * and error name only). Best effort, like the audit trail, for the message's own revision: the
 * watermark then stays below it, and a later message delivers it again first (a duplicate, never
 * a reordering). `ordersNext`: the message goes on to a newer revision after this one, so a
 * final outcome must be durable first — otherwise `DeliveryNotRecordedError`.
 * Resolves whether the attempt is recorded.
 */
const recordAttempt = async (
  deps: DeliverDeps,
  delivery: PushDelivery,
  event: Pick<JournalEvent, 'expiresAt'>,
  context: AttemptContext | undefined,
  result: AttemptResult,
  ordersNext: boolean,
): Promise<boolean> => {
  if (deps.deliveryLog === undefined || context === undefined) return false;
  const { attempt, state } = describeAttempt(result, context, deps.clock.now());
  try {
    await deps.deliveryLog.append({
      ...delivery,
      state,
      attempt,
      attemptId: context.attemptId,
      expiresAt: event.expiresAt,
    });
    if (isFinalDelivery(state)) deps.finalHere?.note(delivery);
    return true;
  } catch (error) {
    deps.logger?.warn('delivery record not written', {
      ...delivery,
      attempt: context.attempt,
      error: error instanceof Error ? error.name : 'error',
    });
    if (ordersNext && isFinalDelivery(state)) throw new DeliveryNotRecordedError(delivery.revision);
    return false;
  }
};

/**
 * One revision's POSTs to one config, recorded (`ordersNext`: see `recordAttempt`); an internal
 * failure is recorded and rethrown.
 */
const attemptRevision = async (
  deps: DeliverDeps,
  delivery: PushDelivery,
  config: StoredPushConfig,
  events: readonly JournalEvent[],
  event: JournalEvent,
  context: AttemptContext | undefined,
  ordersNext: boolean,
): Promise<Awaited<ReturnType<typeof postRevision>> & { readonly recorded: boolean }> => {
  let result: Awaited<ReturnType<typeof postRevision>>;
  try {
    result = await postRevision(deps, config, events, event);
  } catch (error) {
    await recordAttempt(deps, delivery, event, context, { kind: 'error' }, false);
    throw error;
  }
  return { ...result, recorded: await recordAttempt(deps, delivery, event, context, result, ordersNext) };
};

/**
 * Delivers one message's revision to one config: its bodies, one POST each, in order. Any failed
 * POST fails the whole delivery, which is then retried from its first POST (receivers get
 * duplicates, never a gap or a reordering). With an attempt context, the attempt's outcome is
 * recorded for the caller; a config or event that is gone records nothing.
 *
 * With a delivery log, the message delivers every revision its config is still owed up to its
 * own, oldest first (`owedRevisions`): a revision fanned out directly by its writer
 * can reach the queue before an older one that waits for the stream backstop, and the webhook must
 * still get the older one first; a message for a revision already final (a late duplicate)
 * posts nothing. At the queue's last attempt an older revision that fails is given up and the
 * next one is tried, as its own message would have been. A newer revision is posted only once the
 * older one's final record is written: once any revision is posted, the log says
 * every older one is final, so no later message — a retry, a late backstop copy — posts one.
 * Once its own revision is delivered and recorded, the message goes on to the newer revisions
 * the journal already holds (`runAhead`), so a task's last revision does not wait
 * one queue receive per revision before it.
 */
export const deliverPush = async (
  deps: DeliverDeps,
  delivery: PushDelivery,
  context?: AttemptContext,
): Promise<DeliveryOutcome> => {
  // Final here already: the message of a revision delivered ahead of it.
  if (deps.deliveryLog !== undefined && deps.finalHere?.covers(delivery)) return { kind: 'not-owed' };
  const now = epochSeconds(deps.clock.now());
  // The three reads at once: the config, the watermark, and the events from the
  // message's own revision — what a v1.0 config owes in the common case. None depends on when the
  // others are read: a config is deleted, never changed; the watermark only rises, and no other
  // message of the group runs meanwhile; events of a revision already queued only stay.
  const [config, finalThrough, ownEvents] = await Promise.all([
    deps.pushConfigs.get(delivery.taskId, delivery.configId),
    deps.deliveryLog?.finalThrough(delivery.taskId, delivery.configId),
    deps.journal.listEvents(delivery.taskId, delivery.revision - 1),
  ]);
  if (config === undefined || config.expiresAt <= now) return { kind: 'config-gone' };
  const owed =
    deps.deliveryLog === undefined
      ? [delivery.revision]
      : owedRevisions(config, delivery.revision, finalThrough);
  const oldest = owed[0];
  if (oldest === undefined) return { kind: 'not-owed' };
  // A v0.3 body is the task as of the revision: its artifacts may come from an earlier event. An
  // older revision still owed (a catch-up) needs its events too: read again from there.
  const from = config.protocolVersion === '0.3' ? 0 : oldest - 1;
  const events =
    from === delivery.revision - 1 ? ownEvents : await deps.journal.listEvents(delivery.taskId, from);
  const event = events.find((candidate) => candidate.revision === delivery.revision);
  if (event === undefined) throw new RevisionNotProjectedError(delivery.revision);
  if (event.expiresAt <= now) return { kind: 'event-gone' };

  const lastAttempt = context !== undefined && context.attempt >= context.maxAttempts;
  const earlier: number[] = [];
  let posts = 0;
  let ownRecorded = false;
  for (const revision of owed) {
    const owedEvent = events.find((candidate) => candidate.revision === revision);
    if (owedEvent === undefined) throw new RevisionNotProjectedError(revision);
    // An older revision can expire before the message's own (a follow-up extended the task).
    if (owedEvent.expiresAt <= now) continue;
    const result = await attemptRevision(
      deps,
      { ...delivery, revision },
      config,
      events,
      owedEvent,
      context,
      revision !== delivery.revision,
    );
    if (revision === delivery.revision) {
      if (result.kind === 'refused') return { kind: 'refused', reason: result.reason };
      if (result.kind === 'failed') throw new WebhookDeliveryFailedError(result.reason, result.status);
      posts += result.posts;
      ownRecorded = result.recorded;
    } else if (result.kind === 'failed' && !lastAttempt) {
      throw new WebhookDeliveryFailedError(result.reason, result.status);
    } else if (result.kind === 'delivered') {
      posts += result.posts;
      earlier.push(revision);
    }
  }
  const ahead =
    ownRecorded && context !== undefined
      ? await runAhead(deps, delivery, config, events, context)
      : { revisions: [], posts: 0 };
  return {
    kind: 'delivered',
    posts: posts + ahead.posts,
    ...(earlier.length > 0 ? { earlier } : {}),
    ...(ahead.revisions.length > 0 ? { ahead: ahead.revisions } : {}),
  };
};

/**
 * How long a message may go on delivering newer revisions after its own (`runAhead`): one POST's
 * timeout, far inside the deliverer's; what is left is delivered by those revisions' own messages.
 */
const runAheadBudgetMs = 10_000;

/**
 * The newer revisions the journal already holds, delivered right after the message's own, in
 * order: their own messages wait behind this one in the (task, config) group,
 * each a receive later; delivered and recorded here, each finds its revision final and posts
 * nothing. Only a revision delivered and recorded moves it on — the log is the watermark that
 * keeps a later message from posting an older revision after a newer one (I-ORDER). The
 * first that is not ends it, unrecorded: its own message makes that revision's first counted
 * attempt, as it would have without this.
 */
const runAhead = async (
  deps: DeliverDeps,
  delivery: PushDelivery,
  config: StoredPushConfig,
  events: readonly JournalEvent[],
  context: AttemptContext,
): Promise<{ readonly revisions: readonly number[]; readonly posts: number }> => {
  const until = deps.clock.now().getTime() + runAheadBudgetMs;
  const revisions: number[] = [];
  let posts = 0;
  let known = events;
  let last = events.find((candidate) => candidate.revision === delivery.revision);
  // Read again while the task moves on: its next revision is often committed while the last one
  // was posted. A read that finds nothing newer ends it.
  while (last !== undefined && deps.clock.now().getTime() < until) {
    const next = last.revision + 1;
    let event = known.find((candidate) => candidate.revision === next);
    if (event === undefined && movesOn(last)) {
      known = await readNewer(deps, delivery.taskId, known, last.revision);
      event = known.find((candidate) => candidate.revision === next);
    }
    if (event === undefined || event.expiresAt <= epochSeconds(deps.clock.now())) break;
    const result = await postRevision(deps, config, known, event).catch(() => undefined);
    if (result?.kind !== 'delivered') break;
    // Its record and the read of what follows it at once: only the next POST
    // must wait for the record. A read that finds nothing is made again after the record.
    const posted = event;
    const following =
      movesOn(posted) && !known.some((candidate) => candidate.revision === next + 1)
        ? readNewer(deps, delivery.taskId, known, next).catch(() => known)
        : Promise.resolve(known);
    // Its first attempt: its own message, still behind this one in the group, was never received.
    const [recorded, read] = await Promise.all([
      recordAttempt(deps, { ...delivery, revision: next }, posted, { ...context, attempt: 1 }, result, false),
      following,
    ]);
    if (!recorded) break;
    known = read;
    revisions.push(next);
    posts += result.posts;
    last = posted;
  }
  return { revisions, posts };
};

/** A revision after which the task can still move on: neither terminal nor interrupted. */
const movesOn = (event: JournalEvent): boolean => !isTerminal(event.state) && !isInterrupted(event.state);

/** The events known, with those after `through` replaced by the journal's (a v0.3 body never sees one twice). */
const readNewer = async (
  deps: DeliverDeps,
  taskId: string,
  known: readonly JournalEvent[],
  through: number,
): Promise<readonly JournalEvent[]> => [
  ...known.filter((candidate) => candidate.revision <= through),
  ...(await deps.journal.listEvents(taskId, through)),
];
