/**
 * Blocking SendMessage latency on the local stack: each request returns COMPLETED, measured at
 * the client from request start to response end. Sequential first (one client), then concurrent.
 * Run: npx tsx bench/send-latency.ts [--tasks 100] [--concurrency 20]
 */
import { parseArgs } from 'node:util';
import { startLocalStack } from '../infra/local/local-stack.ts';
import { ensureDynamoDbLocalJar } from '../infra/local/dynamodb-local.ts';
import { defaultConfig } from '../shared/config/config.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values } = parseArgs({
  options: { tasks: { type: 'string', default: '100' }, concurrency: { type: 'string', default: '20' } },
});
const tasks = Number(values.tasks);
const concurrency = Number(values.concurrency);

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

const summarize = (label: string, samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  const stats = { n: sorted.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) };
  console.log(`${label}: n=${stats.n} p50=${stats.p50.toFixed(1)} ms p95=${stats.p95.toFixed(1)} ms p99=${stats.p99.toFixed(1)} ms`);
  return stats;
};

await ensureDynamoDbLocalJar();
const stack = await startLocalStack({ port: 0, config: defaultConfig, prefix: 'bench-send', log: () => {} });
const url = `${stack.baseUrl}/agents/default`;

const sendOnce = async (i: number): Promise<number> => {
  const began = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: i,
      method: 'SendMessage',
      params: { message: { messageId: `bench-${i}-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: `task ${i}` }] } },
    }),
  });
  const body = (await response.json()) as { result?: { task?: { status?: { state?: string } } } };
  const elapsed = performance.now() - began;
  if (body.result?.task?.status?.state !== 'TASK_STATE_COMPLETED') throw new Error(`task ${i} did not complete`);
  return elapsed;
};

try {
  for (let i = 0; i < 10; i++) await sendOnce(-1 - i); // warm-up: JIT, connections, data keys
  const sequential: number[] = [];
  for (let i = 0; i < tasks; i++) sequential.push(await sendOnce(i));
  const seq = summarize('blocking SendMessage, 1 client', sequential);

  const concurrent: number[] = [];
  let next = 0;
  const began = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tasks * 2) {
        const i = tasks + next++;
        concurrent.push(await sendOnce(i));
      }
    }),
  );
  const wall = performance.now() - began;
  const conc = summarize(`blocking SendMessage, ${concurrency} clients`, concurrent);
  console.log(`throughput: ${((tasks * 2) / (wall / 1000)).toFixed(1)} tasks/s`);
  console.log(JSON.stringify({ sequential: seq, concurrent: conc, throughputPerSecond: (tasks * 2) / (wall / 1000) }));
} finally {
  await stack.stop();
}
