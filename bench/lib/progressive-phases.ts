import { randomUUID } from 'node:crypto';
import { RpcClient, sendMessageParams, stateIn, stateOf } from './client.ts';
import { diffSnapshots, handlerCapacity, type Meter } from './meter.ts';
import { type LatencySummary, round, summarize } from './stats.ts';

/**
 * Issue 37's figures on the local stack, for `npm run bench` (bench/run.ts) and
 * `bench/progressive.ts` alike: progressive output at one client, and the write units of each turn
 * of a long conversation (bench/README.md, "Progressive output and history segments"). Write units
 * are the handler functions' (the meter's, `bench` left out), over every table.
 */

/** The agents these phases drive, as the installation must declare them (bench/lib/bench-config.ts). */
export const progressiveAgents = {
  /** Its provider writes the user's text back word by word (scripted `stream`); `output.progressive`. */
  progressive: 'progressive',
  /** The same provider without progressive output: the cost a chunk adds is the difference. */
  plain: 'plain',
  /** The scripted TCK agent: a message id `tck-input-required-…` answers INPUT_REQUIRED. */
  conversation: 'tck',
} as const;

export interface ProgressiveFigures {
  readonly tasks: number;
  readonly words: number;
  /** Send → the first committed chunk's frame at the client. */
  readonly firstChunkMs: LatencySummary;
  /** A chunk revision's committed status timestamp → its status frame at the client. */
  readonly chunkToSseMs: LatencySummary;
  /** Send → the terminal event. */
  readonly taskMs: LatencySummary;
  readonly chunksPerTask: number;
  readonly writeUnitsPerTask: { readonly progressive: number; readonly plain: number };
  /** (progressive − plain) / chunks per task. */
  readonly writeUnitsPerChunk: number | null;
}

/** One SendStreamingMessage read to its end: when its first chunk came, and each chunk's latency. */
const streamTask = async (client: RpcClient, text: string) => {
  const { began, events } = await client.stream('SendStreamingMessage', sendMessageParams(text));
  let firstChunkMs: number | undefined;
  let chunks = 0;
  let chunkPending = false;
  const latencies: number[] = [];
  for (const event of events) {
    const result = event.data?.result ?? {};
    if (result.artifactUpdate?.lastChunk === false) {
      chunks += 1;
      chunkPending = true;
      firstChunkMs ??= event.t - began;
    }
    if (result.statusUpdate !== undefined && chunkPending) {
      // The chunk revision's status: its timestamp is when its writer committed it.
      const { timestamp } = stateIn(result);
      if (timestamp) latencies.push(event.at - Date.parse(timestamp));
      chunkPending = false;
    }
  }
  const { state } = stateIn(events.at(-1)?.data?.result);
  if (state !== 'TASK_STATE_COMPLETED') throw new Error(`progressive task ended in ${state}`);
  return { firstChunkMs, chunks, latencies, totalMs: (events.at(-1)?.t ?? began) - began };
};

/**
 * At one client, one task at a time: `tasks` streamed tasks of `words` words on the progressive
 * agent, then as many on the plain one, each window metered after the stack went idle.
 */
export const progressiveOutputPhase = async (options: {
  readonly baseUrl: string;
  readonly token?: string;
  readonly meter: Meter;
  readonly tasks: number;
  readonly words: number;
}): Promise<ProgressiveFigures> => {
  const { meter, tasks } = options;
  const client = (agent: string) => new RpcClient(`${options.baseUrl}/agents/${agent}`, options.token);
  const progressive = client(progressiveAgents.progressive);
  const plain = client(progressiveAgents.plain);
  const text = Array.from({ length: options.words }, (_, index) => `word${index}`).join(' ');
  try {
    for (let i = 0; i < 2; i++) await streamTask(progressive, text); // connections, caches
    await meter.untilIdle();
    let before = meter.snapshot();
    const results: Awaited<ReturnType<typeof streamTask>>[] = [];
    for (let i = 0; i < tasks; i++) results.push(await streamTask(progressive, text));
    await meter.untilIdle();
    const progressiveUnits = handlerCapacity(diffSnapshots(meter.snapshot(), before)).write / tasks;
    before = meter.snapshot();
    for (let i = 0; i < tasks; i++) await streamTask(plain, text);
    await meter.untilIdle();
    const plainUnits = handlerCapacity(diffSnapshots(meter.snapshot(), before)).write / tasks;
    const chunksPerTask = results.reduce((total, result) => total + result.chunks, 0) / tasks;
    return {
      tasks,
      words: options.words,
      firstChunkMs: summarize(results.flatMap((r) => (r.firstChunkMs === undefined ? [] : [r.firstChunkMs]))),
      chunkToSseMs: summarize(results.flatMap((r) => r.latencies)),
      taskMs: summarize(results.map((r) => r.totalMs)),
      chunksPerTask: round(chunksPerTask),
      writeUnitsPerTask: { progressive: round(progressiveUnits), plain: round(plainUnits) },
      writeUnitsPerChunk: chunksPerTask > 0 ? round((progressiveUnits - plainUnits) / chunksPerTask) : null,
    };
  } finally {
    progressive.close();
    plain.close();
  }
};

export interface ConversationFigures {
  readonly turns: number;
  readonly messageBytes: number;
  readonly writeUnitsTurn2?: number;
  readonly writeUnitsLastTurn?: number;
  /** Every turn's write units, first turn first. */
  readonly writeUnitsPerTurn: number[];
}

/**
 * One conversation of `turns` blocking turns of `messageBytes`-byte messages on the TCK agent
 * (each answered INPUT_REQUIRED, so the next continues the task): each turn's write units, metered
 * from an idle stack to an idle stack.
 */
export const conversationPhase = async (options: {
  readonly baseUrl: string;
  readonly token?: string;
  readonly meter: Meter;
  readonly turns: number;
  readonly messageBytes?: number;
}): Promise<ConversationFigures> => {
  const { meter, turns } = options;
  const messageBytes = options.messageBytes ?? 20 * 1024;
  const client = new RpcClient(`${options.baseUrl}/agents/${progressiveAgents.conversation}`, options.token);
  const units: number[] = [];
  let taskId: string | undefined;
  try {
    for (let turn = 1; turn <= turns; turn++) {
      await meter.untilIdle();
      const before = meter.snapshot();
      const answer = await client.send(`turn ${turn} `.padEnd(messageBytes, 'x'), {
        messageId: `tck-input-required-${randomUUID()}`,
        ...(taskId !== undefined && { taskId }),
      });
      if (stateOf(answer) !== 'TASK_STATE_INPUT_REQUIRED' || answer.result?.task === undefined)
        throw new Error(`turn ${turn}: ${JSON.stringify(answer.error ?? stateOf(answer))}`);
      taskId = answer.result.task.id;
      await meter.untilIdle();
      units.push(round(handlerCapacity(diffSnapshots(meter.snapshot(), before)).write));
    }
  } finally {
    client.close();
  }
  return {
    turns,
    messageBytes,
    ...(units[1] !== undefined && { writeUnitsTurn2: units[1] }),
    ...(units.at(-1) !== undefined && { writeUnitsLastTurn: units.at(-1) }),
    writeUnitsPerTurn: units,
  };
};
