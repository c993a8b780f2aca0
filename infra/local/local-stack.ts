import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { KMSClient } from '@aws-sdk/client-kms';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  isJournalEventInsert,
  isTaskItemRecord,
  projectorStreamBatching,
  pusherStreamBatching,
} from '../../shared/adapters/dynamodb/journal-stream.ts';
import { addSdkClientHook } from '../../shared/adapters/sdk-clients.ts';
import { armFailpoints, disarmFailpoints } from '../../shared/app/operations/failpoints.ts';
import { type Config, defaultConfig } from '../../shared/config/config.ts';
import { startDynamoDbLocal } from './dynamodb-local.ts';
import {
  type ApiGatewayLambdaHandler,
  type Authorize,
  type HttpHarness,
  startHttpHarness,
  staticTokenAuthorizer,
} from './http-harness.ts';
import { startKmsEmulator } from './kms-emulator.ts';
import {
  consoleLog,
  createLambdaContext,
  type DynamoDbStreamLambdaHandler,
  type LocalLog,
  type SqsLambdaHandler,
} from './lambda-invocation.ts';
import { installLocalAwsLambdaGlobal, isStreamingHandler, toHarnessHandler } from './lambda-streaming.ts';
import { createResources, type LocalResources } from './resources.ts';
import { injectSdkFaults } from './sdk-faults.ts';
import { startSqsEmulator } from './sqs-emulator.ts';
import { createSqsPoller, type SqsPoller } from './sqs-poller.ts';
import { createStreamPoller, type StreamBatchFailure, type StreamPoller } from './stream-poller.ts';

/**
 * The embedded local stack (docs/decisions/0002-local-stack.md): DynamoDB Local, an SQS emulator and a KMS endpoint —
 * or LocalStack when `AWS_ENDPOINT_URL` is set — the installation's resources, and the SAME
 * handler modules as in Lambda behind an API Gateway-shaped HTTP harness and event-source
 * pollers. Handlers read their environment at module load, so it is set before they are
 * imported; that makes one local stack per process.
 */

export interface Endpoints {
  readonly dynamodb: string;
  readonly dynamodbStreams: string;
  readonly sqs: string;
  readonly kms: string;
}

export interface Emulators {
  readonly endpoints: Endpoints;
  /** True when the endpoints were started elsewhere (`externalEndpoints`), which this process does not own. */
  readonly external: boolean;
  /** Milliseconds each emulator took to answer. */
  readonly timings: Readonly<Record<string, number>>;
  stop(): Promise<void>;
}

const elapsed = (since: number): number => Math.round(performance.now() - since);

/** The per-service variables of the AWS SDK, by the endpoint each names. */
export const ENDPOINT_VARIABLES = {
  dynamodb: 'AWS_ENDPOINT_URL_DYNAMODB',
  dynamodbStreams: 'AWS_ENDPOINT_URL_DYNAMODB_STREAMS',
  sqs: 'AWS_ENDPOINT_URL_SQS',
  kms: 'AWS_ENDPOINT_URL_KMS',
} as const satisfies Record<keyof Endpoints, string>;

/**
 * Endpoints started elsewhere (decision 0056), as the AWS SDK reads them: each service's own
 * variable (`AWS_ENDPOINT_URL_DYNAMODB`, `_DYNAMODB_STREAMS`, `_SQS`, `_KMS`), else
 * `AWS_ENDPOINT_URL` (LocalStack's one endpoint). The streams endpoint defaults to the DynamoDB
 * one (DynamoDB Local serves both). `undefined` when none is set: the embedded emulators start.
 * Some but not all: an error naming what is missing, rather than a half-external stack.
 */
export const externalEndpoints = (env: NodeJS.ProcessEnv = process.env): Endpoints | undefined => {
  const value = (name: string): string | undefined => (env[name] ? env[name] : undefined);
  const shared = value('AWS_ENDPOINT_URL');
  const dynamodb = value(ENDPOINT_VARIABLES.dynamodb) ?? shared;
  const endpoints = {
    dynamodb,
    dynamodbStreams: value(ENDPOINT_VARIABLES.dynamodbStreams) ?? dynamodb,
    sqs: value(ENDPOINT_VARIABLES.sqs) ?? shared,
    kms: value(ENDPOINT_VARIABLES.kms) ?? shared,
  };
  const given = Object.values(ENDPOINT_VARIABLES).filter((name) => value(name) !== undefined);
  if (!shared && given.length === 0) return undefined;
  const missing = (Object.keys(endpoints) as Array<keyof Endpoints>).filter((key) => !endpoints[key]);
  if (missing.length > 0) {
    throw new Error(
      `External endpoints: ${given.join(', ')} set, but not ${missing.map((key) => ENDPOINT_VARIABLES[key]).join(', ')} ` +
        '(set every service, or AWS_ENDPOINT_URL for all of them)',
    );
  }
  return endpoints as Endpoints;
};

/**
 * Starts the three emulators on free ports, or adopts endpoints started elsewhere
 * (`externalEndpoints`: LocalStack, or emulators run as processes of their own).
 */
export const startEmulators = async (options: { readonly host?: string } = {}): Promise<Emulators> => {
  const external = externalEndpoints();
  if (external) return { endpoints: external, external: true, timings: {}, stop: async () => {} };
  const host = options.host ?? '127.0.0.1';
  const timings: Record<string, number> = {};
  const timed = async <T>(name: string, start: () => Promise<T>): Promise<T> => {
    const since = performance.now();
    const started = await start();
    timings[name] = elapsed(since);
    return started;
  };
  const [dynamodb, sqs, kms] = await Promise.allSettled([
    timed('dynamodb', () => startDynamoDbLocal({ host })),
    timed('sqs', () => startSqsEmulator({ host })),
    timed('kms', () => startKmsEmulator({ host })),
  ]);
  if (dynamodb.status === 'rejected' || sqs.status === 'rejected' || kms.status === 'rejected') {
    await Promise.allSettled(
      [dynamodb, sqs, kms].map((started) =>
        started.status === 'fulfilled' ? started.value.stop() : undefined,
      ),
    );
    const failure = [dynamodb, sqs, kms].find((started) => started.status === 'rejected');
    throw (failure as PromiseRejectedResult).reason;
  }
  return {
    endpoints: {
      dynamodb: dynamodb.value.endpoint,
      dynamodbStreams: dynamodb.value.endpoint,
      sqs: sqs.value.endpoint,
      kms: kms.value.url,
    },
    external: false,
    timings,
    stop: async () => {
      await Promise.allSettled([dynamodb.value.stop(), sqs.value.stop(), kms.value.stop()]);
    },
  };
};

export const localCredentials = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

export interface LocalClients {
  readonly dynamodb: DynamoDBClient;
  readonly streams: DynamoDBStreamsClient;
  readonly sqs: SQSClient;
  readonly kms: KMSClient;
  destroy(): void;
}

/** SDK clients with explicit endpoints and dummy credentials: never a real account. */
export const createLocalClients = (endpoints: Endpoints, region = 'us-east-1'): LocalClients => {
  const common = { region, credentials: localCredentials };
  const dynamodb = new DynamoDBClient({ ...common, endpoint: endpoints.dynamodb });
  const streams = new DynamoDBStreamsClient({ ...common, endpoint: endpoints.dynamodbStreams });
  const sqs = new SQSClient({ ...common, endpoint: endpoints.sqs });
  const kms = new KMSClient({ ...common, endpoint: endpoints.kms });
  return {
    dynamodb,
    streams,
    sqs,
    kms,
    destroy: () => {
      for (const client of [dynamodb, streams, sqs, kms]) client.destroy();
    },
  };
};

/** The environment a handler module reads at load (shared/config/runtime-env.ts) plus SDK endpoints. */
export const handlerEnv = (
  endpoints: Endpoints,
  resources: LocalResources,
  config: Config,
  region = 'us-east-1',
): Record<string, string> => ({
  AWS_REGION: region,
  AWS_DEFAULT_REGION: region,
  AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
  AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
  AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
  AWS_ENDPOINT_URL_DYNAMODB_STREAMS: endpoints.dynamodbStreams,
  AWS_ENDPOINT_URL_SQS: endpoints.sqs,
  AWS_ENDPOINT_URL_KMS: endpoints.kms,
  ...resources.env,
  A2A_INSTALLATION: 'local',
  A2A_LOCAL_MODE: 'true',
  A2A_CONFIG: JSON.stringify(config),
});

export interface LocalHandlers {
  readonly rpc: ApiGatewayLambdaHandler;
  readonly executor: SqsLambdaHandler;
  readonly projector: DynamoDbStreamLambdaHandler;
}

const handlerModules = {
  rpc: new URL('../../functions/rpc/handler.ts', import.meta.url),
  executor: new URL('../../functions/executor/handler.ts', import.meta.url),
  projector: new URL('../../functions/projector/handler.ts', import.meta.url),
} as const;

/**
 * Imports the Lambda handler modules by path, after the environment is set. The rpc module is a
 * response-streaming Lambda (`awslambda.streamifyResponse`): the runtime's global is installed
 * first, and the streaming handler is adapted to the harness's result shape.
 */
export const importHandlers = async (): Promise<LocalHandlers> => {
  const load = async (name: keyof typeof handlerModules): Promise<unknown> => {
    const module: { handler?: unknown } = await import(handlerModules[name].href);
    if (typeof module.handler !== 'function') {
      throw new Error(`${handlerModules[name].pathname} does not export a handler function`);
    }
    return module.handler;
  };
  installLocalAwsLambdaGlobal();
  const [rpc, executor, projector] = await Promise.all([load('rpc'), load('executor'), load('projector')]);
  return {
    rpc: isStreamingHandler(rpc) ? toHarnessHandler(rpc) : (rpc as ApiGatewayLambdaHandler),
    executor: executor as SqsLambdaHandler,
    projector: projector as DynamoDbStreamLambdaHandler,
  };
};

/** The local deliverer's scale-out ceiling: Lambda's is the number of active message groups. */
const DELIVERER_MAX_CONCURRENCY = 64;

const webhookModules = {
  pusher: new URL('../../functions/pusher/handler.ts', import.meta.url),
  deliverer: new URL('../../functions/deliverer/handler.ts', import.meta.url),
} as const;

export interface WebhookPollers {
  /** Journal stream → pusher (inserted event items with the push mark only, as the event-source filter in the cloud). */
  readonly pusher: StreamPoller;
  /** FIFO delivery queue → deliverer, one message per invocation (batch size 1, as deployed). */
  readonly deliverer: SqsPoller;
}

/** The webhook path of decision 0009: journal stream → pusher → FIFO queue → deliverer. */
const createWebhookPollers = async (
  clientsOf: (functionName: string) => Pick<LocalClients, 'sqs' | 'streams'>,
  resources: LocalResources,
  options: {
    readonly concurrency: number;
    readonly region: string;
    readonly log: LocalLog;
    readonly streamStart: 'LATEST' | 'TRIM_HORIZON';
    readonly retryBackoffCapMs?: number;
  },
): Promise<WebhookPollers> => {
  const load = async (name: keyof typeof webhookModules): Promise<unknown> => {
    const module: { handler?: unknown } = await import(webhookModules[name].href);
    if (typeof module.handler !== 'function') {
      throw new Error(`${webhookModules[name].pathname} does not export a handler function`);
    }
    return module.handler;
  };
  const journalStream = resources.tables.Journal.streamArn;
  if (!journalStream) throw new Error('The journal table has no stream');
  const [pusher, deliverer] = await Promise.all([load('pusher'), load('deliverer')]);
  const pusherClients = clientsOf('pusher');
  return {
    pusher: createStreamPoller({
      streams: pusherClients.streams,
      streamArn: journalStream,
      handler: pusher as DynamoDbStreamLambdaHandler,
      functionName: 'pusher',
      startingPosition: resources.tables.Journal.created ? 'TRIM_HORIZON' : options.streamStart,
      filter: isJournalEventInsert,
      batchSize: pusherStreamBatching.batchSize,
      maximumBatchingWindowMs: pusherStreamBatching.maximumBatchingWindowMs,
      // Ordered fan-out: the handler stops at the first failure; halving adds nothing.
      bisectBatchOnFunctionError: false,
      maximumRetryAttempts: 10,
      retryBackoffCapMs: options.retryBackoffCapMs,
      onFailure: onFailureDestination(pusherClients.sqs, resources.queues.PusherDlq.url, options),
      region: options.region,
      log: options.log,
    }),
    deliverer: createSqsPoller({
      sqs: clientsOf('deliverer').sqs,
      queueUrl: resources.queues.DeliveryQueue.url,
      queueArn: resources.queues.DeliveryQueue.arn,
      handler: deliverer as SqsLambdaHandler,
      functionName: 'deliverer',
      batchSize: 1,
      // Lambda on a FIFO queue scales out per active message group (decision 0023): two standing
      // pollers, more while deliveries keep coming, up to the ceiling.
      concurrency: Math.min(2, options.concurrency),
      maxConcurrency: options.concurrency,
      region: options.region,
      log: options.log,
    }),
  };
};

/**
 * A stream consumer's on-failure destination, as Lambda's `SqsDlq` writes it: the batch's
 * coordinates in the stream (`DDBStreamBatchInfo`), not its records (decision 0068 replays them).
 */
const onFailureDestination =
  (
    sqs: SQSClient,
    queueUrl: string,
    options: { readonly region: string; readonly log: LocalLog; readonly counted?: () => void },
  ) =>
  async (failure: StreamBatchFailure): Promise<void> => {
    options.counted?.();
    const first = failure.records[0]?.dynamodb;
    const last = failure.records.at(-1)?.dynamodb;
    options.log('error', `${failure.functionName}: batch sent to the on-failure destination`, {
      shardId: failure.shardId,
      attempts: failure.attempts,
      error: failure.errorName,
      records: failure.records.length,
    });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify({
          requestContext: {
            requestId: randomUUID(),
            functionArn: `arn:aws:lambda:${options.region}:000000000000:function:${failure.functionName}`,
            condition: 'RetryAttemptsExhausted',
            approximateInvokeCount: failure.attempts,
          },
          responseContext: {
            statusCode: 200,
            executedVersion: '$LATEST',
            functionError: failure.errorName ? 'Unhandled' : null,
          },
          version: '1.0',
          timestamp: new Date().toISOString(),
          DDBStreamBatchInfo: {
            shardId: failure.shardId,
            startSequenceNumber: first?.SequenceNumber,
            endSequenceNumber: last?.SequenceNumber,
            approximateArrivalOfFirstRecord: toIsoSeconds(first?.ApproximateCreationDateTime),
            approximateArrivalOfLastRecord: toIsoSeconds(last?.ApproximateCreationDateTime),
            batchSize: failure.records.length,
            streamArn: failure.streamArn,
          },
        }),
      }),
    );
  };

/** Lambda's on-failure record gives arrival times as ISO timestamps. */
const toIsoSeconds = (epochSeconds: number | undefined): string | undefined =>
  epochSeconds === undefined ? undefined : new Date(epochSeconds * 1000).toISOString();

const reaperModule = new URL('../../functions/reaper/handler.ts', import.meta.url);

/** The reaper handler on a timer, one tick at a time (decision 0011). Returns the stop step. */
const startReaperTimer = async (intervalMs: number, log: LocalLog): Promise<() => void> => {
  const module: { handler?: unknown } = await import(reaperModule.href);
  const reap = module.handler;
  if (typeof reap !== 'function')
    throw new Error(`${reaperModule.pathname} does not export a handler function`);
  let reaping = false;
  const timer = setInterval(() => {
    if (reaping) return;
    reaping = true;
    Promise.resolve(reap({}, createLambdaContext({ functionName: 'reaper' })))
      .catch((error: unknown) => log('warn', 'reaper: a tick failed', { error: (error as Error).name }))
      .finally(() => {
        reaping = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
};

/** The journal viewer's page and script (decision 0016), served at `/viewer/`. */
export const viewerDirectory = fileURLToPath(new URL('../viewer', import.meta.url));

export interface LocalStackOptions {
  /** HTTP port; 0 (the default) picks a free one. */
  readonly port?: number;
  readonly host?: string;
  readonly config?: Config;
  /** Resource name prefix (default `a2a-local`); give each test its own when emulators are shared. */
  readonly prefix?: string;
  /** Emulators already running (tests): used as they are and not stopped by `stop()`. */
  readonly endpoints?: Endpoints;
  /** Stand-ins for the handler modules (tests of the harness itself). */
  readonly handlers?: Partial<LocalHandlers>;
  /** Default: `staticTokenAuthorizer(config)`. */
  readonly authorize?: Authorize;
  /** Concurrent run-queue pollers (default 4). */
  readonly executorConcurrency?: number;
  /**
   * Ceiling of concurrent webhook deliveries (default 64; a delivery group is served by one at a
   * time). The deliverer scales out to it while deliveries keep coming, as Lambda does per group.
   */
  readonly delivererConcurrency?: number;
  /** The reaper's schedule (EventBridge every minute in AWS) as a timer; 0 turns it off. @default 60_000 */
  readonly reaperIntervalMs?: number;
  /**
   * Failpoints to arm (`npm start -- --failpoints <spec>` or `A2A_FAILPOINTS`; the grammar is in
   * shared/app/operations/failpoints.ts, the points in docs/reliability.md). Default: none.
   */
  readonly failpoints?: string;
  /**
   * The longest wait before the stream pollers try a failing batch again (default 1 s): tests of
   * what a batch given up leads to need not wait for Lambda's pace.
   */
  readonly streamRetryBackoffCapMs?: number;
  /** Run leases (default 90 s) and queued runs' start deadline (default 30 min), for fault tests. */
  readonly runLeaseMs?: number;
  readonly runStartDeadlineMs?: number;
  /** How long the rpc function serves the saved profiles it read (default 30 s; decision 0024). */
  readonly profileCacheMs?: number;
  /**
   * The rpc runs a blocking send's run itself (default true, as a deployment's
   * `deployment.blockingRunsInRpc`; decision 0091); false queues every run for the executor.
   */
  readonly blockingRunsInRpc?: boolean;
  /**
   * Where the stream pollers start on tables that already exist (default LATEST). A restart after
   * a crash passes TRIM_HORIZON: Lambda's event source mapping would resume from its checkpoint,
   * and replaying from the oldest record is the at-least-once superset of that.
   */
  readonly existingStreamStart?: 'LATEST' | 'TRIM_HORIZON';
  /**
   * Gives each event-source poller (and its on-failure destination) SDK clients of its own and
   * shows them to this observer with the function they act for: in AWS, an event source mapping
   * reads its queue or stream with the function's role (the IAM conformance test records them).
   */
  readonly observePollerClients?: PollerClientObserver;
  readonly log?: LocalLog;
}

/** Sees each SDK client an event-source poller uses, with the function whose role it stands for. */
export type PollerClientObserver = (client: SQSClient | DynamoDBStreamsClient, functionName: string) => void;

export interface LocalStack {
  readonly baseUrl: string;
  /** What was set in process.env for the handlers. */
  readonly env: Readonly<Record<string, string>>;
  readonly endpoints: Endpoints;
  readonly resources: LocalResources;
  readonly pollers: {
    readonly executor: SqsPoller;
    readonly projector: StreamPoller;
  } & Partial<WebhookPollers>;
  /** Milliseconds per start-up phase. */
  readonly timings: Readonly<Record<string, number>>;
  /** Projector batches sent to the on-failure destination (the ProjectorDlq). */
  projectorFailures(): number;
  stop(): Promise<void>;
}

/**
 * The clients a function's poller uses: the stack's shared ones, or, with an observer, clients of
 * its own that the observer has seen (destroyed by `destroy`).
 */
const pollerClientsOf = (
  shared: LocalClients,
  endpoints: Endpoints,
  region: string,
  observe: PollerClientObserver | undefined,
) => {
  const own: LocalClients[] = [];
  return {
    of: (functionName: string): Pick<LocalClients, 'sqs' | 'streams'> => {
      if (!observe) return shared;
      const clients = createLocalClients(endpoints, region);
      own.push(clients);
      observe(clients.sqs, functionName);
      observe(clients.streams, functionName);
      return clients;
    },
    destroy: () => {
      for (const clients of own.splice(0)) clients.destroy();
    },
  };
};

export const startLocalStack = async (options: LocalStackOptions = {}): Promise<LocalStack> => {
  const began = performance.now();
  const config = options.config ?? defaultConfig;
  const log = options.log ?? consoleLog;
  const region = 'us-east-1';
  const timings: Record<string, number> = {};
  // Undone in reverse order, on failure as on stop().
  const cleanups: Array<() => Promise<void> | void> = [];
  const runCleanups = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log('warn', 'local stack: a stop step failed', { error: (error as Error).message });
      }
    }
  };

  try {
    let since = performance.now();
    let endpoints = options.endpoints;
    if (!endpoints) {
      // Emulators stay on loopback whatever address the HTTP harness listens on.
      const emulators = await startEmulators();
      cleanups.push(() => emulators.stop());
      endpoints = emulators.endpoints;
      Object.assign(
        timings,
        Object.fromEntries(Object.entries(emulators.timings).map(([k, v]) => [`${k}Start`, v])),
      );
    }
    timings.emulators = elapsed(since);

    since = performance.now();
    const clients = createLocalClients(endpoints, region);
    cleanups.push(() => clients.destroy());
    const resources = await createResources({ prefix: options.prefix ?? 'a2a-local', clients });
    const pollerClients = pollerClientsOf(clients, endpoints, region, options.observePollerClients);
    cleanups.push(pollerClients.destroy);
    timings.resources = elapsed(since);

    const env = {
      ...handlerEnv(endpoints, resources, config, region),
      ...(options.runLeaseMs ? { RUN_LEASE_MS: String(options.runLeaseMs) } : {}),
      ...(options.runStartDeadlineMs ? { RUN_START_DEADLINE_MS: String(options.runStartDeadlineMs) } : {}),
      ...(options.profileCacheMs ? { PROFILE_CACHE_MS: String(options.profileCacheMs) } : {}),
      RUNS_BLOCKING_SENDS: String(options.blockingRunsInRpc ?? true),
    };
    delete process.env.AWS_SESSION_TOKEN;
    delete process.env.AWS_PROFILE;
    // The endpoint variables are put back on stop: a later stack in this process that starts its
    // own emulators must not read this one's as external endpoints (externalEndpoints).
    const endpointVariables = Object.values(ENDPOINT_VARIABLES).map(
      (name) => [name, process.env[name]] as const,
    );
    Object.assign(process.env, env);
    cleanups.push(() => {
      for (const [name, previous] of endpointVariables) {
        if (previous === undefined) delete process.env[name];
        else process.env[name] = previous;
      }
    });

    if (options.failpoints) {
      // Before the handler modules load: they create their SDK clients at import.
      armFailpoints(options.failpoints);
      cleanups.push(disarmFailpoints);
      cleanups.push(addSdkClientHook(injectSdkFaults));
      log('warn', 'local stack: failpoints armed', { spec: options.failpoints });
    }
    // The Parameters and Secrets extension exists only in Lambda (decision 0026).
    for (const [id, provider] of Object.entries(config.providers)) {
      if (provider.type === 'openai' && provider.apiKeySecret && !provider.apiKeyEnv) {
        log(
          'warn',
          `local stack: providers.${id}.apiKeySecret is read only when deployed; set apiKeyEnv to call it locally`,
          {},
        );
      }
    }

    since = performance.now();
    const needed = ['rpc', 'executor', 'projector'] as const;
    // Stand-in handlers (tests of the harness itself) come without the webhook path.
    const standIns = needed.every((name) => options.handlers?.[name]);
    const handlers: LocalHandlers = standIns
      ? (options.handlers as LocalHandlers)
      : { ...(await importHandlers()), ...options.handlers };
    timings.handlers = elapsed(since);

    const executor = createSqsPoller({
      sqs: pollerClients.of('executor').sqs,
      queueUrl: resources.queues.RunQueue.url,
      queueArn: resources.queues.RunQueue.arn,
      handler: handlers.executor,
      functionName: 'executor',
      concurrency: options.executorConcurrency ?? 4,
      region,
      log,
    });
    let projectorFailures = 0;
    const projectorClients = pollerClients.of('projector');
    const sendToProjectorDlq = onFailureDestination(projectorClients.sqs, resources.queues.ProjectorDlq.url, {
      region,
      log,
      counted: () => {
        projectorFailures += 1;
      },
    });
    const stateStream = resources.tables.State.streamArn;
    if (!stateStream) throw new Error('The state table has no stream');
    const projector = createStreamPoller({
      streams: projectorClients.streams,
      streamArn: stateStream,
      handler: handlers.projector,
      functionName: 'projector',
      // A table created just now has nothing older to skip; an existing one (LocalStack) does.
      startingPosition: resources.tables.State.created
        ? 'TRIM_HORIZON'
        : (options.existingStreamStart ?? 'LATEST'),
      filter: isTaskItemRecord,
      batchSize: projectorStreamBatching.batchSize,
      maximumBatchingWindowMs: projectorStreamBatching.maximumBatchingWindowMs,
      onFailure: sendToProjectorDlq,
      retryBackoffCapMs: options.streamRetryBackoffCapMs,
      region,
      log,
    });
    since = performance.now();
    const harness: HttpHarness = await startHttpHarness({
      handler: handlers.rpc,
      authorize: options.authorize ?? staticTokenAuthorizer(config),
      port: options.port ?? 0,
      host: options.host ?? '127.0.0.1',
      functionName: 'rpc',
      region,
      log,
      staticFiles: { prefix: '/viewer/', directory: viewerDirectory },
    });
    cleanups.push(() => harness.stop());
    timings.http = elapsed(since);

    // Pushed last so they stop first: pollers, then the server, then the emulators.
    since = performance.now();
    cleanups.push(() => projector.stop());
    cleanups.push(() => executor.stop());
    await Promise.all([executor.start(), projector.start()]);
    const webhooks = standIns
      ? undefined
      : await createWebhookPollers(pollerClients.of, resources, {
          concurrency: options.delivererConcurrency ?? DELIVERER_MAX_CONCURRENCY,
          region,
          log,
          streamStart: options.existingStreamStart ?? 'LATEST',
          retryBackoffCapMs: options.streamRetryBackoffCapMs,
        });
    if (webhooks) {
      cleanups.push(() => webhooks.pusher.stop());
      cleanups.push(() => webhooks.deliverer.stop());
      await Promise.all([webhooks.pusher.start(), webhooks.deliverer.start()]);
    }
    timings.pollers = elapsed(since);
    const reaperEvery = options.reaperIntervalMs ?? 60_000;
    if (reaperEvery > 0) cleanups.push(await startReaperTimer(reaperEvery, log));
    timings.total = elapsed(began);

    let stopping: Promise<void> | undefined;
    return {
      baseUrl: harness.url,
      env,
      endpoints,
      resources,
      pollers: { executor, projector, ...webhooks },
      timings,
      projectorFailures: () => projectorFailures,
      stop: () => {
        stopping ??= runCleanups();
        return stopping;
      },
    };
  } catch (error) {
    await runCleanups();
    throw error;
  }
};
