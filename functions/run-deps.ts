import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbAuditTrail } from '../shared/adapters/dynamodb/dynamodb-audit-trail.ts';
import { DynamoDbRunLeases } from '../shared/adapters/dynamodb/dynamodb-run-leases.ts';
import { systemClock } from '../shared/adapters/system.ts';
import {
  type CredentialSources,
  LazyA2aAgentSource,
  LazyMcpToolSource,
  lazyToolRegistry,
  loadRunDelegations,
} from '../shared/adapters/tools/lazy-tool-sources.ts';
import type { WriteThrough } from '../shared/app/journal/write-through.ts';
import type { ExecuteRunDeps } from '../shared/app/runs/execute-run.ts';
import { TaskContentCodec } from '../shared/app/tasks/task-content.ts';
import type { RuntimeEnv } from '../shared/config/runtime-env.ts';
import type { Logger } from '../shared/domain/logger.ts';
import type { Metrics } from '../shared/domain/metrics.ts';
import type { AgentProvider, RunQueue, Sealer, TaskRepository } from '../shared/domain/ports.ts';
import { webhookPolicyOf } from './compose.ts';

/**
 * What running a run needs (`executeRun`): the executor's, and the rpc's when it runs a blocking
 * send's run itself. `writeThrough` is the function's journal write (docs/architecture.md "The journal write").
 */
export const createRunDeps = (
  env: RuntimeEnv,
  wiring: {
    readonly documents: DynamoDBDocumentClient;
    readonly sealer: Sealer;
    readonly tasks: TaskRepository;
    readonly writeThrough: WriteThrough;
    readonly logger: Pick<Logger, 'info'>;
    readonly metrics: Metrics;
    /** The executor's holds every provider type; the rpc's no Bedrock (functions/providers.ts). */
    readonly providerFor: (providerId: string) => AgentProvider;
    /** Where a run whose remote task settled before it parked is queued again (docs/reliability.md "Delegated calls"). */
    readonly requeue?: RunQueue;
  },
): ExecuteRunDeps => ({
  tasks: wiring.tasks,
  writeThrough: wiring.writeThrough,
  codec: new TaskContentCodec(wiring.sealer),
  clock: systemClock,
  config: env.config,
  providerFor: wiring.providerFor,
  leases: new DynamoDbRunLeases(wiring.documents, env.stateTableName),
  ...(env.runLeaseMs ? { leaseMs: env.runLeaseMs } : {}),
  tools: lazyToolRegistry(webhookPolicyOf(env)),
  ...(Object.keys(env.config.mcpServers).length > 0 && { remoteTools: createMcpToolSource(env) }),
  ...(Object.keys(env.config.a2aAgents).length > 0 && {
    agentTools: createA2aAgentSource(env),
    loadDelegations: loadRunDelegations,
    ...(wiring.requeue && { requeue: wiring.requeue }),
  }),
  audit: new DynamoDbAuditTrail(wiring.documents, env.auditTableName, wiring.sealer),
  logger: wiring.logger,
  metrics: wiring.metrics,
});

/**
 * The MCP servers' tools (docs/configuration.md `mcpServers`), one source per container: its tool
 * lists are cached across runs. Credentials come from Secrets Manager through the Parameters and
 * Secrets Lambda Extension when deployed, from the environment locally.
 */
export const createMcpToolSource = (
  env: Pick<RuntimeEnv, 'config' | 'localMode'>,
  processEnv: NodeJS.ProcessEnv = process.env,
): LazyMcpToolSource =>
  new LazyMcpToolSource({
    servers: env.config.mcpServers,
    policy: webhookPolicyOf(env),
    credentials: credentialSourcesOf(env, processEnv),
  });

/**
 * The remote A2A agents profiles may delegate to (docs/configuration.md `a2aAgents`), one source per
 * container: agent cards are kept across runs. Credentials as for the MCP servers.
 */
export const createA2aAgentSource = (
  env: Pick<RuntimeEnv, 'config' | 'localMode'>,
  processEnv: NodeJS.ProcessEnv = process.env,
): LazyA2aAgentSource =>
  new LazyA2aAgentSource({
    agents: env.config.a2aAgents,
    policy: webhookPolicyOf(env),
    credentials: credentialSourcesOf(env, processEnv),
  });

const credentialSourcesOf = (
  env: Pick<RuntimeEnv, 'localMode'>,
  processEnv: NodeJS.ProcessEnv,
): CredentialSources => ({
  localMode: env.localMode,
  env: processEnv,
  extensionEndpoint: `http://localhost:${processEnv.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT ?? 2773}`,
  sessionToken: processEnv.AWS_SESSION_TOKEN ?? '',
});
