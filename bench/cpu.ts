/**
 * CPU per single-turn task on the local stack, by process (decision 0035): the same stack and
 * load as `npm run bench`'s single-turn phase (blocking SendMessage → COMPLETED, `--concurrency`
 * closed-loop clients), with the CPU time of the Node process (handlers, pollers, HTTP harness,
 * SQS and KMS emulators and this driver) and of DynamoDB Local's Java process read from
 * /proc/<pid>/stat before and after, and the meter's requests and capacity units per task.
 *
 *   npx tsx bench/cpu.ts [--tasks 300] [--concurrency 20] [--rounds 2] [--warm-up 1000] [--json]
 *   npx tsx bench/cpu.ts --profile /tmp/cpu.cpuprofile   (a V8 profile of the Node side during the
 *                                                           first round, summarised on stderr)
 *
 * Linux only (/proc). Prints one block per round and the medians over rounds.
 */
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ensureDynamoDbLocalJar } from '../infra/local/dynamodb-local.ts';
import { startLocalStack } from '../infra/local/local-stack.ts';
import { benchConfig, benchTokens } from './lib/bench-config.ts';
import { pool, RpcClient, stateOf } from './lib/client.ts';
import { cpuMsOf, dynamoDbLocalPid, mainThreadSeconds } from './lib/cpu.ts';
import { type CpuProfile, renderProfileSummary, summarizeProfile } from './lib/cpu-profile.ts';
import { diffSnapshots, handlerCapacity, Meter, type MeterSnapshot } from './lib/meter.ts';
import { round, summarize } from './lib/stats.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values: args } = parseArgs({
  options: {
    tasks: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
    // DynamoDB Local's C2 compiler is done after about 400 tasks (decision 0087): rounds before it mislead.
    'warm-up': { type: 'string', default: '1000' },
    json: { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
});
const TASKS = Number(args.tasks);
const CONCURRENCY = Number(args.concurrency);
const ROUNDS = Number(args.rounds);
const WARM_UP = Number(args['warm-up']);
const log = (line: string): void => {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
};

const meter = new Meter();

/** Every HTTP request this process sends (SDK clients of handlers and pollers), by target port. */
const httpRequests = new Map<string, number>();
subscribe('http.client.request.start', (message) => {
  const { request } = message as { request: { getHeader(name: string): unknown } };
  const host = String(request.getHeader('host') ?? '');
  const port = host.slice(host.lastIndexOf(':') + 1);
  httpRequests.set(port, (httpRequests.get(port) ?? 0) + 1);
});

/** DynamoDB requests per task by `function: Operation`, and capacity units per task. */
const dynamoDbPerTask = (delta: MeterSnapshot, tasks: number) => {
  const requests: Record<string, number> = {};
  for (const [fn, row] of Object.entries(delta.requests)) {
    if (fn === 'bench') continue;
    for (const [key, value] of Object.entries(row)) {
      if (key.startsWith('DynamoDB')) requests[`${fn}: ${key.slice(key.indexOf('.') + 1)}`] = value / tasks;
    }
  }
  const capacity = handlerCapacity(delta);
  // Failed requests (lost conditions, canceled transactions): billed by AWS like the write they tried.
  const failed: Record<string, number> = {};
  for (const [fn, row] of Object.entries(delta.errors)) {
    for (const [key, value] of Object.entries(row)) {
      if (key.startsWith('DynamoDB') && value > 0)
        failed[`${fn}: ${key.slice(key.indexOf('.') + 1)}`] = round(value / tasks, 3);
    }
  }
  return {
    requests: Object.fromEntries(Object.entries(requests).map(([key, value]) => [key, round(value, 3)])),
    failed,
    requestsTotal: round(
      Object.values(requests).reduce((total, value) => total + value, 0),
      3,
    ),
    readUnits: round(capacity.read / tasks, 3),
    writeUnits: round(capacity.write / tasks, 3),
  };
};

interface RoundResult {
  readonly round: number;
  readonly load: number;
  readonly cpuMsPerTask: {
    readonly node: number;
    readonly nodeMainThread: number;
    readonly java: number;
    readonly total: number;
  };
  readonly tasksPerSecond: number;
  readonly p50: number;
  readonly p95: number;
  readonly dynamodb: ReturnType<typeof dynamoDbPerTask>;
  readonly invocations: Record<string, { perTask: number; meanMs: number }>;
  readonly httpRequestsPerTask: Record<string, number>;
  readonly requestsPerTask: Record<string, number>;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

const main = async () => {
  meter.install();
  // The local stack starts (and stops) its own emulators, as `npm start` does.
  await ensureDynamoDbLocalJar();
  const stack = await startLocalStack({ port: 0, config: benchConfig, prefix: 'bench-cpu', log: () => {} });
  const portOf = (url: string): string => new URL(url).port;
  const javaPid = dynamoDbLocalPid(Number(portOf(stack.endpoints.dynamodb)));
  const portNames = new Map([
    [portOf(stack.endpoints.dynamodb), 'dynamodb-local'],
    [portOf(stack.endpoints.sqs), 'sqs-emulator'],
    [portOf(stack.endpoints.kms), 'kms-emulator'],
  ]);
  const client = new RpcClient(`${stack.baseUrl}/agents/default`, benchTokens.main);
  const send = async (i: number, label: string): Promise<number> => {
    const answer = await client.send(`${label} ${i}`);
    if (stateOf(answer) !== 'TASK_STATE_COMPLETED') {
      throw new Error(`${label} ${i}: ${stateOf(answer) ?? JSON.stringify(answer.error)}`);
    }
    return answer.ms;
  };
  const results: RoundResult[] = [];
  try {
    log(`warm-up (java pid ${javaPid})`);
    await pool(WARM_UP, CONCURRENCY, (i) => send(i, 'warm-up'));
    await meter.untilIdle();
    for (let r = 0; r < ROUNDS; r++) {
      const load = round(loadavg()[0] ?? 0);
      const before = meter.snapshot();
      const httpBefore = new Map(httpRequests);
      const profiler = r === 0 && args.profile ? new Session() : undefined;
      if (profiler) {
        profiler.connect();
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
      }
      const node0 = cpuMsOf('self');
      const main0 = mainThreadSeconds();
      const java0 = cpuMsOf(javaPid);
      const began = performance.now();
      const latencies = await pool(TASKS, CONCURRENCY, (i) => send(i, 'cpu'));
      const wallMs = performance.now() - began;
      // Work the tasks caused after their responses (projection of the last ones, pollers' tails).
      await meter.untilIdle();
      const node = cpuMsOf('self') - node0;
      const mainThread = (mainThreadSeconds() - main0) * 1000;
      const java = cpuMsOf(javaPid) - java0;
      const delta = diffSnapshots(meter.snapshot(), before);
      if (profiler && args.profile) {
        const { profile } = await profiler.post('Profiler.stop');
        profiler.disconnect();
        writeFileSync(args.profile, JSON.stringify(profile));
        log(`profile written to ${args.profile}`);
        process.stderr.write(
          `${renderProfileSummary(summarizeProfile(profile as unknown as CpuProfile), TASKS)}\n`,
        );
      }
      const latency = summarize(latencies);
      const invocations = Object.fromEntries(
        Object.entries(delta.invocations).map(([fn, row]) => [
          fn,
          { perTask: round(row.count / TASKS, 3), meanMs: round(row.durationMs / row.count) },
        ]),
      );
      const result: RoundResult = {
        round: r + 1,
        load,
        cpuMsPerTask: {
          node: round(node / TASKS, 2),
          nodeMainThread: round(mainThread / TASKS, 2),
          java: round(java / TASKS, 2),
          total: round((node + java) / TASKS, 2),
        },
        tasksPerSecond: round(TASKS / (wallMs / 1000)),
        p50: round(latency.p50),
        p95: round(latency.p95),
        dynamodb: dynamoDbPerTask(delta, TASKS),
        invocations,
        httpRequestsPerTask: Object.fromEntries(
          [...httpRequests].map(([port, count]) => [
            portNames.get(port) ?? port,
            round((count - (httpBefore.get(port) ?? 0)) / TASKS, 3),
          ]),
        ),
        requestsPerTask: Object.fromEntries(
          Object.entries(delta.requests).flatMap(([fn, row]) =>
            Object.entries(row).map(([key, value]) => [`${fn}: ${key}`, round(value / TASKS, 3)]),
          ),
        ),
      };
      results.push(result);
      log(
        `round ${r + 1}/${ROUNDS}: CPU ms/task node ${result.cpuMsPerTask.node} (main thread ${result.cpuMsPerTask.nodeMainThread}) java ${result.cpuMsPerTask.java} total ${result.cpuMsPerTask.total}; ${result.tasksPerSecond} tasks/s; p50 ${result.p50} p95 ${result.p95} ms; RRU ${result.dynamodb.readUnits} WRU ${result.dynamodb.writeUnits} requests ${result.dynamodb.requestsTotal}/task; load ${load}`,
      );
    }
  } finally {
    await stack.stop();
    meter.uninstall();
  }
  const pick = (get: (result: RoundResult) => number) => round(median(results.map(get)), 2);
  const summary = {
    tasks: TASKS,
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    median: {
      nodeCpuMsPerTask: pick((r) => r.cpuMsPerTask.node),
      nodeMainThreadCpuMsPerTask: pick((r) => r.cpuMsPerTask.nodeMainThread),
      javaCpuMsPerTask: pick((r) => r.cpuMsPerTask.java),
      totalCpuMsPerTask: pick((r) => r.cpuMsPerTask.total),
      tasksPerSecond: pick((r) => r.tasksPerSecond),
      p50: pick((r) => r.p50),
      p95: pick((r) => r.p95),
      readUnits: pick((r) => r.dynamodb.readUnits),
      writeUnits: pick((r) => r.dynamodb.writeUnits),
      dynamodbRequests: pick((r) => r.dynamodb.requestsTotal),
    },
    last: results.at(-1),
  };
  process.stdout.write(`${JSON.stringify(args.json ? { summary, results } : summary, null, 2)}\n`);
};

await main();
