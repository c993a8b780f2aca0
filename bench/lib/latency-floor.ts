/**
 * The latency floor (issue 8, decision 0033): the lowest latency the architecture allows for each
 * latency target, from measured parts, as bench/lib/floor.ts does for cost. Pure.
 *
 * A path is a chain of hops traced at one client (bench/lib/hop-trace.ts). Its steps are of two
 * kinds: **work** (a commit, a put, a read, a queue hop), taken per task as measured, and **stream
 * waits**, which the floor does not take as measured but as Lambda has them: Lambda polls a
 * DynamoDB stream shard at a base rate of 4 times per second and reads again at once while
 * records keep coming (decision 0017), so a commit that lands at a random moment of a quiet shard
 * waits uniformly 0–P ms, P = the poll interval (250 ms: p50 125 ms, p95 237.5 ms). Two stream
 * hops (the webhook path) wait the sum of two such waits. The floor's p-th percentile is that of
 * (measured work of a task + the stream waits), over the traced tasks.
 *
 * The machine bound is separate: with C closed-loop clients (each sends again as soon as it is
 * answered), Little's law gives mean latency = C ÷ throughput, and a machine of N cores that spends
 * s CPU-seconds per task completes at most N ÷ s tasks a second, so mean latency ≥ C × s ÷ N.
 */
import { percentile } from './stats.ts';

/** One step of a traced path: the time from one hop to the next. */
export interface PathStep {
  readonly label: string;
  /** A stream hop: replaced by Lambda's poll wait (uniform 0–P ms) in the floor. */
  readonly streamWait?: boolean;
}

export interface FloorPart {
  readonly label: string;
  readonly streamWait: boolean;
  /** Median of the step over the traced tasks, as measured on the local stack. */
  readonly measuredP50Ms: number;
  /** What the floor takes for it at p50: the measured median, or P/2 for a stream wait. */
  readonly floorP50Ms: number;
}

export interface LatencyFloor {
  /** Traced tasks (keys that had every hop). */
  readonly n: number;
  readonly pollIntervalMs: number;
  readonly streamWaits: number;
  readonly parts: readonly FloorPart[];
  readonly p50: number;
  readonly p95: number;
}

const binomial = (n: number, k: number): number => {
  let result = 1;
  for (let i = 1; i <= k; i++) result = (result * (n - k + i)) / i;
  return result;
};

/**
 * P(U₁ + … + U_k ≤ x) for k independent waits uniform on [0, 1] (the Irwin–Hall distribution);
 * k = 0 is no wait at all.
 */
export const sumOfUniformsCdf = (x: number, k: number): number => {
  if (k === 0) return x >= 0 ? 1 : 0;
  if (x <= 0) return 0;
  if (x >= k) return 1;
  let sum = 0;
  for (let j = 0; j <= Math.floor(x); j++) sum += (-1) ** j * binomial(k, j) * (x - j) ** k;
  let factorial = 1;
  for (let i = 2; i <= k; i++) factorial *= i;
  return sum / factorial;
};

/**
 * The p-th percentile (0–100) of W + P·(U₁ + … + U_k), W drawn from the measured work samples:
 * the smallest x with P(total ≤ x) ≥ p/100, by bisection on the mixture's distribution function.
 */
export const floorPercentile = (
  work: readonly number[],
  streamWaits: number,
  pollIntervalMs: number,
  p: number,
): number => {
  if (work.length === 0) return Number.NaN;
  const target = p / 100;
  const cdf = (x: number): number =>
    work.reduce(
      (total, w) =>
        total +
        (pollIntervalMs > 0 ? sumOfUniformsCdf((x - w) / pollIntervalMs, streamWaits) : x >= w ? 1 : 0),
      0,
    ) / work.length;
  let low = Math.min(...work) - 1;
  let high = Math.max(...work) + streamWaits * pollIntervalMs;
  for (let i = 0; i < 60 && high - low > 1e-6; i++) {
    const middle = (low + high) / 2;
    if (cdf(middle) >= target) high = middle;
    else low = middle;
  }
  return high;
};

/**
 * The floor of one path from its traced steps (one row per task: the time of each step, in the
 * order of `steps`).
 */
export const latencyFloor = (
  steps: readonly PathStep[],
  rows: readonly (readonly number[])[],
  pollIntervalMs: number,
): LatencyFloor => {
  const waits = steps.filter((step) => step.streamWait).length;
  const work = rows.map((row) =>
    row.reduce((total, ms, i) => (steps[i]?.streamWait ? total : total + ms), 0),
  );
  const parts = steps.map((step, i) => {
    const measured = percentile(
      rows.map((row) => row[i] as number).sort((a, b) => a - b),
      50,
    );
    return {
      label: step.label,
      streamWait: step.streamWait === true,
      measuredP50Ms: measured,
      floorP50Ms: step.streamWait ? pollIntervalMs / 2 : measured,
    };
  });
  return {
    n: rows.length,
    pollIntervalMs,
    streamWaits: waits,
    parts,
    p50: floorPercentile(work, waits, pollIntervalMs, 50),
    p95: floorPercentile(work, waits, pollIntervalMs, 95),
  };
};

export interface MachineBound {
  readonly clients: number;
  readonly cores: number;
  /** CPU seconds per completed task, all processes of the local stack together. */
  readonly cpuSecondsPerTask: number;
  /** cores ÷ CPU seconds per task. */
  readonly maxTasksPerSecond: number;
  /** clients ÷ the highest throughput: the lowest mean latency the clients can see, ms. */
  readonly meanLatencyMs: number;
}

export const machineBound = (clients: number, cores: number, cpuSecondsPerTask: number): MachineBound => {
  const maxTasksPerSecond = cores / cpuSecondsPerTask;
  return {
    clients,
    cores,
    cpuSecondsPerTask,
    maxTasksPerSecond,
    meanLatencyMs: (clients / maxTasksPerSecond) * 1000,
  };
};

/** A traced path: its hops (bench/lib/hop-trace.ts mark names) and the steps between them. */
export interface FloorPath {
  readonly hops: readonly { readonly hop: string; readonly state?: string }[];
  /** hops.length − 1 steps, in order. */
  readonly steps: readonly PathStep[];
  /** Marks keyed per task (blocking) or per (task, revision) (events). */
  readonly key: 'task' | 'revision';
}

const completed = 'TASK_STATE_COMPLETED';

/** The paths of the three latency targets, each from where its measured figure starts. */
export const floorPaths: Readonly<Record<'blocking' | 'sse' | 'webhook', FloorPath>> = {
  blocking: {
    key: 'task',
    hops: [
      { hop: 'client: request' },
      { hop: 'executor: commit', state: completed },
      { hop: 'projector: receive', state: completed },
      { hop: 'projector: view put', state: completed },
      { hop: 'client: response' },
    ],
    steps: [
      { label: "request → the executor's COMPLETED commit (create, run queue, claim, run, complete)" },
      { label: 'State stream → projector', streamWait: true },
      { label: 'projector: receive → COMPLETED view put (event put, view put)' },
      { label: "view put → response (the rpc's journal poll and reads, the answer)" },
    ],
  },
  sse: {
    key: 'revision',
    hops: [
      { hop: 'executor: status timestamp', state: completed },
      { hop: 'executor: commit' },
      { hop: 'projector: receive' },
      { hop: 'projector: event put' },
      { hop: 'rpc: event read' },
      { hop: 'client: frame' },
    ],
    steps: [
      { label: 'status timestamp → commit (the completing write)' },
      { label: 'State stream → projector', streamWait: true },
      { label: 'projector: receive → event put' },
      { label: "event put → the stream's read (its poll)" },
      { label: 'read → frame at the client' },
    ],
  },
  webhook: {
    key: 'revision',
    hops: [
      { hop: 'executor: status timestamp', state: completed },
      { hop: 'executor: commit' },
      { hop: 'projector: receive' },
      { hop: 'projector: event put' },
      { hop: 'pusher: receive' },
      { hop: 'pusher: queue send' },
      { hop: 'deliverer: receive' },
      { hop: 'receiver: body' },
    ],
    steps: [
      { label: 'status timestamp → commit (the completing write)' },
      { label: 'State stream → projector', streamWait: true },
      { label: 'projector: receive → event put' },
      { label: 'Journal stream → pusher', streamWait: true },
      { label: 'pusher: receive → delivery queue send' },
      { label: 'FIFO delivery queue → deliverer' },
      { label: 'deliverer: receive → the receiver has the POST' },
    ],
  },
};
