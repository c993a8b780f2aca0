import { join } from 'node:path';
import {
  Annotations,
  ArnFormat,
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Validations,
} from 'aws-cdk-lib';
import {
  AccessLogFormat,
  AuthorizationType,
  EndpointType,
  IdentitySource,
  type IResource,
  LambdaIntegration,
  LogGroupLogDestination,
  type Method,
  MethodLoggingLevel,
  type MethodOptions,
  MockIntegration,
  PassthroughBehavior,
  RequestAuthorizer,
  ResponseTransferMode,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Grant, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import {
  FilterCriteria,
  FilterRule,
  ParamsAndSecretsLayerVersion,
  ParamsAndSecretsVersions,
  StartingPosition,
} from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct, IConstruct } from 'constructs';
import { byOwnerIndex } from '../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { leaseIndexName } from '../shared/adapters/dynamodb/dynamodb-run-leases.ts';
import { pushMark } from '../shared/adapters/dynamodb/entities.ts';
import { projectorStreamBatching, pusherStreamBatching } from '../shared/adapters/dynamodb/journal-stream.ts';
import { keys, taskRowSort } from '../shared/adapters/dynamodb/keys.ts';
import { queueDefinitions } from '../shared/adapters/dynamodb/tables.ts';
import { KMS_PURPOSE } from '../shared/adapters/kms-sealer.ts';
import { type AuthSettings, deployedAuth } from '../shared/config/auth.ts';
import type { Config } from '../shared/config/config.ts';
import { HouseFunction, REPO_ROOT } from './house-function.ts';
import { Monitoring } from './monitoring.ts';
import type { StatefulResources } from './stateful-stack.ts';
import { deployedViewerPage, viewerContentSecurityPolicy } from './viewer-page.ts';

export type FunctionName = 'rpc' | 'executor' | 'projector' | 'reaper' | 'pusher' | 'deliverer';

/** The real entry files; tests may point elsewhere through `ServiceStackProps.entries`. */
export const defaultEntries: Readonly<Record<FunctionName, string>> = {
  rpc: join(REPO_ROOT, 'functions/rpc/handler.ts'),
  executor: join(REPO_ROOT, 'functions/executor/handler.ts'),
  projector: join(REPO_ROOT, 'functions/projector/handler.ts'),
  pusher: join(REPO_ROOT, 'functions/pusher/handler.ts'),
  deliverer: join(REPO_ROOT, 'functions/deliverer/handler.ts'),
  reaper: join(REPO_ROOT, 'functions/reaper/handler.ts'),
};

/** Lambda caps all environment variables of a function at 4 KB; leave room for the others. */
export const MAX_CONFIG_ENV_BYTES = 3584;

/** API Gateway ends a response stream after 15 minutes; the rpc function may live as long. */
export const RPC_TIMEOUT = Duration.minutes(15);
export const EXECUTOR_TIMEOUT = Duration.seconds(60);
export const PROJECTOR_TIMEOUT = Duration.seconds(30);
export const PUSHER_TIMEOUT = Duration.seconds(30);
/** A delivery is one POST per StreamResponse of a revision, each with a 10 s timeout. */
export const DELIVERER_TIMEOUT = Duration.minutes(2);
export const REAPER_TIMEOUT = Duration.seconds(60);

/** Bedrock cross-region inference profile ids start with a geography, e.g. `us.anthropic…`. */
const INFERENCE_PROFILE_PREFIX = /^(us|us-gov|eu|apac|jp|au|ca|global)\.(.+)$/;

export interface ServiceStackProps extends StackProps {
  /** Tables, key and queues of the stateful stack. */
  readonly stateful: StatefulResources;
  /** The parsed configuration (`parseConfig`); serialized into `A2A_CONFIG`. */
  readonly config: Config;
  /** Names the installation (`A2A_INSTALLATION`, part of the KMS encryption context). */
  readonly installation: string;
  /** Entry file overrides, by function. @default defaultEntries */
  readonly entries?: Partial<Record<FunctionName, string>>;
  /**
   * Entry of the REQUEST authorizer in front of every API method except the public agent cards
   * (decision 0007). Not used when the configuration is `auth.public`.
   * @default - no authorizer (synth warns)
   */
  readonly authorizerEntry?: string;
  /** Upper bound of concurrent executor invocations (protects model quotas). @default config `deployment.executorMaxConcurrency` */
  readonly executorMaxConcurrency?: number;
}

/**
 * The stateless half: the rpc, executor and projector functions, the REST API and the event
 * source mappings. Every permission comes from a `grant*` method on the stateful resources.
 */
export class ServiceStack extends Stack {
  readonly api: RestApi;
  readonly rpc: HouseFunction;
  readonly executor: HouseFunction;
  readonly projector: HouseFunction;
  readonly pusher: HouseFunction;
  readonly deliverer: HouseFunction;
  readonly reaper: HouseFunction;
  readonly authorizer?: HouseFunction;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: ServiceStackProps) {
    super(scope, id, props);
    const { stateful } = props;
    const { deployment } = props.config;
    // The schema admits only the retentions CloudWatch Logs accepts, which are RetentionDays' values.
    const logRetention = deployment.logRetentionDays as RetentionDays;
    const entries = { ...defaultEntries, ...props.entries };
    assertExecutorFitsRunQueue();
    assertReservedConcurrencyFits(
      deployment,
      props.executorMaxConcurrency ?? deployment.executorMaxConcurrency,
    );
    assertDelivererFitsDeliveryQueue();

    const environment: Record<string, string> = {
      STATE_TABLE_NAME: stateful.stateTable.tableName,
      JOURNAL_TABLE_NAME: stateful.journalTable.tableName,
      AUDIT_TABLE_NAME: stateful.auditTable.tableName,
      RUN_QUEUE_URL: stateful.runQueue.queueUrl,
      KMS_KEY_ID: stateful.contentKey.keyArn,
      A2A_INSTALLATION: props.installation,
      A2A_CONFIG: this.configEnvironment(props.config),
    };
    const environmentFor = (service: string) => ({
      ...environment,
      POWERTOOLS_SERVICE_NAME: `a2a-${service}`,
    });
    // The content key, only with the encryption context the sealer sends (decision 0055): a role
    // that leaks cannot use the key for anything but this installation's sealed content.
    const grantContentKey = (fn: HouseFunction, ...actions: ContentKeyAction[]) =>
      Grant.addToPrincipal({
        grantee: fn,
        actions,
        resourceArns: [stateful.contentKey.keyArn],
        conditions: contentKeyConditions(props.installation),
      });
    // Sealing asks KMS for a data key (never kms:Encrypt); opening decrypts the blob's data key.
    const grantSealing = (fn: HouseFunction) => grantContentKey(fn, 'kms:Decrypt', 'kms:GenerateDataKey');

    // With a provider key in Secrets Manager, the Parameters and Secrets extension serves it on
    // localhost (decision 0026); its own cache is off: the function's 5-minute cache is the only
    // one, so a rotation is in use 5 minutes later, not 10.
    const providerSecrets = providerSecretsOf(props.config);
    const providerSecretsLayer = () =>
      ParamsAndSecretsLayerVersion.fromVersion(ParamsAndSecretsVersions.V1_0_103, { cacheEnabled: false });

    // rpc: JSON-RPC and SSE on one streaming endpoint.
    this.rpc = new HouseFunction(this, 'Rpc', {
      ...reservedConcurrencyOf(deployment, 'rpc'),
      entry: entries.rpc,
      description: 'A2A JSON-RPC, SSE and agent cards',
      toolSources: true,
      timeout: RPC_TIMEOUT,
      // I/O bound: billed while a blocking call or a stream waits for the journal, its CPU is
      // about a tenth of its wall time (decision 0030), so half the house memory halves the
      // waiting part of its bill; the CPU part costs the same GB-s at any size.
      memorySize: 256,
      logRetention,
      environment: {
        ...environmentFor('rpc'),
        DELIVERY_QUEUE_URL: stateful.deliveryQueue.queueUrl,
        ...(deployment.blockingRunsInRpc && { RUNS_BLOCKING_SENDS: 'true' }),
      },
      ...(deployment.blockingRunsInRpc &&
        providerSecrets.length > 0 && { paramsAndSecrets: providerSecretsLayer() }),
    });
    // What its adapters send, not grantReadWriteData: no scan, no batch, no stream.
    grantTableActions(this.rpc, stateful.stateTable, RPC_STATE_TABLE_ACTIONS);
    grantTableActions(this.rpc, stateful.journalTable, RPC_JOURNAL_TABLE_ACTIONS);
    grantIndexQuery(this.rpc, stateful.journalTable, byOwnerIndex);
    grantSendMessage(this.rpc, stateful.runQueue);
    // The writer's direct fan-out of the revisions it projects (decision 0045).
    grantSendMessage(this.rpc, stateful.deliveryQueue);
    if (deployment.blockingRunsInRpc) {
      // It runs a blocking send's run itself (decision 0091): what the executor's run needs but
      // Bedrock, whose client is not in its bundle (those profiles' runs are queued).
      grantTableActions(this.rpc, stateful.auditTable, RUN_AUDIT_TABLE_ACTIONS);
      this.grantProviderSecrets(this.rpc, providerSecrets);
    }
    grantSealing(this.rpc);

    this.api = new RestApi(this, 'Api', {
      restApiName: `${props.installation}-api`,
      description: 'A2A server (JSON-RPC and SSE over Lambda response streaming)',
      // Regional: a streamed response may idle 5 minutes (edge-optimized: 30 seconds).
      endpointConfiguration: { types: [EndpointType.REGIONAL] },
      // The CloudWatch role is one per account and region; it does not belong to one stack.
      cloudWatchRole: false,
      deployOptions: {
        stageName: 'v1',
        tracingEnabled: true,
        // One JSON line per request; errors of the gateway itself. Never request or response
        // bodies (dataTrace): they are the content this service seals. Both need the account's
        // API Gateway CloudWatch role (docs/deployment.md).
        accessLogDestination: new LogGroupLogDestination(
          new LogGroup(this, 'ApiAccessLogs', {
            retention: logRetention,
            removalPolicy: RemovalPolicy.DESTROY,
          }),
        ),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        // The stage's defaults for every method: a flood is refused with 429
        // before it reaches a function or the tables.
        throttlingRateLimit: deployment.throttle.rateLimit,
        throttlingBurstLimit: deployment.throttle.burstLimit,
      },
    });
    acknowledgeApiFindings(this.api);
    const integration = new LambdaIntegration(this.rpc, {
      responseTransferMode: ResponseTransferMode.STREAM,
      timeout: RPC_TIMEOUT,
    });
    // authorizer: credentials -> (tenant, principal) for the rpc function. It reads only the
    // configuration (API key digests, JWT issuer): no table, queue or key, so no grant at all.
    if (props.authorizerEntry && !props.config.auth.public) {
      this.authorizer = new HouseFunction(this, 'Authorizer', {
        entry: props.authorizerEntry,
        description: 'Authenticates A2A callers (JWT or API key -> tenant and principal)',
        timeout: Duration.seconds(10),
        logRetention,
        environment: {
          A2A_INSTALLATION: props.installation,
          A2A_CONFIG: environment.A2A_CONFIG!,
          POWERTOOLS_SERVICE_NAME: 'a2a-authorizer',
        },
      });
    }
    const methodOptions = this.methodOptions(this.authorizer, props.config.auth, deployment);
    const dataMethod = (method: Method) => acknowledgeDataMethod(method, props.config.auth.public);
    dataMethod(this.api.root.addMethod('ANY', integration, methodOptions));
    dataMethod(this.api.root.addResource('{proxy+}').addMethod('ANY', integration, methodOptions));
    // Agent cards are public (docs/protocol.md §9): methods of their own, without the authorizer. A
    // profile's JSON-RPC endpoint needs its own resource next to its card's, with the authorizer.
    const publicCard = (parent: IResource): void => {
      const card = parent.addResource('.well-known').addResource('agent-card.json');
      for (const verb of ['GET', 'HEAD']) {
        acknowledgePublicMethod(
          card.addMethod(verb, integration, { authorizationType: AuthorizationType.NONE }),
          'An agent card is public by the A2A protocol (docs/decisions/0007-authentication.md): a client reads it to learn how to authenticate.',
        );
      }
    };
    publicCard(this.api.root);
    const agent = this.api.root.addResource('agents').addResource('{profileId}');
    dataMethod(agent.addMethod('ANY', integration, methodOptions));
    // The profile's HTTP+JSON routes below its base URL (docs/protocol.md §14), with the
    // authorizer and the same streaming integration; the root's `{proxy+}` serves `default`'s.
    dataMethod(agent.addResource('{proxy+}').addMethod('ANY', integration, methodOptions));
    publicCard(agent);
    // A delegated task's push notifications (docs/configuration.md `publicUrl`): the remote agent
    // is no caller of this API; the per-wait token the notification carries is checked by the rpc.
    if (props.config.publicUrl !== undefined) {
      const callback = this.api.root
        .addResource('callbacks')
        .addResource('delegations')
        .addResource('{taskId}')
        .addResource('{runId}');
      acknowledgePublicMethod(
        callback.addMethod('POST', integration, { authorizationType: AuthorizationType.NONE }),
        "A delegated task's push notification comes from the remote agent, not a caller of this API: the rpc accepts it only with the token made for that one wait (its SHA-256 on the run row), and it only wakes the waiting run.",
      );
    }
    if (deployment.viewer) this.addViewer();
    // docs/protocol.md §8: authentication errors are a 401 with a challenge.
    this.api.addGatewayResponse('Unauthorized', {
      type: ResponseType.UNAUTHORIZED,
      responseHeaders: { 'WWW-Authenticate': "'Bearer'" },
      templates: { 'application/json': '{"message":"Unauthorized"}' },
    });

    // executor: one run per message; the queue message only wakes it up. The provider-secrets
    // layer as the rpc's (above).
    this.executor = new HouseFunction(this, 'Executor', {
      ...reservedConcurrencyOf(deployment, 'executor'),
      entry: entries.executor,
      description: 'Runs queued A2A task runs',
      toolSources: true,
      timeout: EXECUTOR_TIMEOUT,
      logRetention,
      environment: { ...environmentFor('executor'), DELIVERY_QUEUE_URL: stateful.deliveryQueue.queueUrl },
      ...(providerSecrets.length > 0 ? { paramsAndSecrets: providerSecretsLayer() } : {}),
    });
    this.executor.addEventSource(
      new SqsEventSource(stateful.runQueue, {
        batchSize: 5,
        reportBatchItemFailures: true,
        maxConcurrency: props.executorMaxConcurrency ?? deployment.executorMaxConcurrency,
      }),
    );
    grantTableActions(this.executor, stateful.stateTable, WRITER_STATE_TABLE_ACTIONS);
    // The write-through of its commits (decision 0043): events, views and the owner counters.
    grantTableActions(this.executor, stateful.journalTable, JOURNAL_WRITE_THROUGH_ACTIONS);
    // Query/Update/Delete too: a tightening scrubs the run's audit rows (decision 0010).
    grantTableActions(this.executor, stateful.auditTable, RUN_AUDIT_TABLE_ACTIONS);
    grantSealing(this.executor);
    // The writer's direct fan-out of the revisions it projects (decision 0061).
    grantSendMessage(this.executor, stateful.deliveryQueue);
    // A run whose delegated task settled before the run parked is queued again at once
    // (docs/reliability.md "Delegated calls"): only where profiles may delegate.
    if (Object.keys(props.config.a2aAgents).length > 0) grantSendMessage(this.executor, stateful.runQueue);
    this.grantBedrockModels(this.executor, props.config);
    this.grantProviderSecrets(this.executor, providerSecrets);

    // projector: committed state → journal. Copies sealed blobs as they are: no KMS at all.
    this.projector = new HouseFunction(this, 'Projector', {
      ...reservedConcurrencyOf(deployment, 'projector'),
      entry: entries.projector,
      description: 'Projects committed task revisions into the journal',
      timeout: PROJECTOR_TIMEOUT,
      logRetention,
      environment: environmentFor('projector'),
    });
    this.projector.addEventSource(
      new DynamoEventSource(stateful.stateTable, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: projectorStreamBatching.batchSize,
        maxBatchingWindow: Duration.millis(projectorStreamBatching.maximumBatchingWindowMs),
        reportBatchItemFailures: true,
        bisectBatchOnError: true,
        retryAttempts: 10,
        // Well inside the stream's 24 h retention, so a DLQ entry can still be replayed.
        maxRecordAge: Duration.hours(6),
        // One batch at a time per shard keeps each task's revisions in order.
        parallelizationFactor: 1,
        onFailure: new SqsDlq(stateful.projectorDlq),
        filters: [
          FilterCriteria.filter({ dynamodb: { Keys: { sk: { S: FilterRule.isEqual(taskRowSort) } } } }),
        ],
      }),
    );
    // The backstop reads before it writes (decisions 0043, 0076): the batch's events and views;
    // never a delete (purging is the admin command's) and no index.
    grantTableActions(this.projector, stateful.journalTable, PROJECTOR_JOURNAL_TABLE_ACTIONS);

    // reaper: every minute, RUNNING runs whose lease expired (a crashed executor) are settled
    // FAILED from the sparse lease index, never run again (decision 0011).
    this.reaper = new HouseFunction(this, 'Reaper', {
      ...reservedConcurrencyOf(deployment, 'reaper'),
      entry: entries.reaper,
      description: 'Settles runs whose executor lease expired',
      timeout: REAPER_TIMEOUT,
      logRetention,
      environment: { ...environmentFor('reaper'), DELIVERY_QUEUE_URL: stateful.deliveryQueue.queueUrl },
    });
    grantTableActions(this.reaper, stateful.stateTable, WRITER_STATE_TABLE_ACTIONS);
    // The expired leases, from the sparse lease index: a query, nothing else there.
    grantIndexQuery(this.reaper, stateful.stateTable, leaseIndexName);
    // A run never started (never claimed) is queued again, a bounded number of times (decision 0053).
    grantSendMessage(this.reaper, stateful.runQueue);
    grantTableActions(this.reaper, stateful.journalTable, JOURNAL_WRITE_THROUGH_ACTIONS);
    // A claimed run's start slots (decision 0072): read them, take a free one, free it again.
    grantTableActions(this.reaper, stateful.auditTable, REAPER_START_SLOT_ACTIONS);
    // The writer's direct fan-out of the FAILED revisions it projects (decision 0061).
    grantSendMessage(this.reaper, stateful.deliveryQueue);
    // It seals the fixed status message only: a data key, never a decrypt.
    grantContentKey(this.reaper, 'kms:GenerateDataKey');
    new Rule(this, 'ReaperSchedule', {
      description: 'Runs the lease reaper every minute',
      schedule: Schedule.rate(Duration.minutes(1)),
      // The next tick is the retry; a reap is idempotent (fenced on version and lease).
      targets: [new LambdaFunction(this.reaper, { retryAttempts: 0 })],
    });

    // pusher: each journal event inserted → one FIFO message per push config of its task.
    // Holds no KMS permission: it reads ids, never content (decision 0009).
    const deliveryEnvironment = (service: string) => ({
      ...environmentFor(service),
      DELIVERY_QUEUE_URL: stateful.deliveryQueue.queueUrl,
    });
    this.pusher = new HouseFunction(this, 'Pusher', {
      ...reservedConcurrencyOf(deployment, 'pusher'),
      entry: entries.pusher,
      description: 'Fans journal events out to the webhook delivery queue',
      timeout: PUSHER_TIMEOUT,
      logRetention,
      environment: deliveryEnvironment('pusher'),
    });
    this.pusher.addEventSource(
      new DynamoEventSource(stateful.journalTable, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: pusherStreamBatching.batchSize,
        maxBatchingWindow: Duration.millis(pusherStreamBatching.maximumBatchingWindowMs),
        reportBatchItemFailures: true,
        // The handler stops at the first failure itself; halving would not keep order better.
        bisectBatchOnError: false,
        retryAttempts: 10,
        maxRecordAge: Duration.hours(6),
        // One batch at a time per shard: a task's events are queued in revision order.
        parallelizationFactor: 1,
        onFailure: new SqsDlq(stateful.pusherDlq),
        filters: [
          FilterCriteria.filter({
            eventName: FilterRule.isEqual('INSERT'),
            // Only events with the push mark: a task without configs never invokes the pusher.
            dynamodb: {
              Keys: { sk: { S: FilterRule.beginsWith(keys.eventPrefix) } },
              NewImage: { [pushMark]: { BOOL: FilterRule.isEqual(true) } },
            },
          }),
        ],
      }),
    );
    // A task's push configs: one query of its partition, never a scan of the table.
    grantTableActions(this.pusher, stateful.stateTable, ['dynamodb:Query']);
    grantSendMessage(this.pusher, stateful.deliveryQueue);

    // deliverer: one message = one revision to one webhook, through the SSRF guard. Batch size 1:
    // a slow webhook then holds up nothing but its own group.
    this.deliverer = new HouseFunction(this, 'Deliverer', {
      ...reservedConcurrencyOf(deployment, 'deliverer'),
      entry: entries.deliverer,
      description: 'POSTs task events to push notification webhooks',
      timeout: DELIVERER_TIMEOUT,
      logRetention,
      environment: deliveryEnvironment('deliverer'),
    });
    this.deliverer.addEventSource(
      new SqsEventSource(stateful.deliveryQueue, { batchSize: 1, reportBatchItemFailures: true }),
    );
    grantTableActions(this.deliverer, stateful.stateTable, DELIVERER_STATE_TABLE_ACTIONS);
    // The events of the task its message names: a query of that task's partition, no scan.
    grantTableActions(this.deliverer, stateful.journalTable, ['dynamodb:Query']);
    // Opens the event's content and the config's credentials: decrypt only, never seal.
    grantContentKey(this.deliverer, 'kms:Decrypt');

    new CfnOutput(this, 'AgentCardUrl', {
      description: 'Agent card of the default profile',
      value: this.api.urlForPath('/.well-known/agent-card.json'),
    });

    this.monitoring = new Monitoring(this, 'Monitoring', {
      installation: props.installation,
      settings: deployment.alarms,
      functions: {
        rpc: this.rpc,
        executor: this.executor,
        projector: this.projector,
        reaper: this.reaper,
        pusher: this.pusher,
        deliverer: this.deliverer,
        ...(this.authorizer ? { authorizer: this.authorizer } : {}),
      },
      streamConsumers: { projector: this.projector, pusher: this.pusher },
      deadLetterQueues: stateful.deadLetterQueues,
      runQueue: stateful.runQueue,
      api: this.api,
    });
  }

  /** `A2A_CONFIG`: the parsed config as JSON, without secrets or deployment settings, within the env size cap. */
  private configEnvironment(config: Config): string {
    const { auth, deployment: _deploymentOnly, ...rest } = config;
    if (Object.keys(auth.tokens).length > 0) {
      Annotations.of(this).addWarningV2(
        'a2a:auth-tokens-local-only',
        'auth.tokens is for local mode only and is left out of the deployed configuration.',
      );
    }
    const json = JSON.stringify({ ...rest, auth: deployedAuth(auth) });
    const bytes = Buffer.byteLength(json, 'utf8');
    // Profiles beyond what fits here are saved in the state table with `a2a-admin profiles put`
    // and served from there (decision 0024).
    if (bytes > MAX_CONFIG_ENV_BYTES) {
      throw new Error(
        `The configuration is ${bytes} bytes as JSON (A2A_CONFIG); the limit is ${MAX_CONFIG_ENV_BYTES} bytes, ` +
          'because Lambda caps all environment variables of a function at 4 KB. Shorten the profiles ' +
          '(instructions, descriptions, skills) or deploy fewer of them and save the others with ' +
          '`npx a2a-admin profiles put` (decision 0024).',
      );
    }
    return json;
  }

  /**
   * `deployment.viewer`: the journal viewer as one public static page at
   * `GET /viewer` (and any path below it) on the API's own domain, so its data calls need no CORS
   * and carry the user's bearer token like any client's. A MOCK integration answers it from the
   * template — no bucket, no function, no role, nothing billed beyond the API request. The page
   * (~25 KB) travels base64-encoded in the response template: VTL would read the script's `$` and
   * `#` as its own syntax.
   */
  private addViewer(): void {
    const page = deployedViewerPage();
    const headers = {
      'Content-Type': "'text/html; charset=utf-8'",
      'Cache-Control': "'no-cache'",
      'Content-Security-Policy': `'${viewerContentSecurityPolicy(page)}'`,
      'X-Content-Type-Options': "'nosniff'",
      'Referrer-Policy': "'no-referrer'",
    };
    const integration = new MockIntegration({
      requestTemplates: { 'application/json': '{"statusCode": 200}' },
      passthroughBehavior: PassthroughBehavior.WHEN_NO_TEMPLATES,
      integrationResponses: [
        {
          statusCode: '200',
          responseTemplates: {
            'text/html': `$util.base64Decode("${Buffer.from(page.html, 'utf8').toString('base64')}")`,
          },
          responseParameters: Object.fromEntries(
            Object.entries(headers).map(([name, value]) => [`method.response.header.${name}`, value]),
          ),
        },
      ],
    });
    const options: MethodOptions = {
      authorizationType: AuthorizationType.NONE,
      methodResponses: [
        {
          statusCode: '200',
          responseParameters: Object.fromEntries(
            Object.keys(headers).map((name) => [`method.response.header.${name}`, true]),
          ),
        },
      ],
    };
    const viewer = this.api.root.addResource('viewer');
    const reason =
      'deployment.viewer: a static page that holds no data (docs/decisions/0026-deployment-secrets-viewer-v03.md); each call it makes carries the user token through the authorizer.';
    acknowledgePublicMethod(viewer.addMethod('GET', integration, options), reason);
    acknowledgePublicMethod(viewer.addResource('{proxy+}').addMethod('GET', integration, options), reason);
    new CfnOutput(this, 'ViewerUrl', {
      description: 'The journal viewer (deployment.viewer)',
      value: this.api.urlForPath('/viewer'),
    });
  }

  /** The REQUEST authorizer of every non-public method, cached as `authorizerCaching` decides. */
  private methodOptions(
    handler: HouseFunction | undefined,
    auth: Config['auth'],
    deployment: Config['deployment'],
  ): MethodOptions | undefined {
    if (!handler) {
      Annotations.of(this).addWarningV2(
        'a2a:no-authorizer',
        auth.public
          ? 'auth.public: the API has no authorizer and every caller is local/local.'
          : 'The API has no authorizer: callers are not authenticated by API Gateway.',
      );
      return undefined;
    }
    const caching = authorizerCaching(auth, deployment.authorizerCacheSeconds);
    const authorizer = new RequestAuthorizer(this, 'RequestAuthorizer', {
      handler,
      identitySources: caching.identitySources,
      resultsCacheTtl: Duration.seconds(caching.ttlSeconds),
    });
    return { authorizationType: AuthorizationType.CUSTOM, authorizer };
  }

  /**
   * GetSecretValue on exactly the referenced secrets, provider keys and MCP servers' credentials
   * (docs/deployment.md, "Provider keys"): Secrets Manager appends six random characters to a secret's name in its ARN, so a name
   * is matched as `<name>-??????`; a partial ARN (without them) as `<arn>-??????`; a complete ARN as
   * given — and, since `…:secret:name-abcdef` may be either, an ARN that ends like a suffix is
   * granted both ways. And kms:Decrypt on a named customer-managed key, only through Secrets
   * Manager in this region.
   */
  private grantProviderSecrets(fn: HouseFunction, secrets: readonly ProviderSecret[]): void {
    if (secrets.length === 0) return;
    const resourceArns = [...new Set(secrets.flatMap(({ secretId }) => this.secretArnsOf(secretId)))];
    Grant.addToPrincipal({ grantee: fn, actions: ['secretsmanager:GetSecretValue'], resourceArns });
    const keys = [...new Set(secrets.flatMap(({ kmsKeyArn }) => (kmsKeyArn ? [kmsKeyArn] : [])))];
    if (keys.length === 0) return;
    Grant.addToPrincipal({
      grantee: fn,
      actions: ['kms:Decrypt'],
      resourceArns: keys,
      conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${this.region}.amazonaws.com` } },
    });
  }

  /** The ARNs a GetSecretValue of `secretId` (a name, a partial or a complete ARN) may name. */
  private secretArnsOf(secretId: string): string[] {
    if (!secretId.startsWith('arn:')) {
      return [
        this.formatArn({
          service: 'secretsmanager',
          resource: 'secret',
          resourceName: `${secretId}${SECRET_SUFFIX_PATTERN}`,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      ];
    }
    const partial = `${secretId}${SECRET_SUFFIX_PATTERN}`;
    return SECRET_SUFFIX.test(secretId) ? [secretId, partial] : [partial];
  }

  /**
   * Converse needs InvokeModel, ConverseStream InvokeModelWithResponseStream, on what the call
   * names and on the foundation models it reaches (docs/deployment.md, "Bedrock"):
   * - a model id: that foundation model in the provider's region;
   * - a cross-region inference profile (`us.…`, `eu.…`, `global.…`, by id or ARN): the profile, and
   *   the model in any region, only through that profile (`bedrock:InferenceProfileArn`);
   * - an application inference profile ARN: the profile, and any foundation model, only through
   *   that profile — which models it copies is the profile's, not this configuration's.
   */
  private grantBedrockModels(fn: HouseFunction, config: Config): void {
    const actions = ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'];
    const direct = new Set<string>();
    const viaProfile = new Map<string, string>();
    const foundationModel = (modelId: string, region: string) =>
      this.formatArn({
        service: 'bedrock',
        region,
        account: '',
        resource: 'foundation-model',
        resourceName: modelId,
      });
    for (const provider of Object.values(config.providers)) {
      if (provider.type !== 'bedrock') continue;
      const region = provider.region ?? this.region;
      const target = bedrockTargetOf(provider.model);
      if (target.kind === 'model') {
        direct.add(target.arn ?? foundationModel(target.modelId, region));
        continue;
      }
      const profileArn =
        target.arn ??
        this.formatArn({
          service: 'bedrock',
          region,
          resource: 'inference-profile',
          resourceName: target.profileId,
        });
      direct.add(profileArn);
      // A system-defined profile routes to its model in the regions of its geography.
      viaProfile.set(profileArn, foundationModel(target.kind === 'cross-region' ? target.modelId : '*', '*'));
    }
    if (direct.size > 0) Grant.addToPrincipal({ grantee: fn, actions, resourceArns: [...direct] });
    for (const [profileArn, models] of viaProfile) {
      fn.addToRolePolicy(
        new PolicyStatement({
          actions,
          resources: [models],
          conditions: { StringEquals: { 'bedrock:InferenceProfileArn': profileArn } },
        }),
      );
    }
    acknowledgeWildcards(
      fn,
      [...new Set(viaProfile.values())],
      'An inference profile routes a call to its foundation model in any region of its geography (an application profile: to the models it copies); the statement holds only through that profile (condition bedrock:InferenceProfileArn).',
    );
  }
}

/** What a Bedrock provider's `model` names: a foundation model, or an inference profile. */
type BedrockTarget =
  | { readonly kind: 'model'; readonly modelId: string; readonly arn?: string }
  | {
      readonly kind: 'cross-region';
      readonly profileId: string;
      readonly modelId: string;
      readonly arn?: string;
    }
  | { readonly kind: 'application'; readonly profileId: string; readonly arn: string };

export const bedrockTargetOf = (model: string): BedrockTarget => {
  if (!model.startsWith('arn:')) {
    const profile = INFERENCE_PROFILE_PREFIX.exec(model);
    return profile?.[2]
      ? { kind: 'cross-region', profileId: model, modelId: profile[2] }
      : { kind: 'model', modelId: model };
  }
  const resource = model.split(':').slice(5).join(':');
  const [type, ...rest] = resource.split('/');
  const id = rest.join('/');
  if (type === 'application-inference-profile') return { kind: 'application', profileId: id, arn: model };
  const profile = type === 'inference-profile' ? INFERENCE_PROFILE_PREFIX.exec(id) : null;
  if (profile?.[2]) return { kind: 'cross-region', profileId: id, modelId: profile[2], arn: model };
  return { kind: 'model', modelId: id, arn: model };
};

/** Secrets Manager's random suffix of a secret name in its ARN, and the pattern that matches it. */
const SECRET_SUFFIX = /-[A-Za-z0-9]{6}$/;
const SECRET_SUFFIX_PATTERN = '-??????';

/**
 * cdk-nag's IAM5 on a role, for exactly these wildcard resources (not the rule as a whole), with
 * the reason; each finding is named as cdk-nag names it, its tokens as `<AWS::…>`.
 */
const acknowledgeWildcards = (fn: HouseFunction, resources: readonly string[], reason: string): void => {
  const stack = Stack.of(fn);
  for (const resource of resources) {
    Validations.of(fn.role as IConstruct).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${renderedForNag(stack.resolve(resource))}]`,
      reason,
    });
  }
};

/** A resolved CloudFormation value as cdk-nag writes it in a finding: pseudo parameters as `<AWS::…>`. */
export const renderedForNag = (value: unknown): string => {
  if (typeof value === 'string') return value;
  const intrinsic = value as {
    Ref?: string;
    'Fn::Join'?: [string, unknown[]];
    'Fn::GetAtt'?: [string, string];
  };
  if (intrinsic.Ref !== undefined) return `<${intrinsic.Ref}>`;
  if (intrinsic['Fn::Join']) {
    const [separator, parts] = intrinsic['Fn::Join'];
    return parts.map(renderedForNag).join(separator);
  }
  if (intrinsic['Fn::GetAtt']) return `<${intrinsic['Fn::GetAtt'].join('.')}>`;
  return JSON.stringify(value);
};

/** A provider key secret as the configuration names it (`providers.<id>.apiKeySecret`). */
export interface ProviderSecret {
  readonly secretId: string;
  readonly kmsKeyArn?: string;
}

const SECRET_NAME = /^[\w/+=.@-]{1,512}$/;
const SECRET_ARN = /^arn:aws[\w-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[\w/+=.@-]{1,512}$/;
const KMS_KEY_ARN = /^arn:aws[\w-]*:kms:[a-z0-9-]+:\d{12}:key\/[\w-]{1,128}$/;

/**
 * The secrets a run reads through the Parameters and Secrets extension: provider keys
 * (`providers.<id>.apiKeySecret`) and the credentials of MCP servers and A2A agents
 * (`mcpServers.<id>.headers.<name>.secret`, `mcpServers.<id>.oauth.clientSecret.secret`, the same
 * under `a2aAgents`), their formats checked here (the functions' schema accepts any string, to
 * stay small): a refusal names the setting.
 */
export const providerSecretsOf = (config: Config): ProviderSecret[] => [
  ...Object.entries(config.providers).flatMap(([id, provider]) =>
    provider.type !== 'openai' || provider.apiKeySecret === undefined
      ? []
      : [checkedSecret(`providers.${id}.apiKeySecret`, provider.apiKeySecret)],
  ),
  ...outboundSecretsOf('mcpServers', config.mcpServers),
  ...outboundSecretsOf('a2aAgents', config.a2aAgents),
];

const outboundSecretsOf = (
  section: 'mcpServers' | 'a2aAgents',
  entries: Config['mcpServers'] | Config['a2aAgents'],
): ProviderSecret[] =>
  Object.entries(entries).flatMap(([id, server]) =>
    [
      ...Object.entries(server.headers).map(([name, value]) => [`headers.${name}`, value] as const),
      ...(server.oauth ? [['oauth.clientSecret', server.oauth.clientSecret] as const] : []),
    ].flatMap(([setting, value]) =>
      typeof value === 'string' || value.secret === undefined
        ? []
        : [checkedSecret(`${section}.${id}.${setting}.secret`, value.secret)],
    ),
  );

const checkedSecret = (setting: string, { secretId, kmsKeyArn }: ProviderSecret): ProviderSecret => {
  if (!(secretId.startsWith('arn:') ? SECRET_ARN : SECRET_NAME).test(secretId)) {
    throw new Error(
      `${setting}.secretId: a secret name (letters, digits, /_+=.@-) or a complete Secrets Manager secret ARN`,
    );
  }
  if (kmsKeyArn !== undefined && !KMS_KEY_ARN.test(kmsKeyArn)) {
    throw new Error(`${setting}.kmsKeyArn: the ARN of a KMS key (arn:aws:kms:<region>:<account>:key/<id>)`);
  }
  return { secretId, ...(kmsKeyArn !== undefined ? { kmsKeyArn } : {}) };
};

/** How long API Gateway reuses an authorizer answer for the same `Authorization` header, unless `deployment.authorizerCacheSeconds` says otherwise. */
export const AUTHORIZER_CACHE_TTL_SECONDS = 60;

/**
 * Authorizer caching. API Gateway caches a REQUEST authorizer's answer by its
 * identity sources, but answers 401 WITHOUT calling the authorizer when any identity source is
 * missing from a request. When every accepted credential travels in `Authorization` (JWTs,
 * and static tokens, which a deployment never has) the answer is cached by that header. API
 * keys may come in `X-API-Key` instead, and a request carries one header or the other, never
 * both, so no identity source fits all: then every request is authorized afresh (the JWKS and
 * the digests stay cached in the function).
 */
export const authorizerCaching = (
  auth: AuthSettings,
  ttlSeconds: number = AUTHORIZER_CACHE_TTL_SECONDS,
): { readonly identitySources: string[]; readonly ttlSeconds: number } =>
  Object.keys(auth.apiKeys ?? {}).length > 0 || ttlSeconds === 0
    ? { identitySources: [], ttlSeconds: 0 }
    : { identitySources: [IdentitySource.header('Authorization')], ttlSeconds };

/**
 * What the writers of task revisions (rpc, executor, reaper) do in the state table: tasks, runs
 * and leases by key (GetItem, UpdateItem, transactions of Put/Update), a task's push configs and
 * saved profiles (Query), content chunks (PutItem, and DeleteItem of the chunks a rewritten history
 * no longer uses, docs/data-model.md "Large content"); the rpc's push configs and stream slots
 * (PutItem, DeleteItem: DeletePushNotificationConfig, a closed stream's slot). No scan, no batch,
 * no index.
 */
export const WRITER_STATE_TABLE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
] as const;

/** The rpc function's state-table actions: a writer's. */
export const RPC_STATE_TABLE_ACTIONS = WRITER_STATE_TABLE_ACTIONS;

/**
 * The projector in the journal: the backstop's reads (`projectedAll` by BatchGetItem, decision
 * 0076; `projected` and the view's reread by GetItem) and its writes (events and views by PutItem,
 * the owner counters by UpdateItem in the view's transaction). Never a delete.
 */
export const PROJECTOR_JOURNAL_TABLE_ACTIONS = [
  'dynamodb:BatchGetItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
] as const;

/**
 * The deliverer in the state table: the push config and content chunks by key (GetItem), a task's
 * configs and delivery records (Query), each attempt appended to its delivery record (UpdateItem,
 * decision 0025). Never a put, a delete or a scan.
 */
export const DELIVERER_STATE_TABLE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
] as const;

/**
 * What a writer's write-through needs of the journal (decision 0043): it reads whether a revision
 * is projected (GetItem), puts events and views (PutItem) and moves the owner's counters
 * (UpdateItem, inside a transaction). Never a delete: purging stays the admin command's.
 */
export const JOURNAL_WRITE_THROUGH_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
] as const;

/** The rpc function reads the journal: a task's events and views, and ListTasks on `byOwner`. */
export const RPC_JOURNAL_TABLE_ACTIONS = ['dynamodb:Query', ...JOURNAL_WRITE_THROUGH_ACTIONS] as const;

/**
 * What a run does in the audit table (`DynamoDbAuditTrail`): its rows and start slots, the slot's
 * kind on a lost race, and a tightening's scrub of the run's rows (query, update, delete). The
 * rpc's, when it runs blocking sends' runs (decision 0091); the executor has the table's data.
 */
export const RUN_AUDIT_TABLE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
] as const;

/** The reaper in the audit table (decision 0072): the start slots only, never content. */
export const REAPER_START_SLOT_ACTIONS = [
  'dynamodb:Query',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:DeleteItem',
] as const;

/** Exactly `actions` on a table, none on its indexes. */
const grantTableActions = (grantee: IGrantable, table: ITableV2, actions: readonly string[]): Grant =>
  Grant.addToPrincipal({ grantee, actions: [...actions], resourceArns: [table.tableArn] });

/** A query of one named index (never `index/*`): an index is read by Query only. */
const grantIndexQuery = (grantee: IGrantable, table: ITableV2, indexName: string): Grant =>
  Grant.addToPrincipal({
    grantee,
    actions: ['dynamodb:Query'],
    resourceArns: [`${table.tableArn}/index/${indexName}`],
  });

/**
 * SendMessage only, where CDK's `grantSendMessages` adds GetQueueAttributes and GetQueueUrl: the
 * functions send to a queue URL from their environment and never read a queue's attributes.
 * The queues are encrypted with SQS-managed keys, so no KMS permission goes with it.
 */
const grantSendMessage = (grantee: IGrantable, queue: IQueue): Grant =>
  Grant.addToPrincipal({ grantee, actions: ['sqs:SendMessage'], resourceArns: [queue.queueArn] });

export type ContentKeyAction = 'kms:Decrypt' | 'kms:GenerateDataKey';

/**
 * The encryption context `shared/adapters/kms-sealer.ts` sends with every GenerateDataKey and
 * Decrypt: `installation` and `purpose` always, `taskId` for a per-task key. KMS checks these
 * conditions against the request, so a grant is good only for this installation's sealed content.
 */
export const contentKeyConditions = (installation: string) => ({
  StringEquals: {
    'kms:EncryptionContext:installation': installation,
    'kms:EncryptionContext:purpose': KMS_PURPOSE,
  },
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['installation', 'purpose', 'taskId'] },
});

/**
 * cdk-nag (AwsSolutions, decision 0055) findings the REST API answers otherwise, each with why.
 */
const acknowledgeApiFindings = (api: RestApi): void => {
  Validations.of(api).acknowledge({
    id: 'AwsSolutions-APIG2',
    reason:
      'The rpc function validates every JSON-RPC body and answers a precise JSON-RPC error with ErrorInfo (docs/decisions/0004-json-rpc-edge.md); a gateway request validator would answer its own 400 instead.',
  });
  Validations.of(api.deploymentStage).acknowledge({
    id: 'AwsSolutions-APIG3',
    reason:
      'No WAF web ACL by default: stage throttling (deployment.throttle) and the authorizer bound abuse; an operator associates a web ACL with the stage when the account has one (docs/deployment.md).',
  });
};

/** A method without the authorizer, on purpose: the reason says why. */
const acknowledgePublicMethod = (method: Method, reason: string): void => {
  for (const id of ['AwsSolutions-APIG4', 'AwsSolutions-COG4'])
    Validations.of(method).acknowledge({ id, reason });
};

/** A data method: behind the REQUEST authorizer (JWT or API key), or open when the configuration says auth.public. */
const acknowledgeDataMethod = (method: Method, isPublic: boolean): void => {
  Validations.of(method).acknowledge({
    id: 'AwsSolutions-COG4',
    reason:
      'Callers authenticate with JWTs of any OIDC issuer or API keys, through the REQUEST authorizer (docs/decisions/0007-authentication.md), not a Cognito user pool.',
  });
  if (isPublic) {
    Validations.of(method).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'auth.public: the configuration serves everyone as local/local (docs/decisions/0007-authentication.md).',
    });
  }
};

/** A function's reserved concurrency, when `deployment.reservedConcurrency` names it. */
const reservedConcurrencyOf = (
  deployment: Config['deployment'],
  fn: FunctionName,
): { reservedConcurrentExecutions?: number } => {
  const reserved = deployment.reservedConcurrency[fn];
  return reserved === undefined ? {} : { reservedConcurrentExecutions: reserved };
};

/**
 * The run queue's event source may run `executorMaxConcurrency` executors at once: a reservation
 * below that would throttle the queue's own poller (AWS advises against it), so synth refuses it.
 */
const assertReservedConcurrencyFits = (deployment: Config['deployment'], executorMax: number): void => {
  const reserved = deployment.reservedConcurrency.executor;
  if (reserved !== undefined && reserved < executorMax) {
    throw new Error(
      `deployment.reservedConcurrency.executor (${reserved}) must be at least deployment.executorMaxConcurrency (${executorMax}): ` +
        'the run queue would otherwise be polled faster than the executor may run.',
    );
  }
};

/** The delivery queue's visibility, like the run queue's, is 6× its consumer's timeout. */
const assertDelivererFitsDeliveryQueue = (): void => {
  const queue = queueDefinitions.find((definition) => definition.id === 'DeliveryQueue');
  const needed = 6 * DELIVERER_TIMEOUT.toSeconds();
  if (!queue || queue.visibilityTimeoutSeconds < needed) {
    throw new Error(
      `DeliveryQueue visibility timeout (${queue?.visibilityTimeoutSeconds ?? 'undeclared'} s) must be at least ` +
        `6 × the deliverer timeout (${needed} s).`,
    );
  }
};

/** AWS: the visibility timeout of an SQS event source's queue should be 6× the function timeout. */
const assertExecutorFitsRunQueue = (): void => {
  const runQueue = queueDefinitions.find((definition) => definition.id === 'RunQueue');
  const needed = 6 * EXECUTOR_TIMEOUT.toSeconds();
  if (!runQueue || runQueue.visibilityTimeoutSeconds < needed) {
    throw new Error(
      `RunQueue visibility timeout (${runQueue?.visibilityTimeoutSeconds ?? 'undeclared'} s) must be at least ` +
        `6 × the executor timeout (${needed} s).`,
    );
  }
};
