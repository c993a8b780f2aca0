import { type Config, defaultConfig, parseConfig } from './config.ts';

/**
 * The environment every function reads, validated once at cold start. A missing variable fails
 * fast with its name. AWS endpoints come from the SDK's own AWS_ENDPOINT_URL_* variables.
 */
export interface RuntimeEnv {
  readonly stateTableName: string;
  readonly journalTableName: string;
  readonly auditTableName: string;
  readonly runQueueUrl: string;
  /**
   * The FIFO webhook delivery queue; required by the pusher only (docs/architecture.md, "Push
   * notifications").
   */
  readonly deliveryQueueUrl?: string;
  readonly kmsKeyId: string;
  /** Names the installation in the KMS encryption context. */
  readonly installation: string;
  readonly localMode: boolean;
  readonly config: Config;
  /** Run leases and start deadlines (ms), shortened by the local stack's fault tests; unset in AWS. */
  readonly runLeaseMs?: number;
  readonly runStartDeadlineMs?: number;
  /**
   * How long the rpc function serves the saved profiles it read (docs/operations.md, "Saved profiles");
   * default 30 s.
   */
  readonly profileCacheMs?: number;
  /**
   * The rpc runs a blocking send's run itself: set where the function holds the
   * executor's grants (`deployment.blockingRunsInRpc`, the default, and the local stack).
   */
  readonly runsBlockingSends: boolean;
}

const required = (env: NodeJS.ProcessEnv, name: string): string => {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new Error(`Missing environment variable ${name}`);
  }
  return value;
};

export const readRuntimeEnv = (env: NodeJS.ProcessEnv = process.env): RuntimeEnv => ({
  stateTableName: required(env, 'STATE_TABLE_NAME'),
  journalTableName: required(env, 'JOURNAL_TABLE_NAME'),
  auditTableName: required(env, 'AUDIT_TABLE_NAME'),
  runQueueUrl: required(env, 'RUN_QUEUE_URL'),
  ...(env.DELIVERY_QUEUE_URL ? { deliveryQueueUrl: env.DELIVERY_QUEUE_URL } : {}),
  kmsKeyId: required(env, 'KMS_KEY_ID'),
  installation: required(env, 'A2A_INSTALLATION'),
  localMode: env.A2A_LOCAL_MODE === 'true',
  runsBlockingSends: env.RUNS_BLOCKING_SENDS === 'true',
  config: env.A2A_CONFIG ? parseConfig(JSON.parse(env.A2A_CONFIG)) : defaultConfig,
  ...optionalMs(env, 'RUN_LEASE_MS', 'runLeaseMs'),
  ...optionalMs(env, 'RUN_START_DEADLINE_MS', 'runStartDeadlineMs'),
  ...optionalMs(env, 'PROFILE_CACHE_MS', 'profileCacheMs'),
});

/** The webhook delivery queue, which only the pusher and the deliverer are given. */
export const deliveryQueueUrlOf = (env: Pick<RuntimeEnv, 'deliveryQueueUrl'>): string => {
  if (!env.deliveryQueueUrl) throw new Error('Missing environment variable DELIVERY_QUEUE_URL');
  return env.deliveryQueueUrl;
};

/** The authorizer's environment: only the configuration (it reads no table, queue or key). */
export const readAuthorizerEnv = (env: NodeJS.ProcessEnv = process.env): Pick<RuntimeEnv, 'config'> => ({
  config: parseConfig(JSON.parse(required(env, 'A2A_CONFIG'))),
});

const optionalMs = <K extends 'runLeaseMs' | 'runStartDeadlineMs' | 'profileCacheMs'>(
  env: NodeJS.ProcessEnv,
  name: string,
  key: K,
): Partial<Record<K, number>> => {
  const value = env[name];
  if (value === undefined || value === '') return {};
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms <= 0) throw new Error(`${name} must be a positive integer, not "${value}"`);
  return { [key]: ms } as Partial<Record<K, number>>;
};
