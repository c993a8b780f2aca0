import type { ProtocolVersion } from './a2a.ts';
import type { SealedBlob } from './projection.ts';

/**
 * Push notification configs as the state table holds them (docs/data-model.md, docs/protocol.md §7): one item
 * per (task, config) in the task's partition, so a purge of the task takes them along. The
 * webhook's credentials and token are sealed, each bound to (taskId, `push#<configId>#<field>`),
 * so a blob copied to another config or task fails to open.
 */
export interface StoredPushConfig {
  readonly taskId: string;
  readonly configId: string;
  readonly url: string;
  /** The IANA auth scheme (`Bearer`, `Basic`, …); not secret, kept in clear. */
  readonly scheme?: string;
  readonly sealedCredentials?: SealedBlob;
  readonly sealedToken?: SealedBlob;
  readonly createdAt: string;
  /**
   * The protocol version the config was created through; it picks the webhook body (docs/protocol.md §7):
   * v1.0 StreamResponses (with their task generations for a config created through 1.1,
   * docs/protocol.md §16), or the v0.3 Task as of the revision (docs/protocol.md §1). Absent means 1.0.
   */
  readonly protocolVersion?: ProtocolVersion;
  /** The task's expiry (epoch seconds): the config goes with the task (I-PURGE). */
  readonly expiresAt: number;
  /**
   * The task's last revision committed before the config existed: the config gets the revisions
   * after it, never older ones a lagging pusher still carries. A config sent inline with a
   * message gets the revision that message created. Absent (configs stored before this field
   * existed): every revision.
   */
  readonly afterRevision?: number;
}

/** Whether a config gets the event of `revision` (it was committed after the config existed). */
export const configWantsRevision = (
  config: Pick<StoredPushConfig, 'afterRevision'>,
  revision: number,
): boolean => revision > (config.afterRevision ?? 0);

/** The seal context field of one secret of one config. */
export const pushSecretField = (configId: string, field: 'credentials' | 'token'): string =>
  `push#${configId}#${field}`;

/** One webhook delivery to make: the event of `revision` of `taskId`, to config `configId`. */
export interface PushDelivery {
  readonly taskId: string;
  readonly configId: string;
  readonly revision: number;
}

/** The FIFO group of a delivery: order holds per (task, webhook) and nothing else waits on it. */
export const deliveryGroupOf = (delivery: Pick<PushDelivery, 'taskId' | 'configId'>): string =>
  `${delivery.taskId}#${delivery.configId}`;

/** The deduplication id of a delivery: the same revision to the same config is sent once per window. */
export const deliveryDedupIdOf = (delivery: PushDelivery): string =>
  `${delivery.taskId}#${delivery.configId}#${delivery.revision}`;

/**
 * How long a failed delivery waits before its next attempt: exponential from `baseSeconds`
 * (attempt 1 → base, 2 → 2·base, …), capped. The attempt count comes from the queue.
 */
export const deliveryBackoffSeconds = (attempt: number, baseSeconds: number, capSeconds = 300): number =>
  Math.min(capSeconds, Math.round(baseSeconds * 2 ** Math.max(0, attempt - 1)));

/**
 * What one delivery attempt came to: the revision's POSTs all answered 2xx, one
 * answered another HTTP status, one failed below HTTP (connection, timeout, DNS, a redirect not
 * followed), the SSRF guard refused the target, or the attempt failed inside the deliverer.
 */
export const attemptOutcomes = [
  'DELIVERED',
  'HTTP_ERROR',
  'NETWORK_ERROR',
  'REFUSED',
  'INTERNAL_ERROR',
] as const;
export type AttemptOutcome = (typeof attemptOutcomes)[number];

/**
 * Where a (task, config, revision) delivery stands after its latest attempt: delivered; waiting
 * for its next attempt; refused by the SSRF guard (never retried); given up after the last
 * attempt the queue allows (the message goes to the delivery DLQ).
 */
export const deliveryStates = ['DELIVERED', 'RETRYING', 'REFUSED', 'GAVE_UP'] as const;
export type DeliveryState = (typeof deliveryStates)[number];

/** A delivery in one of these states is done with: no attempt of it, or of an older revision, follows. */
export const isFinalDelivery = (state: DeliveryState): boolean => state !== 'RETRYING';

/**
 * The revisions a delivery message of `revision` owes its config, oldest first (I-ORDER):
 * every revision the config wants after the last one final for it, up to `revision`. So a
 * message that overtook an older revision's (fanned out directly by its writer while the older
 * one still waits for the stream backstop) delivers that one first, and a message at or below
 * what is final (a late duplicate, after SQS's 5-minute deduplication window) owes nothing.
 */
export const owedRevisions = (
  config: Pick<StoredPushConfig, 'afterRevision'>,
  revision: number,
  finalThrough: number | undefined,
): number[] => {
  const after = Math.max(finalThrough ?? 0, config.afterRevision ?? 0);
  return Array.from({ length: Math.max(0, revision - after) }, (_, index) => after + 1 + index);
};

/** One attempt, metadata only: never the body, the URL, the credentials or the token (I-LEAVE). */
export interface PushDeliveryAttempt {
  /**
   * 1-based: the queue's receive count of the delivery message; 1 for a revision an earlier
   * revision's message delivered ahead of its own.
   */
  readonly attempt: number;
  /** When the attempt ended, ISO-8601 UTC. */
  readonly at: string;
  readonly outcome: AttemptOutcome;
  /** The status of the last POST answered (2xx when delivered, the failing one otherwise). */
  readonly httpStatus?: number;
  /** A short error class (`timeout`, `network: ECONNREFUSED`, `forbidden-address: loopback`). */
  readonly error?: string;
  /** POSTs the revision took (its artifact updates and its status update), when delivered. */
  readonly posts?: number;
  /** When the next attempt is due (RETRYING only). */
  readonly nextAttemptAt?: string;
}

/** The record of one revision's delivery to one config: its attempts, oldest first. */
export interface PushDeliveryRecord {
  readonly taskId: string;
  readonly configId: string;
  readonly revision: number;
  readonly state: DeliveryState;
  readonly attempts: readonly PushDeliveryAttempt[];
  readonly updatedAt: string;
  /** The task's expiry as of the revision (the journal event's): the record goes with the task. */
  readonly expiresAt: number;
}

/** One attempt to append to its delivery's record; `attemptId` makes the append idempotent. */
export interface DeliveryAttemptEntry {
  readonly taskId: string;
  readonly configId: string;
  readonly revision: number;
  readonly state: DeliveryState;
  readonly attempt: PushDeliveryAttempt;
  readonly attemptId: string;
  readonly expiresAt: number;
}

/** Which attempt of a delivery message this is, as the queue says, and what the queue allows. */
export interface AttemptContext {
  readonly attempt: number;
  /** The queue's maxReceiveCount: after a failed last attempt the message goes to the DLQ. */
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  /** Unique per receive of a message (message id + receive count). */
  readonly attemptId: string;
}

/** What the POSTs of one attempt came to, before it is described. */
export type AttemptResult =
  | { readonly kind: 'delivered'; readonly status: number; readonly posts: number }
  | { readonly kind: 'failed'; readonly reason: string; readonly status?: number }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'error' };

/** Error classes are the guard's own short codes; anything else (or too long) reads `error`. */
const errorClassOf = (reason: string): string => (/^[A-Za-z0-9 :._-]{1,64}$/.test(reason) ? reason : 'error');

/** The attempt and the delivery's new state, from what the POSTs came to (pure). */
export const describeAttempt = (
  result: AttemptResult,
  context: AttemptContext,
  now: Date,
): { readonly attempt: PushDeliveryAttempt; readonly state: DeliveryState } => {
  const base = { attempt: context.attempt, at: now.toISOString() };
  if (result.kind === 'delivered') {
    return {
      attempt: { ...base, outcome: 'DELIVERED', httpStatus: result.status, posts: result.posts },
      state: 'DELIVERED',
    };
  }
  if (result.kind === 'refused') {
    return { attempt: { ...base, outcome: 'REFUSED', error: errorClassOf(result.reason) }, state: 'REFUSED' };
  }
  const lastAttempt = context.attempt >= context.maxAttempts;
  const retryAt = new Date(
    now.getTime() + deliveryBackoffSeconds(context.attempt, context.retryBaseSeconds) * 1000,
  );
  const failure: PushDeliveryAttempt =
    result.kind === 'error'
      ? { ...base, outcome: 'INTERNAL_ERROR' }
      : result.status !== undefined && result.reason === 'http status'
        ? { ...base, outcome: 'HTTP_ERROR', httpStatus: result.status }
        : {
            ...base,
            outcome: 'NETWORK_ERROR',
            error: errorClassOf(result.reason),
            ...(result.status !== undefined ? { httpStatus: result.status } : {}),
          };
  return lastAttempt
    ? { attempt: failure, state: 'GAVE_UP' }
    : { attempt: { ...failure, nextAttemptAt: retryAt.toISOString() }, state: 'RETRYING' };
};
