import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, type Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createInstallation,
  type Installation,
  readConfigContext,
  readStageContext,
} from '../../infra/app.ts';
import { ESM_REQUIRE_BANNER, REPO_ROOT } from '../../infra/house-function.ts';
import {
  AUTHORIZER_CACHE_TTL_SECONDS,
  authorizerCaching,
  DELIVERER_TIMEOUT,
  defaultEntries,
  EXECUTOR_TIMEOUT,
  type FunctionName,
  MAX_CONFIG_ENV_BYTES,
  REAPER_START_SLOT_ACTIONS,
  RPC_TIMEOUT,
  RUN_AUDIT_TABLE_ACTIONS,
  renderedForNag,
  ServiceStack,
} from '../../infra/service-stack.ts';
import { isDeadLetterQueue, StatefulStack } from '../../infra/stateful-stack.ts';
import { deployedViewerPage, viewerContentSecurityPolicy } from '../../infra/viewer-page.ts';
import {
  auditTable,
  journalTable,
  queueDefinitions,
  stateTable,
} from '../../shared/adapters/dynamodb/tables.ts';
import { createFunctionMetrics } from '../../shared/adapters/metrics.ts';
import { deploymentAuthProblems } from '../../shared/config/auth.ts';
import { defaultConfig, defaultDynamodbCapacity } from '../../shared/config/config.ts';
import { type MetricName, metricCatalog } from '../../shared/domain/metrics.ts';
import { templatesOnly } from '../support/templates-only.ts';

/**
 * One synth for the whole file: NodejsFunction bundles with esbuild, and the built-in
 * CloudFormation validation runs on every synth. The functions are built from tiny stand-in
 * entries (the real handlers are other people's work in progress); bundling settings, IAM and
 * event sources do not depend on what the entry contains.
 */

const defaultProfile = defaultConfig.profiles.default!;

type Resource = { Type: string; Properties: Record<string, unknown> };

const applicationProfile =
  'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6';

const testConfig = {
  ...defaultConfig,
  auth: {
    tokens: { 'dev-secret-token': { tenant: 't1', principal: 'alice' } },
    jwt: { issuer: 'https://issuer.example', audience: 'a2a', jwksUrl: 'https://issuer.example/jwks.json' },
  },
  providers: {
    ...defaultConfig.providers,
    claude: { type: 'bedrock', model: 'us.anthropic.claude-sonnet-4-20250514-v1:0', region: 'us-west-2' },
    titan: { type: 'bedrock', model: 'amazon.titan-text-express-v1', region: 'eu-west-1' },
    tagged: { type: 'bedrock', model: applicationProfile },
  },
};

let workDir: string;
let app: App;
let installation: Installation;
let stateful: Template;
let service: Template;
let withAuthorizer: Template;

const writeEntry = (name: string): string => {
  const file = join(workDir, `${name}.ts`);
  writeFileSync(file, `export const handler = async (event: unknown) => ({ name: '${name}', event });\n`);
  return file;
};

beforeAll(() => {
  const cacheDir = join(REPO_ROOT, '.cache');
  mkdirSync(cacheDir, { recursive: true });
  // Under the repository root: NodejsFunction refuses entries outside its project root.
  workDir = mkdtempSync(join(cacheDir, 'infra-test-'));
  const configFile = join(workDir, 'config.json');
  writeFileSync(configFile, JSON.stringify(testConfig));
  const entries: Record<FunctionName, string> = {
    rpc: writeEntry('rpc'),
    executor: writeEntry('executor'),
    projector: writeEntry('projector'),
    pusher: writeEntry('pusher'),
    deliverer: writeEntry('deliverer'),
    reaper: writeEntry('reaper'),
  };
  app = new App({ outdir: join(workDir, 'cdk.out'), context: { config: configFile, stage: 'test' } });
  installation = createInstallation(app, { entries, authorizerEntry: undefined });
  // A second service stack in the same app (same synth) shows the authorizer seam.
  const authorized = new ServiceStack(app, 'authorized-service', {
    stateful: installation.stateful,
    config: installation.config,
    installation: installation.prefix,
    entries,
    authorizerEntry: writeEntry('authorizer'),
  });
  stateful = Template.fromStack(installation.stateful);
  service = Template.fromStack(installation.service);
  withAuthorizer = Template.fromStack(authorized);
});

afterAll(() => {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

const logicalIdOf = (stack: Stack, construct: { node: { defaultChild?: unknown } }): string =>
  stack.getLogicalId(construct.node.defaultChild as Parameters<Stack['getLogicalId']>[0]);

/** Every IAM action granted to a function's role, through any policy attached to that role. */
/** The statements of the policies attached to the function's role (which has no inline policy). */
const statementsOfFunction = (
  template: Template,
  stack: Stack,
  fn: ServiceStack['rpc'],
): Array<{ Action: string | string[]; Resource?: unknown }> => {
  const functionId = logicalIdOf(stack, fn);
  const functionResource = template.toJSON().Resources[functionId] as Resource;
  const roleRef = functionResource.Properties.Role as { 'Fn::GetAtt': [string, string] };
  const roleId = roleRef['Fn::GetAtt'][0];
  const role = template.toJSON().Resources[roleId] as Resource;
  expect(role.Properties.Policies, 'no inline policies on the role').toBeUndefined();
  return (Object.values(template.findResources('AWS::IAM::Policy')) as Resource[])
    .filter((resource) =>
      (resource.Properties.Roles as Array<{ Ref: string }>).some((ref) => ref.Ref === roleId),
    )
    .flatMap(
      (resource) =>
        (resource.Properties.PolicyDocument as { Statement: Array<{ Action: string | string[] }> }).Statement,
    );
};

/** What the resource of a statement names, shortly: `table/State`, `table/Journal/index/byOwner`, `queue/RunQueue`, `key`, … */
const resourceLabel = (resource: unknown): string => {
  const json = JSON.stringify(resource);
  if (json === '"*"') return '*';
  const index = /\/index\/(\w+)/.exec(json)?.[1];
  const stream = /StreamArn/.test(json);
  const name =
    /(State|Journal|Audit|RunQueue|RunDlq|DeliveryQueue|DeliveryDlq|ProjectorDlq|PusherDlq|ContentKey|LogGroup)/.exec(
      json,
    )?.[1] ?? json;
  const kind = /Queue|Dlq/.test(name)
    ? 'queue'
    : name === 'ContentKey'
      ? 'key'
      : name === 'LogGroup'
        ? 'logs'
        : 'table';
  return `${kind}/${name}${index ? `/index/${index}` : ''}${stream ? '/stream' : ''}`;
};

/** A function's grants as sorted `action resource` lines (the runtime's logs and X-Ray left out). */
const grantsOfFunction = (template: Template, stack: Stack, fn: ServiceStack['rpc']): string[] =>
  [
    ...new Set(
      statementsOfFunction(template, stack, fn).flatMap((statement) =>
        [statement.Action]
          .flat()
          .flatMap((action) =>
            action.startsWith('logs:') || action.startsWith('xray:')
              ? []
              : [statement.Resource].flat().map((resource) => `${action} ${resourceLabel(resource)}`),
          ),
      ),
    ),
  ].sort();

const actionsOfFunction = (template: Template, stack: Stack, fn: ServiceStack['rpc']): string[] => {
  const actions = statementsOfFunction(template, stack, fn).flatMap((statement) => [statement.Action].flat());
  expect(actions.length).toBeGreaterThan(0);
  return actions;
};

const tableResource = (id: string): Resource => {
  const tables = stateful.findResources('AWS::DynamoDB::GlobalTable');
  const entry = Object.entries(tables).find(([logicalId]) => logicalId.startsWith(id));
  expect(entry, `table ${id}`).toBeDefined();
  return entry?.[1] as Resource;
};

describe('StatefulStack', () => {
  it('builds each table from its declaration: keys, stream, TTL, on demand, PITR, retained', () => {
    stateful.resourceCountIs('AWS::DynamoDB::GlobalTable', 3);
    for (const definition of [stateTable, journalTable, auditTable]) {
      const table = tableResource(definition.id);
      expect(table.Properties.KeySchema).toEqual([
        { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: definition.sortKey.name, KeyType: 'RANGE' },
      ]);
      expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
      expect(table.Properties.TimeToLiveSpecification).toEqual({
        AttributeName: definition.timeToLiveAttribute,
        Enabled: true,
      });
      expect(table.Properties.StreamSpecification).toEqual(
        definition.stream ? { StreamViewType: definition.stream } : undefined,
      );
      expect(table.Properties.Replicas).toEqual([
        expect.objectContaining({
          PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          DeletionProtectionEnabled: true,
        }),
      ]);
      // AWS-managed table key: no customer key that stream readers would need to decrypt.
      expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS' });
    }
    expect(stateTable.stream).toBe('NEW_AND_OLD_IMAGES');
    const tables = stateful.findResources('AWS::DynamoDB::GlobalTable');
    for (const table of Object.values(tables)) {
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.UpdateReplacePolicy).toBe('Retain');
    }
  });

  it('gives the journal the byOwner index for ListTasks', () => {
    const journal = tableResource('Journal');
    expect(journal.Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'byOwner',
        KeySchema: [
          { AttributeName: 'ownerKey', KeyType: 'HASH' },
          { AttributeName: 'ownerSort', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
    ]);
  });

  it('gives the state table the sparse byLease (reaper) and byPendingApproval (admin) indexes', () => {
    expect(tableResource('State').Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'byLease',
        KeySchema: [
          { AttributeName: 'leaseShard', KeyType: 'HASH' },
          { AttributeName: 'leaseUntil', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
      {
        IndexName: 'byPendingApproval',
        KeySchema: [
          { AttributeName: 'pendingKey', KeyType: 'HASH' },
          { AttributeName: 'requestedAt', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
    ]);
  });

  it('creates a rotating, retained customer-managed content key with its alias', () => {
    stateful.hasResource('AWS::KMS::Key', {
      Properties: { EnableKeyRotation: true },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    stateful.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/a2a-test-content' });
  });

  it('prints the table names, the content key, every DLQ ARN and the delivery queue an operator needs', () => {
    for (const definition of [stateTable, journalTable, auditTable]) {
      stateful.hasOutput(`${definition.id}TableName`, {
        Value: { Ref: Match.stringLikeRegexp(`^${definition.id}`) },
      });
    }
    stateful.hasOutput('ContentKeyArn', {
      Value: { 'Fn::GetAtt': [logicalIdOf(installation.stateful, installation.stateful.contentKey), 'Arn'] },
    });
    for (const [queueId, queue] of Object.entries(installation.stateful.deadLetterQueues)) {
      stateful.hasOutput(`${queueId}Arn`, {
        Value: { 'Fn::GetAtt': [logicalIdOf(installation.stateful, queue), 'Arn'] },
      });
    }
    // `a2a-admin dlq replay --queue pusher` queues the deliveries it replays there (decision 0068).
    stateful.hasOutput('DeliveryQueueArn', {
      Value: {
        'Fn::GetAtt': [logicalIdOf(installation.stateful, installation.stateful.deliveryQueue), 'Arn'],
      },
    });
  });

  it('declares every queue with SSE, TLS only, its visibility timeout and DLQ redrive', () => {
    stateful.resourceCountIs('AWS::SQS::Queue', queueDefinitions.length);
    const queues = installation.stateful.queues;
    for (const definition of queueDefinitions) {
      const id = logicalIdOf(installation.stateful, queues[definition.id]);
      const queue = stateful.toJSON().Resources[id] as Resource & { DeletionPolicy: string };
      expect(queue.DeletionPolicy).toBe('Retain');
      expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
      expect(queue.Properties.VisibilityTimeout).toBe(definition.visibilityTimeoutSeconds);
      if (definition.deadLetter) {
        const dlqId = logicalIdOf(installation.stateful, queues[definition.deadLetter.queueId]);
        expect(queue.Properties.RedrivePolicy).toEqual({
          deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
          maxReceiveCount: definition.deadLetter.maxReceiveCount,
        });
      } else {
        expect(queue.Properties.RedrivePolicy).toBeUndefined();
      }
    }
    for (const dlq of [queues.RunDlq, queues.ProjectorDlq, queues.DeliveryDlq, queues.PusherDlq]) {
      const queue = stateful.toJSON().Resources[logicalIdOf(installation.stateful, dlq)] as Resource;
      expect(queue.Properties.MessageRetentionPeriod).toBe(14 * 24 * 60 * 60);
    }
    stateful.resourcePropertiesCountIs(
      'AWS::SQS::QueuePolicy',
      {
        PolicyDocument: {
          Statement: [
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ],
        },
      },
      queueDefinitions.length,
    );
  });
});

describe('ServiceStack', () => {
  it('builds every function with the house defaults', () => {
    const functions = service.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(Object.keys(defaultEntries).length);
    for (const fn of Object.values(functions) as Resource[]) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON' },
      });
      // The house default, except the I/O-bound rpc function (decision 0030).
      const description = String(fn.Properties.Description ?? '');
      expect(fn.Properties.MemorySize).toBe(description.startsWith('A2A JSON-RPC') ? 256 : 512);
      const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(variables.NODE_OPTIONS).toBe('--enable-source-maps');
      for (const name of [
        'STATE_TABLE_NAME',
        'JOURNAL_TABLE_NAME',
        'AUDIT_TABLE_NAME',
        'RUN_QUEUE_URL',
        'KMS_KEY_ID',
        'A2A_INSTALLATION',
        'A2A_CONFIG',
      ]) {
        expect(variables[name], name).toBeDefined();
      }
      expect(variables.A2A_LOCAL_MODE).toBeUndefined();
      expect(variables.A2A_INSTALLATION).toBe('a2a-test');
      const deployed = JSON.parse(variables.A2A_CONFIG as string);
      expect(deployed.profiles).toEqual(installation.config.profiles);
      expect(deployed.providers.claude.type).toBe('bedrock');
      // Static tokens are for local mode; they never reach a deployed environment.
      expect(deployed.auth.tokens).toEqual({});
      expect(variables.A2A_CONFIG).not.toContain('dev-secret-token');
    }
    // One per function, and the API's access log (decision 0055).
    service.resourceCountIs('AWS::Logs::LogGroup', Object.keys(defaultEntries).length + 1);
    service.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('bundles an ESM module with the require banner and a source map, by the local esbuild', () => {
    const assembly = app.synth();
    for (const fn of [
      installation.service.rpc,
      installation.service.executor,
      installation.service.projector,
    ]) {
      const resource = service.toJSON().Resources[logicalIdOf(installation.service, fn)] as Resource;
      const key = (resource.Properties.Code as { S3Key: string }).S3Key.replace(/\.zip$/, '');
      const bundle = join(assembly.directory, `asset.${key}`);
      const code = readFileSync(join(bundle, 'index.mjs'), 'utf8');
      expect(code.startsWith(ESM_REQUIRE_BANNER)).toBe(true);
      expect(code).toMatch(/export\s*\{/);
      expect(existsSync(join(bundle, 'index.mjs.map'))).toBe(true);
    }
  });

  it('gives each function its own timeout; the run queue visibility is 6x the executor timeout', () => {
    const timeoutOf = (fn: ServiceStack['rpc']) =>
      (service.toJSON().Resources[logicalIdOf(installation.service, fn)] as Resource).Properties.Timeout;
    expect(timeoutOf(installation.service.rpc)).toBe(900);
    expect(timeoutOf(installation.service.executor)).toBe(60);
    expect(timeoutOf(installation.service.projector)).toBe(30);
    const runQueue = queueDefinitions.find((definition) => definition.id === 'RunQueue');
    expect(runQueue?.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * EXECUTOR_TIMEOUT.toSeconds());
  });

  it('runs the lease reaper every minute, sealing only (no decrypt), with the state table', () => {
    const reaperId = logicalIdOf(installation.service, installation.service.reaper);
    service.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [reaperId, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0 },
        }),
      ],
    });
    service.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: { 'Fn::GetAtt': [reaperId, 'Arn'] },
      Principal: 'events.amazonaws.com',
    });
    const actions = actionsOfFunction(service, installation.service, installation.service.reaper);
    expect(actions).toEqual(
      expect.arrayContaining(['dynamodb:Query', 'dynamodb:PutItem', 'kms:GenerateDataKey']),
    );
    expect(actions).not.toContain('kms:Decrypt');
    // It never executes a run (I-ONCE): of SQS it may only send — a never-started run's message
    // again (decision 0053), which the run's one claim then fences, and the webhook deliveries of
    // the revisions it writes (decision 0061).
    expect([...new Set(actions.filter((action) => action.startsWith('sqs:')))].sort()).toEqual([
      'sqs:SendMessage',
    ]);
  });

  it('serves / and /{proxy+} for ANY through a streaming Lambda proxy integration', () => {
    const rpcId = logicalIdOf(installation.service, installation.service.rpc);
    service.resourceCountIs('AWS::ApiGateway::RestApi', 1);
    service.hasResourceProperties('AWS::ApiGateway::RestApi', {
      EndpointConfiguration: { Types: ['REGIONAL'] },
    });
    service.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: '{proxy+}' });
    const methods = service.findResources('AWS::ApiGateway::Method') as Record<string, Resource>;
    // ANY on /, /{proxy+}, /agents/{profileId} and its {proxy+} (HTTP+JSON); GET and HEAD on both agent-card.json resources.
    expect(
      Object.values(methods)
        .map((method) => method.Properties.HttpMethod)
        .sort(),
    ).toEqual(['ANY', 'ANY', 'ANY', 'ANY', 'GET', 'GET', 'HEAD', 'HEAD']);
    for (const method of Object.values(methods)) {
      const integration = method.Properties.Integration as Record<string, unknown>;
      expect(integration).toMatchObject({
        Type: 'AWS_PROXY',
        IntegrationHttpMethod: 'POST',
        ResponseTransferMode: 'STREAM',
        TimeoutInMillis: RPC_TIMEOUT.toMilliseconds(),
      });
      const uri = JSON.stringify(integration.Uri);
      expect(uri).toContain('/response-streaming-invocations');
      expect(uri).toContain(rpcId);
    }
    // Stage throttling is the deployment's default (deployment.throttle, decision 0055).
    const stage = Object.values(service.findResources('AWS::ApiGateway::Stage'))[0] as Resource;
    expect(stage.Properties.MethodSettings).toEqual([
      expect.objectContaining({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 }),
    ]);
    service.hasOutput('AgentCardUrl', {
      Value: {
        'Fn::Join': ['', Match.arrayWith([Match.stringLikeRegexp('/\\.well-known/agent-card\\.json$')])],
      },
    });
  });

  it('warns without an authorizer, and wires a REQUEST authorizer when given one', () => {
    Annotations.fromStack(installation.service).hasWarning('*', Match.stringLikeRegexp('no authorizer'));
    service.resourceCountIs('AWS::ApiGateway::Authorizer', 0);
    withAuthorizer.resourceCountIs(
      'AWS::Lambda::Function',
      Object.keys(service.findResources('AWS::Lambda::Function')).length + 1,
    );
    // JWTs only (no API keys): answers are cached by the Authorization header (decision 0007).
    withAuthorizer.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'REQUEST',
      IdentitySource: 'method.request.header.Authorization',
      AuthorizerResultTtlInSeconds: AUTHORIZER_CACHE_TTL_SECONDS,
    });
  });

  it('authorizes every method except the public agent cards, and answers 401 with a challenge', () => {
    const template = withAuthorizer.toJSON();
    const resources = template.Resources as Record<string, Resource>;
    const pathOf = (ref: unknown): string => {
      const id = (ref as { Ref?: string }).Ref;
      if (id === undefined) return '';
      const resource = resources[id]!;
      return `${pathOf(resource.Properties.ParentId)}/${resource.Properties.PathPart as string}`;
    };
    const routes = Object.values(
      withAuthorizer.findResources('AWS::ApiGateway::Method') as Record<string, Resource>,
    )
      .map((method) => ({
        route: `${method.Properties.HttpMethod as string} ${pathOf(method.Properties.ResourceId) || '/'}`,
        auth: method.Properties.AuthorizationType,
      }))
      .sort((a, b) => (a.route < b.route ? -1 : a.route > b.route ? 1 : 0));
    expect(routes).toEqual([
      { route: 'ANY /', auth: 'CUSTOM' },
      { route: 'ANY /agents/{profileId}', auth: 'CUSTOM' },
      { route: 'ANY /agents/{profileId}/{proxy+}', auth: 'CUSTOM' },
      { route: 'ANY /{proxy+}', auth: 'CUSTOM' },
      { route: 'GET /.well-known/agent-card.json', auth: 'NONE' },
      { route: 'GET /agents/{profileId}/.well-known/agent-card.json', auth: 'NONE' },
      { route: 'HEAD /.well-known/agent-card.json', auth: 'NONE' },
      { route: 'HEAD /agents/{profileId}/.well-known/agent-card.json', auth: 'NONE' },
    ]);
    withAuthorizer.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'UNAUTHORIZED',
      ResponseParameters: { 'gatewayresponse.header.WWW-Authenticate': "'Bearer'" },
    });
  });

  it('gives the authorizer its configuration only: no table, queue or key', () => {
    const authorized = withAuthorizer.toJSON().Resources as Record<string, Resource>;
    const authorizerId = Object.keys(authorized).find(
      (id) => id.startsWith('Authorizer') && authorized[id]!.Type === 'AWS::Lambda::Function',
    );
    expect(authorizerId).toBeDefined();
    const variables = (
      authorized[authorizerId!]!.Properties.Environment as { Variables: Record<string, string> }
    ).Variables;
    expect(Object.keys(variables).sort()).toEqual([
      'A2A_CONFIG',
      'A2A_INSTALLATION',
      'NODE_OPTIONS',
      'POWERTOOLS_SERVICE_NAME',
    ]);
    const deployed = JSON.parse(variables.A2A_CONFIG!);
    expect(deployed.auth).toMatchObject({ tokens: {}, jwt: { issuer: 'https://issuer.example' } });
    expect(variables.A2A_CONFIG).not.toContain('dev-secret-token');
    const roleId = (authorized[authorizerId!]!.Properties.Role as { 'Fn::GetAtt': [string] })[
      'Fn::GetAtt'
    ][0];
    const actions = Object.values(
      withAuthorizer.findResources('AWS::IAM::Policy') as Record<string, Resource>,
    )
      .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((role) => role.Ref === roleId))
      .flatMap((policy) =>
        (
          policy.Properties.PolicyDocument as { Statement: { Action: string | string[] }[] }
        ).Statement.flatMap((statement) => [statement.Action].flat()),
      );
    expect(actions.filter((action) => /^(dynamodb|sqs|kms|bedrock):/.test(action))).toEqual([]);
  });

  it('caches authorizer answers by Authorization only when no API key can arrive in X-API-Key', () => {
    const digest = 'a'.repeat(64);
    const identity = { tenant: 't', principal: 'p' };
    expect(authorizerCaching({ jwt: testConfig.auth.jwt as never })).toEqual({
      identitySources: ['method.request.header.Authorization'],
      ttlSeconds: AUTHORIZER_CACHE_TTL_SECONDS,
    });
    // API Gateway answers 401 without calling the authorizer when an identity source is missing.
    expect(authorizerCaching({ apiKeys: { [digest]: identity } })).toEqual({
      identitySources: [],
      ttlSeconds: 0,
    });
    expect(authorizerCaching({ apiKeys: { [digest]: identity }, jwt: testConfig.auth.jwt as never })).toEqual(
      {
        identitySources: [],
        ttlSeconds: 0,
      },
    );
  });

  it('consumes the run queue with partial batch failures and bounded concurrency', () => {
    service.resourceCountIs('AWS::Lambda::EventSourceMapping', 4);
    service.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalIdOf(installation.service, installation.service.executor) },
      BatchSize: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: Match.anyValue() },
      EventSourceArn: { 'Fn::ImportValue': Match.stringLikeRegexp('RunQueue') },
    });
  });

  it('projects only task items of the state stream, in order, a second at a time, with bisect, bounded retries and a DLQ', () => {
    service.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalIdOf(installation.service, installation.service.projector) },
      StartingPosition: 'TRIM_HORIZON',
      // The backstop gathers a second of records (decision 0092).
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: Match.anyValue(),
      ParallelizationFactor: 1,
      EventSourceArn: { 'Fn::ImportValue': Match.stringLikeRegexp('State.*StreamArn') },
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::ImportValue': Match.stringLikeRegexp('ProjectorDlq') } },
      },
      FilterCriteria: {
        Filters: [{ Pattern: JSON.stringify({ dynamodb: { Keys: { sk: { S: ['TASK'] } } } }) }],
      },
    });
  });

  it('fans journal events out to a FIFO delivery queue: pusher without KMS, deliverer decrypt-only', () => {
    const { pusher, deliverer } = installation.service;
    const queues = installation.stateful.queues;
    const queueId = (queue: (typeof queues)['DeliveryQueue']) => logicalIdOf(installation.stateful, queue);
    for (const queue of [queues.DeliveryQueue, queues.DeliveryDlq]) {
      expect((stateful.toJSON().Resources[queueId(queue)] as Resource).Properties).toMatchObject({
        FifoQueue: true,
        DeduplicationScope: 'messageGroup',
        FifoThroughputLimit: 'perMessageGroupId',
      });
    }
    expect((stateful.toJSON().Resources[queueId(queues.PusherDlq)] as Resource).Properties.FifoQueue).toBe(
      undefined,
    );
    service.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalIdOf(installation.service, pusher) },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ParallelizationFactor: 1,
      MaximumRetryAttempts: 10,
      EventSourceArn: { 'Fn::ImportValue': Match.stringLikeRegexp('Journal.*StreamArn') },
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::ImportValue': Match.stringLikeRegexp('PusherDlq') } },
      },
      FilterCriteria: {
        Filters: [
          {
            Pattern: JSON.stringify({
              eventName: ['INSERT'],
              dynamodb: {
                Keys: { sk: { S: [{ prefix: 'EVT#' }] } },
                NewImage: { pushConfigured: { BOOL: [true] } },
              },
            }),
          },
        ],
      },
    });
    service.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalIdOf(installation.service, deliverer) },
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      EventSourceArn: { 'Fn::ImportValue': Match.stringLikeRegexp('DeliveryQueue') },
    });
    const deliveryQueue = queueDefinitions.find((definition) => definition.id === 'DeliveryQueue');
    expect(deliveryQueue?.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * DELIVERER_TIMEOUT.toSeconds());
    expect(deliveryQueue?.deadLetter).toEqual({
      queueId: 'DeliveryDlq',
      maxReceiveCount: expect.any(Number),
    });

    const pusherActions = actionsOfFunction(service, installation.service, pusher);
    expect(pusherActions.filter((action) => action.startsWith('kms:'))).toEqual([]);
    expect(pusherActions).toEqual(
      expect.arrayContaining(['dynamodb:Query', 'dynamodb:GetRecords', 'sqs:SendMessage']),
    );
    expect(pusherActions).not.toContain('dynamodb:PutItem');
    const delivererActions = actionsOfFunction(service, installation.service, deliverer);
    expect(delivererActions.filter((action) => action.startsWith('kms:'))).toEqual(['kms:Decrypt']);
    expect(delivererActions).toEqual(
      expect.arrayContaining([
        'dynamodb:GetItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'sqs:ChangeMessageVisibility',
      ]),
    );
    // Delivery records (decision 0025) are appended by an update; the deliverer never puts or deletes.
    expect(delivererActions).not.toContain('dynamodb:PutItem');
    expect(delivererActions).not.toContain('dynamodb:DeleteItem');
    expect(delivererActions).not.toContain('sqs:SendMessage');
    for (const actions of [pusherActions, delivererActions]) {
      expect(actions.some((action) => action.endsWith(':*') || action === '*')).toBe(false);
    }
    const variables = (fn: typeof pusher) =>
      (
        (service.toJSON().Resources[logicalIdOf(installation.service, fn)] as Resource).Properties
          .Environment as { Variables: Record<string, unknown> }
      ).Variables;
    expect(variables(pusher).DELIVERY_QUEUE_URL).toBeDefined();
    expect(variables(deliverer).DELIVERY_QUEUE_URL).toBeDefined();
  });

  it('lets the writers that fan out directly — rpc, executor, reaper — send to the delivery queue, and nothing more there (decisions 0045, 0061)', () => {
    const { rpc, reaper, executor } = installation.service;
    const deliveryQueueSends = (fn: typeof rpc) =>
      statementsOfFunction(service, installation.service, fn).filter((statement) =>
        JSON.stringify(statement.Resource).includes('DeliveryQueue'),
      );
    const environmentOf = (fn: typeof rpc) =>
      (
        (service.toJSON().Resources[logicalIdOf(installation.service, fn)] as Resource).Properties
          .Environment as { Variables: Record<string, unknown> }
      ).Variables;
    for (const fn of [rpc, executor, reaper]) {
      // Least privilege: one statement on the delivery queue, sends only — never a receive, delete
      // or visibility change (the deliverer's).
      expect(deliveryQueueSends(fn).map((statement) => [statement.Action].flat().sort())).toEqual([
        ['sqs:SendMessage'],
      ]);
      expect(environmentOf(fn).DELIVERY_QUEUE_URL).toBeDefined();
    }
  });

  it('never lets the projector touch KMS, while rpc and executor may seal and open', () => {
    const { rpc, executor, projector } = installation.service;
    const projectorActions = actionsOfFunction(service, installation.service, projector);
    expect(projectorActions.filter((action) => action.startsWith('kms:'))).toEqual([]);
    expect(projectorActions).toEqual(expect.arrayContaining(['dynamodb:GetRecords', 'dynamodb:PutItem']));
    // The backstop reads the journal before it writes (decisions 0043, 0076): without these every
    // deployed projection fails AccessDenied and its batch ends in the ProjectorDlq.
    expect(projectorActions).toEqual(expect.arrayContaining(['dynamodb:BatchGetItem', 'dynamodb:GetItem']));
    for (const fn of [rpc, executor]) {
      const actions = actionsOfFunction(service, installation.service, fn);
      expect(actions).toEqual(expect.arrayContaining(['kms:Decrypt', 'kms:GenerateDataKey']));
      // Sealing takes a data key; nothing calls kms:Encrypt.
      expect(actions).not.toContain('kms:Encrypt');
    }
    const executorActions = actionsOfFunction(service, installation.service, executor);
    expect(executorActions).not.toContain('kms:*');
    expect(executorActions.some((action) => action.startsWith('kms:ReEncrypt'))).toBe(false);
  });

  it('grants least privilege per function through grant methods', () => {
    const { rpc, executor, projector } = installation.service;
    const rpcActions = actionsOfFunction(service, installation.service, rpc);
    expect(rpcActions).toEqual(
      expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:Query', 'sqs:SendMessage']),
    );
    const executorActions = actionsOfFunction(service, installation.service, executor);
    // It sends to the delivery queue only (decision 0061), never to the run queue it consumes.
    const executorSends = statementsOfFunction(service, installation.service, executor).filter((statement) =>
      [statement.Action].flat().includes('sqs:SendMessage'),
    );
    expect(executorSends.map((statement) => JSON.stringify(statement.Resource))).toEqual([
      expect.stringContaining('DeliveryQueue'),
    ]);
    expect(executorActions).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage']));
    expect(actionsOfFunction(service, installation.service, projector)).not.toContain('sqs:ReceiveMessage');
    for (const fn of [rpc, executor, projector]) {
      const actions = actionsOfFunction(service, installation.service, fn);
      expect(actions.some((action) => action.endsWith(':*') || action === '*')).toBe(false);
    }
  });

  it('grants each function exactly the actions its code calls, per table, index, queue and key (issue 38)', () => {
    const { rpc, executor, projector, reaper, pusher, deliverer } = installation.service;
    const grants = Object.fromEntries(
      Object.entries({ rpc, executor, projector, reaper, pusher, deliverer }).map(([name, fn]) => [
        name,
        grantsOfFunction(service, installation.service, fn).filter((grant) => !grant.startsWith('bedrock:')),
      ]),
    );
    // Bedrock has its own test below. The conformance test (test/e2e/iam-conformance.test.ts)
    // shows each of these is called, or says why it is granted anyway.
    expect(grants).toEqual({
      rpc: [
        'dynamodb:DeleteItem table/Audit',
        'dynamodb:DeleteItem table/State',
        'dynamodb:GetItem table/Audit',
        'dynamodb:GetItem table/Journal',
        'dynamodb:GetItem table/State',
        'dynamodb:PutItem table/Audit',
        'dynamodb:PutItem table/Journal',
        'dynamodb:PutItem table/State',
        'dynamodb:Query table/Audit',
        'dynamodb:Query table/Journal',
        'dynamodb:Query table/Journal/index/byOwner',
        'dynamodb:Query table/State',
        'dynamodb:UpdateItem table/Audit',
        'dynamodb:UpdateItem table/Journal',
        'dynamodb:UpdateItem table/State',
        'kms:Decrypt key/ContentKey',
        'kms:GenerateDataKey key/ContentKey',
        'sqs:SendMessage queue/DeliveryQueue',
        'sqs:SendMessage queue/RunQueue',
      ],
      executor: [
        'dynamodb:DeleteItem table/Audit',
        'dynamodb:DeleteItem table/State',
        'dynamodb:GetItem table/Audit',
        'dynamodb:GetItem table/Journal',
        'dynamodb:GetItem table/State',
        'dynamodb:PutItem table/Audit',
        'dynamodb:PutItem table/Journal',
        'dynamodb:PutItem table/State',
        'dynamodb:Query table/Audit',
        'dynamodb:Query table/State',
        'dynamodb:UpdateItem table/Audit',
        'dynamodb:UpdateItem table/Journal',
        'dynamodb:UpdateItem table/State',
        'kms:Decrypt key/ContentKey',
        'kms:GenerateDataKey key/ContentKey',
        'sqs:ChangeMessageVisibility queue/RunQueue',
        'sqs:DeleteMessage queue/RunQueue',
        'sqs:GetQueueAttributes queue/RunQueue',
        'sqs:GetQueueUrl queue/RunQueue',
        'sqs:ReceiveMessage queue/RunQueue',
        'sqs:SendMessage queue/DeliveryQueue',
      ],
      projector: [
        'dynamodb:BatchGetItem table/Journal',
        'dynamodb:DescribeStream table/State/stream',
        'dynamodb:GetItem table/Journal',
        'dynamodb:GetRecords table/State/stream',
        'dynamodb:GetShardIterator table/State/stream',
        'dynamodb:ListStreams table/State/stream',
        'dynamodb:PutItem table/Journal',
        'dynamodb:UpdateItem table/Journal',
        'sqs:GetQueueAttributes queue/ProjectorDlq',
        'sqs:GetQueueUrl queue/ProjectorDlq',
        'sqs:SendMessage queue/ProjectorDlq',
      ],
      reaper: [
        'dynamodb:DeleteItem table/Audit',
        'dynamodb:DeleteItem table/State',
        'dynamodb:GetItem table/Audit',
        'dynamodb:GetItem table/Journal',
        'dynamodb:GetItem table/State',
        'dynamodb:PutItem table/Audit',
        'dynamodb:PutItem table/Journal',
        'dynamodb:PutItem table/State',
        'dynamodb:Query table/Audit',
        'dynamodb:Query table/State',
        'dynamodb:Query table/State/index/byLease',
        'dynamodb:UpdateItem table/Journal',
        'dynamodb:UpdateItem table/State',
        'kms:GenerateDataKey key/ContentKey',
        'sqs:SendMessage queue/DeliveryQueue',
        'sqs:SendMessage queue/RunQueue',
      ],
      pusher: [
        'dynamodb:DescribeStream table/Journal/stream',
        'dynamodb:GetRecords table/Journal/stream',
        'dynamodb:GetShardIterator table/Journal/stream',
        'dynamodb:ListStreams table/Journal/stream',
        'dynamodb:Query table/State',
        'sqs:GetQueueAttributes queue/PusherDlq',
        'sqs:GetQueueUrl queue/PusherDlq',
        'sqs:SendMessage queue/DeliveryQueue',
        'sqs:SendMessage queue/PusherDlq',
      ],
      deliverer: [
        'dynamodb:GetItem table/State',
        'dynamodb:Query table/Journal',
        'dynamodb:Query table/State',
        'dynamodb:UpdateItem table/State',
        'kms:Decrypt key/ContentKey',
        'sqs:ChangeMessageVisibility queue/DeliveryQueue',
        'sqs:DeleteMessage queue/DeliveryQueue',
        'sqs:GetQueueAttributes queue/DeliveryQueue',
        'sqs:GetQueueUrl queue/DeliveryQueue',
        'sqs:ReceiveMessage queue/DeliveryQueue',
      ],
    });
  });

  it('lets the executor write and scrub audit rows, the rpc a run’s, the reaper only its start slots, and no other function touch them (decisions 0010, 0072, 0091)', () => {
    const auditActionsOf = (fn: ServiceStack['rpc']): string[] => {
      const functionResource = service.toJSON().Resources[logicalIdOf(installation.service, fn)] as Resource;
      const roleId = (functionResource.Properties.Role as { 'Fn::GetAtt': [string, string] })[
        'Fn::GetAtt'
      ][0];
      const actions: string[] = [];
      for (const policy of Object.values(service.findResources('AWS::IAM::Policy')) as Resource[]) {
        if (!(policy.Properties.Roles as Array<{ Ref: string }>).some((ref) => ref.Ref === roleId)) continue;
        const document = policy.Properties.PolicyDocument as {
          Statement: Array<{ Action: string | string[]; Resource: unknown }>;
        };
        for (const statement of document.Statement) {
          if (/Audit/.test(JSON.stringify(statement.Resource))) actions.push(...[statement.Action].flat());
        }
      }
      return actions;
    };
    const { rpc, executor, projector } = installation.service;
    expect(auditActionsOf(executor)).toEqual(
      expect.arrayContaining([
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'dynamodb:DeleteItem',
      ]),
    );
    // A blocking send's run in the rpc (decision 0091): its rows, slots and scrub; no scan, no batch.
    expect(auditActionsOf(rpc).sort()).toEqual([...RUN_AUDIT_TABLE_ACTIONS].sort());
    expect(auditActionsOf(projector)).toEqual([]);
    // The reaper reads and takes start slots (decision 0072): no update, so it can never scrub or
    // rewrite a row's content.
    expect(auditActionsOf(installation.service.reaper).sort()).toEqual([...REAPER_START_SLOT_ACTIONS].sort());
  });

  it('gives the admin command no path from the public API (issue 7): no route, no function, no rights', () => {
    // Every API resource is a public one; each method integrates the rpc function (test above).
    const parts = Object.values(service.findResources('AWS::ApiGateway::Resource')).map(
      (resource) => (resource as Resource).Properties.PathPart as string,
    );
    expect(parts.length).toBeGreaterThan(0);
    for (const part of parts) expect(part).not.toMatch(/admin|purge|runs|profiles|approv|inspect/i);
    // No deployed function is the admin command (it runs on an operator's machine, infra/admin/cli.ts).
    for (const template of [service, withAuthorizer]) {
      for (const id of Object.keys(template.findResources('AWS::Lambda::Function'))) {
        expect(id).not.toMatch(/admin|purge|inspect/i);
      }
    }
    // What the admin command needs, the rpc function may not do: delete journal items (purge), or
    // scan or batch-read the audit table. It reads and writes a run's audit rows only when it runs
    // blocking sends' runs itself (decision 0091; `deployment.blockingRunsInRpc: false` keeps it out).
    const { rpc } = installation.service;
    const functionResource = service.toJSON().Resources[logicalIdOf(installation.service, rpc)] as Resource;
    const roleId = (functionResource.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const actionsOn = (table: RegExp): string[] => {
      const actions: string[] = [];
      for (const policy of Object.values(service.findResources('AWS::IAM::Policy')) as Resource[]) {
        if (!(policy.Properties.Roles as Array<{ Ref: string }>).some((ref) => ref.Ref === roleId)) continue;
        const document = policy.Properties.PolicyDocument as {
          Statement: Array<{ Action: string | string[]; Resource: unknown }>;
        };
        for (const statement of document.Statement) {
          if (table.test(JSON.stringify(statement.Resource))) actions.push(...[statement.Action].flat());
        }
      }
      return actions;
    };
    expect(actionsOn(/Audit/).sort()).toEqual([...RUN_AUDIT_TABLE_ACTIONS].sort());
    const journal = actionsOn(/Journal/);
    expect(journal).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:Query']));
    // It writes its commits' revisions through (decision 0043): puts and the counters' updates, no delete.
    expect(journal).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem']));
    for (const write of ['dynamodb:DeleteItem', 'dynamodb:BatchWriteItem']) {
      expect(journal).not.toContain(write);
    }
    expect(
      actionsOfFunction(service, installation.service, rpc).some(
        (action) => /\*$/.test(action) && !action.startsWith('kms:'),
      ),
    ).toBe(false);
  });

  it('lets the executor invoke exactly the configured Bedrock models: model ids, cross-region and application inference profiles (issue 38)', () => {
    const bedrock = statementsOfFunction(service, installation.service, installation.service.executor)
      .filter((statement) => [statement.Action].flat().some((action) => action.startsWith('bedrock:')))
      .map((statement) => ({
        ...statement,
        Resource: [statement.Resource].flat().map(renderedForNag),
        ...('Condition' in statement && {
          Condition: JSON.parse(
            JSON.stringify(statement.Condition, (_key, value) =>
              typeof value === 'object' && value !== null && ('Fn::Join' in value || 'Ref' in value)
                ? renderedForNag(value)
                : value,
            ),
          ),
        }),
      }));
    const actions = ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'];
    const claudeProfile =
      'arn:<AWS::Partition>:bedrock:us-west-2:<AWS::AccountId>:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0';
    expect(bedrock).toEqual([
      {
        Effect: 'Allow',
        Action: actions,
        Resource: [
          claudeProfile,
          'arn:<AWS::Partition>:bedrock:eu-west-1::foundation-model/amazon.titan-text-express-v1',
          applicationProfile,
        ],
      },
      // The profiles' foundation models in any region, only through the profile.
      {
        Effect: 'Allow',
        Action: actions,
        Resource: [
          'arn:<AWS::Partition>:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0',
        ],
        Condition: { StringEquals: { 'bedrock:InferenceProfileArn': claudeProfile } },
      },
      {
        Effect: 'Allow',
        Action: actions,
        Resource: ['arn:<AWS::Partition>:bedrock:*::foundation-model/*'],
        Condition: { StringEquals: { 'bedrock:InferenceProfileArn': applicationProfile } },
      },
    ]);
    const rpcActions = actionsOfFunction(service, installation.service, installation.service.rpc);
    expect(rpcActions.some((action) => action.startsWith('bedrock:'))).toBe(false);
  });
});

describe('Monitoring (decision 0020)', () => {
  const alarmsOf = (template: Template) =>
    Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
  const topicRef = (template: Template) => {
    const topics = Object.keys(template.findResources('AWS::SNS::Topic'));
    expect(topics).toHaveLength(1);
    return { Ref: topics[0] };
  };
  /** The dashboard body as text: its literal parts, with tokens shown as <token>. */
  const dashboardText = (template: Template): string => {
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as Resource[];
    expect(dashboards).toHaveLength(1);
    const body = dashboards[0]?.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] };
    return body['Fn::Join'][1].map((part) => (typeof part === 'string' ? part : '<token>')).join('');
  };

  it('alarms on the first message of every dead-letter queue the stateful stack declares', () => {
    const dlqs = installation.stateful.deadLetterQueues;
    expect(Object.keys(dlqs).sort()).toEqual(
      queueDefinitions
        .filter(isDeadLetterQueue)
        .map((definition) => definition.id)
        .sort(),
    );
    expect(Object.keys(dlqs)).toEqual(
      expect.arrayContaining(['RunDlq', 'ProjectorDlq', 'DeliveryDlq', 'PusherDlq']),
    );
    for (const [name, queue] of Object.entries(dlqs)) {
      const queueId = logicalIdOf(installation.stateful, queue);
      service.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: `a2a-test-${name}-messages`,
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::ImportValue': Match.stringLikeRegexp(queueId) } }],
        Statistic: 'Maximum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('alarms on the stream iterator age of the projector and the pusher', () => {
    for (const [name, fn] of [
      ['projector', installation.service.projector],
      ['pusher', installation.service.pusher],
    ] as const) {
      service.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: `a2a-test-${name}-iterator-age`,
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalIdOf(installation.service, fn) } }],
        Statistic: 'Maximum',
        Threshold: 300_000,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    }
  });

  it('alarms on the error rate of every function, the authorizer included when there is one', () => {
    for (const [template, stack] of [
      [service, installation.service],
      [withAuthorizer, undefined],
    ] as const) {
      const functionIds = Object.keys(template.findResources('AWS::Lambda::Function'));
      const rateAlarms = alarmsOf(template).filter((alarm) =>
        String(alarm.Properties.AlarmName).endsWith('-error-rate'),
      );
      expect(rateAlarms).toHaveLength(functionIds.length);
      const covered = rateAlarms.map((alarm) => {
        const metrics = alarm.Properties.Metrics as Array<{
          Id: string;
          Expression?: string;
          MetricStat?: { Metric: { MetricName: string; Dimensions: Array<{ Value: { Ref: string } }> } };
        }>;
        expect(metrics.find((metric) => metric.Expression)?.Expression).toBe(
          'IF(invocations > 0, 100 * errors / invocations, 0)',
        );
        expect(alarm.Properties).toMatchObject({ Threshold: 5, ComparisonOperator: 'GreaterThanThreshold' });
        const refs = metrics.flatMap((metric) =>
          metric.MetricStat
            ? [
                `${metric.Id}:${metric.MetricStat.Metric.MetricName}:${metric.MetricStat.Metric.Dimensions[0]?.Value.Ref}`,
              ]
            : [],
        );
        const functionId = refs[0]?.split(':')[2] ?? '';
        expect(refs.sort()).toEqual([`errors:Errors:${functionId}`, `invocations:Invocations:${functionId}`]);
        return functionId;
      });
      expect(covered.sort()).toEqual(functionIds.sort());
      if (stack) expect(covered).toContain(logicalIdOf(stack, stack.executor));
    }
    expect(
      alarmsOf(withAuthorizer).some(
        (alarm) => alarm.Properties.AlarmName === 'a2a-test-authorizer-error-rate',
      ),
    ).toBe(true);
  });

  it('notifies one SNS topic on ALARM and OK from every alarm; no subscription unless configured', () => {
    const topic = topicRef(service);
    const alarms = alarmsOf(service);
    expect(alarms).toHaveLength(
      Object.keys(installation.stateful.deadLetterQueues).length + 2 + Object.keys(defaultEntries).length,
    );
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([topic]);
      expect(alarm.Properties.OKActions).toEqual([topic]);
      expect(String(alarm.Properties.AlarmDescription)).toContain('docs/operations.md');
    }
    service.resourceCountIs('AWS::SNS::Subscription', 0);
    service.hasOutput('AlarmTopicArn', { Value: topic });
    service.hasOutput('DashboardName', { Value: 'a2a-test' });
  });

  it('draws a dashboard with every application metric under the dimensions the functions emit', () => {
    service.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'a2a-test' });
    const text = dashboardText(service);
    // What each emitting function's adapter actually writes, read back from its EMF line.
    const lines: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      for (const [name, { emittedBy }] of Object.entries(metricCatalog)) {
        const metrics = createFunctionMetrics({ installation: 'a2a-test', localMode: false }, emittedBy, {});
        metrics.add(name as MetricName);
        metrics.flush();
      }
    } finally {
      write.mockRestore();
    }
    type EmfLine = Record<string, unknown> & {
      _aws: {
        CloudWatchMetrics: Array<{
          Namespace: string;
          Dimensions: string[][];
          Metrics: Array<{ Name: string }>;
        }>;
      };
    };
    const emitted = lines.map((line) => JSON.parse(line) as EmfLine);
    expect(emitted).toHaveLength(Object.keys(metricCatalog).length);
    // Every series the dashboard draws: [namespace, name, dimension, value, …, options?].
    const widgets = (JSON.parse(text) as { widgets: Array<{ properties: { metrics?: unknown[][] } }> })
      .widgets;
    const drawn = widgets
      .flatMap((widget) => widget.properties.metrics ?? [])
      .map((series) => {
        const plain = series.filter((part): part is string => typeof part === 'string');
        const [namespace, name, ...pairs] = plain;
        const dimensions = Object.fromEntries(
          pairs.flatMap((key, index) => (index % 2 === 0 ? [[key, pairs[index + 1]]] : [])),
        );
        return { namespace, name, dimensions };
      });
    for (const line of emitted) {
      const [directive] = line._aws.CloudWatchMetrics;
      const name = directive?.Metrics[0]?.Name;
      const dimensions = Object.fromEntries(
        (directive?.Dimensions[0] ?? []).map((key) => [key, String(line[key])]),
      );
      expect(drawn, name).toContainEqual({ namespace: directive?.Namespace, name, dimensions });
    }
    for (const metric of ['IteratorAge', 'ApproximateNumberOfMessagesVisible', 'Errors', '5XXError']) {
      expect(text).toContain(`"${metric}"`);
    }
    for (const name of Object.keys(installation.stateful.deadLetterQueues))
      expect(text).toContain(`"label":"${name}"`);
    expect(text).toContain('"type":"alarm"');
    expect(text).toContain('Per-stage latency of a task');
    for (const label of ['rpc (API latency)', 'executor duration', 'deliverer duration', 'run queue wait'])
      expect(text).toContain(`"label":"${label}"`);
  });

  it('leaves the deployment settings out of the functions environment', () => {
    for (const fn of Object.values(service.findResources('AWS::Lambda::Function')) as Resource[]) {
      const variables = (fn.Properties.Environment as { Variables: Record<string, string> }).Variables;
      if (variables.A2A_CONFIG) expect(JSON.parse(variables.A2A_CONFIG).deployment).toBeUndefined();
    }
  });
});

describe('createInstallation', () => {
  const configApp = (config: unknown): App => {
    const file = join(workDir, `config-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(config));
    return new App({ context: { config: file, ...templatesOnly } });
  };

  it('names the stacks after the stage, dev by default', () => {
    expect(installation.stateful.stackName).toBe('a2a-test-stateful');
    expect(installation.service.stackName).toBe('a2a-test-service');
    expect(readStageContext(undefined)).toBe('dev');
    expect(defaultEntries.rpc).toBe(join(REPO_ROOT, 'functions/rpc/handler.ts'));
  });

  it('refuses an invalid configuration, naming the setting', () => {
    const invalid = {
      ...defaultConfig,
      profiles: { default: { ...defaultProfile, providers: ['nope'] } },
    };
    expect(() => createInstallation(configApp(invalid))).toThrow(/profiles\.default\.providers/);
    expect(() =>
      createInstallation(configApp({ providers: {}, profiles: { default: { name: 'x' } } })),
    ).toThrow(/profiles\.default\.description/);
  });

  it('refuses to deploy without authentication unless the configuration says auth.public', () => {
    const { auth: _auth, ...unauthenticated } = defaultConfig;
    expect(() => createInstallation(configApp(unauthenticated))).toThrow(/auth\.apiKeys or auth\.jwt/);
    expect(() =>
      createInstallation(
        configApp({ ...unauthenticated, auth: { tokens: { t: { tenant: 'a', principal: 'b' } } } }),
      ),
    ).toThrow(/tokens are for local mode only/);
    expect(() =>
      createInstallation(
        configApp({
          ...unauthenticated,
          auth: { jwt: { ...testConfig.auth.jwt, jwksUrl: 'http://issuer.example/k' } },
        }),
      ),
    ).toThrow(/jwksUrl.*https/);
    const stub = join(workDir, 'stub.ts');
    writeFileSync(stub, 'export const handler = async () => ({});\n');
    const entries = Object.fromEntries(Object.keys(defaultEntries).map((name) => [name, stub]));
    const open = createInstallation(configApp({ ...unauthenticated, auth: { public: true } }), {
      entries,
      authorizerEntry: stub,
    });
    expect(open.service.authorizer).toBeUndefined();
  });

  it('refuses an unreadable configuration file and a bad stage name', () => {
    expect(() => createInstallation(new App({ context: { config: join(workDir, 'missing.json') } }))).toThrow(
      /-c config=.*missing\.json/,
    );
    expect(() => createInstallation(new App({ context: { stage: 'Bad_Stage' } }))).toThrow(
      /-c stage=Bad_Stage/,
    );
  });

  it('deploys from one config file: region, log retention, deletion protection, concurrency, alarms', () => {
    const stub = join(workDir, 'stub-deployment.ts');
    writeFileSync(stub, 'export const handler = async () => ({});\n');
    const entries = Object.fromEntries(Object.keys(defaultEntries).map((name) => [name, stub]));
    const configured = createInstallation(
      configApp({
        ...testConfig,
        deployment: {
          region: 'eu-central-1',
          logRetentionDays: 90,
          deletionProtection: false,
          executorMaxConcurrency: 25,
          blockingRunsInRpc: false,
          alarms: { email: 'ops@example.com', errorRatePercent: 2, iteratorAgeSeconds: 120 },
        },
      }),
      { entries, authorizerEntry: undefined },
    );
    expect(configured.stateful.region).toBe('eu-central-1');
    expect(configured.service.region).toBe('eu-central-1');
    const statefulTemplate = Template.fromStack(configured.stateful);
    const serviceTemplate = Template.fromStack(configured.service);
    statefulTemplate.allResourcesProperties('AWS::DynamoDB::GlobalTable', {
      Replicas: [Match.objectLike({ DeletionProtectionEnabled: false })],
    });
    serviceTemplate.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 90 });
    // Every run in the executor (decision 0091): the rpc is not told to run any, nor granted the audit table.
    const rpcFunction = serviceTemplate.toJSON().Resources[
      logicalIdOf(configured.service, configured.service.rpc)
    ] as Resource;
    expect(
      (rpcFunction.Properties.Environment as { Variables: Record<string, string> }).Variables,
    ).not.toHaveProperty('RUNS_BLOCKING_SENDS');
    expect(
      statementsOfFunction(serviceTemplate, configured.service, configured.service.rpc).filter((statement) =>
        /Audit/.test(JSON.stringify(statement.Resource)),
      ),
    ).toEqual([]);
    serviceTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalIdOf(configured.service, configured.service.executor) },
      ScalingConfig: { MaximumConcurrency: 25 },
    });
    serviceTemplate.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    });
    serviceTemplate.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'a2a-dev-executor-error-rate',
      Threshold: 2,
    });
    serviceTemplate.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'a2a-dev-projector-iterator-age',
      Threshold: 120_000,
    });
    const json = JSON.stringify(serviceTemplate.toJSON().Resources);
    const variables = Object.values(serviceTemplate.findResources('AWS::Lambda::Function')).map(
      (fn) => (fn as Resource).Properties.Environment as { Variables: Record<string, string> },
    );
    for (const { Variables } of variables) expect(Variables.A2A_CONFIG).not.toContain('ops@example.com');
    expect(json).toContain('ops@example.com');
    // The defaults, as the installation built from testConfig (no deployment section) shows them.
    expect(installation.config.deployment).toEqual({
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
    });
    stateful.allResourcesProperties('AWS::DynamoDB::GlobalTable', {
      Replicas: [Match.objectLike({ DeletionProtectionEnabled: true })],
    });
  });

  it('refuses a log retention CloudWatch does not offer and a malformed region or e-mail, naming the setting', () => {
    for (const [deployment, setting] of [
      [{ logRetentionDays: 31 }, /deployment\.logRetentionDays/],
      [{ region: 'Europe' }, /deployment\.region/],
      [{ alarms: { email: 'not-an-address' } }, /deployment\.alarms\.email/],
      [{ executorMaxConcurrency: 1 }, /deployment\.executorMaxConcurrency/],
    ] as const) {
      expect(
        () => createInstallation(configApp({ ...testConfig, deployment })),
        JSON.stringify(deployment),
      ).toThrow(setting);
    }
  });

  it('synthesizes the example deployment configuration (examples/deploy-config.json, named in cdk.json)', () => {
    const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8'));
    expect(cdkJson.context.config).toBe('examples/deploy-config.json');
    const example = readConfigContext(join(REPO_ROOT, cdkJson.context.config));
    expect(example.deployment.logRetentionDays).toBeGreaterThan(0);
    expect(deploymentAuthProblems(example.auth)).toEqual([]);
  });

  it('reserves concurrency per function as deployment.reservedConcurrency says, none by default; the executor at least its queue concurrency (issue 38)', () => {
    const reservedOf = (installation: Installation) => {
      const { service: stack } = installation;
      const functions = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>;
      return Object.fromEntries(
        (['rpc', 'executor', 'projector', 'pusher', 'deliverer', 'reaper'] as const).map((name) => [
          name,
          functions[logicalIdOf(stack, stack[name])]?.Properties.ReservedConcurrentExecutions,
        ]),
      );
    };
    const example = readConfigContext(join(REPO_ROOT, 'examples/deploy-config.json'));
    const reservedConcurrency = { rpc: 300, executor: 20, projector: 5, pusher: 5, deliverer: 20, reaper: 1 };
    expect(example.deployment.reservedConcurrency).toEqual(reservedConcurrency);
    expect(reservedOf(installationOf(example))).toEqual(reservedConcurrency);
    expect(Object.values(reservedOf(installation)).every((value) => value === undefined)).toBe(true);
    expect(() =>
      installationOf({
        ...testConfig,
        deployment: { executorMaxConcurrency: 10, reservedConcurrency: { executor: 5 } },
      }),
    ).toThrow(
      /deployment\.reservedConcurrency\.executor \(5\) must be at least deployment\.executorMaxConcurrency \(10\)/,
    );
  });

  it('fails synth when the configuration would not fit in the Lambda environment', () => {
    const profiles = Object.fromEntries(
      Array.from({ length: 12 }, (_, index) => [
        `agent-${index}`,
        { ...defaultProfile, instructions: 'x'.repeat(300) },
      ]),
    );
    const hugeApp = new App({ context: templatesOnly });
    const hugeStateful = new StatefulStack(hugeApp, 'huge-stateful', { prefix: 'huge' });
    expect(
      () =>
        new ServiceStack(hugeApp, 'huge-service', {
          stateful: hugeStateful,
          config: { ...defaultConfig, profiles },
          installation: 'huge',
        }),
    ).toThrow(new RegExp(`A2A_CONFIG.*${MAX_CONFIG_ENV_BYTES} bytes`));
  });
});

/** An installation from `config`, every function a stub (decision 0026's tests). */
const installationOf = (config: unknown): Installation => {
  const dir = mkdtempSync(join(workDir, 'stubbed-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const stub = join(dir, 'stub.ts');
  writeFileSync(stub, 'export const handler = async () => ({});\n');
  const entries = Object.fromEntries(Object.keys(defaultEntries).map((name) => [name, stub]));
  return createInstallation(new App({ context: { config: file, stage: 'stubbed', ...templatesOnly } }), {
    entries,
    authorizerEntry: undefined,
  });
};

describe('provider key secrets (decision 0026)', () => {
  const secretArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/openai-AbCdEf';
  // A partial ARN: the secret's name without the six characters Secrets Manager appends.
  const partialArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/anthropic';
  const keyArn = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  const secretConfig = {
    ...testConfig,
    providers: {
      ...testConfig.providers,
      byName: {
        type: 'openai',
        baseUrl: 'https://api.openai.com/v1',
        model: 'gpt-test',
        apiKeySecret: { secretId: 'a2a/openai', jsonKey: 'apiKey' },
      },
      byArn: {
        type: 'openai',
        baseUrl: 'https://llm.example.com/v1',
        model: 'm',
        apiKeySecret: { secretId: secretArn, kmsKeyArn: keyArn },
      },
      byPartialArn: {
        type: 'openai',
        baseUrl: 'https://llm.example.com/v1',
        model: 'm',
        apiKeySecret: { secretId: partialArn },
      },
      plain: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama' },
    },
  };
  let secretInstallation: Installation;
  let template: Template;
  /** The grant of a secret named without its ARN: any of the names Secrets Manager's suffix makes. */
  const namedSecretArn = (name: string) => ({
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':secretsmanager:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        `:secret:${name}-??????`,
      ],
    ],
  });

  beforeAll(() => {
    secretInstallation = installationOf(secretConfig);
    template = Template.fromStack(secretInstallation.service);
  });

  const statementsOf = (tmpl: Template, stack: Stack, fn: ServiceStack['rpc']) => {
    const roleId = (
      (tmpl.toJSON().Resources[logicalIdOf(stack, fn)] as Resource).Properties.Role as {
        'Fn::GetAtt': [string, string];
      }
    )['Fn::GetAtt'][0];
    return (Object.values(tmpl.findResources('AWS::IAM::Policy')) as Resource[])
      .filter((policy) =>
        (policy.Properties.Roles as Array<{ Ref: string }>).some((ref) => ref.Ref === roleId),
      )
      .flatMap(
        (policy) =>
          (policy.Properties.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement,
      );
  };

  it('lets the executor read exactly the referenced secrets, and decrypt with their CMK only via Secrets Manager', () => {
    const { service: stack } = secretInstallation;
    const statements = statementsOf(template, stack, stack.executor);
    const secretStatements = statements.filter((statement) =>
      [statement.Action].flat().some((action) => String(action).startsWith('secretsmanager:')),
    );
    expect(secretStatements).toEqual([
      {
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: [
          // Secrets Manager appends a 6-character suffix to every secret's ARN.
          namedSecretArn('a2a/openai'),
          // A complete ARN as given; since a name may end like a suffix, also as a partial one.
          secretArn,
          `${secretArn}-??????`,
          `${partialArn}-??????`,
        ],
      },
    ]);
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'kms:Decrypt',
      Resource: keyArn,
      Condition: {
        StringEquals: {
          'kms:ViaService': {
            'Fn::Join': ['', ['secretsmanager.', { Ref: 'AWS::Region' }, '.amazonaws.com']],
          },
        },
      },
    });
    // The rpc runs blocking sends' runs (decision 0091): the same secrets. No other function reads one.
    expect(
      statementsOf(template, stack, stack.rpc).filter((statement) =>
        [statement.Action].flat().some((action) => String(action).startsWith('secretsmanager:')),
      ),
    ).toEqual(secretStatements);
    for (const fn of [stack.projector, stack.pusher, stack.deliverer, stack.reaper]) {
      expect(
        statementsOf(template, stack, fn).filter((statement) =>
          JSON.stringify(statement).includes('secretsmanager'),
        ),
      ).toEqual([]);
    }
  });

  it('adds the Parameters and Secrets extension to the executor and the rpc only, its cache off (the function keeps the key 5 minutes)', () => {
    const { service: stack } = secretInstallation;
    const functions = template.toJSON().Resources as Record<string, Resource>;
    const executor = functions[logicalIdOf(stack, stack.executor)] as Resource;
    // An environment-agnostic stack looks the layer up per region at deploy time: the arm64 build.
    const [layer] = executor.Properties.Layers as Array<{ 'Fn::FindInMap': [string, unknown, string] }>;
    expect(executor.Properties.Layers).toHaveLength(1);
    const [mapName, , key] = layer?.['Fn::FindInMap'] ?? [];
    const byRegion = template.toJSON().Mappings[mapName ?? ''] as Record<string, Record<string, string>>;
    expect(byRegion['eu-west-1']?.[key ?? '']).toMatch(
      /^arn:aws:lambda:eu-west-1:\d{12}:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:\d+$/,
    );
    const variables = (executor.Properties.Environment as { Variables: Record<string, string> }).Variables;
    expect(variables).toMatchObject({
      PARAMETERS_SECRETS_EXTENSION_CACHE_ENABLED: 'false',
      PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: '2773',
    });
    // The rpc runs blocking sends' runs with the same providers (decision 0091).
    expect((functions[logicalIdOf(stack, stack.rpc)] as Resource).Properties.Layers).toEqual(
      executor.Properties.Layers,
    );
    for (const fn of [stack.projector, stack.pusher, stack.deliverer, stack.reaper]) {
      expect((functions[logicalIdOf(stack, fn)] as Resource).Properties.Layers).toBeUndefined();
    }
    // The configuration carries the reference only; no variable holds a key.
    const config = JSON.parse(variables.A2A_CONFIG ?? '{}');
    expect(config.providers.byName.apiKeySecret).toEqual({ secretId: 'a2a/openai', jsonKey: 'apiKey' });
  });

  it('without a referenced secret: no extension layer and no secretsmanager permission anywhere', () => {
    for (const tmpl of [service, withAuthorizer]) {
      for (const fn of Object.values(tmpl.findResources('AWS::Lambda::Function')) as Resource[]) {
        expect(fn.Properties.Layers).toBeUndefined();
      }
      expect(JSON.stringify(tmpl.findResources('AWS::IAM::Policy'))).not.toContain('secretsmanager');
    }
  });

  it('refuses a malformed secret reference at synth, naming the setting', () => {
    const withSecret = (apiKeySecret: unknown) => ({
      ...testConfig,
      providers: {
        ...testConfig.providers,
        o: { type: 'openai', baseUrl: 'https://x.example/v1', model: 'm', apiKeySecret },
      },
    });
    expect(() => installationOf(withSecret({ secretId: 'bad name with spaces' }))).toThrow(
      /providers\.o\.apiKeySecret\.secretId/,
    );
    expect(() => installationOf(withSecret({ secretId: 'arn:aws:s3:::bucket' }))).toThrow(
      /providers\.o\.apiKeySecret\.secretId/,
    );
    expect(() => installationOf(withSecret({ secretId: 'ok', kmsKeyArn: 'alias/mine' }))).toThrow(
      /providers\.o\.apiKeySecret\.kmsKeyArn/,
    );
  });

  it("grants MCP servers' credentials in Secrets Manager the same way, and only them; refuses a malformed one naming the setting", () => {
    const mcpConfig = (headerSecret: unknown) => ({
      ...testConfig,
      mcpServers: {
        tickets: {
          url: 'https://tickets.example.com/mcp',
          headers: { 'x-api-key': { secret: headerSecret }, 'x-team': 'support' },
        },
        crm: {
          url: 'https://crm.example.com/mcp',
          oauth: {
            tokenUrl: 'https://auth.example.com/token',
            clientId: 'agent',
            clientSecret: { secret: { secretId: secretArn, kmsKeyArn: keyArn } },
          },
        },
        // A credential from the environment only: nothing to grant.
        local: { url: 'https://local.example.com/mcp', headers: { 'x-api-key': { env: 'LOCAL_KEY' } } },
      },
    });
    const installation = installationOf(mcpConfig({ secretId: 'mcp/tickets', jsonKey: 'key' }));
    const tmpl = Template.fromStack(installation.service);
    const { service: stack } = installation;
    const secretStatements = statementsOf(tmpl, stack, stack.executor).filter((statement) =>
      [statement.Action].flat().some((action) => String(action).startsWith('secretsmanager:')),
    );
    expect(secretStatements).toEqual([
      {
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: [namedSecretArn('mcp/tickets'), secretArn, `${secretArn}-??????`],
      },
    ]);
    expect(statementsOf(tmpl, stack, stack.executor)).toContainEqual(
      expect.objectContaining({ Action: 'kms:Decrypt', Resource: keyArn }),
    );
    // The rpc runs blocking sends' runs and their tool calls (`deployment.blockingRunsInRpc`): the same secrets.
    expect(
      statementsOf(tmpl, stack, stack.rpc).filter((statement) =>
        [statement.Action].flat().some((action) => String(action).startsWith('secretsmanager:')),
      ),
    ).toEqual(secretStatements);
    const functions = tmpl.toJSON().Resources as Record<string, Resource>;
    expect((functions[logicalIdOf(stack, stack.executor)] as Resource).Properties.Layers).toHaveLength(1);
    for (const fn of [stack.projector, stack.pusher, stack.deliverer, stack.reaper]) {
      expect(JSON.stringify(statementsOf(tmpl, stack, fn))).not.toContain('secretsmanager');
    }
    expect(() => installationOf(mcpConfig({ secretId: 'bad name with spaces' }))).toThrow(
      /mcpServers\.tickets\.headers\.x-api-key\.secret\.secretId/,
    );
  });

  it("grants A2A agents' credentials like MCP servers'; with publicUrl, serves the delegation callback without the authorizer", () => {
    const installation = installationOf({
      ...testConfig,
      publicUrl: 'https://api.example.com/prod',
      a2aAgents: {
        helper: {
          cardUrl: 'https://agents.example.com/.well-known/agent-card.json',
          headers: { authorization: { secret: { secretId: 'a2a/helper' } } },
        },
      },
    });
    const tmpl = Template.fromStack(installation.service);
    const { service: stack } = installation;
    expect(JSON.stringify(statementsOf(tmpl, stack, stack.executor))).toContain('secret:a2a/helper-??????');
    const resources = tmpl.toJSON().Resources as Record<string, Resource>;
    const runIdResource = Object.entries(resources).find(
      ([, resource]) =>
        resource.Type === 'AWS::ApiGateway::Resource' && resource.Properties.PathPart === '{runId}',
    )?.[0];
    expect(runIdResource).toBeDefined();
    const methods = Object.values(resources).filter(
      (resource) =>
        resource.Type === 'AWS::ApiGateway::Method' &&
        JSON.stringify(resource.Properties.ResourceId).includes(runIdResource as string),
    );
    expect(
      methods.map((method) => [method.Properties.HttpMethod, method.Properties.AuthorizationType]),
    ).toEqual([['POST', 'NONE']]);
  });

  it('synthesizes both example configurations offline (deploy-config.json, deploy-config-openai-secret.json)', () => {
    for (const example of ['examples/deploy-config.json', 'examples/deploy-config-openai-secret.json']) {
      const config = readConfigContext(join(REPO_ROOT, example));
      const built = installationOf(config);
      const assembly = built.service.node.root as App;
      const cloudAssembly = assembly.synth();
      expect(cloudAssembly.stacks.map((stack) => stack.stackName).sort(), example).toEqual([
        'a2a-stubbed-service',
        'a2a-stubbed-stateful',
      ]);
      const layers = Object.values(
        Template.fromStack(built.service).findResources('AWS::Lambda::Function'),
      ).filter((fn) => (fn as Resource).Properties.Layers !== undefined);
      // The executor and the rpc (decision 0091) with a secret; none without.
      expect(layers.length, example).toBe(example.includes('secret') ? 2 : 0);
    }
  });
});

describe('the deployed journal viewer (decision 0026)', () => {
  let viewerInstallation: Installation;
  let template: Template;
  let authorizedTemplate: Template;
  beforeAll(() => {
    viewerInstallation = installationOf({ ...testConfig, deployment: { viewer: true } });
    const stub = join(workDir, 'stub-viewer.ts');
    writeFileSync(stub, 'export const handler = async () => ({});\n');
    const authorized = new ServiceStack(viewerInstallation.service.node.root as App, 'viewer-authorized', {
      stateful: viewerInstallation.stateful,
      config: viewerInstallation.config,
      installation: viewerInstallation.prefix,
      entries: Object.fromEntries(Object.keys(defaultEntries).map((name) => [name, stub])),
      authorizerEntry: stub,
    });
    template = Template.fromStack(viewerInstallation.service);
    authorizedTemplate = Template.fromStack(authorized);
  });

  const resourceIdOf = (tmpl: Template, pathPart: string, parentPart?: string): string => {
    const resources = tmpl.findResources('AWS::ApiGateway::Resource', { Properties: { PathPart: pathPart } });
    const ids = Object.keys(resources).filter(
      (id) =>
        parentPart === undefined ||
        JSON.stringify((resources[id] as Resource).Properties.ParentId).includes(
          resourceIdOf(tmpl, parentPart),
        ),
    );
    expect(ids, pathPart).toHaveLength(1);
    return ids[0] as string;
  };

  it('serves GET /viewer and /viewer/{proxy+} without the authorizer, from a MOCK integration (no function, no bucket)', () => {
    const viewer = resourceIdOf(template, 'viewer');
    const below = resourceIdOf(template, '{proxy+}', 'viewer');
    for (const resourceId of [viewer, below]) {
      const methods = Object.values(
        template.findResources('AWS::ApiGateway::Method', {
          Properties: { ResourceId: { Ref: resourceId } },
        }),
      ) as Resource[];
      expect(methods.map((method) => method.Properties.HttpMethod)).toEqual(['GET']);
      expect(methods[0]?.Properties).toMatchObject({
        AuthorizationType: 'NONE',
        Integration: { Type: 'MOCK', RequestTemplates: { 'application/json': '{"statusCode": 200}' } },
      });
    }
    // Nothing else: the same functions and buckets as without the viewer.
    expect(Object.keys(template.findResources('AWS::S3::Bucket'))).toEqual([]);
    expect(Object.keys(template.findResources('AWS::Lambda::Function')).length).toBe(
      Object.keys(service.findResources('AWS::Lambda::Function')).length,
    );
    template.hasOutput('ViewerUrl', {});
  });

  it('answers the self-contained page (viewer.js inlined, pure ASCII) as text/html with a CSP that admits only its script', () => {
    const method = Object.values(
      template.findResources('AWS::ApiGateway::Method', {
        Properties: { ResourceId: { Ref: resourceIdOf(template, 'viewer') } },
      }),
    )[0] as Resource;
    const [response] = (
      method.Properties.Integration as {
        IntegrationResponses: Array<{
          ResponseTemplates: Record<string, string>;
          ResponseParameters: Record<string, string>;
        }>;
      }
    ).IntegrationResponses;
    const encoded = /^\$util\.base64Decode\("([A-Za-z0-9+/=]+)"\)$/.exec(
      response?.ResponseTemplates['text/html'] ?? '',
    );
    expect(encoded).not.toBeNull();
    const html = Buffer.from(encoded?.[1] ?? '', 'base64').toString('utf8');
    const page = deployedViewerPage();
    expect(html).toBe(page.html);
    expect(html).not.toMatch(/\P{ASCII}/u);
    expect(html).not.toContain('src="viewer.js"');
    // The script the browser runs is viewer.js, character for character once escapes are read.
    const script = /<script type="module">([\s\S]*)<\/script>/.exec(html)?.[1] ?? '';
    const source = readFileSync(join(REPO_ROOT, 'infra/viewer/viewer.js'), 'utf8');
    expect(
      script.replace(/\\u\{([0-9a-f]+)\}/g, (_, hex: string) =>
        String.fromCodePoint(Number.parseInt(hex, 16)),
      ),
    ).toBe(`\n${source}`);
    expect(`sha256-${createHash('sha256').update(script).digest('base64')}`).toBe(page.scriptHash);
    expect(response?.ResponseParameters).toMatchObject({
      'method.response.header.Content-Type': "'text/html; charset=utf-8'",
      'method.response.header.Content-Security-Policy': `'${viewerContentSecurityPolicy(page)}'`,
      'method.response.header.X-Content-Type-Options': "'nosniff'",
    });
    expect(viewerContentSecurityPolicy(page)).toContain(`script-src '${page.scriptHash}'`);
    // It fits API Gateway's mapping template limit (300 KB) with room to grow.
    expect(response?.ResponseTemplates['text/html']?.length).toBeLessThan(100_000);
  });

  it('is absent unless deployment.viewer is true; every data route keeps the authorizer', () => {
    expect(defaultConfig.deployment.viewer).toBe(false);
    for (const tmpl of [service, withAuthorizer]) {
      expect(
        Object.keys(tmpl.findResources('AWS::ApiGateway::Resource', { Properties: { PathPart: 'viewer' } })),
      ).toEqual([]);
    }
    // With an authorizer (the installation above has none): which methods go without it.
    const unauthenticated = (
      Object.values(authorizedTemplate.findResources('AWS::ApiGateway::Method')) as Resource[]
    ).filter((method) => method.Properties.AuthorizationType === 'NONE');
    // The agent cards (GET, HEAD at / and /agents/{profileId}) and the viewer's two GETs; nothing else.
    expect(unauthenticated).toHaveLength(6);
  });
});
