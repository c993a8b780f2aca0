/**
 * Where the time goes, hop by hop, on the local stack (decision 0028). Opt-in tracing
 * (bench/lib/hop-trace.ts) of:
 *
 * - `--mode blocking`: `--tasks` blocking SendMessage calls, one client, one after another:
 *   request → create commit → run queue send → executor receive → claim commit → complete commit →
 *   projector receives the COMPLETED record → journal view put → the rpc's journal wait reads it →
 *   response.
 * - `--mode webhook`: `--tasks` SendMessage calls (`returnImmediately`, `--concurrency` at a time)
 *   with an inline push config; per (task, revision): commit → projector receive → journal event
 *   put → pusher receive → delivery queue send → deliverer receive → POST start → receiver has it →
 *   POST response.
 * - `--mode sse`: `--tasks` SendStreamingMessage streams, `--concurrency` at a time; per (task,
 *   revision): commit → projector receive → journal event put → the stream's journal read → frame.
 *
 * Prints the median of each hop and from the first hop, with the event loop's utilisation (the
 * whole local stack but DynamoDB Local runs in this one Node process) and the load average.
 *
 * Run: npx tsx bench/hops.ts --mode blocking|webhook|sse [--tasks 40] [--concurrency 10]
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ensureDynamoDbLocalJar } from '../infra/local/dynamodb-local.ts';
import { observeInvocations } from '../infra/local/lambda-invocation.ts';
import { startLocalStack } from '../infra/local/local-stack.ts';
import { defaultConfig } from '../shared/config/config.ts';
import { cpuSeconds } from './lib/cpu.ts';
import { hopMedians, installHopTrace, printHops, revisionKey } from './lib/hop-trace.ts';
import { summarize } from './lib/stats.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'blocking' },
    tasks: { type: 'string', default: '40' },
    concurrency: { type: 'string', default: '10' },
  },
});
const mode = values.mode as 'blocking' | 'webhook' | 'sse';
const tasks = Number(values.tasks);
const concurrency = mode === 'blocking' ? 1 : Number(values.concurrency);
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

const trace = installHopTrace();
const invocations = new Map<string, { records: number[]; durations: number[] }>();
const stopObserving = observeInvocations(({ functionName, records, durationMs }) => {
  const row = invocations.get(functionName) ?? { records: [], durations: [] };
  row.records.push(records);
  row.durations.push(durationMs);
  invocations.set(functionName, row);
});
await ensureDynamoDbLocalJar();
const stack = await startLocalStack({
  port: 0,
  config: defaultConfig,
  prefix: `bench-hops-${mode}`,
  log: () => {},
});

/**
 * A webhook receiver that remembers the client port of every POST, in arrival order (to match the
 * deliverer's requests); statusUpdates also by task and state.
 */
const received: Array<{ port: number; at: number; taskId?: string; state?: string }> = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    const update = (
      JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        statusUpdate?: { taskId: string; status: { state: string } };
      }
    ).statusUpdate;
    received.push({
      port: req.socket.remotePort ?? -1,
      at,
      ...(update ? { taskId: update.taskId, state: update.status.state } : {}),
    });
    res.end();
  });
});
await new Promise<void>((listening) => receiver.listen(0, '127.0.0.1', () => listening()));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const request = (method: string, params: Record<string, unknown>) =>
  fetch(`${stack.baseUrl}/agents/default`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
  });
const message = () => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'latency' }] });

const end2end: number[] = [];
const one = async (): Promise<void> => {
  const began = performance.timeOrigin + performance.now();
  if (mode === 'sse') {
    const response = await request('SendStreamingMessage', { message: message() });
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body ?? []) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      for (let cut = buffer.indexOf('\n\n'); cut !== -1; cut = buffer.indexOf('\n\n')) {
        const data = buffer
          .slice(0, cut)
          .split('\n')
          .find((line) => line.startsWith('data: '));
        buffer = buffer.slice(cut + 2);
        const update = data
          ? (
              JSON.parse(data.slice(6)) as {
                result?: { statusUpdate?: { taskId: string; status: { state: string } } };
              }
            ).result?.statusUpdate
          : undefined;
        if (update) trace.mark('client: frame', update.taskId, { state: update.status.state });
      }
    }
    return;
  }
  const response = await request('SendMessage', {
    message: message(),
    ...(mode === 'webhook'
      ? { configuration: { returnImmediately: true, taskPushNotificationConfig: { url: hookUrl } } }
      : {}),
  });
  const body = (await response.json()) as { result?: { task?: { id: string; status: { state: string } } } };
  const task = body.result?.task;
  if (!task) throw new Error(`no task: ${JSON.stringify(body)}`);
  trace.mark('client: request', task.id, { at: began });
  trace.mark('client: response', task.id, { state: task.status.state });
  if (mode === 'blocking') end2end.push(performance.timeOrigin + performance.now() - began);
};

const cpuBefore = cpuSeconds();
const loadBefore = load();
const began = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < tasks) {
      next += 1;
      await one();
    }
  }),
);
if (mode === 'webhook') {
  const deadline = Date.now() + 300_000;
  const completed = () =>
    new Set(received.filter((post) => post.state === 'TASK_STATE_COMPLETED').map((p) => p.taskId));
  while (completed().size < tasks && Date.now() < deadline) await new Promise((wake) => setTimeout(wake, 50));
  const flights: number[] = [];
  for (const post of received) {
    const times = trace.takePost(post.port);
    if (post.taskId === undefined) continue;
    trace.mark('receiver: body', post.taskId, { state: post.state, at: post.at });
    if (!times) continue;
    flights.push(post.at - times.start);
    trace.mark('deliverer: POST start', post.taskId, { state: post.state, at: times.start });
    if (times.response !== undefined)
      trace.mark('deliverer: POST response', post.taskId, { state: post.state, at: times.response });
  }
  const flight = summarize(flights);
  const unanswered = trace.posts.filter((post) => post.response === undefined).length;
  console.log(
    `webhook POSTs: ${trace.posts.length} started, ${received.length} received, ${unanswered} without a response; ` +
      `start → receiver p50 ${flight.p50.toFixed(0)} ms p95 ${flight.p95.toFixed(0)} ms max ${flight.max.toFixed(0)} ms`,
  );
}
const elapsedS = (performance.now() - began) / 1000;
const loop = trace.eventLoop();
const cpuAfter = cpuSeconds();
console.log(
  `CPU: node ${(cpuAfter.node - cpuBefore.node).toFixed(1)} s, DynamoDB Local ${(cpuAfter.children - cpuBefore.children).toFixed(1)} s, wall ${elapsedS.toFixed(1)} s`,
);
console.log(
  `${mode}: ${tasks} tasks at ${concurrency} in ${elapsedS.toFixed(1)} s; load ${loadBefore} → ${load()}; ` +
    `event loop utilisation ${(loop.utilization * 100).toFixed(0)} %, delay p50 ${loop.delayP50.toFixed(1)} ms p99 ${loop.delayP99.toFixed(1)} ms`,
);

const byRevision = revisionKey(trace.marks);

if (mode === 'blocking') {
  const s = summarize(end2end);
  console.log(`blocking SendMessage: p50 ${s.p50.toFixed(0)} ms p95 ${s.p95.toFixed(0)} ms (n=${s.n})`);
  printHops(
    'blocking SendMessage, per task (ms)',
    hopMedians(
      trace.marks,
      [
        { hop: 'client: request' },
        { hop: 'rpc: commit', state: 'TASK_STATE_SUBMITTED' },
        { hop: 'rpc: queue send' },
        { hop: 'executor: receive' },
        { hop: 'executor: commit', state: 'TASK_STATE_WORKING' },
        { hop: 'executor: commit', state: 'TASK_STATE_COMPLETED' },
        { hop: 'projector: receive', state: 'TASK_STATE_COMPLETED' },
        { hop: 'projector: view put', state: 'TASK_STATE_COMPLETED' },
        { hop: 'rpc: view read', state: 'TASK_STATE_COMPLETED' },
        { hop: 'client: response' },
      ],
      (mark) => mark.taskId,
    ),
  );
} else {
  const tail =
    mode === 'webhook'
      ? [
          { hop: 'pusher: receive' },
          { hop: 'pusher: queue send' },
          { hop: 'deliverer: receive' },
          { hop: 'deliverer: POST start' },
          { hop: 'receiver: body' },
          { hop: 'deliverer: POST response' },
        ]
      : [{ hop: 'rpc: event read' }, { hop: 'client: frame' }];
  printHops(
    `${mode}, per (task, revision) of the executor's commits (ms)`,
    hopMedians(
      trace.marks.filter((mark) => !mark.state || mark.state !== 'TASK_STATE_SUBMITTED'),
      [
        { hop: 'executor: commit' },
        { hop: 'projector: receive' },
        // Both SSE and the pusher read the event (the view put follows it and is not on their path).
        { hop: 'projector: event put' },
        ...tail,
      ],
      byRevision,
    ),
  );
}
console.log('\ninvocations: function, count, records per invocation p50/max, duration p50/p95 ms');
for (const [name, row] of invocations) {
  const records = summarize(row.records);
  const durations = summarize(row.durations);
  console.log(
    `  ${name.padEnd(10)} ${String(row.records.length).padStart(6)} ${String(records.p50).padStart(5)}/${String(records.max).padEnd(5)} ${durations.p50.toFixed(0).padStart(7)}/${durations.p95.toFixed(0)}`,
  );
}
stopObserving();
console.log('\nSDK requests (handlers only): per task, duration p50/p95 ms');
for (const [name, durations] of [...trace.requests].sort((a, b) => b[1].length - a[1].length)) {
  const took = summarize(durations);
  if (!name.startsWith('bench '))
    console.log(
      `  ${name.padEnd(44)} ${(durations.length / tasks).toFixed(2).padStart(8)} ${took.p50.toFixed(0).padStart(7)}/${took.p95.toFixed(0)}`,
    );
}
await new Promise<void>((closed) => {
  receiver.close(() => closed());
  receiver.closeAllConnections();
});
trace.uninstall();
await stack.stop();
