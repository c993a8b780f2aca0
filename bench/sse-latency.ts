/**
 * Commit → SSE event latency on the local stack (docs/decisions/0008), and the journal reads an SSE
 * stream costs per minute.
 *
 * Latency: SendStreamingMessage streams of `--tasks` tasks, `--concurrency` at a time; for every
 * statusUpdate the commit time is the revision's `status.timestamp` (set by the committing writer)
 * and the receive time is when its SSE frame arrives at the client.
 *
 * Cost: the stream use case over a counting in-memory journal with a simulated clock (no waiting):
 * an idle minute, and a minute in which a revision lands every 10 s.
 *
 * Run: npx tsx bench/sse-latency.ts [--tasks 200] [--concurrency 10]
 */
import { parseArgs } from 'node:util';
import { ensureDynamoDbLocalJar } from '../infra/local/dynamodb-local.ts';
import { startLocalStack } from '../infra/local/local-stack.ts';
import { streamTask } from '../shared/app/tasks/stream-task.ts';
import { defaultConfig } from '../shared/config/config.ts';
import type { JournalRepository } from '../shared/domain/ports.ts';
import type { JournalEvent, JournalView } from '../shared/domain/projection.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values } = parseArgs({
  options: { tasks: { type: 'string', default: '200' }, concurrency: { type: 'string', default: '10' } },
});
const tasks = Number(values.tasks);
const concurrency = Number(values.concurrency);

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

const summarize = (label: string, samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  const stats = {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted.at(-1) ?? Number.NaN,
  };
  console.log(`${label}: n=${stats.n} p50=${stats.p50} ms p95=${stats.p95} ms max=${stats.max} ms`);
  return stats;
};

// ---------------------------------------------------------------------------------------------
// Latency on the local stack
// ---------------------------------------------------------------------------------------------

interface Sample {
  readonly state: string;
  readonly latencyMs: number;
}

const streamOnce = async (url: string, i: number): Promise<Sample[]> => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: i,
      method: 'SendStreamingMessage',
      params: {
        message: { messageId: `bench-${i}-${Date.now()}`, role: 'ROLE_USER', parts: [{ text: `task ${i}` }] },
      },
    }),
  });
  if (!response.headers.get('content-type')?.startsWith('text/event-stream') || response.body === null) {
    throw new Error(`task ${i}: no stream (${response.status} ${await response.text()})`);
  }
  const samples: Sample[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body) {
    const receivedAt = Date.now();
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame.split('\n').find((line) => line.startsWith('data: '));
      if (data === undefined) continue;
      const status = (
        JSON.parse(data.slice(6)) as {
          result?: { statusUpdate?: { status: { state: string; timestamp: string } } };
        }
      ).result?.statusUpdate?.status;
      if (status) samples.push({ state: status.state, latencyMs: receivedAt - Date.parse(status.timestamp) });
    }
  }
  if (samples.at(-1)?.state !== 'TASK_STATE_COMPLETED') throw new Error(`task ${i} did not complete`);
  return samples;
};

const measureLatency = async () => {
  await ensureDynamoDbLocalJar();
  const stack = await startLocalStack({ port: 0, config: defaultConfig, prefix: 'bench-sse', log: () => {} });
  const url = `${stack.baseUrl}/agents/default`;
  try {
    for (let i = 0; i < 10; i++) await streamOnce(url, -1 - i); // warm-up: JIT, connections, data keys
    const samples: Sample[] = [];
    let next = 0;
    const began = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < tasks) samples.push(...(await streamOnce(url, next++)));
      }),
    );
    const wall = performance.now() - began;
    const all = summarize(
      `commit → SSE statusUpdate, ${tasks} tasks, ${concurrency} streams at a time`,
      samples.map((s) => s.latencyMs),
    );
    const working = summarize(
      '  WORKING (claim) revisions',
      samples.filter((s) => s.state === 'TASK_STATE_WORKING').map((s) => s.latencyMs),
    );
    const completed = summarize(
      '  COMPLETED revisions',
      samples.filter((s) => s.state === 'TASK_STATE_COMPLETED').map((s) => s.latencyMs),
    );
    console.log(`wall ${(wall / 1000).toFixed(1)} s, ${((tasks / wall) * 1000).toFixed(1)} tasks/s`);
    return { all, working, completed };
  } finally {
    await stack.stop();
  }
};

// ---------------------------------------------------------------------------------------------
// Journal reads per stream-minute (simulated clock)
// ---------------------------------------------------------------------------------------------

const readsPerMinute = async (revisionEveryMs: number | undefined): Promise<number> => {
  let now = Date.parse('2026-01-01T00:00:00.000Z');
  const owner = { tenant: 't', principal: 'p' };
  const caller = { ...owner, profileId: 'default' };
  const expiresAt = Math.floor(now / 1000) + 86_400;
  const event = (revision: number): JournalEvent => ({
    taskId: 't1',
    contextId: 'c1',
    owner,
    revision,
    state: 'TASK_STATE_WORKING',
    statusTimestamp: new Date(now).toISOString(),
    expiresAt,
  });
  const events: JournalEvent[] = [event(1)];
  const view: JournalView = {
    ...event(1),
    profileId: caller.profileId,
    createdAt: new Date(now).toISOString(),
  };
  let reads = 0;
  const journal = {
    getView: async () => {
      reads++;
      return view;
    },
    listEvents: async (_taskId: string, after: number) => {
      reads++;
      return events.filter((e) => e.revision > after);
    },
    putRevision: async () => 'written' as const,
  } as unknown as JournalRepository;
  let nextRevisionAt = revisionEveryMs === undefined ? Number.POSITIVE_INFINITY : now + revisionEveryMs;
  const stream = streamTask(
    {
      journal,
      tasks: { getTask: async () => undefined } as never,
      codec: {
        openArtifacts: async () => [],
        openStatusMessage: async () => undefined,
        openHistory: async () => [],
      } as never,
      clock: { now: () => new Date(now) },
      sleep: async (ms) => {
        now += ms;
        while (now >= nextRevisionAt) {
          events.push(event(events.length + 1));
          nextRevisionAt += revisionEveryMs ?? Number.POSITIVE_INFINITY;
        }
      },
      streamTiming: { maxDurationMs: 60_000 },
    },
    { caller, taskId: 't1', start: { kind: 'subscribe' }, closeAt: 'terminal' },
  );
  for await (const _ of stream) {
    // drain
  }
  return reads;
};

const idle = await readsPerMinute(undefined);
const busy = await readsPerMinute(10_000);
console.log(`journal reads per stream-minute: idle ${idle}, one revision every 10 s ${busy}`);
const latency = await measureLatency();
console.log(JSON.stringify({ latency, readsPerStreamMinute: { idle, busy } }));
