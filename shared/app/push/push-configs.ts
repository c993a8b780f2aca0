import type { Config } from '../../config/config.ts';
import type { AuthenticationInfo, ProtocolVersion, TaskPushNotificationConfig } from '../../domain/a2a.ts';
import {
  InvalidParamsError,
  PushNotificationNotSupportedError,
  TaskNotFoundError,
} from '../../domain/errors.ts';
import type { Clock, IdGenerator, PushConfigRepository, Sealer, TaskRepository } from '../../domain/ports.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { pushSecretField, type StoredPushConfig } from '../../domain/push.ts';
import { type AgentCaller, epochSeconds, isOwnTask } from '../../domain/task.ts';
import { checkWebhookUrl, type WebhookPolicy } from '../../domain/webhook-address.ts';
import { checkPushConfigLimit, limitsOf } from '../tasks/limits.ts';

/**
 * Push notification config CRUD (docs/protocol.md §7, §2.1): owner-checked against the task row, allowed
 * on terminal tasks, secrets sealed per config, the URL checked when it is stored (and again,
 * with DNS, at every delivery).
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Seals and opens a config's credentials and token, each bound to (taskId, push#<configId>#<field>). */
export class PushConfigCodec {
  constructor(private readonly sealer: Sealer) {}

  async seal(
    taskId: string,
    configId: string,
    secrets: { readonly credentials?: string; readonly token?: string },
  ): Promise<Pick<StoredPushConfig, 'sealedCredentials' | 'sealedToken'>> {
    const sealOne = (field: 'credentials' | 'token', value: string | undefined) =>
      value === undefined
        ? undefined
        : this.sealer.seal(encoder.encode(value), { taskId, field: pushSecretField(configId, field) });
    const [sealedCredentials, sealedToken] = await Promise.all([
      sealOne('credentials', secrets.credentials),
      sealOne('token', secrets.token),
    ]);
    return { sealedCredentials, sealedToken };
  }

  async open(config: StoredPushConfig): Promise<{ credentials?: string; token?: string }> {
    const openOne = async (field: 'credentials' | 'token', blob: Uint8Array | undefined) =>
      blob === undefined
        ? undefined
        : decoder.decode(
            await this.sealer.open(blob, {
              taskId: config.taskId,
              field: pushSecretField(config.configId, field),
            }),
          );
    const [credentials, token] = await Promise.all([
      openOne('credentials', config.sealedCredentials),
      openOne('token', config.sealedToken),
    ]);
    return { credentials, token };
  }
}

export interface PushConfigDeps {
  readonly tasks: TaskRepository;
  /** Its `limits.pushConfigsPerTask` (docs/configuration.md, `limits`). */
  readonly config?: Pick<Config, 'limits'>;
  readonly pushConfigs: PushConfigRepository;
  readonly pushCodec: PushConfigCodec;
  readonly webhookPolicy: WebhookPolicy;
  readonly clock: Clock;
  readonly ids: IdGenerator;
}

/** A config as a client sends it (CreateTaskPushNotificationConfig params, or inline on SendMessage). */
export interface PushConfigInput {
  readonly id?: string;
  readonly url: string;
  readonly token?: string;
  readonly authentication?: AuthenticationInfo;
  /** The version of the request that created it; it picks the webhook body. Default 1.0. */
  readonly protocolVersion?: ProtocolVersion;
}

/** Config ids become part of a DynamoDB key and of SQS FIFO group and deduplication ids (≤ 128 chars). */
export const configIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:@~-]{0,63}$/;

const urlProblemText: Record<string, string> = {
  'not-a-url': 'Must be an absolute URL',
  scheme: 'Must be an http(s) URL',
  'https-required': 'Must be an https URL',
  'credentials-in-url': 'Must not carry user:password; use authentication',
  'forbidden-address': 'Must not point to a loopback, private, link-local or otherwise internal address',
};

/** Checks what can be checked without DNS; `fieldPrefix` names the config in the request. */
export const validatePushConfigInput = (
  input: PushConfigInput,
  policy: WebhookPolicy,
  fieldPrefix: string,
): void => {
  const violations: { field: string; description: string }[] = [];
  const check = checkWebhookUrl(input.url, policy);
  if (!check.ok) {
    violations.push({
      field: `${fieldPrefix}url`,
      description: urlProblemText[check.problem] ?? check.problem,
    });
  }
  if (input.id !== undefined && !configIdPattern.test(input.id)) {
    violations.push({
      field: `${fieldPrefix}id`,
      description: 'Must be 1-64 characters of letters, digits and ._:@~- starting with a letter or digit',
    });
  }
  if (
    input.authentication !== undefined &&
    !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(input.authentication.scheme)
  ) {
    violations.push({
      field: `${fieldPrefix}authentication.scheme`,
      description: 'Must be an HTTP auth scheme token',
    });
  }
  for (const [name, value] of [
    ['token', input.token],
    ['authentication.credentials', input.authentication?.credentials],
  ] as const) {
    if (value !== undefined && /[\r\n\0]/.test(value)) {
      violations.push({ field: `${fieldPrefix}${name}`, description: 'Must not contain line breaks' });
    }
  }
  if (violations.length > 0) throw new InvalidParamsError(violations);
};

/**
 * Builds the stored config (secrets sealed) for a task; the caller writes it. `afterRevision`:
 * the task's last revision committed before the config exists (it gets the later ones).
 */
export const buildPushConfig = async (
  deps: Pick<PushConfigDeps, 'pushCodec' | 'clock' | 'ids'>,
  task: Pick<StoredTask, 'taskId' | 'expiresAt'>,
  input: PushConfigInput,
  afterRevision: number,
): Promise<StoredPushConfig> => {
  const configId = input.id ?? deps.ids.newId();
  const sealed = await deps.pushCodec.seal(task.taskId, configId, {
    credentials: input.authentication?.credentials,
    token: input.token,
  });
  return {
    taskId: task.taskId,
    configId,
    url: input.url,
    scheme: input.authentication?.scheme,
    ...sealed,
    createdAt: deps.clock.now().toISOString(),
    // Only v0.3 and 1.1 are recorded: a v1.0 config stays as it always was.
    ...(input.protocolVersion === '0.3' || input.protocolVersion === '1.1'
      ? { protocolVersion: input.protocolVersion }
      : {}),
    expiresAt: task.expiresAt,
    afterRevision,
  };
};

/** The flat v1.0 TaskPushNotificationConfig of a stored config. */
export const toTaskPushNotificationConfig = async (
  codec: PushConfigCodec,
  config: StoredPushConfig,
): Promise<TaskPushNotificationConfig> => {
  const { credentials, token } = await codec.open(config);
  return {
    id: config.configId,
    taskId: config.taskId,
    url: config.url,
    ...(token !== undefined ? { token } : {}),
    ...(config.scheme !== undefined
      ? { authentication: { scheme: config.scheme, ...(credentials !== undefined ? { credentials } : {}) } }
      : {}),
  };
};

/** The caller's task row, or TaskNotFound for a missing, foreign or expired one, or another agent's (I-OWNER, I-PURGE). */
export const ownedTask = async (
  deps: Pick<PushConfigDeps, 'tasks' | 'clock'>,
  caller: AgentCaller,
  taskId: string,
): Promise<StoredTask> => {
  const task = await deps.tasks.getTask(taskId);
  if (task === undefined || !isOwnTask(task, caller) || task.expiresAt <= epochSeconds(deps.clock.now())) {
    throw new TaskNotFoundError(taskId);
  }
  return task;
};

const live = (deps: PushConfigDeps, config: StoredPushConfig | undefined): config is StoredPushConfig =>
  config !== undefined && config.expiresAt > epochSeconds(deps.clock.now());

export const createPushConfig = async (
  deps: PushConfigDeps,
  caller: AgentCaller,
  taskId: string,
  input: PushConfigInput,
): Promise<TaskPushNotificationConfig> => {
  validatePushConfigInput(input, deps.webhookPolicy, '');
  const read = await ownedTask(deps, caller, taskId);
  await checkPushConfigLimit(
    deps.pushConfigs,
    taskId,
    input.id,
    limitsOf(deps.config),
    'id',
    epochSeconds(deps.clock.now()),
  );
  // The push mark first, then the revision the config is stored with (docs/data-model.md, "State
  // table"): every revision after it is committed on a row that carries the mark, so the pusher reads configs for
  // it. A row read with the mark already carries it; a crash before the put leaves a mark alone.
  const task = read.pushConfigured ? read : await deps.tasks.markPushConfigured(taskId);
  if (task === undefined) throw new TaskNotFoundError(taskId);
  // That revision was committed before the config exists: it gets the later ones.
  const config = await buildPushConfig(deps, task, input, task.revision);
  await deps.pushConfigs.put(config);
  return toTaskPushNotificationConfig(deps.pushCodec, config);
};

export const getPushConfig = async (
  deps: PushConfigDeps,
  caller: AgentCaller,
  taskId: string,
  configId: string,
): Promise<TaskPushNotificationConfig> => {
  await ownedTask(deps, caller, taskId);
  const config = await deps.pushConfigs.get(taskId, configId);
  // A2A §3.1.8: a missing config is TaskNotFoundError too.
  if (!live(deps, config)) throw new TaskNotFoundError(taskId);
  return toTaskPushNotificationConfig(deps.pushCodec, config);
};

const defaultPageSize = 50;

const encodeToken = (configId: string): string => Buffer.from(`p1:${configId}`, 'utf8').toString('base64url');
const decodeToken = (token: string): string => {
  const decoded = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, 'base64url').toString('utf8') : '';
  const configId = decoded.startsWith('p1:') ? decoded.slice(3) : '';
  if (!configIdPattern.test(configId)) {
    throw new InvalidParamsError([{ field: 'pageToken', description: 'Not a page token of this list' }]);
  }
  return configId;
};

export const listPushConfigs = async (
  deps: PushConfigDeps,
  caller: AgentCaller,
  taskId: string,
  page: { readonly pageSize?: number; readonly pageToken?: string } = {},
): Promise<{ configs: TaskPushNotificationConfig[]; nextPageToken?: string }> => {
  const afterConfigId = page.pageToken === undefined ? undefined : decodeToken(page.pageToken);
  await ownedTask(deps, caller, taskId);
  const { configs, more } = await deps.pushConfigs.list(taskId, {
    limit: page.pageSize ?? defaultPageSize,
    ...(afterConfigId !== undefined ? { afterConfigId } : {}),
  });
  const last = configs.at(-1);
  return {
    configs: await Promise.all(
      configs
        .filter((config) => live(deps, config))
        .map((config) => toTaskPushNotificationConfig(deps.pushCodec, config)),
    ),
    ...(more && last ? { nextPageToken: encodeToken(last.configId) } : {}),
  };
};

/** Idempotent: a config that is already gone answers like a deleted one (A2A §7). */
export const deletePushConfig = async (
  deps: PushConfigDeps,
  caller: AgentCaller,
  taskId: string,
  configId: string,
): Promise<void> => {
  await ownedTask(deps, caller, taskId);
  await deps.pushConfigs.delete(taskId, configId);
};

/** For deps that may lack push support (a build or test without it): the capability error. */
export const requirePushDeps = <T extends Partial<PushConfigDeps>>(deps: T): T & PushConfigDeps => {
  if (!deps.pushConfigs || !deps.pushCodec || !deps.webhookPolicy)
    throw new PushNotificationNotSupportedError();
  return deps as T & PushConfigDeps;
};
