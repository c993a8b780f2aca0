import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { startLocalStack } from '../infra/local/local-stack.ts';
import { parseConfig } from '../shared/config/config.ts';
import { diffSnapshots, Meter, type MeterSnapshot } from './lib/meter.ts';

/**
 * Issue 37's figures on the local stack (decisions 0140, 0141), side by side in one run:
 *
 * - progressive output at 1 client (scripted `stream` provider, `--words` words at `--pace-ms` a
 *   word, the default cadence 1,000 ms / 4,096 B): time from the request to the first committed
 *   chunk on the SSE stream, chunk → SSE latency (a chunk revision's committed `status.timestamp`
 *   to its frame's arrival), chunks per task, DynamoDB write units per task with and without
 *   progressive output (same provider) and so per chunk;
 * - a conversation of `--turns` turns of 20 KB messages (the scripted TCK agent asks for more
 *   each turn): write units of turn 2 and of the last turn.
 *
 * The 20-client streaming figure is `npm run bench`'s. Not run in the session that wrote it (the
 * machine was shared): run it alone.
 * Run: npx tsx bench/progressive.ts [--tasks 20] [--words 120] [--pace-ms 25] [--turns 50]
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20' },
    words: { type: 'string', default: '120' },
    'pace-ms': { type: 'string', default: '25' },
    turns: { type: 'string', default: '50' },
  },
});
const TASKS = Number(values.tasks);
const WORDS = Number(values.words);
const PACE_MS = Number(values['pace-ms']);
const TURNS = Number(values.turns);

const meter = new Meter();
meter.install();
const config = parseConfig({
  privacy: { level: 'full' },
  providers: {
    streamer: { type: 'scripted', behavior: 'stream', paceMs: PACE_MS },
    tck: { type: 'scripted', behavior: 'tck' },
  },
  profiles: {
    default: { name: 'TCK', description: 'x', providers: ['tck'] },
    progressive: {
      name: 'Progressive',
      description: 'x',
      providers: ['streamer'],
      output: { progressive: true },
    },
    plain: { name: 'Plain', description: 'x', providers: ['streamer'] },
  },
});
const stack = await startLocalStack({ port: 0, config, prefix: `progressive-${Date.now()}`, log: () => {} });

const writeUnits = (snap: MeterSnapshot): number => {
  let units = 0;
  for (const [fn, tables] of Object.entries(snap.capacity))
    if (fn !== 'bench') for (const used of Object.values(tables)) units += used.write;
  return units;
};
const percentile = (samples: number[], p: number): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
  );
};
const words = Array.from({ length: WORDS }, (_, index) => `word${index}`).join(' ');

/** One SendStreamingMessage read to its end: first chunk time and per-chunk latency. */
const streamTask = async (agent: string) => {
  const sentAt = Date.now();
  const response = await fetch(`${stack.baseUrl}/agents/${agent}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Accept: 'text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendStreamingMessage',
      params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: words }] } },
    }),
  });
  const decoder = new TextDecoder();
  let buffer = '';
  let firstChunkMs: number | undefined;
  let chunks = 0;
  const latencies: number[] = [];
  let chunkPending = false;
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      const data = frame
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5))
        .join('');
      if (data === '') continue;
      const result = JSON.parse(data).result ?? {};
      if (result.artifactUpdate?.lastChunk === false) {
        chunks += 1;
        chunkPending = true;
        firstChunkMs ??= Date.now() - sentAt;
      }
      if (result.statusUpdate !== undefined && chunkPending) {
        // The chunk revision's status: its timestamp is when its writer committed it.
        latencies.push(Date.now() - Date.parse(result.statusUpdate.status.timestamp));
        chunkPending = false;
      }
    }
  }
  return { firstChunkMs, chunks, latencies, totalMs: Date.now() - sentAt };
};

const progressivePhase = async () => {
  for (let i = 0; i < 3; i++) await streamTask('progressive'); // warm up
  await meter.untilIdle();
  const results: Awaited<ReturnType<typeof streamTask>>[] = [];
  let before = meter.snapshot();
  for (let i = 0; i < TASKS; i++) results.push(await streamTask('progressive'));
  await meter.untilIdle();
  const progressiveUnits = writeUnits(diffSnapshots(meter.snapshot(), before)) / TASKS;
  before = meter.snapshot();
  for (let i = 0; i < TASKS; i++) await streamTask('plain');
  await meter.untilIdle();
  const plainUnits = writeUnits(diffSnapshots(meter.snapshot(), before)) / TASKS;
  const chunks = results.reduce((total, result) => total + result.chunks, 0) / TASKS;
  const first = results.flatMap((result) => (result.firstChunkMs === undefined ? [] : [result.firstChunkMs]));
  const latencies = results.flatMap((result) => result.latencies);
  console.log(
    JSON.stringify({
      phase: 'progressive output, 1 client',
      words: WORDS,
      paceMs: PACE_MS,
      tasks: TASKS,
      chunksPerTask: chunks,
      firstChunkMs: { p50: percentile(first, 50), p95: percentile(first, 95) },
      chunkToSseMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95), n: latencies.length },
      taskMs: {
        p50: percentile(
          results.map((result) => result.totalMs),
          50,
        ),
      },
      writeUnitsPerTask: { progressive: progressiveUnits, plain: plainUnits },
      writeUnitsPerChunk: chunks > 0 ? (progressiveUnits - plainUnits) / chunks : null,
    }),
  );
};

const send = async (message: unknown) => {
  const response = await fetch(`${stack.baseUrl}/agents/default`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } }),
  });
  return (await response.json()) as { result?: { task?: { id: string; status: { state: string } } } };
};

const conversationPhase = async () => {
  const text = (turn: number) => `turn ${turn} `.padEnd(20 * 1024, 'x');
  let taskId: string | undefined;
  const units: number[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    await meter.untilIdle();
    const before = meter.snapshot();
    const answer = await send({
      messageId: `tck-input-required-${randomUUID()}`,
      role: 'ROLE_USER',
      parts: [{ text: text(turn) }],
      ...(taskId !== undefined && { taskId }),
    });
    const task = answer.result?.task;
    if (task?.status.state !== 'TASK_STATE_INPUT_REQUIRED')
      throw new Error(`turn ${turn}: ${JSON.stringify(answer).slice(0, 300)}`);
    taskId = task.id;
    await meter.untilIdle();
    units.push(writeUnits(diffSnapshots(meter.snapshot(), before)));
  }
  console.log(
    JSON.stringify({
      phase: 'conversation of 20 KB messages',
      turns: TURNS,
      writeUnitsTurn2: units[1],
      writeUnitsLastTurn: units.at(-1),
      writeUnitsPerTurn: units,
    }),
  );
};

await progressivePhase();
await conversationPhase();
await stack.stop();
meter.uninstall();
process.exit(0);
