import type { ProtocolVersion } from './a2a.ts';
import type { SealedBlob } from './projection.ts';

/**
 * Push notification configs as the state table holds them (DESIGN.md §4, A2A.md §7): one item
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
   * The protocol version the config was created through; it picks the webhook body (A2A.md §7):
   * v1.0 StreamResponses, or the v0.3 Task as of the revision (decision 0026). Absent means 1.0.
   */
  readonly protocolVersion?: ProtocolVersion;
  /** The task's expiry (epoch seconds): the config goes with the task (I-PURGE). */
  readonly expiresAt: number;
}

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
