import { InvalidParamsError, PushNotificationNotSupportedError } from '../../domain/errors.ts';
import type { Clock, PushDeliveryLog, TaskRepository } from '../../domain/ports.ts';
import type {
  AttemptOutcome,
  DeliveryState,
  PushDeliveryAttempt,
  PushDeliveryRecord,
} from '../../domain/push.ts';
import { type AgentCaller, isExpired } from '../../domain/task.ts';
import { configIdPattern, ownedTask } from './push-configs.ts';

/**
 * The push-deliveries extension (docs/protocol.md §7): a task's owner reads what became of its webhook
 * deliveries — per (config, revision) the state and every attempt (time, outcome, HTTP status or
 * error class, next attempt). Metadata only: no body, URL, credentials or token is recorded.
 *
 * An extension method, not extra fields on TaskPushNotificationConfig: A2A extensions may add
 * RPC methods but not change core data structures (a2aproject/A2A docs/topics/extensions.md,
 * "Method Extensions" and "Limitations"), and the config has no `metadata` map to carry it.
 * Cards declare it as `pushDeliveriesExtension` (agent-card.ts).
 */

export interface PushDeliveryReadDeps {
  readonly tasks: TaskRepository;
  readonly clock: Clock;
  readonly deliveryLog?: PushDeliveryLog;
}

/** One attempt on the wire (camelCase, enum names as strings, ISO-8601 UTC timestamps). */
export interface PushDeliveryAttemptJson {
  readonly attempt: number;
  readonly timestamp: string;
  readonly outcome: AttemptOutcome;
  readonly httpStatus?: number;
  readonly error?: string;
  readonly posts?: number;
  readonly nextAttemptTimestamp?: string;
}

export interface PushDeliveryJson {
  readonly taskId: string;
  readonly configId: string;
  readonly revision: number;
  readonly state: DeliveryState;
  readonly attempts: PushDeliveryAttemptJson[];
  readonly updateTimestamp: string;
}

export interface ListTaskPushDeliveriesResult {
  readonly deliveries: PushDeliveryJson[];
  /** Always present, `""` on the last page (as ListTasks). */
  readonly nextPageToken: string;
}

const toAttemptJson = (attempt: PushDeliveryAttempt): PushDeliveryAttemptJson => ({
  attempt: attempt.attempt,
  timestamp: attempt.at,
  outcome: attempt.outcome,
  ...(attempt.httpStatus !== undefined ? { httpStatus: attempt.httpStatus } : {}),
  ...(attempt.error !== undefined ? { error: attempt.error } : {}),
  ...(attempt.posts !== undefined ? { posts: attempt.posts } : {}),
  ...(attempt.nextAttemptAt !== undefined ? { nextAttemptTimestamp: attempt.nextAttemptAt } : {}),
});

export const toPushDeliveryJson = (record: PushDeliveryRecord): PushDeliveryJson => ({
  taskId: record.taskId,
  configId: record.configId,
  revision: record.revision,
  state: record.state,
  attempts: record.attempts.map(toAttemptJson),
  updateTimestamp: record.updatedAt,
});

const tokenPrefix = 'd1:';

const encodeToken = (record: Pick<PushDeliveryRecord, 'configId' | 'revision'>): string =>
  Buffer.from(`${tokenPrefix}${record.configId}#${record.revision}`, 'utf8').toString('base64url');

const decodeToken = (token: string): { configId: string; revision: number } => {
  const decoded = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, 'base64url').toString('utf8') : '';
  const separator = decoded.lastIndexOf('#');
  const configId = decoded.slice(tokenPrefix.length, separator);
  const revision = decoded.slice(separator + 1);
  if (
    !decoded.startsWith(tokenPrefix) ||
    !configIdPattern.test(configId) ||
    !/^[1-9]\d{0,9}$/.test(revision)
  ) {
    throw new InvalidParamsError([{ field: 'pageToken', description: 'Not a page token of this list' }]);
  }
  return { configId, revision: Number(revision) };
};

const defaultPageSize = 50;

/**
 * The caller's deliveries of one task, in (configId, revision) order. Owner-checked on the task
 * row first (I-OWNER: another caller's task is TaskNotFound), expired records left out (I-PURGE).
 */
export const listPushDeliveries = async (
  deps: PushDeliveryReadDeps,
  caller: AgentCaller,
  taskId: string,
  page: { readonly configId?: string; readonly pageSize?: number; readonly pageToken?: string } = {},
): Promise<ListTaskPushDeliveriesResult> => {
  if (deps.deliveryLog === undefined) throw new PushNotificationNotSupportedError();
  const after = page.pageToken === undefined ? undefined : decodeToken(page.pageToken);
  await ownedTask(deps, caller, taskId);
  const { records, more } = await deps.deliveryLog.list(taskId, {
    limit: page.pageSize ?? defaultPageSize,
    ...(page.configId !== undefined ? { configId: page.configId } : {}),
    ...(after !== undefined ? { after } : {}),
  });
  const now = deps.clock.now();
  const last = records.at(-1);
  return {
    deliveries: records.filter((record) => !isExpired(record.expiresAt, now)).map(toPushDeliveryJson),
    nextPageToken: more && last ? encodeToken(last) : '',
  };
};
