/**
 * Commit → webhook latency on the local stack (docs/decisions/0009).
 *
 * `--tasks` SendMessage calls (`returnImmediately`, `--concurrency` at a time), each with an inline
 * push config pointing at a node:http receiver on loopback. For every statusUpdate POST the commit
 * time is the revision's `status.timestamp` (set by the committing writer just before its
 * transaction) and the receive time is when the receiver has the body. The path measured: the
 * writer's commit → its write-through into the journal → its direct fan-out to the FIFO queue
 * (decisions 0043, 0045, 0061) → deliverer → POST; a revision whose writer does not fan out, or
 * whose direct fan-out failed, goes journal stream → pusher → FIFO queue instead.
 *
 * It also prints what the deliverer writes (the SDK meter of `npm run bench`): one delivery-record
 * append per attempt (decision 0025), in write units per delivered revision.
 *
 * `npm run bench`'s two webhook figures, without the rest of the bench (bench/run.ts: its push phase
 * and its one-client phase): `--blocking` sends a blocking SendMessage (each client waits for
 * COMPLETED, as the bench's clients do) instead of `returnImmediately`; `--one-at-a-time` also
 * waits for the task's COMPLETED POST before the client's next request and prints request →
 * webhook COMPLETED.
 *   commit → webhook at 20 clients:  --tasks 200 --concurrency 20 --blocking
 *   request → webhook at 1 client:   --tasks 50 --concurrency 1 --blocking --one-at-a-time
 *
 * `--trace` traces every task hop by hop (bench/lib/hop-trace.ts) and prints, for the COMPLETED
 * revision, the route each task took and the median of each step (bench/lib/latency-floor.ts
 * `webhookRoute`, the floor's own reading of the trace, here at any concurrency), then the FIFO step
 * split where the group's previous message became final (its delivery record written), the
 * event loop's delay and the deliverer's requests (decision 0074).
 *
 * `--warmup N` first drives N tasks the same way, unmeasured and untraced (DynamoDB Local's JIT
 * warms up: without it the CPU per task is several times the bench's, decision 0087).
 *
 * Run: npx tsx bench/webhook-latency.ts [--tasks 200] [--concurrency 20] [--deliverers 64] [--blocking] [--one-at-a-time] [--trace] [--warmup 0]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { ensureDynamoDbLocalJar } from '../infra/local/dynamodb-local.ts';
import { startLocalStack } from '../infra/local/local-stack.ts';
import { defaultConfig } from '../shared/config/config.ts';
import { startWebhookReceiver } from '../test/support/webhook-receiver.ts';
import { cpuSeconds } from './lib/cpu.ts';
import { installHopTrace } from './lib/hop-trace.ts';
import { Meter } from './lib/meter.ts';
import { printWebhookTrace } from './lib/webhook-trace.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '20' },
    deliverers: { type: 'string', default: '64' },
    blocking: { type: 'boolean', default: false },
    'one-at-a-time': { type: 'boolean', default: false },
    trace: { type: 'boolean', default: false },
    warmup: { type: 'string', default: '0' },
  },
});
const measured = Number(values.tasks);
const warmup = Number(values.warmup);
let tasks = measured;
const concurrency = Number(values.concurrency);

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

const summarize = (label: string, samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(
    `${label}: n=${sorted.length} p50=${percentile(sorted, 50)} ms p95=${percentile(sorted, 95)} ms max=${sorted.at(-1)} ms`,
  );
};

type StatusBody = { statusUpdate?: { taskId: string; status: { state: string; timestamp: string } } };

await ensureDynamoDbLocalJar();
// Installed before the handler modules load, so their SDK clients are counted (bench/lib/meter.ts).
const meter = new Meter();
meter.install();
const trace = values.trace ? installHopTrace() : undefined;
const traceNow = (): number => performance.timeOrigin + performance.now();
const stack = await startLocalStack({
  port: 0,
  config: defaultConfig,
  prefix: 'bench-webhook',
  delivererConcurrency: Number(values.deliverers),
  log: () => {},
});
const receiver = await startWebhookReceiver({
  respond: (post) => {
    const update = (post.body as StatusBody).statusUpdate;
    if (update) trace?.mark('receiver: body', update.taskId, { state: update.status.state, at: traceNow() });
    return 200;
  },
});
try {
  const completedAt = (taskId: string) =>
    receiver.posts.find((post) => {
      const update = (post.body as StatusBody).statusUpdate;
      return update?.taskId === taskId && update.status.state === 'TASK_STATE_COMPLETED';
    })?.at;
  let next = 0;
  const taskIds = new Set<string>();
  const requestToCompleted: number[] = [];
  const worker = async () => {
    while (next < tasks) {
      next += 1;
      const requestedAt = Date.now();
      const tracedAt = traceNow();
      const response = await fetch(`${stack.baseUrl}/agents/default`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: next,
          method: 'SendMessage',
          params: {
            message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'latency' }] },
            configuration: {
              ...(values.blocking ? {} : { returnImmediately: true }),
              taskPushNotificationConfig: { url: `${receiver.url}/hook` },
            },
          },
        }),
      });
      const body = (await response.json()) as { result?: { task?: { id: string } } };
      const taskId = body.result?.task?.id;
      if (taskId === undefined) continue;
      taskIds.add(taskId);
      trace?.mark('client: request', taskId, { at: tracedAt });
      if (!values['one-at-a-time']) continue;
      await receiver.waitFor(() => completedAt(taskId) !== undefined, 30_000);
      requestToCompleted.push((completedAt(taskId) ?? Number.NaN) - requestedAt);
    }
  };
  const done = () =>
    new Set(
      receiver.posts
        .map((post) => (post.body as StatusBody).statusUpdate)
        .filter((update) => update?.status.state === 'TASK_STATE_COMPLETED')
        .map((update) => update?.taskId),
    ).size;
  const drive = async (count: number) => {
    next = 0;
    tasks = count;
    taskIds.clear();
    await Promise.all(Array.from({ length: concurrency }, worker));
    await receiver.waitFor(() => done() >= taskIds.size, 300_000);
  };
  if (warmup > 0) {
    meter.pause();
    trace?.record(false);
    await drive(warmup);
    await meter.untilIdle();
    receiver.posts.splice(0);
    requestToCompleted.splice(0);
    meter.resume();
    trace?.record(true);
  }
  const began = performance.now();
  const cpuBefore = cpuSeconds();
  await drive(measured);
  const elapsedS = (performance.now() - began) / 1000;
  const cpuAfter = cpuSeconds();

  const all: number[] = [];
  const completedOnly: number[] = [];
  for (const post of receiver.posts) {
    const update = (post.body as StatusBody).statusUpdate;
    if (!update) continue;
    const latency = post.at - Date.parse(update.status.timestamp);
    all.push(latency);
    if (update.status.state === 'TASK_STATE_COMPLETED') completedOnly.push(latency);
  }
  console.log(
    `${taskIds.size} tasks, ${receiver.posts.length} POSTs in ${elapsedS.toFixed(1)} s (concurrency ${concurrency}, ` +
      `deliverers ${values.deliverers}${values.blocking ? ', blocking' : ''}${values['one-at-a-time'] ? ', one at a time' : ''})`,
  );
  const node = cpuAfter.node - cpuBefore.node;
  const dynamodb = cpuAfter.children - cpuBefore.children;
  console.log(
    `CPU: this process ${node.toFixed(1)} s, DynamoDB Local ${dynamodb.toFixed(1)} s: ${(((node + dynamodb) / taskIds.size) * 1000).toFixed(1)} ms per task`,
  );
  summarize('commit → webhook, every statusUpdate', all);
  summarize('commit → webhook, COMPLETED', completedOnly);
  if (values['one-at-a-time']) summarize('request → webhook COMPLETED', requestToCompleted);
  const deliverer = meter.snapshot();
  const sum = (rows: Record<string, { read: number; write: number }> | undefined, key: 'read' | 'write') =>
    Object.values(rows ?? {}).reduce((total, units) => total + units[key], 0);
  const revisions = all.length;
  const writes = sum(deliverer.capacity.deliverer, 'write');
  const appends = deliverer.requests.deliverer?.['DynamoDB.UpdateItem'] ?? 0;
  console.log(
    `deliverer: ${writes} WRU in ${appends} delivery-record appends for ${revisions} delivered revisions ` +
      `(${(writes / Math.max(1, revisions)).toFixed(2)} WRU per delivered revision, ` +
      `${(sum(deliverer.capacity.deliverer, 'read') / Math.max(1, revisions)).toFixed(2)} RRU)`,
  );
  // Requests per task by function: the webhook path's own share (pusher, deliverer) beside the rest.
  const perTask = Object.entries(deliverer.requests)
    .filter(([fn]) => fn !== 'bench')
    .map(([fn, row]) => {
      const total = Object.values(row).reduce((sum, value) => sum + value, 0);
      const parts = Object.entries(row)
        .map(([key, value]) => `${key.slice(key.indexOf('.') + 1)} ${(value / taskIds.size).toFixed(2)}`)
        .join(', ');
      return `${fn} ${(total / taskIds.size).toFixed(2)} (${parts})`;
    });
  console.log(`requests per task: ${perTask.join('; ')}`);
  if (trace) {
    trace.record(false);
    printWebhookTrace(trace, {
      stateStreamMs: stack.pollers.projector.pollIntervalMs,
      journalStreamMs: stack.pollers.pusher?.pollIntervalMs ?? stack.pollers.projector.pollIntervalMs,
    });
  }
} finally {
  trace?.uninstall();
  meter.uninstall();
  await receiver.close();
  await stack.stop();
}
