/**
 * `npm run bench` (issue 8): prices every task of the local stack and measures its latency.
 *
 *   npx tsx bench/run.ts [--tasks 500] [--concurrency 20] [--rounds 3] [--scale 10000]
 *                        [--spawns 10] [--skip-cold-start] [--skip-scale] [--skip-anchor] [--quick]
 *   (--quick: 60 tasks, 1 round, scale 500 unless --scale is given, 3 spawns)
 *   npx tsx bench/run.ts --only-cold-start [--spawns 10] [--functions executor,rpc]
 *   npx tsx bench/run.ts --only-floor [--quick] [--trace-out marks.json]
 *   npx tsx bench/run.ts --only-progressive [--progressive-tasks 10] [--turns 50] [--tasks 500]
 *                        [--warm-up 1000] (--warm-up: tasks each server gets before it is measured)
 *
 * Starts its own emulators and the local stack in-process, with the SDK middleware and the
 * invocation observers of bench/lib/meter.ts installed before the handler modules load. Counts
 * (request units, KMS, SQS, invocations, billed ms) are exact for the tasks driven; latencies are
 * medians over rounds, with the machine's load average stated. Writes bench/results/latest.json
 * and bench/results/latest.md. Method: bench/README.md, "Method". Each latency target
 * is set against its floor, from the paths traced hop by hop at one client (decision 0033).
 *
 * `--only-cold-start` runs only the cold-start phase (bundle bytes and module init per function,
 * no emulators) and prints its table with the load average; it writes no results file.
 *
 * `--only-floor` runs only the one-client phase (the measured p50s at one client) and the latency
 * floor's traced phase, and prints the floor section with the load average; it writes no results
 * file. `--trace-out` also writes the floor phase's hop marks (ids, revisions, states, times) as
 * JSON, to read a route by hand.
 *
 * `--only-progressive` runs only issue 37's phases on a warmed stack — progressive output at one
 * client (`--progressive-tasks` tasks each way), a conversation of `--turns` turns of 20 KB
 * messages, and one blocking and one streamed round of `--tasks` tasks at `--concurrency` clients
 * from the load generator — and prints their section; it writes no results file.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type AttributeValue, GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { createSealer } from '../functions/compose.ts';
import { REPO_ROOT } from '../infra/house-function.ts';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.ts';
import { startKmsEmulator } from '../infra/local/kms-emulator.ts';
import { createLocalClients, type LocalStack, startLocalStack } from '../infra/local/local-stack.ts';
import { startSqsEmulator } from '../infra/local/sqs-emulator.ts';
import { DynamoDbJournalRepository } from '../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { packSealedHeaders, unpackSealedHeaders } from '../shared/adapters/dynamodb/sealed-headers.ts';
import { tableDefinitions } from '../shared/adapters/dynamodb/tables.ts';
import { createDocumentClient } from '../shared/adapters/sdk-clients.ts';
import { TaskContentCodec } from '../shared/app/tasks/task-content.ts';
import { readRuntimeEnv } from '../shared/config/runtime-env.ts';
import { projectRevision, type StoredTask } from '../shared/domain/projection.ts';
import {
  type AnchorInstall,
  anchorInstallLine,
  installAnchor,
  sdkVersions,
  startAnchor,
} from './anchor/sdk-server.ts';
import { benchConfig, benchTokens } from './lib/bench-config.ts';
import {
  pool,
  type RpcAnswer,
  RpcClient,
  type StreamedEvent,
  sendMessageParams,
  stateIn,
  stateOf,
  type TaskLike,
} from './lib/client.ts';
import { type ColdStartResult, measureColdStarts } from './lib/cold-start.ts';
import {
  beforeWriteThrough,
  type CostBreakdown,
  capacityModes,
  costPerMillionTasks,
  defaultXraySampleRate,
  demandByTable,
  type FunctionUsage,
  type PerTaskUsage,
  provisionedDynamodbCost,
  usEast1Prices,
  usEast1ProvisionedPrices,
} from './lib/cost-model.ts';
import { cpuSeconds, dynamoDbLocalPid } from './lib/cpu.ts';
import { type Deployment, readDeployment } from './lib/deployment.ts';
import { computeFloor, type Floor, type ItemSizes } from './lib/floor.ts';
import {
  type FloorTaskShape,
  fewestDynamodbRequests,
  runFloorTasks,
  sampleFloorItems,
} from './lib/floor-task.ts';
import { type HopTrace, installHopTrace } from './lib/hop-trace.ts';
import {
  floorTaskBound,
  machineBound,
  routeFloor,
  STEPS_TO_STATUS_TIMESTAMP,
  tracedRoutes,
} from './lib/latency-floor.ts';
import { blockingRound, type LoadGenerator, startLoadGenerator } from './lib/load-process.ts';
import { diffSnapshots, handlerCapacity, itemSize, Meter, type MeterSnapshot } from './lib/meter.ts';
import { conversationPhase, progressiveOutputPhase } from './lib/progressive-phases.ts';
import { coldStartTable, latencyFloorSection, progressiveSection, renderMarkdown } from './lib/report.ts';
import { type LatencySummary, median, medianOfRounds, round, summarize } from './lib/stats.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values: args } = parseArgs({
  options: {
    tasks: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
    scale: { type: 'string' },
    spawns: { type: 'string', default: '10' },
    'skip-cold-start': { type: 'boolean', default: false },
    'skip-scale': { type: 'boolean', default: false },
    'skip-anchor': { type: 'boolean', default: false },
    'only-cold-start': { type: 'boolean', default: false },
    'only-floor': { type: 'boolean', default: false },
    'only-progressive': { type: 'boolean', default: false },
    'progressive-tasks': { type: 'string' },
    'warm-up': { type: 'string' },
    turns: { type: 'string' },
    'trace-out': { type: 'string' },
    functions: { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
const quick = args.quick === true;
const TASKS = quick ? 60 : Number(args.tasks);
const CONCURRENCY = Number(args.concurrency);
const ROUNDS = quick ? 1 : Number(args.rounds);
const SCALE = Number(args.scale ?? (quick ? 500 : 10000));
const SPAWNS = quick ? 3 : Number(args.spawns);
const MULTI_TURN_TASKS = quick ? 20 : 100;
const FEATURE_TASKS = quick ? 20 : 200;
const SCALE_TASKS = quick ? 20 : 100;
/** Tasks per path at one client, untraced: SSE terminal event and request → webhook (decision 0047). */
const ONE_CLIENT_TASKS = quick ? 15 : 50;
/** Sequential blocking tasks at one client, on this server and on the anchor. */
const SEQUENTIAL_TASKS = quick ? 20 : 100;
/**
 * Tasks each server gets at `CONCURRENCY` clients before its measured rounds (decisions 0078,
 * 0087): both run on JITs (V8; the SDK server's too, and DynamoDB Local's JVM) that reach their
 * steady state only after some hundred tasks — DynamoDB Local's C2 after about 400 —, and the
 * rounds compare steady states.
 */
const WARM_UP_TASKS = Number(args['warm-up'] ?? (quick ? 40 : 1_000));
/** Streamed tasks at one client on each of the progressive and plain agents (issue 37). */
const PROGRESSIVE_TASKS = Number(args['progressive-tasks'] ?? (quick ? 3 : 10));
/** Turns of the conversation of 20 KB messages whose write units per turn are reported. */
const CONVERSATION_TURNS = Number(args.turns ?? (quick ? 5 : 50));
/** Words of a progressive task's answer: 120 at the bench's 25 ms a word, ~3 s, 2–3 chunks. */
const PROGRESSIVE_WORDS = 120;
/** Tasks per path traced at one client for the latency floor. */
const FLOOR_TASKS = quick ? 10 : 30;
/** Lambda writes platform lines (start, report) per invocation; JSON format, estimated bytes. */
const PLATFORM_LOG_BYTES_PER_INVOCATION = 600;

const log = (line: string): void => {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((wake) => setTimeout(wake, ms));
const machineLoad = () => ({ loadavg1: round(loadavg()[0] ?? 0), cores: cpus().length });

const tokens = benchTokens;
const config = benchConfig;

// ---- measurement helpers

const meter = new Meter();

interface Measured {
  readonly tasks: number;
  readonly apiRequests: number;
  readonly delta: MeterSnapshot;
  readonly usage: PerTaskUsage;
  readonly cost: CostBreakdown;
  readonly perTask: ReturnType<typeof perTaskCounts>;
}

const sum = (row: Record<string, number> | undefined, prefix: string): number =>
  Object.entries(row ?? {}).reduce(
    (total, [key, value]) => (key.startsWith(prefix) ? total + value : total),
    0,
  );

/** Requests per task by `Service.Operation` over the handler functions, and the event sources' own. */
const perTaskCounts = (delta: MeterSnapshot, tasks: number, deployment: Deployment) => {
  const requests: Record<string, number> = {};
  for (const [fn, row] of Object.entries(delta.requests)) {
    if (fn === 'bench') continue;
    for (const [key, value] of Object.entries(row)) requests[`${fn}: ${key}`] = round(value / tasks, 4);
  }
  const eventSourceSqs: Record<string, number> = {};
  for (const [fn, invocations] of Object.entries(delta.invocations)) {
    if (deployment.functions[fn]?.source !== 'sqs') continue;
    // Lambda's SQS poller: one ReceiveMessage that returned the batch, one DeleteMessageBatch.
    eventSourceSqs[`${fn}: ReceiveMessage (event source)`] = round(invocations.count / tasks, 4);
    eventSourceSqs[`${fn}: DeleteMessageBatch (event source)`] = round(invocations.count / tasks, 4);
  }
  const capacity = handlerCapacity(delta);
  const raw = handlerCapacity(delta, 'capacityRaw');
  const assumed = handlerCapacity(delta, 'capacityAssumed');
  return {
    requests,
    eventSourceSqs,
    readUnits: round(capacity.read / tasks, 4),
    writeUnits: round(capacity.write / tasks, 4),
    readUnitsAsReportedByDynamoDbLocal: round(raw.read / tasks, 4),
    writeUnitsAsReportedByDynamoDbLocal: round(raw.write / tasks, 4),
    /** Of `writeUnits`: the second unit of each index write inside a transaction (decision 0036). */
    writeUnitsAssumedForTransactionalIndexes: round(assumed.write / tasks, 4),
    capacityByTable: Object.fromEntries(
      Object.entries(delta.capacity)
        .filter(([fn]) => fn !== 'bench')
        .flatMap(([fn, row]) =>
          Object.entries(row).map(([where, units]) => [
            `${fn}: ${where}`,
            { read: round(units.read / tasks, 4), write: round(units.write / tasks, 4) },
          ]),
        ),
    ),
    invocations: Object.fromEntries(
      Object.entries(delta.invocations).map(([fn, row]) => [
        fn,
        {
          perTask: round(row.count / tasks, 4),
          recordsPerInvocation: round(row.records / row.count, 3),
          billedMsPerTask: round(row.billedMs / tasks, 4),
          meanMs: round(row.durationMs / row.count),
          errors: row.errors,
        },
      ]),
    ),
  };
};

const usageOf = (
  delta: MeterSnapshot,
  tasks: number,
  apiRequests: number,
  deployment: Deployment,
): PerTaskUsage => {
  const capacity = handlerCapacity(delta);
  let kms = 0;
  let sqsStandard = 0;
  let sqsFifo = 0;
  for (const [fn, row] of Object.entries(delta.requests)) {
    if (fn === 'bench') continue;
    kms += sum(row, 'KMS.');
    sqsStandard += sum(row, 'SQS.') - sum(row, 'SQS.fifo:');
    sqsFifo += sum(row, 'SQS.fifo:');
  }
  const functions: FunctionUsage[] = [];
  let invocations = 0;
  let tracedInvocations = 0;
  for (const [fn, row] of Object.entries(delta.invocations)) {
    const deployed = deployment.functions[fn];
    invocations += row.count;
    if (fn !== 'rpc' && deployed?.source !== 'sqs') tracedInvocations += row.count;
    if (deployed?.source === 'sqs') {
      if (deployed.fifo) sqsFifo += 2 * row.count;
      else sqsStandard += 2 * row.count;
    }
    functions.push({
      functionName: fn,
      invocations: row.count / tasks,
      billedMs: row.billedMs / tasks,
      memoryMb: deployed?.memoryMb ?? deployment.houseMemoryMb,
    });
  }
  if (deployment.hasAuthorizer) {
    // Not run locally (the harness authorizes in-process): one invocation per API request (no
    // authorizer cache is configured), a JWT check with cached keys billed at ~5 ms.
    functions.push({
      functionName: 'authorizer (modelled)',
      invocations: apiRequests / tasks,
      billedMs: (5 * apiRequests) / tasks,
      memoryMb: deployment.functions.authorizer?.memoryMb ?? deployment.houseMemoryMb,
      estimated: true,
    });
  }
  const handlerLogBytes = Object.values(delta.logBytes).reduce((total, bytes) => total + bytes, 0);
  return {
    dynamodbReadUnits: capacity.read / tasks,
    dynamodbWriteUnits: capacity.write / tasks,
    kmsRequests: kms / tasks,
    sqsStandardRequests: sqsStandard / tasks,
    sqsFifoRequests: sqsFifo / tasks,
    functions,
    apiRequests: apiRequests / tasks,
    logBytes: (handlerLogBytes + PLATFORM_LOG_BYTES_PER_INVOCATION * invocations) / tasks,
    xrayTraces: (defaultXraySampleRate * (apiRequests + tracedInvocations)) / tasks,
  };
};

/** Runs `work` between two snapshots; returns the per-task figures for `tasks` tasks. */
const measured = async (
  deployment: Deployment,
  clients: readonly RpcClient[],
  work: () => Promise<number>,
): Promise<Measured & { wallMs: number }> => {
  await meter.untilIdle();
  const before = meter.snapshot();
  const requestsBefore = clients.reduce((total, client) => total + client.requests, 0);
  const began = performance.now();
  const tasks = await work();
  const wallMs = performance.now() - began;
  await meter.untilIdle();
  const delta = diffSnapshots(meter.snapshot(), before);
  const apiRequests = clients.reduce((total, client) => total + client.requests, 0) - requestsBefore;
  const usage = usageOf(delta, tasks, apiRequests, deployment);
  return {
    tasks,
    apiRequests,
    delta,
    usage,
    cost: costPerMillionTasks(usage),
    perTask: perTaskCounts(delta, tasks, deployment),
    wallMs,
  };
};

/** Dollars per million tasks of everything but Lambda duration: the counted, load-independent part. */
const countedCost = (cost: CostBreakdown): number =>
  cost.lines
    .filter((line) => line.unit !== 'GB-s')
    .reduce((total, line) => total + line.usdPerMillionTasks, 0);

const expectState = (answer: RpcAnswer<{ task?: TaskLike }>, state: string, what: string): TaskLike => {
  if (stateOf(answer) !== state) {
    throw new Error(`${what}: expected ${state}, got ${stateOf(answer) ?? JSON.stringify(answer.error)}`);
  }
  return answer.result?.task as TaskLike;
};

// ---- phases

const callLatency = async (
  count: number,
  concurrency: number,
  call: (i: number) => Promise<RpcAnswer<unknown>>,
): Promise<LatencySummary> => {
  const latencies: number[] = [];
  await pool(count, concurrency, async (i) => {
    const answer = await call(i);
    if (answer.error) throw new Error(`call failed: ${answer.error.code} ${answer.error.message}`);
    latencies.push(answer.ms);
  });
  return summarize(latencies);
};

/** One SendStreamingMessage, read to its end (on the client's keep-alive connections). */
const streamOnce = (client: RpcClient, text: string): Promise<{ events: StreamedEvent[]; began: number }> =>
  client.stream('SendStreamingMessage', sendMessageParams(text));

const streamingPhase = async (client: RpcClient, deployment: Deployment) => {
  const firstEvent: number[] = [];
  const toFinal: number[] = [];
  const commitToEvent: number[] = [];
  const run = await measured(deployment, [client], async () => {
    await pool(FEATURE_TASKS, CONCURRENCY, async (i) => {
      const { events, began } = await streamOnce(client, `streamed task ${i}`);
      const final = events.at(-1);
      const { state, timestamp } = stateIn(final?.data?.result);
      if (!final || state !== 'TASK_STATE_COMPLETED')
        throw new Error(`stream ${i} ended in ${state ?? JSON.stringify(final?.data?.error ?? final?.data)}`);
      firstEvent.push((events[0]?.t ?? began) - began);
      toFinal.push(performance.now() - began);
      if (timestamp) commitToEvent.push(final.at - Date.parse(timestamp));
    });
    return FEATURE_TASKS;
  });
  return {
    ...run,
    latency: {
      sendToFinalEvent: summarize(toFinal),
      sendToFirstEvent: summarize(firstEvent),
      commitToSseEvent: summarize(commitToEvent),
    },
  };
};

const startWebhookReceiver = async (onBody?: (taskId: string, state: string | undefined) => void) => {
  // taskId → { at, state, timestamp }[]
  const received = new Map<string, Array<{ at: number; state?: string; timestamp?: string }>>();
  let posts = 0;
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = Date.now();
      posts += 1;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const taskId = body?.statusUpdate?.taskId ?? body?.task?.id ?? body?.artifactUpdate?.taskId;
        const { state, timestamp } = stateIn(body);
        if (taskId) received.set(taskId, [...(received.get(taskId) ?? []), { at, state, timestamp }]);
        if (taskId) onBody?.(taskId, state);
      } catch {
        // a malformed body is counted as a post and otherwise ignored
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', () => listening()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`,
    received,
    posts: () => posts,
    stop: () =>
      new Promise<void>((closed) => {
        server.close(() => closed());
        server.closeAllConnections();
      }),
  };
};

const pushPhase = async (client: RpcClient, deployment: Deployment) => {
  const receiver = await startWebhookReceiver();
  const commitToWebhook: number[] = [];
  let missing = 0;
  try {
    const run = await measured(deployment, [client], async () => {
      const ids = await pool(FEATURE_TASKS, CONCURRENCY, async (i) => {
        const answer = await client.send(`pushed task ${i}`, {
          configuration: {
            taskPushNotificationConfig: {
              url: receiver.url,
              authentication: { scheme: 'Bearer', credentials: 'bench-webhook-token' },
            },
          },
        });
        return expectState(answer, 'TASK_STATE_COMPLETED', 'push').id;
      });
      const deadline = Date.now() + 30_000;
      const done = (id: string) =>
        receiver.received.get(id)?.some((event) => event.state === 'TASK_STATE_COMPLETED');
      while (Date.now() < deadline && !ids.every(done)) await sleep(50);
      for (const id of ids) {
        const final = receiver.received.get(id)?.find((event) => event.state === 'TASK_STATE_COMPLETED');
        if (final?.timestamp) commitToWebhook.push(final.at - Date.parse(final.timestamp));
        else missing += 1;
      }
      return FEATURE_TASKS;
    });
    if (receiver.posts() === 0) {
      return {
        failed:
          'the card declares push notifications, but no webhook arrived within 30 s of the tasks completing (are the pusher and deliverer wired into the local stack yet?)',
      };
    }
    return {
      ...run,
      webhookPosts: receiver.posts(),
      missingCompletedWebhooks: missing,
      latency: { commitToWebhook: summarize(commitToWebhook) },
    };
  } finally {
    await receiver.stop();
  }
};

/**
 * The latency floor's parts (decisions 0033, 0047): each target's path traced hop by hop at one
 * client (no queueing), `FLOOR_TASKS` tasks each — blocking, streamed, pushed — and the floor
 * computed from the routes the trace shows (write-through or the stream backstop; the writer's
 * direct fan-out or the pusher), with the stream waits as Lambda has them (bench/lib/latency-floor.ts).
 */
const floorPhase = async (stack: LocalStack, client: RpcClient, trace: HopTrace) => {
  const at = (): number => performance.timeOrigin + performance.now();
  const arrivals = completedWebhookArrivals();
  const receiver = await startWebhookReceiver((taskId, state) => {
    trace.mark('receiver: body', taskId, { ...(state ? { state } : {}) });
    arrivals.onBody(taskId, state);
  });
  trace.marks.splice(0);
  trace.record(true);
  try {
    for (let i = 0; i < FLOOR_TASKS; i++) {
      const began = at();
      const task = expectState(await client.send(`floor ${i}`), 'TASK_STATE_COMPLETED', 'floor');
      trace.mark('client: request', task.id, { at: began });
      trace.mark('client: response', task.id);
    }
    for (let i = 0; i < FLOOR_TASKS; i++) {
      const began = at();
      const { events } = await streamOnce(client, `floor streamed ${i}`);
      let taskId: string | undefined;
      for (const event of events) {
        const result = event.data?.result;
        const id = result?.statusUpdate?.taskId ?? result?.task?.id;
        const { state } = stateIn(result);
        if (!id) continue;
        taskId ??= id;
        if (state) trace.mark('client: frame', id, { state, at: performance.timeOrigin + event.t });
      }
      if (taskId) trace.mark('client: request', taskId, { at: began });
    }
    // As the measured one-client phase: the next task once this one's COMPLETED webhook came, so
    // its deliveries do not share the machine with the next task's create, claim and run.
    for (let i = 0; i < FLOOR_TASKS; i++) {
      const began = at();
      const answer = await client.send(`floor pushed ${i}`, {
        configuration: { taskPushNotificationConfig: { url: receiver.url } },
      });
      const id = expectState(answer, 'TASK_STATE_COMPLETED', 'floor push').id;
      trace.mark('client: request', id, { at: began });
      await arrivals.arrival(id);
    }
  } finally {
    trace.record(false);
    await receiver.stop();
  }
  const marks = [...trace.marks];
  trace.marks.splice(0);
  if (args['trace-out']) writeFileSync(args['trace-out'], `${JSON.stringify(marks)}\n`);
  const intervals = {
    stateStreamMs: stack.pollers.projector.pollIntervalMs,
    journalStreamMs: stack.pollers.pusher?.pollIntervalMs ?? stack.pollers.projector.pollIntervalMs,
  };
  const routes = tracedRoutes(marks, intervals);
  return {
    tasksPerPath: FLOOR_TASKS,
    pollIntervalMs: intervals.stateStreamMs,
    intervals,
    blocking: routeFloor(routes.blocking),
    sse: routeFloor(routes.sse, { label: 'from the status timestamp', skip: STEPS_TO_STATUS_TIMESTAMP }),
    webhook: routeFloor(routes.webhook, {
      label: 'from the status timestamp',
      skip: STEPS_TO_STATUS_TIMESTAMP,
    }),
  };
};

const multiTurnPhase = async (client: RpcClient, deployment: Deployment) => {
  const first: number[] = [];
  const second: number[] = [];
  const run = await measured(deployment, [client], async () => {
    await pool(MULTI_TURN_TASKS, CONCURRENCY, async (i) => {
      const one = await client.send(`multi-turn ${i}`, {
        messageId: `tck-input-required-${crypto.randomUUID()}`,
      });
      const task = expectState(one, 'TASK_STATE_INPUT_REQUIRED', 'multi-turn first turn');
      first.push(one.ms);
      const two = await client.send(`follow-up ${i}`, {
        messageId: `tck-complete-task-${crypto.randomUUID()}`,
        taskId: task.id,
      });
      expectState(two, 'TASK_STATE_COMPLETED', 'multi-turn follow-up');
      second.push(two.ms);
    });
    return MULTI_TURN_TASKS;
  });
  return { ...run, latency: { firstTurn: summarize(first), followUp: summarize(second) } };
};

/**
 * Issue 37's phases (bench/lib/progressive-phases.ts): progressive output at one client with the
 * default cadence (time to the first committed chunk, chunk → SSE, write units per chunk and per
 * task), then the write units of each turn of a conversation of 20 KB messages.
 */
const progressivePhases = async (stack: LocalStack) => {
  const shared = { baseUrl: stack.baseUrl, token: tokens.main, meter };
  log(`progressive output: ${PROGRESSIVE_TASKS} streamed tasks each way at 1 client`);
  const progressive = await progressiveOutputPhase({
    ...shared,
    tasks: PROGRESSIVE_TASKS,
    words: PROGRESSIVE_WORDS,
  }).catch((error: Error) => ({ failed: error.message }));
  log(`conversation: ${CONVERSATION_TURNS} turns of 20 KB messages`);
  const conversation = await conversationPhase({ ...shared, turns: CONVERSATION_TURNS }).catch(
    (error: Error) => ({ failed: error.message }),
  );
  return { progressive, conversation };
};

/** Item sizes of one completed single-turn task, read directly (counted under `bench`). */
const sampleItemSizes = async (stack: LocalStack, taskId: string): Promise<ItemSizes> => {
  const clients = createLocalClients(stack.endpoints);
  try {
    const get = async (table: string, sk: string) => {
      const { Item } = await clients.dynamodb.send(
        new GetItemCommand({ TableName: table, Key: { pk: { S: `TASK#${taskId}` }, sk: { S: sk } } }),
      );
      return Item ?? {};
    };
    const state = stack.resources.tables.State.name;
    const journal = stack.resources.tables.Journal.name;
    const row = await get(state, 'TASK');
    const view = await get(journal, 'VIEW');
    const { Items: events = [] } = await clients.dynamodb.send(
      new QueryCommand({
        TableName: journal,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :evt)',
        ExpressionAttributeValues: { ':pk': { S: `TASK#${taskId}` }, ':evt': { S: 'EVT#' } },
      }),
    );
    // The item as first written, without its content: blobs re-assembled, content dropped, and the
    // rest stored as the adapter would have stored it (decision 0039: headers shared by two blobs once).
    const without = (item: Record<string, AttributeValue>, names: string[]) =>
      marshall(
        packSealedHeaders(
          Object.fromEntries(
            Object.entries(unpackSealedHeaders(unmarshall(item))).filter(([name]) => !names.includes(name)),
          ),
        ),
      );
    const content = ['statusMessage', 'artifacts'];
    // The task row holds its current run (decision 0038): the floor sizes task and run apart and
    // adds them back (bench/lib/floor.ts), so the run counts as its attribute in the row.
    const task = without(row, ['run', 'leaseUntil', 'leaseShard']);
    const run = row.run ? { run: row.run } : await get(state, `RUN#${row.currentRunId?.S ?? ''}`);
    let auditRows = 0;
    let auditRowBytes = 0;
    const audit = stack.resources.tables.Audit?.name;
    if (audit) {
      const { Items = [] } = await clients.dynamodb.send(
        new QueryCommand({
          TableName: audit,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': { S: `TASK#${taskId}` } },
        }),
      );
      auditRows = Items.length;
      auditRowBytes = Items.reduce((total, item) => total + itemSize(item), 0);
    }
    return {
      taskFirst: itemSize(without(task, content)),
      taskFinal: itemSize(task),
      run: itemSize(run),
      viewFirst: itemSize(without(view, content)),
      viewFinal: itemSize(view),
      eventFirst: itemSize(events[0] ?? {}),
      eventFinal: itemSize(events.at(-1) ?? {}),
      auditRows,
      auditRowBytes,
    };
  } finally {
    clients.destroy();
  }
};

/** Stores `count` completed tasks of one owner in the journal, through the journal repository. */
const seedJournal = async (owner: { tenant: string; principal: string }, count: number): Promise<number> => {
  const env = readRuntimeEnv();
  const journal = new DynamoDbJournalRepository(createDocumentClient(), env.journalTableName);
  const codec = new TaskContentCodec(createSealer(env, createDocumentClient()));
  const began = performance.now();
  const expiresAt = Math.floor(Date.now() / 1000) + 30 * 86_400;
  await pool(count, 32, async (i) => {
    const taskId = crypto.randomUUID();
    const at = new Date(Date.now() - (count - i) * 1000).toISOString();
    const sealed = await codec.seal(taskId, {
      statusMessage: {
        messageId: `${taskId}-status`,
        role: 'ROLE_AGENT',
        taskId,
        parts: [{ text: 'Echoed your message.' }],
      },
      artifacts: [
        { artifactId: `${taskId}-artifact-0`, name: 'echo', parts: [{ text: `seeded task ${i}` }] },
      ],
    });
    const task = {
      taskId,
      contextId: crypto.randomUUID(),
      owner,
      profileId: 'default',
      state: 'TASK_STATE_COMPLETED',
      revision: 1,
      currentRunId: crypto.randomUUID(),
      statusTimestamp: at,
      createdAt: at,
      expiresAt,
      sealedStatusMessage: sealed.sealedStatusMessage,
      sealedArtifacts: sealed.sealedArtifacts,
    } as StoredTask;
    const projection = projectRevision(undefined, task);
    if (projection) await journal.putRevision(projection);
  });
  return performance.now() - began;
};

const listTasksSupported = async (client: RpcClient): Promise<{ ok: boolean; detail: string }> => {
  const answer = await client.call<{ tasks?: unknown[] }>('ListTasks', {});
  if (Array.isArray(answer.result?.tasks)) return { ok: true, detail: 'ListTasks answers' };
  return { ok: false, detail: `ListTasks not available: ${answer.error?.code} ${answer.error?.message}` };
};

/**
 * Per-task cost and ListTasks at two sizes of the caller's stored tasks (decision 0034). Both owners
 * are seeded first; each owner's ListTasks is also measured right after its own seeding (the order
 * used before 0034, kept for the record), but the figures judged are taken with both owners stored
 * and their calls alternated in one pool, so both sizes see the same table, JVM heap and machine
 * load. Read units per call come from a separate window per owner.
 */
const scalePhase = async (stack: LocalStack, deployment: Deployment, hasListTasks: boolean) => {
  const sizes = [
    {
      label: `${Math.min(100, SCALE)} stored tasks`,
      stored: Math.min(100, SCALE),
      token: tokens.small,
      principal: 'scale-small',
    },
    { label: `${SCALE} stored tasks`, stored: SCALE, token: tokens.large, principal: 'scale-large' },
  ];
  const clients = sizes.map((size) => new RpcClient(`${stack.baseUrl}/agents/default`, size.token));
  const calls = quick ? 40 : 200;
  const listTasks = (k: number) => async () => {
    const answer = await (clients[k] as RpcClient).call<{ totalSize?: number }>('ListTasks', {});
    if (answer.error) throw new Error(`ListTasks failed: ${answer.error.code} ${answer.error.message}`);
    return answer;
  };
  const seeded: Array<{ seedSeconds: number; afterOwnSeeding?: LatencySummary }> = [];
  for (const [k, size] of sizes.entries()) {
    log(`scale: seeding ${size.stored} tasks for ${size.principal}`);
    const seedMs = await seedJournal({ tenant: 'bench', principal: size.principal }, size.stored);
    await meter.untilIdle();
    let afterOwnSeeding: LatencySummary | undefined;
    if (hasListTasks) {
      for (let i = 0; i < 5; i++) await listTasks(k)();
      afterOwnSeeding = await callLatency(calls / 2, 10, listTasks(k));
    }
    seeded.push({ seedSeconds: round(seedMs / 1000), ...(afterOwnSeeding && { afterOwnSeeding }) });
  }
  const costs: Measured[] = [];
  for (const [k] of sizes.entries()) {
    const client = clients[k] as RpcClient;
    costs.push(
      await measured(deployment, [client], async () => {
        await pool(SCALE_TASKS, CONCURRENCY, async (i) => {
          expectState(await client.send(`scale task ${i}`), 'TASK_STATE_COMPLETED', 'scale');
        });
        return SCALE_TASKS;
      }),
    );
  }
  const listed: Array<{ latency: LatencySummary; readUnitsPerCall: number; totalSize?: number } | undefined> =
    [];
  if (hasListTasks) {
    log('scale: ListTasks, the two owners alternated');
    const samples = sizes.map((): number[] => []);
    const totalSizes: Array<number | undefined> = [];
    await pool(2 * calls, 10, async (i) => {
      const k = i % 2;
      const answer = await listTasks(k)();
      samples[k]?.push(answer.ms);
      totalSizes[k] = answer.result?.totalSize;
    });
    for (const [k] of sizes.entries()) {
      const run = await measured(deployment, [clients[k] as RpcClient], async () => {
        await pool(10, 10, listTasks(k));
        return 10;
      });
      listed.push({
        latency: summarize(samples[k] ?? []),
        readUnitsPerCall: round(run.usage.dynamodbReadUnits, 4),
        totalSize: totalSizes[k],
      });
    }
  }
  return sizes.map((size, k) => {
    const list = listed[k];
    const alone = seeded[k]?.afterOwnSeeding;
    return {
      label: size.label,
      stored: size.stored,
      seedSeconds: seeded[k]?.seedSeconds,
      usdPerMillionTasks: round((costs[k] as Measured).cost.usdPerMillionTasks, 4),
      perTask: (costs[k] as Measured).perTask,
      listTasks: list && { ...list, ...(alone && { latencyAfterOwnSeeding: alone }) },
    };
  });
};

/** `SEQUENTIAL_TASKS` blocking tasks at one client, each expected COMPLETED; their latencies into `into`. */
const sequentialTasks = async (client: RpcClient, what: string, into: number[]): Promise<number> => {
  for (let i = 0; i < SEQUENTIAL_TASKS; i++) {
    const answer = await client.send(`sequential ${i}`);
    expectState(answer, 'TASK_STATE_COMPLETED', what);
    into.push(answer.ms);
  }
  return SEQUENTIAL_TASKS;
};

type RoundSummary = LatencySummary & { throughputPerSecond: number; load: ReturnType<typeof machineLoad> };

/**
 * `SEQUENTIAL_TASKS` blocking tasks at one client from the load generator (bench/README.md, "The
 * load generator"), each expected COMPLETED: their latencies.
 */
const sequentialFromGenerator = async (
  generator: LoadGenerator,
  url: string,
  token: string | undefined,
  what: string,
): Promise<number[]> =>
  (
    await generator.round({
      url,
      ...(token !== undefined && { token }),
      tasks: SEQUENTIAL_TASKS,
      concurrency: 1,
      label: what,
    })
  ).latencies;

/** One round of `TASKS` blocking tasks at `CONCURRENCY` clients from the load generator (decision 0082). */
const offProcessRound = async (
  generator: LoadGenerator,
  url: string,
  token?: string,
  kind: 'blocking' | 'streaming' = 'blocking',
) => {
  const load = machineLoad();
  const result = await generator.round({
    url,
    ...(token !== undefined && { token }),
    tasks: TASKS,
    concurrency: CONCURRENCY,
    label: kind === 'streaming' ? 'streamed single-turn task' : 'single-turn task',
    kind,
  });
  const summary: RoundSummary = {
    ...summarize(result.latencies),
    throughputPerSecond: round(TASKS / (result.wallMs / 1000)),
    load,
  };
  return { ...result, summary };
};

/**
 * CPU this server's local stack and DynamoDB Local spend while the SDK server is measured (its
 * pollers, idle or catching up), per second of the round: what the SDK server shares the machine
 * with that an outside client measuring it alone would not have.
 */
interface BackgroundCpu {
  readonly cpuSecondsPerSecond: number;
}

type AnchorSession =
  | { readonly skipped: string }
  | {
      /** The SDK server's process. */
      readonly pid?: number;
      readonly round: () => Promise<void>;
      readonly finish: () => Promise<Record<string, unknown>>;
      /** Stops the server if `finish` did not (a phase before it failed); idempotent. */
      readonly stop: () => Promise<void>;
    };

/**
 * The anchor under the same load generator (decision 0083): started and warmed by the generator
 * with as many tasks as this server, then one of its rounds right after each of this server's, so
 * both servers' round `r` see the machine of the same minute; `finish` runs its `SEQUENTIAL_TASKS`
 * at one client and stops it. Before each round this server's stack is let go idle (its projector
 * and pushers catch up on the round before), and the CPU it still spends during the SDK server's
 * round is reported beside it (bench/README.md, "The load generator").
 */
const openAnchor = async (install: AnchorInstall, generator: LoadGenerator): Promise<AnchorSession> => {
  if (args['skip-anchor']) return { skipped: 'anchor skipped: --skip-anchor' };
  if (!install.ok) return { skipped: install.reason };
  const started = await startAnchor();
  if (!started.ok) return { skipped: started.reason };
  const { url, pid } = started.server;
  const notTheStack = [generator.pid, ...(pid !== undefined ? [pid] : [])];
  const rounds: RoundSummary[] = [];
  const background: BackgroundCpu[] = [];
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= started.server.stop();
    return stopped;
  };
  try {
    await generator.round({ url, tasks: WARM_UP_TASKS, concurrency: CONCURRENCY, label: 'warm-up' });
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    ...(pid !== undefined && { pid }),
    round: async (): Promise<void> => {
      await meter.untilIdle();
      const before = cpuSeconds(notTheStack);
      const began = performance.now();
      rounds.push((await offProcessRound(generator, url)).summary);
      const after = cpuSeconds(notTheStack);
      const seconds = (performance.now() - began) / 1000;
      background.push({
        cpuSecondsPerSecond: round(
          (after.node - before.node + after.children - before.children) / Math.max(seconds, 0.001),
        ),
      });
      log(
        `anchor round ${rounds.length}/${ROUNDS}: p50 ${round(rounds.at(-1)?.p50 ?? Number.NaN)} ms, this stack's background CPU ${background.at(-1)?.cpuSecondsPerSecond} s/s`,
      );
    },
    finish: async () => {
      try {
        await meter.untilIdle();
        const sequential = await sequentialFromGenerator(generator, url, undefined, 'anchor sequential');
        return {
          rounds,
          latency: medianOfRounds(rounds),
          sequentialLatency: summarize(sequential),
          stackBackgroundCpu: background,
          sdkVersion: sdkVersions().anchor,
          installSeconds: install.seconds,
        };
      } finally {
        await stop();
      }
    },
    stop,
  };
};

/**
 * The arrival of each task's COMPLETED webhook at a receiver fed by `onBody`: `arrival(id)`
 * resolves with its `performance.now()`, or undefined when none came within 10 s. One task awaited
 * at a time (a client that sends its next task once the webhook came).
 */
const completedWebhookArrivals = () => {
  const early = new Map<string, number>();
  let waiting: { readonly id: string; readonly done: (at: number | undefined) => void } | undefined;
  return {
    onBody: (taskId: string, state: string | undefined): void => {
      if (state !== 'TASK_STATE_COMPLETED') return;
      const at = performance.now();
      if (taskId === waiting?.id) waiting.done(at);
      else early.set(taskId, at);
    },
    arrival: (id: string): Promise<number | undefined> => {
      const came = early.get(id);
      if (came !== undefined) return Promise.resolve(came);
      return new Promise((resolveArrival) => {
        const timer = setTimeout(() => done(undefined), 10_000);
        const done = (at: number | undefined): void => {
          clearTimeout(timer);
          waiting = undefined;
          resolveArrival(at);
        };
        waiting = { id, done };
      });
    },
  };
};

/**
 * One client, one task at a time, untraced: SendStreamingMessage → its terminal
 * event, and request → the COMPLETED webhook at the receiver (the next task starts once it came).
 */
const oneClientPhase = async (
  client: RpcClient,
  capabilities: { streaming: boolean; pushNotifications: boolean },
) => {
  const sendToFinal: number[] = [];
  const commitToSse: number[] = [];
  if (capabilities.streaming) {
    for (let i = 0; i < ONE_CLIENT_TASKS; i++) {
      const { events, began } = await streamOnce(client, `one-client streamed ${i}`);
      const final = events.at(-1);
      const { state, timestamp } = stateIn(final?.data?.result);
      if (!final || state !== 'TASK_STATE_COMPLETED')
        throw new Error(`stream ${i} ended in ${state ?? JSON.stringify(final?.data?.error ?? final?.data)}`);
      sendToFinal.push(final.t - began);
      if (timestamp) commitToSse.push(final.at - Date.parse(timestamp));
    }
  }
  const requestToWebhook: number[] = [];
  const commitToWebhook: number[] = [];
  let missing = 0;
  if (capabilities.pushNotifications) {
    const arrivals = completedWebhookArrivals();
    const receiver = await startWebhookReceiver(arrivals.onBody);
    try {
      for (let i = 0; i < ONE_CLIENT_TASKS; i++) {
        const began = performance.now();
        const answer = await client.send(`one-client pushed ${i}`, {
          configuration: { taskPushNotificationConfig: { url: receiver.url } },
        });
        const id = expectState(answer, 'TASK_STATE_COMPLETED', 'one-client push').id;
        const at = await arrivals.arrival(id);
        if (at === undefined) {
          missing += 1;
          continue;
        }
        requestToWebhook.push(at - began);
        const final = receiver.received.get(id)?.find((event) => event.state === 'TASK_STATE_COMPLETED');
        if (final?.timestamp) commitToWebhook.push(final.at - Date.parse(final.timestamp));
      }
    } finally {
      await receiver.stop();
    }
  }
  return {
    tasks: ONE_CLIENT_TASKS,
    sse: capabilities.streaming
      ? { sendToFinalEvent: summarize(sendToFinal), commitToSseEvent: summarize(commitToSse) }
      : { skipped: 'the agent card does not declare streaming' },
    push: capabilities.pushNotifications
      ? {
          requestToWebhook: summarize(requestToWebhook),
          commitToWebhook: summarize(commitToWebhook),
          missingCompletedWebhooks: missing,
        }
      : { skipped: 'the agent card does not declare push notifications' },
  };
};

// ---- main

type Emulators = [
  Awaited<ReturnType<typeof startDynamoDbLocal>>,
  Awaited<ReturnType<typeof startSqsEmulator>>,
  Awaited<ReturnType<typeof startKmsEmulator>>,
];

const startEmulators = (): Promise<Emulators> => {
  log('starting emulators and the local stack');
  return Promise.all([startDynamoDbLocal(), startSqsEmulator(), startKmsEmulator()]);
};

const stopEmulators = async ([dynamodb, sqs, kms]: Emulators): Promise<void> => {
  await Promise.allSettled([dynamodb.stop(), sqs.stop(), kms.stop()]);
};

/** The local stack on the emulators, its card's capabilities read. */
const startStack = async (emulators: {
  readonly dynamodb: Emulators[0];
  readonly sqs: Emulators[1];
  readonly kms: Emulators[2];
}) => {
  const { dynamodb, sqs, kms } = emulators;
  const stack = await startLocalStack({
    port: 0,
    config,
    prefix: 'bench',
    endpoints: {
      dynamodb: dynamodb.endpoint,
      dynamodbStreams: dynamodb.endpoint,
      sqs: sqs.endpoint,
      kms: kms.url,
    },
    log: () => {},
  });
  const main = new RpcClient(`${stack.baseUrl}/agents/default`, tokens.main);
  const card = (await (
    await fetch(`${stack.baseUrl}/agents/default/.well-known/agent-card.json`)
  ).json()) as {
    capabilities?: { streaming?: boolean; pushNotifications?: boolean };
  };
  const capabilities = {
    streaming: card.capabilities?.streaming === true,
    pushNotifications: card.capabilities?.pushNotifications === true,
  };
  log(`capabilities: ${JSON.stringify(capabilities)}`);
  return { stack, main, capabilities };
};

/**
 * This stack warmed up (JIT, connections, data keys) right before its rounds (decision 0087):
 * warmed before the floor's task (which runs in this process) and the SDK server's warm-up, ≈ 70 s
 * without load of its own, its first round was the slowest of every run.
 */
const warmUp = async (generator: LoadGenerator, main: RpcClient): Promise<void> => {
  log(`warm-up: ${WARM_UP_TASKS} tasks at ${CONCURRENCY} clients, from the load generator`);
  await generator.round({
    url: main.url,
    token: tokens.main,
    tasks: WARM_UP_TASKS,
    concurrency: CONCURRENCY,
    label: 'warm-up',
  });
  await meter.untilIdle();
};

/**
 * The floor's task on a DynamoDB Local of its own, started for it and stopped after, in its
 * design shape and in its fewest shape; its items are copies of a task this stack has just
 * completed.
 */
const floorTaskPhase = async (stack: LocalStack, main: RpcClient, sqs: Emulators[1], kms: Emulators[2]) => {
  // The floor's task (decision 0086) on a DynamoDB Local of its own, started for it and stopped
  // after: tables made later in one DynamoDB Local cost more per request the more stream records
  // it holds from before them, so the bench's own would price the floor too high (a lower bound
  // must not). Its items are copies of a task this stack has just completed. Then the same task
  // in its fewest shape, the floor of any design (decision 0090).
  log(
    "the floor's task: the cost floor's requests and the backstops' stream reads, on a fresh DynamoDB Local",
  );
  const sample = await main.send('floor task sample');
  const sampleTask = expectState(sample, 'TASK_STATE_COMPLETED', 'floor task sample');
  const sampler = createDocumentClient();
  const floorItems = await sampleFloorItems(
    sampler,
    {
      state: stack.resources.tables.State.name,
      journal: stack.resources.tables.Journal.name,
      audit: stack.resources.tables.Audit.name,
    },
    sampleTask.id,
    {
      requestBytes: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: sendMessageParams('floor task sample'),
      }).length,
      answerBytes: JSON.stringify({ jsonrpc: '2.0', id: 1, result: sample.result }).length,
    },
  ).finally(() => sampler.destroy());
  // Each shape on a DynamoDB Local of its own, one after the other (decision 0090).
  const runFloorShape = async (shape: FloorTaskShape) => {
    const floorDatabase = await startDynamoDbLocal();
    const run = await runFloorTasks({
      endpoints: {
        dynamodb: floorDatabase.endpoint,
        dynamodbStreams: floorDatabase.endpoint,
        sqs: sqs.endpoint,
        kms: kms.url,
      },
      javaPid: dynamoDbLocalPid(floorDatabase.port),
      items: floorItems,
      tasks: TASKS,
      warmUp: quick ? 60 : WARM_UP_TASKS,
      concurrency: CONCURRENCY,
      prefix: `bench-floor-task-${shape}`,
      shape,
    }).finally(() => floorDatabase.stop());
    log(
      `the floor's task (${shape}): ${round(run.cpuMsPerTask)} ms CPU per task (main thread ${round(run.mainThreadMsPerTask)}, DynamoDB Local ${round(run.javaMsPerTask)}), ${round(run.tasksPerSecond)} tasks/s, ${round(run.streamReads)} stream reads per task`,
    );
    return run;
  };
  const floorRun = await runFloorShape('design');
  const fewestRun = await runFloorShape('fewest');
  await meter.untilIdle();
  return { floorRun, fewestRun };
};

/**
 * Single-turn, blocking, CONCURRENCY clients: ROUNDS unmetered rounds alternating with the SDK
 * server's, then one metered round for the costs, with its cross-checks against the emulators.
 */
const singleTurnPhase = async (
  stack: LocalStack,
  main: RpcClient,
  kms: Emulators[2],
  deployment: Deployment,
  anchorSession: AnchorSession,
  generator: LoadGenerator,
  streaming: boolean,
) => {
  const rounds: RoundSummary[] = [];
  // SendStreamingMessage → terminal event at the same clients, from the same generator, unmetered,
  // right after each blocking round: the two paths side by side (issue 37, item 4).
  const streamingRounds: Array<RoundSummary & { firstEvent: LatencySummary; commitToEvent: LatencySummary }> =
    [];
  let completedIds: string[] = [];
  const cpu = { node: 0, children: 0, mainThread: 0, generator: 0 };
  await meter.untilIdle();
  meter.pause();
  // The load generator's and the SDK server's processes are children of this one: not the stack's CPU.
  const anchorPid = 'pid' in anchorSession ? anchorSession.pid : undefined;
  const notTheStack = [generator.pid, ...(anchorPid !== undefined ? [anchorPid] : [])];
  for (let r = 0; r < ROUNDS; r++) {
    await meter.untilIdle();
    const cpuBefore = cpuSeconds(notTheStack);
    const {
      ids,
      cpuSeconds: generatorSeconds,
      summary,
    } = await offProcessRound(generator, main.url, tokens.main);
    const cpuAfter = cpuSeconds(notTheStack);
    cpu.node += cpuAfter.node - cpuBefore.node;
    cpu.children += cpuAfter.children - cpuBefore.children;
    cpu.mainThread += cpuAfter.mainThread - cpuBefore.mainThread;
    cpu.generator += generatorSeconds;
    rounds.push(summary);
    completedIds = ids;
    log(
      `single-turn round ${r + 1}/${ROUNDS}: p50 ${round(summary.p50)} ms p95 ${round(summary.p95)} ms, ${summary.throughputPerSecond} tasks/s, load ${summary.load.loadavg1}`,
    );
    if (streaming) {
      await meter.untilIdle();
      const streamed = await offProcessRound(generator, main.url, tokens.main, 'streaming');
      streamingRounds.push({
        ...streamed.summary,
        firstEvent: summarize(streamed.firstEventMs ?? []),
        commitToEvent: summarize(streamed.commitToEventMs ?? []),
      });
      log(
        `streamed round ${r + 1}/${ROUNDS}: send → terminal event p50 ${round(streamed.summary.p50)} ms p95 ${round(streamed.summary.p95)} ms`,
      );
    }
    if ('round' in anchorSession) await anchorSession.round();
  }
  // A task whose revisions straddle an hour moves its view between the owner's counter buckets
  // (one transaction more); over an hour that is a few tasks in tens of thousands, over a
  // ten-second round hundreds of times as many. The metered round does not straddle one
  // (decision 0095).
  const roundMs = (TASKS / Math.max(1, rounds.at(-1)?.throughputPerSecond ?? 1)) * 1_000;
  const untilHourMs = 3_600_000 - (Date.now() % 3_600_000);
  if (untilHourMs < 3 * roundMs + 5_000) {
    log(`metered round: waiting ${Math.round(untilHourMs / 1000) + 2} s to start past the hour`);
    await new Promise((wake) => setTimeout(wake, untilHourMs + 2_000));
  }
  meter.resume();
  const kmsBefore = kms.counts();
  const executorBefore = stack.pollers.executor.stats();
  const meteredLatencies: number[] = [];
  const singleTurn = await measured(deployment, [main], async () => {
    const { latencies, ids } = await blockingRound(main, {
      tasks: TASKS,
      concurrency: CONCURRENCY,
      label: 'single-turn task',
    });
    meteredLatencies.push(...latencies);
    completedIds = ids;
    return TASKS;
  });
  const meteredRound = summarize(meteredLatencies);
  log(`single-turn metered round (the costs): p50 ${round(meteredRound.p50)} ms`);
  const kmsAfter = kms.counts();
  const executorAfter = stack.pollers.executor.stats();
  const kmsEmulatorDelta = Object.fromEntries(
    Object.entries(kmsAfter)
      .map(([op, n]) => [op, n - (kmsBefore[op] ?? 0)])
      .filter(([, n]) => n !== 0),
  );
  const kmsMetered = Object.fromEntries(
    Object.entries(singleTurn.delta.requests)
      .flatMap(([, row]) => Object.entries(row).filter(([key]) => key.startsWith('KMS.')))
      .reduce<Map<string, number>>(
        (totals, [key, n]) => totals.set(key.slice(4), (totals.get(key.slice(4)) ?? 0) + n),
        new Map(),
      ),
  );
  const sendMessages = Object.entries(singleTurn.delta.requests).reduce(
    (t, [, row]) => t + (row['SQS.SendMessage'] ?? 0),
    0,
  );
  const crossCheck = {
    kms: {
      metered: kmsMetered,
      emulator: kmsEmulatorDelta,
      agree:
        JSON.stringify(kmsMetered) ===
        JSON.stringify(
          Object.fromEntries(
            Object.entries(kmsEmulatorDelta).map(([k, v]) => [k.replace(/^TrentService\./, ''), v]),
          ),
        ),
    },
    sqs: {
      meteredSendMessage: sendMessages,
      executorPollerReceived: executorAfter.received - executorBefore.received,
      executorPollerDeleted: executorAfter.deleted - executorBefore.deleted,
      agree:
        sendMessages === executorAfter.received - executorBefore.received &&
        sendMessages === executorAfter.deleted - executorBefore.deleted,
    },
    rpcInvocationsVsApiRequests: {
      rpc: singleTurn.delta.invocations.rpc?.count ?? 0,
      apiRequests: singleTurn.apiRequests,
    },
    capacityMissing: singleTurn.delta.capacityMissing,
  };
  log(`single-turn: ${round(singleTurn.cost.usdPerMillionTasks)} USD per million tasks`);
  return { rounds, streamingRounds, cpu, completedIds, singleTurn, meteredRound, crossCheck };
};

/** One client, one task after another: its latency unmetered, its cost from a metered run after it. */
const sequentialPhase = async (generator: LoadGenerator, main: RpcClient, deployment: Deployment) => {
  // Sequential (1 client), as the seed bench/send-latency.ts measured it: the latency without
  // queueing, and the cost with the Lambda durations of an unloaded stack.
  // Its latency unmetered from the load generator (as the SDK server's), its cost from a metered
  // run after it (decision 0080).
  await meter.untilIdle();
  meter.pause();
  const sequential = await sequentialFromGenerator(generator, main.url, tokens.main, 'sequential');
  meter.resume();
  const meteredSequential: number[] = [];
  const sequentialRun = await measured(deployment, [main], () =>
    sequentialTasks(main, 'sequential', meteredSequential),
  );
  return { sequential, meteredSequential, sequentialRun };
};

/** Reads: GetTask, and ListTasks where the agent serves it. */
const readsPhase = async (
  main: RpcClient,
  deployment: Deployment,
  completedIds: readonly string[],
  results: Record<string, unknown>,
) => {
  // 3. Reads: GetTask and ListTasks.
  const getTask = await measured(deployment, [main], async () => {
    const latency = await callLatency(TASKS, CONCURRENCY, (i) =>
      main.call('GetTask', { id: completedIds[i % completedIds.length] }),
    );
    results.getTaskLatency = latency;
    return TASKS;
  });
  const listSupport = await listTasksSupported(main);
  let listTasks: unknown = { skipped: listSupport.detail };
  if (listSupport.ok) {
    const run = await measured(deployment, [main], async () => {
      const latency = await callLatency(TASKS, CONCURRENCY, () => main.call('ListTasks', {}));
      results.listTasksLatency = latency;
      return TASKS;
    });
    listTasks = {
      latency: results.listTasksLatency,
      readUnitsPerCall: run.perTask.readUnits,
      perCall: run.perTask,
    };
  }
  return { getTask, listSupport, listTasks };
};

/**
 * The cost floor of this deployment's single-turn task and the ratio's inputs: the item sizes of a
 * completed task, the floor's usage with the measured durations, the floor's task checked against
 * the requests the floor counts, and the latency floors with the machine's bound.
 */
const costFloorPhase = async (
  stack: LocalStack,
  deployment: Deployment,
  measuredRun: {
    readonly singleTurn: Measured;
    readonly completedIds: readonly string[];
    readonly floorRun: Awaited<ReturnType<typeof runFloorTasks>>;
    readonly fewestRun: Awaited<ReturnType<typeof runFloorTasks>>;
    readonly cpu: { node: number; children: number; mainThread: number; generator: number };
    readonly rounds: readonly RoundSummary[];
    readonly floorParts: Awaited<ReturnType<typeof floorPhase>>;
  },
) => {
  const { singleTurn, completedIds, floorRun, fewestRun, cpu, rounds, floorParts } = measuredRun;
  // 2. The floor and the ratio.
  const sizes = await sampleItemSizes(stack, completedIds[0] as string);
  const floor: Floor = computeFloor(sizes, {
    projectorBatchSize: deployment.functions.projector?.batchSize ?? 100,
  });
  const floorUsage: PerTaskUsage = {
    ...singleTurn.usage,
    dynamodbReadUnits: floor.readUnits,
    dynamodbWriteUnits: floor.writeUnits,
    kmsRequests: floor.kmsRequests,
    sqsStandardRequests: floor.sqsRequests,
    sqsFifoRequests: 0,
    // Same billed duration per task as measured (the blocking wait is the protocol's), floor invocations.
    functions: singleTurn.usage.functions.map((fn) => ({
      ...fn,
      invocations: floor.invocations[fn.functionName] ?? fn.invocations,
    })),
    apiRequests: floor.apiRequests,
  };
  // The floor's task sends what the cost floor counts (bench/lib/floor.ts), or its bound is not the floor's.
  const floorRequests = floor.dynamodbWriteRequests + floor.dynamodbReadRequests;
  if (floorRun.dynamodbRequests !== floorRequests)
    throw new Error(
      `the floor's task sent ${floorRun.dynamodbRequests} DynamoDB requests per task, the floor counts ${floorRequests}`,
    );
  if (fewestRun.dynamodbRequests !== fewestDynamodbRequests)
    throw new Error(
      `the fewest-request task sent ${fewestRun.dynamodbRequests} DynamoDB requests per task, not ${fewestDynamodbRequests}`,
    );
  const floorTask = floorTaskBound(CONCURRENCY, machineLoad().cores, floorRun);
  const fewestTask = floorTaskBound(CONCURRENCY, machineLoad().cores, fewestRun);
  // The clients' own process shares the machine's two cores, not the stack's main thread.
  const cpuPerTask = (cpu.node + cpu.children + cpu.generator) / (TASKS * ROUNDS);
  const latencyFloors = {
    ...floorParts,
    machine: {
      ...machineBound(
        CONCURRENCY,
        machineLoad().cores,
        cpuPerTask,
        cpu.mainThread > 0 ? cpu.mainThread / (TASKS * ROUNDS) : undefined,
      ),
      cpuSeconds: {
        node: round(cpu.node),
        mainThread: round(cpu.mainThread),
        dynamodbLocal: round(cpu.children),
        clients: round(cpu.generator),
      },
      measuredTasksPerSecond: median(rounds.map((r) => r.throughputPerSecond)),
      floorTask,
      fewestTask,
    },
  };

  const floorCost = costPerMillionTasks(floorUsage);
  return { sizes, floor, floorCost, latencyFloors };
};

const main = async () => {
  const deployment = readDeployment();
  const startedAt = new Date().toISOString();
  meter.install();
  // Before the handlers load (they create their SDK clients at import); recording only in floorPhase.
  const trace = installHopTrace();
  trace.record(false);
  // The anchor's own package, installed before anything is measured.
  const anchorInstall: AnchorInstall = args['skip-anchor']
    ? { ok: false, reason: 'anchor skipped: --skip-anchor' }
    : await installAnchor(log);
  const [dynamodb, sqs, kms] = await startEmulators();
  let stack: LocalStack | undefined;
  let stopAnchor: (() => Promise<void>) | undefined;
  // Every round of blocking sends, both servers' warm-ups and one-client runs come from it.
  const generator = startLoadGenerator();
  const results: Record<string, unknown> = {};
  try {
    const started = await startStack({ dynamodb, sqs, kms });
    stack = started.stack;
    const { main, capabilities } = started;

    const { floorRun, fewestRun } = await floorTaskPhase(stack, main, sqs, kms);

    // 1. Single-turn, blocking, CONCURRENCY clients, ROUNDS rounds, unmetered: the latency and
    // the CPU the SDK server is compared with are the product's, without the meter's
    // ReturnConsumedCapacity on every request and its counting (decision 0080). The costs come
    // from one more round after them, metered. The SDK server's rounds alternate with these
    // (decision 0083); the CPU is this server's rounds' alone.
    log('anchor: the a2a-js SDK server on SQLite, started and warmed for the alternating rounds');
    const anchorSession = await openAnchor(anchorInstall, generator);
    if ('stop' in anchorSession) stopAnchor = anchorSession.stop;
    await warmUp(generator, main);
    const { rounds, streamingRounds, cpu, completedIds, singleTurn, meteredRound, crossCheck } =
      await singleTurnPhase(stack, main, kms, deployment, anchorSession, generator, capabilities.streaming);

    const { sequential, meteredSequential, sequentialRun } = await sequentialPhase(
      generator,
      main,
      deployment,
    );

    // The anchor's one-client run, then it stops (side by side: decisions 0047, 0083).
    const anchor = 'finish' in anchorSession ? await anchorSession.finish() : anchorSession;

    // One client: SSE terminal event, request → webhook.
    log('one client: SSE terminal event, request → webhook');
    const oneClient = await oneClientPhase(main, capabilities).catch((error: Error) => ({
      failed: error.message,
    }));

    // The latency floor's parts, one client, traced; and the machine's bound at CONCURRENCY clients.
    log('latency floor: tracing each path at one client');
    const floorParts = await floorPhase(stack, main, trace);

    const { sizes, floor, floorCost, latencyFloors } = await costFloorPhase(stack, deployment, {
      singleTurn,
      completedIds,
      floorRun,
      fewestRun,
      cpu,
      rounds,
      floorParts,
    });

    const { getTask, listSupport, listTasks } = await readsPhase(main, deployment, completedIds, results);

    // 4. Multi-turn.
    log('multi-turn');
    const tck = new RpcClient(`${stack.baseUrl}/agents/tck`, tokens.main);
    const multiTurn = await multiTurnPhase(tck, deployment);

    // Issue 37: progressive output at one client, and the write units of a long conversation.
    const { progressive, conversation } = await progressivePhases(stack);

    // 5. Streaming and push, when the card declares them.
    const streaming = capabilities.streaming
      ? await streamingPhase(main, deployment).catch((error: Error) => ({ failed: error.message }))
      : { skipped: 'the agent card does not declare streaming yet' };
    const push = capabilities.pushNotifications
      ? await pushPhase(main, deployment).catch((error: Error) => ({ failed: error.message }))
      : { skipped: 'the agent card does not declare push notifications yet' };

    // 6. Scale.
    const scale = args['skip-scale']
      ? { skipped: '--skip-scale' }
      : await scalePhase(stack, deployment, listSupport.ok);

    await stack.stop();
    stack = undefined;

    // 8. Cold starts (CPU-bound: after the stack is down).
    let coldStarts: ColdStartResult[] | { skipped: string } = { skipped: '--skip-cold-start' };
    if (!args['skip-cold-start']) {
      log('cold starts');
      coldStarts = await measureColdStarts({ spawns: SPAWNS, log });
    }

    const strip = ({ delta, ...rest }: Measured & { wallMs?: number }) => ({
      ...rest,
      cost: { ...rest.cost, usdPerMillionTasks: round(rest.cost.usdPerMillionTasks, 4) },
      raw: {
        requests: delta.requests,
        capacity: delta.capacity,
        capacityRaw: delta.capacityRaw,
        invocations: delta.invocations,
        logBytes: delta.logBytes,
      },
    });
    // Both capacity modes at a steady rate (decision 0048), from this run's units per table.
    const steady = { tasksPerSecond: 10, targetUtilization: 0.7, minCapacity: 1 };
    const provisioned = provisionedDynamodbCost(
      demandByTable(
        singleTurn.perTask.capacityByTable,
        tableDefinitions.flatMap((table) => [
          table.id,
          ...table.globalSecondaryIndexes.map((index) => `${table.id}/${index.indexName}`),
        ]),
      ),
      steady,
    );
    const report = {
      generatedAt: new Date().toISOString(),
      startedAt,
      command: `npx tsx bench/run.ts ${process.argv.slice(2).join(' ')}`.trim(),
      machine: {
        ...machineLoad(),
        node: process.version,
        nodeOptions: process.env.NODE_OPTIONS?.trim() ?? '',
        platform: `${process.platform}-${process.arch}`,
      },
      parameters: {
        tasks: TASKS,
        concurrency: CONCURRENCY,
        rounds: ROUNDS,
        warmUpTasks: WARM_UP_TASKS,
        scale: SCALE,
        spawns: SPAWNS,
        quick,
      },
      deployment,
      prices: usEast1Prices,
      provisionedPrices: usEast1ProvisionedPrices,
      capabilities,
      singleTurn: {
        ...strip(singleTurn),
        rounds,
        latency: medianOfRounds(rounds),
        streamingRounds,
        ...(streamingRounds.length > 0 && { streamingLatency: medianOfRounds(streamingRounds) }),
        meteredRound,
        sequentialLatency: summarize(sequential),
        meteredSequentialLatency: summarize(meteredSequential),
        sequential: strip(sequentialRun),
        crossCheck,
      },
      floor: {
        ...floor,
        itemSizes: sizes,
        cost: { ...floorCost, usdPerMillionTasks: round(floorCost.usdPerMillionTasks, 4) },
      },
      latencyFloor: latencyFloors,
      ratioToFloor: {
        // Lambda duration is the same on both sides (taken as measured), so it only dilutes the
        // ratio, and it follows the machine's load: the target is judged on the counted items.
        cost: round(countedCost(singleTurn.cost) / countedCost(floorCost)),
        costWithDuration: round(singleTurn.cost.usdPerMillionTasks / floorCost.usdPerMillionTasks),
        writeUnits: round(singleTurn.usage.dynamodbWriteUnits / floor.writeUnits),
        readUnits: round(singleTurn.usage.dynamodbReadUnits / floor.readUnits),
        // The floor has no queue hop (decision 0096): the measured requests, not a ratio.
        sqsRequestsPerTask: round(singleTurn.usage.sqsStandardRequests + singleTurn.usage.sqsFifoRequests),
      },
      getTask: { ...strip(getTask), latency: results.getTaskLatency },
      listTasks,
      multiTurn: { ...strip(multiTurn), latency: multiTurn.latency },
      progressive,
      conversation,
      streaming: 'cost' in streaming ? { ...strip(streaming), latency: streaming.latency } : streaming,
      push:
        'cost' in push
          ? {
              ...strip(push),
              latency: push.latency,
              webhookPosts: push.webhookPosts,
              missingCompletedWebhooks: push.missingCompletedWebhooks,
            }
          : push,
      scale,
      anchor,
      anchorInstall: anchorInstallLine,
      oneClient,
      before: beforeWriteThrough,
      capacityModes: { ...steady, provisioned, modes: capacityModes(singleTurn.cost, provisioned) },
      coldStarts,
    };
    const json = JSON.stringify(report, null, 2);
    writeFileSync(join(REPO_ROOT, 'bench/results/latest.json'), `${json}\n`);
    writeFileSync(join(REPO_ROOT, 'bench/results/latest.md'), renderMarkdown(JSON.parse(json)));
    log('wrote bench/results/latest.json and bench/results/latest.md');
  } finally {
    await stopAnchor?.();
    await generator.stop();
    await stack?.stop();
    await stopEmulators([dynamodb, sqs, kms]);
    meter.uninstall();
  }
};

/** The cold-start phase alone: the table and the load average on stdout. */
const coldStartOnly = async (): Promise<void> => {
  const before = machineLoad();
  const only = args.functions?.split(',').map((name) => name.trim());
  log(`cold starts, ${SPAWNS} spawns each`);
  const coldStarts = await measureColdStarts({ spawns: SPAWNS, log, ...(only ? { only } : {}) });
  const after = machineLoad();
  process.stdout.write(
    `${coldStartTable(coldStarts)}\n\nload average ${before.loadavg1} → ${after.loadavg1} (${after.cores} cores), ${process.version}\n`,
  );
};

/**
 * The one-client phase and the latency floor's traced phase alone: the floor section (with the
 * measured one-client p50s beside it) and the load average on stdout.
 */
const floorOnly = async (): Promise<void> => {
  const trace = installHopTrace();
  trace.record(false);
  try {
    await onWarmStack((stack, started) => floorSectionOn(stack, started, trace));
  } finally {
    trace.uninstall();
  }
};

/**
 * Emulators, the local stack and the load generator, the stack warmed by the generator, for one of
 * the `--only-…` modes; everything stopped after it.
 */
const onWarmStack = async (
  run: (
    stack: LocalStack,
    started: Awaited<ReturnType<typeof startStack>>,
    generator: LoadGenerator,
  ) => Promise<void>,
): Promise<void> => {
  meter.install();
  const emulators = await startEmulators();
  const [dynamodb, sqs, kms] = emulators;
  let stack: LocalStack | undefined;
  const generator = startLoadGenerator();
  try {
    const started = await startStack({ dynamodb, sqs, kms });
    stack = started.stack;
    await warmUp(generator, started.main);
    await run(stack, started, generator);
  } finally {
    await generator.stop();
    await stack?.stop();
    await stopEmulators(emulators);
    meter.uninstall();
  }
};

const floorSectionOn = async (
  stack: LocalStack,
  started: Awaited<ReturnType<typeof startStack>>,
  trace: HopTrace,
): Promise<void> => {
  const before = machineLoad();
  log('one client: SSE terminal event, request → webhook');
  const oneClient = await oneClientPhase(started.main, started.capabilities);
  log('latency floor: tracing each path at one client');
  const latencyFloor = await floorPhase(stack, started.main, trace);
  const after = machineLoad();
  process.stdout.write(
    `${latencyFloorSection({ parameters: { concurrency: CONCURRENCY }, latencyFloor, oneClient })}\n\n` +
      `load average ${before.loadavg1} → ${after.loadavg1} (${after.cores} cores), ${process.version}\n`,
  );
};

/**
 * Issue 37's phases alone on a warmed stack: one blocking and one streamed round at `CONCURRENCY`
 * clients from the load generator, progressive output and the conversation; their section on stdout.
 */
const progressiveOnly = (): Promise<void> =>
  onWarmStack(async (stack, started, generator) => {
    const before = machineLoad();
    const blocking = await offProcessRound(generator, started.main.url, tokens.main);
    await meter.untilIdle();
    const streamed = await offProcessRound(generator, started.main.url, tokens.main, 'streaming');
    await meter.untilIdle();
    const { progressive, conversation } = await progressivePhases(stack);
    const after = machineLoad();
    process.stdout.write(
      `${progressiveSection({
        parameters: { concurrency: CONCURRENCY },
        singleTurn: {
          rounds: [blocking.summary],
          latency: blocking.summary,
          streamingRounds: [
            {
              ...streamed.summary,
              firstEvent: summarize(streamed.firstEventMs ?? []),
              commitToEvent: summarize(streamed.commitToEventMs ?? []),
            },
          ],
          streamingLatency: streamed.summary,
        },
        progressive,
        conversation,
      })}\n\nload average ${before.loadavg1} → ${after.loadavg1} (${after.cores} cores), ${process.version}\n`,
    );
  });

await (args['only-cold-start']
  ? coldStartOnly()
  : args['only-floor']
    ? floorOnly()
    : args['only-progressive']
      ? progressiveOnly()
      : main());
