import * as z from 'zod';
import { authConfigSchema } from './auth.ts';

/**
 * The configuration contract of docs/configuration.md: one file format for `npm start --config`,
 * `cdk deploy -c config=…` and the admin command. Parsed once, at cold start.
 */

const privacyLevelInput = z.string();

const scriptedProvider = z.object({
  type: z.literal('scripted'),
  behavior: z.enum(['echo', 'tck', 'fail', 'slow']).default('echo'),
  privacyLevel: privacyLevelInput.optional(),
});

const bedrockProvider = z.object({
  type: z.literal('bedrock'),
  model: z.string().min(1),
  region: z.string().min(1).optional(),
  /** Per model call; a timeout falls back to the next provider (decision 0011). */
  timeoutMs: z.number().int().positive().max(600_000).default(25_000),
  privacyLevel: privacyLevelInput.optional(),
});

const openAiProvider = z.object({
  type: z.literal('openai'),
  baseUrl: z.url(),
  model: z.string().min(1),
  /** Name of the environment variable that holds the API key (never the key itself); local mode. */
  apiKeyEnv: z.string().optional(),
  /**
   * Deployments: the Secrets Manager secret holding the API key (decision 0026), read by the
   * executor through the Parameters and Secrets Lambda Extension. `secretId` is a name or the
   * complete ARN; `jsonKey` picks a field of a JSON secret; `kmsKeyArn` names its CMK, if any.
   * Their formats are checked at synth (infra/service-stack.ts), which keeps this schema, part
   * of every function bundle, small.
   */
  apiKeySecret: z
    .object({
      secretId: z.string().min(1),
      jsonKey: z.string().min(1).optional(),
      kmsKeyArn: z.string().optional(),
    })
    .optional(),
  /** Per model call; a timeout falls back to the next provider. */
  timeoutMs: z.number().int().positive().max(600_000).default(25_000),
  privacyLevel: privacyLevelInput.optional(),
});

export const providerConfigSchema = z.discriminatedUnion('type', [
  scriptedProvider,
  bedrockProvider,
  openAiProvider,
]);

export const skillSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  description: z.string().min(1),
  tags: z.array(z.string().min(1)).min(1),
  examples: z.array(z.string()).optional(),
});

export const toolConfigSchema = z.object({
  name: z.string().min(1),
  requiresApproval: z.boolean().default(false),
});

export const profileConfigSchema = z.object({
  name: z.string().min(1),
  description: z.string().min(1),
  version: z.string().default('1.0.0'),
  instructions: z.string().default(''),
  providers: z.array(z.string().min(1)).min(1),
  privacyLevel: privacyLevelInput.optional(),
  tools: z.array(toolConfigSchema).default([]),
  /** Model → tools → model rounds a run may take before it is stopped. */
  maxToolRounds: z.number().int().min(1).max(50).default(8),
  skills: z.array(skillSchema).default([]),
  inputModes: z.array(z.string().min(1)).min(1).default(['text/plain', 'application/json']),
  outputModes: z.array(z.string().min(1)).min(1).default(['text/plain', 'application/json']),
  /** How long a blocking SendMessage waits before returning the current task. */
  blockingCapSeconds: z.number().positive().max(840).default(25),
  /**
   * What GetExtendedAgentCard returns to an authenticated caller on top of the public card: another
   * description and extra skills. Declared on the card only when auth is configured (decision 0007).
   */
  extendedCard: z
    .object({ description: z.string().min(1).optional(), skills: z.array(skillSchema).default([]) })
    .optional(),
});

/** Log retentions CloudWatch Logs accepts, in days. */
export const logRetentionDays = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

const capacityRange = z
  .object({ min: z.number().int().min(1).max(40_000), max: z.number().int().min(1).max(40_000) })
  .refine((range) => range.max >= range.min, { message: 'max must be at least min' });

const tableCapacity = z.object({ read: capacityRange.optional(), write: capacityRange.optional() });

/**
 * DynamoDB capacity of the three tables and their indexes (decision 0048): on demand (the
 * default), or provisioned with auto scaling that tracks a target utilisation between `min` and
 * `max` units. `read`/`write` apply to every table and index unless `tables.<id>` overrides them.
 */
export const dynamodbCapacitySchema = z.object({
  billing: z.enum(['onDemand', 'provisioned']).default('onDemand'),
  targetUtilizationPercent: z.number().int().min(20).max(90).default(70),
  read: capacityRange.default({ min: 1, max: 100 }),
  write: capacityRange.default({ min: 1, max: 100 }),
  tables: z
    .object({
      State: tableCapacity.optional(),
      Journal: tableCapacity.optional(),
      Audit: tableCapacity.optional(),
    })
    .default({}),
});

export type DynamodbCapacityConfig = z.infer<typeof dynamodbCapacitySchema>;

export const defaultDynamodbCapacity: DynamodbCapacityConfig = {
  billing: 'onDemand',
  targetUtilizationPercent: 70,
  read: { min: 1, max: 100 },
  write: { min: 1, max: 100 },
  tables: {},
};

/**
 * Read by the CDK app only (`cdk deploy -c config=…`, decision 0020), never by a function: it is
 * left out of the configuration the functions get.
 */
export const deploymentConfigSchema = z.object({
  /** Region of both stacks; absent: the CDK CLI's (AWS_REGION, the profile's region). */
  region: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region name such as eu-west-1')
    .optional(),
  /** How long CloudWatch Logs keeps each function's log group. */
  logRetentionDays: z
    .number()
    .refine((days) => (logRetentionDays as readonly number[]).includes(days), {
      message: `one of ${logRetentionDays.join(', ')}`,
    })
    .default(30),
  /** DynamoDB deletion protection on the three tables (turn off before `cdk destroy` + manual delete). */
  deletionProtection: z.boolean().default(true),
  /** Upper bound of concurrent executor invocations: protects model quotas. */
  executorMaxConcurrency: z.number().int().min(2).max(1000).default(10),
  /** Serves the journal viewer at `GET /viewer` of the API. */
  viewer: z.boolean().default(false),
  /** On-demand (default) or provisioned DynamoDB capacity with auto scaling. */
  dynamodb: dynamodbCapacitySchema.default(defaultDynamodbCapacity),
  /**
   * How long API Gateway reuses an authorizer's answer for the same `Authorization` header
   * (JWT installations only; decision 0055): a token stays accepted up to this long after it
   * expires or is revoked. 0 authorizes every request afresh. Keep it below the issuer's
   * shortest token lifetime.
   */
  authorizerCacheSeconds: z.number().int().min(0).max(3600).default(60),
  /** The API stage's request rate (per second, steady) and burst for all callers together. */
  throttle: z
    .object({
      rateLimit: z.number().positive().max(10_000).default(100),
      burstLimit: z.number().int().min(1).max(5_000).default(200),
    })
    .default({ rateLimit: 100, burstLimit: 200 }),
  alarms: z
    .object({
      /** Subscribed to the alarm topic (SNS sends a confirmation mail first). */
      email: z.email().optional(),
      /** Errors / invocations per function over 5 minutes, in percent. */
      errorRatePercent: z.number().positive().max(100).default(5),
      /** Age of the oldest stream record the projector or the pusher has not processed yet. */
      iteratorAgeSeconds: z.number().int().min(60).max(86_400).default(300),
    })
    .default({ errorRatePercent: 5, iteratorAgeSeconds: 300 }),
});

export type DeploymentConfig = z.infer<typeof deploymentConfigSchema>;

export const configSchema = z.object({
  privacy: z
    .object({
      level: privacyLevelInput.default('metadata'),
      retention: z.object({ agentRun: z.number().optional(), approval: z.number().optional() }).default({}),
    })
    .default({ level: 'metadata', retention: {} }),
  /** Who may call: static tokens (local), API keys, JWTs, or explicitly public. */
  auth: authConfigSchema.default({ tokens: {}, apiKeys: {}, public: false }),
  providers: z.record(z.string().min(1), providerConfigSchema),
  profiles: z.record(z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/), profileConfigSchema),
  webhooks: z
    .object({
      allowLoopback: z.boolean().optional(),
      /** First retry delay of a failed webhook delivery; doubles per attempt up to 300 s (decision 0009). */
      retryBaseSeconds: z.number().int().min(1).max(60).default(2),
    })
    .default({ retryBaseSeconds: 2 }),
  /** SSE streams (docs/decisions/0008): heartbeat comments, and a clean close before the 15-min limit. */
  streaming: z
    .object({
      heartbeatSeconds: z.number().positive().max(30).default(15),
      maxStreamSeconds: z.number().positive().max(900).default(840),
    })
    .default({ heartbeatSeconds: 15, maxStreamSeconds: 840 }),
  /**
   * What one request may ask for (docs/configuration.md `limits`, decision 0052): above a limit it
   * is refused with an ErrorInfo reason naming the limit, before anything is stored.
   */
  limits: z
    .object({
      pushConfigsPerTask: z.number().int().min(1).max(100).default(10),
      partsPerMessage: z.number().int().min(1).max(1000).default(100),
      metadataBytes: z.number().int().min(256).max(262_144).default(16_384),
      streamsPerCaller: z.number().int().min(1).max(1000).default(10),
      /**
       * A task's whole history (every message of every turn, JSON) may grow to this many bytes:
       * the write that settles a turn carries the whole sealed history with the result.
       */
      historyBytes: z
        .number()
        .int()
        .min(65_536)
        .max(3 * 1024 * 1024)
        .default(2.5 * 1024 * 1024),
    })
    .default({
      pushConfigsPerTask: 10,
      partsPerMessage: 100,
      metadataBytes: 16_384,
      streamsPerCaller: 10,
      historyBytes: 2.5 * 1024 * 1024,
    }),
  /** ErrorInfo domain for this installation's own reasons (docs/protocol.md §17). */
  errorDomain: z.string().min(1).default('a2a-serverless.local'),
  /** Request bodies above this many bytes are refused with -32600 (decision 0006). */
  maxRequestBytes: z
    .number()
    .int()
    .min(1024)
    .max(6 * 1024 * 1024)
    .default(1024 * 1024),
  deployment: deploymentConfigSchema.default({
    logRetentionDays: 30,
    deletionProtection: true,
    executorMaxConcurrency: 10,
    viewer: false,
    dynamodb: defaultDynamodbCapacity,
    authorizerCacheSeconds: 60,
    throttle: { rateLimit: 100, burstLimit: 200 },
    alarms: { errorRatePercent: 5, iteratorAgeSeconds: 300 },
  }),
});

export type Config = z.infer<typeof configSchema>;
export type ProfileConfig = z.infer<typeof profileConfigSchema>;
export type ProviderConfig = z.infer<typeof providerConfigSchema>;

/** The configuration used when none is given: one `default` profile echoing on the scripted provider. */
export const defaultConfig: Config = configSchema.parse({
  privacy: { level: 'metadata', retention: { agentRun: 30, approval: 7 } },
  providers: { local: { type: 'scripted', behavior: 'echo' } },
  profiles: {
    default: {
      name: 'Echo agent',
      description: 'Answers every message with its own text (scripted provider, offline).',
      instructions: 'Echo the user.',
      providers: ['local'],
      privacyLevel: 'full',
      skills: [
        { id: 'echo', name: 'Echo', description: 'Repeats the text it is sent.', tags: ['echo', 'test'] },
      ],
    },
  },
});

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Parses a configuration value; every problem is reported with the path of the setting. */
export const parseConfig = (value: unknown): Config => {
  const result = configSchema.safeParse(value);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  for (const [profileId, profile] of Object.entries(result.data.profiles)) {
    for (const providerId of profile.providers) {
      if (!(providerId in result.data.providers)) {
        throw new ConfigError(
          `Invalid configuration:\n  profiles.${profileId}.providers: unknown provider "${providerId}"`,
        );
      }
    }
  }
  return result.data;
};
