import * as z from '../zod.ts';
import { authConfigSchema, nonEmptyString } from './auth.ts';

/**
 * The configuration contract of docs/configuration.md: one file format for `npm start --config`,
 * `cdk deploy -c config=…` and the admin command. Parsed once, at cold start.
 */

const privacyLevelInput = z.string();

/** A whole number from `min` to `max`. */
const integer = (min: number, max: number) => z.number().check(z.int(), z.gte(min), z.lte(max));

/** A number above 0, at most `max`. */
const positiveUpTo = (max: number) => z.number().check(z.positive(), z.lte(max));

/** Per model call; a timeout falls back to the next provider (docs/configuration.md, `providers`). */
const providerTimeoutMs = z._default(z.number().check(z.int(), z.positive(), z.lte(600_000)), 25_000);

const scriptedProvider = z.object({
  type: z.literal('scripted'),
  behavior: z._default(z.enum(['echo', 'tck', 'fail', 'slow', 'stream', 'call-tool', 'ask']), 'echo'),
  /** `call-tool`: the tool called, by the name the model is offered (e.g. `tickets__search`). */
  tool: z.optional(nonEmptyString),
  /** `call-tool`: its arguments; absent, the user's message if it is a JSON object, else `{}`. */
  arguments: z.optional(z.record(z.string(), z.unknown())),
  /** `call-tool`: the message that answers a delegated task asking for input, once per user message. */
  answerInput: z.optional(z.string()),
  /** `stream`, and `call-tool` under progressive output: the pause before each word of the answer, in ms. */
  paceMs: z._default(integer(0, 10_000), 50),
  /** `stream`: breaks off as an unavailable provider after this many words (fallback tests). */
  failAfterWords: z.optional(integer(0, 1_000_000)),
  privacyLevel: z.optional(privacyLevelInput),
});

const bedrockProvider = z.object({
  type: z.literal('bedrock'),
  model: nonEmptyString,
  region: z.optional(nonEmptyString),
  timeoutMs: providerTimeoutMs,
  privacyLevel: z.optional(privacyLevelInput),
});

const openAiProvider = z.object({
  type: z.literal('openai'),
  baseUrl: z.url(),
  model: nonEmptyString,
  /** Name of the environment variable that holds the API key (never the key itself); local mode. */
  apiKeyEnv: z.optional(z.string()),
  /**
   * Deployments: the Secrets Manager secret holding the API key (docs/deployment.md), read by the
   * executor through the Parameters and Secrets Lambda Extension. `secretId` is a name or the
   * complete ARN; `jsonKey` picks a field of a JSON secret; `kmsKeyArn` names its CMK, if any.
   * Their formats are checked at synth (infra/service-stack.ts), which keeps this schema, part
   * of every function bundle, small.
   */
  apiKeySecret: z.optional(
    z.object({
      secretId: nonEmptyString,
      jsonKey: z.optional(nonEmptyString),
      kmsKeyArn: z.optional(z.string()),
    }),
  ),
  timeoutMs: providerTimeoutMs,
  privacyLevel: z.optional(privacyLevelInput),
});

export const providerConfigSchema = z.discriminatedUnion('type', [
  scriptedProvider,
  bedrockProvider,
  openAiProvider,
]);

export const skillSchema = z.object({
  id: nonEmptyString,
  name: nonEmptyString,
  description: nonEmptyString,
  tags: z.array(nonEmptyString).check(z.minLength(1)),
  examples: z.optional(z.array(z.string())),
});

export const toolConfigSchema = z.object({
  name: nonEmptyString,
  requiresApproval: z._default(z.boolean(), false),
});

/**
 * A secret an outbound call carries (an MCP server's header or OAuth client secret): in a
 * deployment from the Secrets Manager secret `secret` names (read as provider keys are, through
 * the Parameters and Secrets Lambda Extension), locally from the variable `env` names.
 */
export const credentialSchema = z
  .object({
    env: z.optional(nonEmptyString),
    secret: z.optional(
      z.object({
        secretId: nonEmptyString,
        jsonKey: z.optional(nonEmptyString),
        kmsKeyArn: z.optional(z.string()),
      }),
    ),
  })
  .check(
    z.refine((credential) => credential.env !== undefined || credential.secret !== undefined, {
      message: 'name an environment variable (env) or a secret (secret)',
    }),
  );

/** An MCP server id: part of the tool names offered to the model (`<server>__<tool>`). */
const mcpServerId = z.string().check(z.regex(/^[a-z0-9][a-z0-9-]{0,30}$/));

/** How an outbound tool source authenticates: request headers and OAuth 2.0 client credentials. */
const outboundAuth = {
  /** Request headers: a plain value, or a credential (`{ env }` / `{ secret }`). */
  headers: z._default(z.record(nonEmptyString, z.union([z.string(), credentialSchema])), {}),
  /** OAuth 2.0 client credentials: a bearer token from `tokenUrl`, renewed before it expires. */
  oauth: z.optional(
    z.object({
      tokenUrl: z.url(),
      clientId: nonEmptyString,
      clientSecret: credentialSchema,
      scope: z.optional(nonEmptyString),
      audience: z.optional(nonEmptyString),
    }),
  ),
  /** One deadline per request (a list, a call, a send, a read), connect to last byte. */
  timeoutMs: z._default(integer(100, 300_000), 30_000),
  /** A tool result above this many bytes (JSON) is refused: the model reads an error instead. */
  maxResultBytes: z._default(integer(1024, 1_000_000), 100_000),
};

/**
 * A remote MCP server (Streamable HTTP transport, docs/configuration.md `mcpServers`), reached
 * through the SSRF guard with the webhooks' policy.
 */
export const mcpServerSchema = z.object({
  url: z.url(),
  ...outboundAuth,
  /** How long a container reuses the server's tool list. */
  toolListTtlSeconds: z._default(integer(0, 86_400), 300),
});

/** A remote A2A agent id: part of the tool name offered to the model (`a2a__<agent>`). */
const a2aAgentId = mcpServerId;

/**
 * A remote A2A agent profiles may delegate to (docs/configuration.md `a2aAgents`): its agent card
 * read from `cardUrl`, its interface reached with the official A2A client, every request through
 * the SSRF guard with the webhooks' policy.
 */
export const a2aAgentSchema = z.object({
  /** The agent card's full URL, e.g. `https://agents.example.com/.well-known/agent-card.json`. */
  cardUrl: z.url(),
  ...outboundAuth,
  /**
   * How long a run waits in place for the remote task to settle before it suspends and waits
   * for the remote task's push notification (or the reaper's poll).
   */
  waitSeconds: z._default(integer(0, 600), 20),
});

const mcpToolGrant = z.object({
  /** Overrides the effect the server's annotations declare; `destructive` also gates it by default. */
  effect: z.optional(z.enum(['read-only', 'idempotent', 'write', 'destructive'])),
  /** Default: true for destructive tools, false for the others. */
  requiresApproval: z.optional(z.boolean()),
});

const mediaTypes = z._default(z.array(nonEmptyString).check(z.minLength(1)), [
  'text/plain',
  'application/json',
]);

export const profileConfigSchema = z.object({
  name: nonEmptyString,
  description: nonEmptyString,
  version: z._default(z.string(), '1.0.0'),
  instructions: z._default(z.string(), ''),
  providers: z.array(nonEmptyString).check(z.minLength(1)),
  privacyLevel: z.optional(privacyLevelInput),
  tools: z._default(z.array(toolConfigSchema), []),
  /**
   * Tools of MCP servers (`mcpServers`) this profile allows, per server id and tool name; offered to
   * the model as `<server>__<tool>`.
   */
  mcp: z._default(z.record(mcpServerId, z.object({ tools: z.record(nonEmptyString, mcpToolGrant) })), {}),
  /**
   * Remote A2A agents (`a2aAgents`) this profile may delegate to, by agent id; each is offered to
   * the model as the tool `a2a__<agent>`.
   */
  agents: z._default(
    z.record(
      a2aAgentId,
      z.object({
        /** What the model is told the agent does; absent: the agent card's description. */
        description: z.optional(nonEmptyString),
        requiresApproval: z._default(z.boolean(), false),
      }),
    ),
    {},
  ),
  /** Model → tools → model rounds a run may take before it is stopped. */
  maxToolRounds: z._default(integer(1, 50), 8),
  skills: z._default(z.array(skillSchema), []),
  inputModes: mediaTypes,
  outputModes: mediaTypes,
  /**
   * Extensions the agent declares on its card (docs/protocol.md §9) beside this server's own; one
   * marked `required` is demanded of every request in `A2A-Extensions` (else -32008).
   */
  extensions: z._default(
    z.array(
      z.object({
        uri: nonEmptyString,
        description: z.optional(nonEmptyString),
        required: z._default(z.boolean(), false),
      }),
    ),
    [],
  ),
  /**
   * Progressive output (docs/configuration.md, profile `output`): with `progressive`, the run streams its model calls, and
   * the text so far is to be committed as artifact chunks at most once per `cadence.ms`, sooner
   * once `cadence.bytes` of new text wait. Each chunk is a revision (about 8 write units for the
   * first KB of answer, 3 more per further KB so far): the defaults keep a 4 KB answer near 240.
   */
  output: z._default(
    z.object({
      progressive: z._default(z.boolean(), false),
      cadence: z._default(
        z.object({
          ms: z._default(integer(100, 60_000), 1_000),
          bytes: z._default(integer(256, 65_536), 4_096),
        }),
        { ms: 1_000, bytes: 4_096 },
      ),
    }),
    { progressive: false, cadence: { ms: 1_000, bytes: 4_096 } },
  ),
  /** How long a blocking SendMessage waits before returning the current task. */
  blockingCapSeconds: z._default(positiveUpTo(840), 25),
  /**
   * What GetExtendedAgentCard returns to an authenticated caller on top of the public card: another
   * description and extra skills. Declared on the card only when auth is configured (docs/protocol.md §9).
   */
  extendedCard: z.optional(
    z.object({
      description: z.optional(nonEmptyString),
      skills: z._default(z.array(skillSchema), []),
    }),
  ),
});

/** Log retentions CloudWatch Logs accepts, in days. */
export const logRetentionDays = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

const capacityRange = z
  .object({ min: integer(1, 40_000), max: integer(1, 40_000) })
  .check(z.refine((range) => range.max >= range.min, { message: 'max must be at least min' }));

const tableCapacity = z.object({ read: z.optional(capacityRange), write: z.optional(capacityRange) });

/**
 * DynamoDB capacity of the three tables and their indexes (docs/configuration.md, `deployment`): on demand
 * (the default), or provisioned with auto scaling that tracks a target utilisation between `min` and `max`
 * units. `read`/`write` apply to every table and index unless `tables.<id>` overrides them.
 */
export const dynamodbCapacitySchema = z.object({
  billing: z._default(z.enum(['onDemand', 'provisioned']), 'onDemand'),
  targetUtilizationPercent: z._default(integer(20, 90), 70),
  read: z._default(capacityRange, { min: 1, max: 100 }),
  write: z._default(capacityRange, { min: 1, max: 100 }),
  tables: z._default(
    z.object({
      State: z.optional(tableCapacity),
      Journal: z.optional(tableCapacity),
      Audit: z.optional(tableCapacity),
    }),
    {},
  ),
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
 * Read by the CDK app only (`cdk deploy -c config=…`, docs/deployment.md), never by a function: it is
 * left out of the configuration the functions get.
 */
export const deploymentConfigSchema = z.object({
  /** Region of both stacks; absent: the CDK CLI's (AWS_REGION, the profile's region). */
  region: z.optional(
    z.string().check(z.regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region name such as eu-west-1')),
  ),
  /** How long CloudWatch Logs keeps each function's log group. */
  logRetentionDays: z._default(
    z.number().check(
      z.refine((days) => (logRetentionDays as readonly number[]).includes(days), {
        message: `one of ${logRetentionDays.join(', ')}`,
      }),
    ),
    30,
  ),
  /** DynamoDB deletion protection on the three tables (turn off before `cdk destroy` + manual delete). */
  deletionProtection: z._default(z.boolean(), true),
  /** Upper bound of concurrent executor invocations: protects model quotas. */
  executorMaxConcurrency: z._default(integer(2, 1000), 10),
  /**
   * Reserved concurrency per function (docs/configuration.md, `deployment.reservedConcurrency`):
   * a share of the account's concurrency no other function can take (the executor and the stream
   * consumers keep up under a burst of blocking sends), and the function's ceiling (the rpc's, so
   * a burst cannot take the others'). Absent: the function shares the unreserved pool.
   */
  reservedConcurrency: z._default(
    z.object({
      rpc: z.optional(integer(1, 10_000)),
      executor: z.optional(integer(1, 10_000)),
      projector: z.optional(integer(1, 10_000)),
      pusher: z.optional(integer(1, 10_000)),
      deliverer: z.optional(integer(1, 10_000)),
      reaper: z.optional(integer(1, 10_000)),
    }),
    {},
  ),
  /**
   * The rpc function runs a blocking SendMessage's run itself (docs/how-a-task-flows.md §1): no queue hop, no
   * journal polls, and the rpc holds the executor's grants (models, provider secrets, audit
   * table). false: every run goes through the run queue to the executor.
   */
  blockingRunsInRpc: z._default(z.boolean(), true),
  /** Serves the journal viewer at `GET /viewer` of the API. */
  viewer: z._default(z.boolean(), false),
  /** On-demand (default) or provisioned DynamoDB capacity with auto scaling. */
  dynamodb: z._default(dynamodbCapacitySchema, defaultDynamodbCapacity),
  /**
   * How long API Gateway reuses an authorizer's answer for the same `Authorization` header
   * (JWT installations only; docs/security.md): a token stays accepted up to this long after it
   * expires or is revoked. 0 authorizes every request afresh. Keep it below the issuer's
   * shortest token lifetime.
   */
  authorizerCacheSeconds: z._default(integer(0, 3600), 60),
  /** The API stage's request rate (per second, steady) and burst for all callers together. */
  throttle: z._default(
    z.object({
      rateLimit: z._default(positiveUpTo(10_000), 100),
      burstLimit: z._default(integer(1, 5_000), 200),
    }),
    { rateLimit: 100, burstLimit: 200 },
  ),
  alarms: z._default(
    z.object({
      /** Subscribed to the alarm topic (SNS sends a confirmation mail first). */
      email: z.optional(z.email()),
      /** Errors / invocations per function over 5 minutes, in percent. */
      errorRatePercent: z._default(positiveUpTo(100), 5),
      /** Age of the oldest stream record the projector or the pusher has not processed yet. */
      iteratorAgeSeconds: z._default(integer(60, 86_400), 300),
    }),
    { errorRatePercent: 5, iteratorAgeSeconds: 300 },
  ),
});

export type DeploymentConfig = z.infer<typeof deploymentConfigSchema>;

export const configSchema = z.object({
  privacy: z._default(
    z.object({
      level: z._default(privacyLevelInput, 'metadata'),
      retention: z._default(
        z.object({ agentRun: z.optional(z.number()), approval: z.optional(z.number()) }),
        {},
      ),
    }),
    { level: 'metadata', retention: {} },
  ),
  /** Who may call: static tokens (local), API keys, JWTs, or explicitly public. */
  auth: z._default(authConfigSchema, { tokens: {}, apiKeys: {}, public: false }),
  providers: z.record(nonEmptyString, providerConfigSchema),
  profiles: z.record(z.string().check(z.regex(/^[a-z0-9][a-z0-9-]{0,62}$/)), profileConfigSchema),
  /** Remote MCP servers profiles may take tools from (`profiles.<id>.mcp`). */
  mcpServers: z._default(z.record(mcpServerId, mcpServerSchema), {}),
  /** Remote A2A agents profiles may delegate to (`profiles.<id>.agents`). */
  a2aAgents: z._default(z.record(a2aAgentId, a2aAgentSchema), {}),
  /**
   * The base URL remote agents reach this server's API at: with it, a run that waits for a
   * delegated task registers a push notification config on that task pointing back here.
   */
  publicUrl: z.optional(z.url()),
  webhooks: z._default(
    z.object({
      allowLoopback: z.optional(z.boolean()),
      /** First retry delay of a failed webhook delivery; doubles per attempt up to 300 s. */
      retryBaseSeconds: z._default(integer(1, 60), 2),
    }),
    { retryBaseSeconds: 2 },
  ),
  /** SSE streams (docs/protocol.md §5): heartbeat comments, and a clean close before the 15-min limit. */
  streaming: z._default(
    z.object({
      heartbeatSeconds: z._default(positiveUpTo(30), 15),
      maxStreamSeconds: z._default(positiveUpTo(900), 840),
    }),
    { heartbeatSeconds: 15, maxStreamSeconds: 840 },
  ),
  /**
   * What one request may ask for (docs/configuration.md, `limits`): above a limit it
   * is refused with an ErrorInfo reason naming the limit, before anything is stored.
   */
  limits: z._default(
    z.object({
      pushConfigsPerTask: z._default(integer(1, 100), 10),
      partsPerMessage: z._default(integer(1, 1000), 100),
      metadataBytes: z._default(integer(256, 262_144), 16_384),
      streamsPerCaller: z._default(integer(1, 1000), 10),
      /** Blocking SendMessage calls one caller may have waiting at once, across rpc instances. */
      blockingSendsPerCaller: z._default(integer(1, 1000), 10),
      /**
       * A task's whole history (every message of every turn, JSON) may grow to this many bytes:
       * the write that settles a turn carries the whole sealed history with the result in one
       * 4 MB transaction (docs/data-model.md, "Large content").
       */
      historyBytes: z._default(integer(65_536, 3 * 1024 * 1024), 2.5 * 1024 * 1024),
    }),
    {
      pushConfigsPerTask: 10,
      partsPerMessage: 100,
      metadataBytes: 16_384,
      streamsPerCaller: 10,
      blockingSendsPerCaller: 10,
      historyBytes: 2.5 * 1024 * 1024,
    },
  ),
  /** ErrorInfo domain for this installation's own reasons (docs/protocol.md §17). */
  errorDomain: z._default(nonEmptyString, 'a2a-serverless.local'),
  /** Request bodies above this many bytes are refused with -32600 (docs/protocol.md §2). */
  maxRequestBytes: z._default(integer(1024, 6 * 1024 * 1024), 1024 * 1024),
  deployment: z._default(deploymentConfigSchema, {
    logRetentionDays: 30,
    deletionProtection: true,
    executorMaxConcurrency: 10,
    reservedConcurrency: {},
    blockingRunsInRpc: true,
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
export type McpServerConfig = z.infer<typeof mcpServerSchema>;
export type A2aAgentConfig = z.infer<typeof a2aAgentSchema>;
export type CredentialConfig = z.infer<typeof credentialSchema>;

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
    const problem = mcpGrantProblem(result.data, profile) ?? agentGrantProblem(result.data, profile);
    if (problem !== undefined)
      throw new ConfigError(`Invalid configuration:\n  profiles.${profileId}.${problem}`);
  }
  return result.data;
};

/** The tool name a model is offered for a tool of an MCP server. */
export const mcpToolName = (serverId: string, toolName: string): string => `${serverId}__${toolName}`;

/** The tool name a model is offered for delegating to a remote A2A agent. */
export const agentToolName = (agentId: string): string => `a2a__${agentId}`;

/** What is wrong with a profile's `agents`: an agent `a2aAgents` does not name. */
const agentGrantProblem = (config: Config, profile: ProfileConfig): string | undefined => {
  for (const agentId of Object.keys(profile.agents)) {
    if (!Object.hasOwn(config.a2aAgents, agentId)) return `agents.${agentId}: unknown A2A agent "${agentId}"`;
  }
  return undefined;
};

/** What is wrong with a profile's `mcp` grants: an unknown server, or a name no model accepts. */
const mcpGrantProblem = (config: Config, profile: ProfileConfig): string | undefined => {
  for (const [serverId, grant] of Object.entries(profile.mcp)) {
    if (!Object.hasOwn(config.mcpServers, serverId))
      return `mcp.${serverId}: unknown MCP server "${serverId}"`;
    for (const toolName of Object.keys(grant.tools)) {
      const name = mcpToolName(serverId, toolName);
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name))
        return `mcp.${serverId}.tools.${toolName}: "${name}" is not a tool name models accept (letters, digits, _ and -, at most 64)`;
    }
  }
  return undefined;
};
