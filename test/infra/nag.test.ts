import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, type Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addAwsSolutionsChecks, createInstallation, type Installation } from '../../infra/app.ts';
import { REPO_ROOT } from '../../infra/house-function.ts';
import {
  contentKeyConditions,
  defaultEntries,
  RPC_JOURNAL_TABLE_ACTIONS,
  RPC_STATE_TABLE_ACTIONS,
  RUN_AUDIT_TABLE_ACTIONS,
} from '../../infra/service-stack.ts';
import { journalTable, stateTable } from '../../shared/adapters/dynamodb/tables.ts';
import { KMS_PURPOSE } from '../../shared/adapters/kms-sealer.ts';
import { defaultConfig } from '../../shared/config/config.ts';
import { templatesOnly } from '../support/templates-only.ts';

/**
 * Decision 0055: cdk-nag's AwsSolutions pack finds nothing unanswered in either stack, every
 * acknowledgment names its rule, resource and reason, and the least-privilege grants (rpc's
 * DynamoDB actions, KMS conditioned on the encryption context, the authorizer cache, stage
 * throttling) are what the templates hold. Functions are built from stand-in entries: the rules
 * read resources and policies, not code.
 */

type Resource = { Type: string; Properties: Record<string, unknown> };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

const jwtConfig = {
  ...defaultConfig,
  auth: {
    jwt: { issuer: 'https://issuer.example', audience: 'a2a', jwksUrl: 'https://issuer.example/jwks.json' },
  },
};

let workDir: string;
let stub: string;

const build = (config: unknown, options: { authorizer?: boolean; stage?: string } = {}) => {
  const file = join(workDir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(config));
  const app = new App({
    outdir: mkdtempSync(join(workDir, 'out-')),
    context: { config: file, stage: options.stage ?? 'nag', ...templatesOnly },
  });
  const installation = createInstallation(app, {
    entries: Object.fromEntries(Object.keys(defaultEntries).map((name) => [name, stub])),
    authorizerEntry: options.authorizer === false ? undefined : stub,
  });
  return { app, installation };
};

const findingsOf = (stack: Stack): string[] =>
  new AwsSolutionsChecks()
    .validateScope(stack)
    .violations.flatMap((violation) =>
      violation.violatingResources.map((resource) => `${violation.ruleName} ${resource.constructPath}`),
    );

/** Every acknowledgment recorded under `scope`: rule id, construct path, reason. */
const acknowledgmentsUnder = (scope: IConstruct) =>
  scope.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      // Recorded as { '<namespace>::<rule id>': reason }.
      .flatMap((entry) => Object.entries(entry.data as Record<string, string>))
      .map(([key, reason]) => ({ id: key.replace(/^\w+::/, ''), path: construct.node.path, reason })),
  );

const statementsOf = (template: Template): Statement[] =>
  (Object.values(template.findResources('AWS::IAM::Policy')) as Resource[]).flatMap(
    (policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
  );

/** The statements of the policies attached to a function's role. */
const statementsOfFunction = (template: Template, stack: Stack, fn: { node: IConstruct['node'] }) => {
  const functionId = stack.getLogicalId(fn.node.defaultChild as Parameters<Stack['getLogicalId']>[0]);
  const role = (template.toJSON().Resources[functionId] as Resource).Properties.Role as {
    'Fn::GetAtt': [string, string];
  };
  return (Object.values(template.findResources('AWS::IAM::Policy')) as Resource[])
    .filter((policy) =>
      (policy.Properties.Roles as Array<{ Ref: string }>).some((ref) => ref.Ref === role['Fn::GetAtt'][0]),
    )
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
};

let jwt: Installation;
let jwtService: Template;

beforeAll(() => {
  const cacheDir = join(REPO_ROOT, '.cache');
  mkdirSync(cacheDir, { recursive: true });
  // Under the repository root: NodejsFunction refuses entries outside its project root.
  workDir = mkdtempSync(join(cacheDir, 'nag-test-'));
  stub = join(workDir, 'stub.ts');
  writeFileSync(stub, 'export const handler = async () => ({});\n');
  jwt = build({ ...jwtConfig, deployment: { viewer: true } }).installation;
  jwtService = Template.fromStack(jwt.service);
});

afterAll(() => {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

describe('cdk-nag AwsSolutions (decision 0055)', () => {
  it('finds nothing unanswered in either stack: JWTs with the viewer, API keys, auth.public, provisioned tables', () => {
    const apiKeys = build({
      ...defaultConfig,
      auth: { apiKeys: { ['a'.repeat(64)]: { tenant: 't', principal: 'p' } } },
    }).installation;
    const open = build({ ...defaultConfig, auth: { public: true } }, { authorizer: false }).installation;
    const provisioned = build(
      { ...jwtConfig, deployment: { dynamodb: { billing: 'provisioned' } } },
      { stage: 'provisioned' },
    ).installation;
    // Every provider type (issue 38): Bedrock by model id, cross-region and application inference
    // profile (by id and by ARN), OpenAI-compatible keys in secrets by name, complete and partial ARN.
    const everyProvider = build(
      {
        ...jwtConfig,
        providers: {
          ...jwtConfig.providers,
          model: { type: 'bedrock', model: 'amazon.nova-lite-v1:0', region: 'eu-west-1' },
          crossRegion: {
            type: 'bedrock',
            model: 'eu.anthropic.claude-sonnet-4-20250514-v1:0',
            region: 'eu-west-1',
          },
          profileArn: {
            type: 'bedrock',
            model: 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0',
          },
          application: {
            type: 'bedrock',
            model: 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6',
          },
          byName: {
            type: 'openai',
            baseUrl: 'https://api.openai.com/v1',
            model: 'm',
            apiKeySecret: { secretId: 'a2a/openai' },
          },
          byArn: {
            type: 'openai',
            baseUrl: 'https://llm.example.com/v1',
            model: 'm',
            apiKeySecret: {
              secretId: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/openai-AbCdEf',
              kmsKeyArn: 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
            },
          },
          byPartialArn: {
            type: 'openai',
            baseUrl: 'https://llm.example.com/v1',
            model: 'm',
            apiKeySecret: { secretId: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:team/anthropic' },
          },
        },
      },
      { stage: 'providers' },
    ).installation;
    for (const installation of [jwt, apiKeys, open, provisioned, everyProvider]) {
      expect(findingsOf(installation.stateful)).toEqual([]);
      expect(findingsOf(installation.service)).toEqual([]);
    }
  });

  it('fails synth on a new finding, naming rule and resource (the check above can fail)', () => {
    const { app, installation } = build(jwtConfig);
    addAwsSolutionsChecks(app);
    new Queue(installation.stateful, 'Unchecked');
    expect(findingsOf(installation.stateful)).toEqual(
      expect.arrayContaining([
        'AwsSolutions-SQS3 a2a-nag-stateful/Unchecked/Resource',
        'AwsSolutions-SQS4 a2a-nag-stateful/Unchecked/Resource',
      ]),
    );
    expect(() => app.synth()).toThrow(/AwsSolutions-SQS3/);
  });

  it('synthesizes with the checks on when nothing is new', () => {
    const { app } = build(jwtConfig);
    addAwsSolutionsChecks(app);
    expect(() => app.synth()).not.toThrow();
  });

  it('acknowledges only these rules, each on its resource and with its reason', () => {
    const acknowledged = acknowledgmentsUnder(jwt.service.node.root);
    for (const { reason } of acknowledged) expect(reason.length).toBeGreaterThan(40);
    const byRule = new Map<string, string[]>();
    for (const { id, path } of acknowledged) byRule.set(id, [...(byRule.get(id) ?? []), path]);
    const functions = ['Rpc', 'Authorizer', 'Executor', 'Projector', 'Reaper', 'Pusher', 'Deliverer'];
    expect([...byRule.keys()].sort()).toEqual([
      'AwsSolutions-APIG2',
      'AwsSolutions-APIG3',
      'AwsSolutions-APIG4',
      'AwsSolutions-COG4',
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-L1',
      'AwsSolutions-SQS3',
    ]);
    expect(byRule.get('AwsSolutions-SQS3')?.sort()).toEqual([
      'a2a-nag-stateful/ProjectorDlq',
      'a2a-nag-stateful/PusherDlq',
    ]);
    expect(byRule.get('AwsSolutions-L1')?.sort()).toEqual(
      functions.map((fn) => `a2a-nag-service/${fn}`).sort(),
    );
    expect(byRule.get('AwsSolutions-IAM5[Resource::*]')?.sort()).toEqual(
      functions.map((fn) => `a2a-nag-service/${fn}ServiceRole`).sort(),
    );
    // Without the authorizer only the agent cards (GET, HEAD at / and /agents/{profileId}) and the viewer's two GETs.
    expect(byRule.get('AwsSolutions-APIG4')?.sort()).toEqual(
      [
        'Api/Default/.well-known/agent-card.json/GET',
        'Api/Default/.well-known/agent-card.json/HEAD',
        'Api/Default/agents/{profileId}/.well-known/agent-card.json/GET',
        'Api/Default/agents/{profileId}/.well-known/agent-card.json/HEAD',
        'Api/Default/viewer/GET',
        'Api/Default/viewer/{proxy+}/GET',
      ].map((path) => `a2a-nag-service/${path}`),
    );
  });
});

describe('least privilege (issue 19 item 5, decision 0055)', () => {
  it('lists the rpc function’s DynamoDB actions: items and queries on the state table, reads of the journal and its byOwner index, a run’s audit rows', () => {
    const dynamodb = statementsOfFunction(jwtService, jwt.service, jwt.service.rpc).filter((statement) =>
      [statement.Action].flat().some((action) => action.startsWith('dynamodb:')),
    );
    const arnOf = (stack: Stack, table: IConstruct) =>
      stack.resolve((table as unknown as { tableArn: string }).tableArn);
    const stateArn = arnOf(jwt.service, jwt.stateful.stateTable);
    const journalArn = arnOf(jwt.service, jwt.stateful.journalTable);
    const auditArn = arnOf(jwt.service, jwt.stateful.auditTable);
    expect(dynamodb).toEqual([
      { Effect: 'Allow', Action: [...RPC_STATE_TABLE_ACTIONS], Resource: stateArn },
      { Effect: 'Allow', Action: [...RPC_JOURNAL_TABLE_ACTIONS], Resource: journalArn },
      // An index is read by Query only.
      {
        Effect: 'Allow',
        Action: 'dynamodb:Query',
        Resource: { 'Fn::Join': ['', [journalArn, '/index/byOwner']] },
      },
      // The run of a blocking send it runs itself (decision 0091): no scan, no batch.
      { Effect: 'Allow', Action: [...RUN_AUDIT_TABLE_ACTIONS], Resource: auditArn },
    ]);
    expect(journalTable.globalSecondaryIndexes.map((index) => index.indexName)).toContain('byOwner');
    expect(JSON.stringify(dynamodb)).not.toMatch(/Scan|Batch|GetRecords|DescribeTable/);
  });

  it('grants no table index by wildcard: every index ARN names a declared index', () => {
    const declared = [...stateTable.globalSecondaryIndexes, ...journalTable.globalSecondaryIndexes].map(
      (index) => index.indexName,
    );
    const json = JSON.stringify(statementsOf(jwtService));
    expect(json).not.toContain('index/*');
    const named = [...json.matchAll(/\/index\/(\w+)/g)].map((match) => match[1]);
    expect(named.length).toBeGreaterThan(0);
    for (const index of named) expect(declared).toContain(index);
  });

  it('conditions every content-key grant on the encryption context the sealer sends; no kms:Encrypt', () => {
    const kms = statementsOf(jwtService).filter((statement) =>
      [statement.Action].flat().some((action) => action.startsWith('kms:')),
    );
    // rpc, executor (seal and open), reaper (seal), deliverer (open).
    expect(kms).toHaveLength(4);
    for (const statement of kms) {
      expect(statement.Condition).toEqual(contentKeyConditions('a2a-nag'));
      for (const action of [statement.Action].flat())
        expect(['kms:Decrypt', 'kms:GenerateDataKey']).toContain(action);
    }
    expect(contentKeyConditions('a2a-nag')).toEqual({
      StringEquals: {
        'kms:EncryptionContext:installation': 'a2a-nag',
        'kms:EncryptionContext:purpose': KMS_PURPOSE,
      },
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['installation', 'purpose', 'taskId'] },
    });
  });

  it('puts nothing but X-Ray on Resource "*", and no AWS managed policy on a function role', () => {
    const everywhere = statementsOf(jwtService).filter((statement) => statement.Resource === '*');
    expect(everywhere.length).toBeGreaterThan(0);
    for (const statement of everywhere) {
      expect([statement.Action].flat().sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    }
    for (const role of Object.values(jwtService.findResources('AWS::IAM::Role')) as Resource[]) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
    // The log-group rights AWSLambdaBasicExecutionRole would grant everywhere, on the function's own group.
    const rpcLogs = statementsOfFunction(jwtService, jwt.service, jwt.service.rpc).filter((statement) =>
      [statement.Action].flat().some((action) => action.startsWith('logs:')),
    );
    expect(rpcLogs).toEqual([
      {
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/^RpcLogGroup/), 'Arn'] },
      },
    ]);
  });

  it('caches authorizer answers deployment.authorizerCacheSeconds (60 by default); 0 authorizes every request', () => {
    jwtService.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      AuthorizerResultTtlInSeconds: 60,
      IdentitySource: 'method.request.header.Authorization',
    });
    const short = Template.fromStack(
      build({ ...jwtConfig, deployment: { authorizerCacheSeconds: 15 } }, { stage: 'short' }).installation
        .service,
    );
    short.hasResourceProperties('AWS::ApiGateway::Authorizer', { AuthorizerResultTtlInSeconds: 15 });
    const none = Template.fromStack(
      build({ ...jwtConfig, deployment: { authorizerCacheSeconds: 0 } }, { stage: 'none' }).installation
        .service,
    );
    const [authorizer] = Object.values(none.findResources('AWS::ApiGateway::Authorizer')) as Resource[];
    expect(authorizer?.Properties.AuthorizerResultTtlInSeconds).toBe(0);
    expect(authorizer?.Properties.IdentitySource ?? '').not.toContain('Authorization');
    expect(() => build({ ...jwtConfig, deployment: { authorizerCacheSeconds: 3601 } })).toThrow(
      /deployment\.authorizerCacheSeconds/,
    );
  });

  it('throttles the stage (deployment.throttle), logs access as JSON and gateway errors, never bodies', () => {
    const stageOf = (template: Template) =>
      (Object.values(template.findResources('AWS::ApiGateway::Stage')) as Resource[])[0]?.Properties;
    expect(stageOf(jwtService)).toMatchObject({
      TracingEnabled: true,
      AccessLogSetting: {
        DestinationArn: { 'Fn::GetAtt': [expect.stringMatching(/^ApiAccessLogs/), 'Arn'] },
      },
      MethodSettings: [
        {
          HttpMethod: '*',
          ResourcePath: '/*',
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
          ThrottlingRateLimit: 100,
          ThrottlingBurstLimit: 200,
        },
      ],
    });
    const accessLog = stageOf(jwtService)?.AccessLogSetting as { Format: string } | undefined;
    const format = JSON.parse(accessLog?.Format ?? '{}') as Record<string, string>;
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status' });
    const tight = Template.fromStack(
      build({ ...jwtConfig, deployment: { throttle: { rateLimit: 5, burstLimit: 10 } } }, { stage: 'tight' })
        .installation.service,
    );
    expect(stageOf(tight)?.MethodSettings).toEqual([
      expect.objectContaining({ ThrottlingRateLimit: 5, ThrottlingBurstLimit: 10 }),
    ]);
    expect(() => build({ ...jwtConfig, deployment: { throttle: { burstLimit: 0 } } })).toThrow(
      /deployment\.throttle\.burstLimit/,
    );
  });

  it('deploys the per-caller stream cap (limits.streamsPerCaller, 10 by default) to the rpc function', () => {
    const rpcId = jwt.service.getLogicalId(
      jwt.service.rpc.node.defaultChild as Parameters<Stack['getLogicalId']>[0],
    );
    const variables = (
      (jwtService.toJSON().Resources[rpcId] as Resource).Properties.Environment as {
        Variables: Record<string, string>;
      }
    ).Variables;
    expect(JSON.parse(variables.A2A_CONFIG ?? '{}').limits).toMatchObject({ streamsPerCaller: 10 });
  });

  it('requires TLS to publish to the alarm topic', () => {
    jwtService.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: [
          Match.objectLike({
            Effect: 'Deny',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ],
      },
    });
  });
});
