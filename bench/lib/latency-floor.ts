/**
 * The latency floor (issues 8 and 16, decisions 0033 and 0047): the lowest latency the
 * architecture allows for each latency target, from measured parts, as bench/lib/floor.ts does for
 * cost. Pure.
 *
 * A path is traced hop by hop at one client (bench/lib/hop-trace.ts), and its **route is read from
 * the trace**, not written here: per task, which function first put the COMPLETED revision into
 * the journal (the writer that committed it — write-through — or the stream projector, the
 * backstop) and which handed it to the delivery queue (the writer's direct fan-out, or the pusher
 * on the journal stream). A route's steps are of two kinds: **work** (a commit, a put, a read, a
 * queue hop, the blocking wait's next poll), taken per task as measured, and **stream waits**
 * (only where the trace shows a stream-fed function on the path), which the floor does not take as
 * measured but as Lambda has them: Lambda polls a DynamoDB stream shard at a base rate of 4 times
 * per second and reads again at once while records keep coming (decision 0017), so a commit that
 * lands at a random moment of a quiet shard waits uniformly 0–P ms, P = that stream's poll interval
 * (250 ms: p50 125 ms, p95 237.5 ms). The floor's p-th percentile is that of (measured work of a
 * task + its stream waits), over the traced tasks.
 *
 * The machine bound is separate: with C closed-loop clients (each sends again as soon as it is
 * answered), Little's law gives mean latency = C ÷ throughput, and a machine of N cores that spends
 * s CPU-seconds per task completes at most N ÷ s tasks a second, so mean latency ≥ C × s ÷ N.
 */
import type { HopMark } from './hop-trace.ts';
import { percentile } from './stats.ts';

/** One step of a route: the time from one hop to the next. */
export interface PathStep {
  readonly label: string;
  /** A stream hop: replaced by Lambda's poll wait (uniform 0–`pollIntervalMs`) in the floor. */
  readonly streamWait?: boolean;
  /** The poll interval of the stream this hop waits on (a stream wait only). */
  readonly pollIntervalMs?: number;
}

/** A step as traced for one task: its label and its measured duration. */
export interface RouteStep extends PathStep {
  readonly ms: number;
}

export interface FloorPart {
  readonly label: string;
  readonly streamWait: boolean;
  /** Median of the step over the traced tasks of its route, as measured on the local stack. */
  readonly measuredP50Ms: number;
  /** What the floor takes for it at p50: the measured median, or P/2 for a stream wait. */
  readonly floorP50Ms: number;
}

/** The tasks that took one route (the same steps, in order) and that route's parts. */
export interface FloorRoute {
  readonly n: number;
  readonly streamWaits: number;
  readonly parts: readonly FloorPart[];
}

export interface LatencyFloor {
  /** Traced tasks (those that had every hop of their route). */
  readonly n: number;
  /** The state stream's poll interval (the one a stream wait of the most common route waits on). */
  readonly pollIntervalMs: number;
  /** Stream waits of the most common route. */
  readonly streamWaits: number;
  /** The most common route's parts (`routes[0]`). */
  readonly parts: readonly FloorPart[];
  /** Every route the traced tasks took, the most common first. */
  readonly routes: readonly FloorRoute[];
  readonly p50: number;
  readonly p95: number;
  /** The floor without each route's first `skip` steps (e.g. from the commit instead of the request). */
  readonly from?: { readonly label: string; readonly p50: number; readonly p95: number };
}

const binomial = (n: number, k: number): number => {
  let result = 1;
  for (let i = 1; i <= k; i++) result = (result * (n - k + i)) / i;
  return result;
};

const factorial = (n: number): number => {
  let result = 1;
  for (let i = 2; i <= n; i++) result *= i;
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
  return sum / factorial(k);
};

/**
 * P(W₁ + … + W_k ≤ x) for independent waits W_i uniform on [0, a_i] of any widths:
 * (1 ÷ (k! ∏ a_i)) Σ over subsets S of (−1)^|S| (x − Σ_{i∈S} a_i)₊^k. Equal widths give Irwin–Hall.
 */
export const sumOfWaitsCdf = (x: number, widths: readonly number[]): number => {
  const waits = widths.filter((width) => width > 0);
  const k = waits.length;
  if (k === 0) return x >= 0 ? 1 : 0;
  if (x <= 0) return 0;
  const total = waits.reduce((sum, width) => sum + width, 0);
  if (x >= total) return 1;
  let sum = 0;
  for (let subset = 0; subset < 1 << k; subset++) {
    let shift = 0;
    let size = 0;
    for (let i = 0; i < k; i++) {
      if (subset & (1 << i)) {
        shift += waits[i] as number;
        size += 1;
      }
    }
    if (x > shift) sum += (-1) ** size * (x - shift) ** k;
  }
  const product = waits.reduce((p, width) => p * width, 1);
  return Math.min(1, Math.max(0, sum / (factorial(k) * product)));
};

/** One traced task for the floor: its measured work and the widths of its stream waits. */
export interface FloorSample {
  readonly workMs: number;
  readonly waitsMs: readonly number[];
}

/**
 * The p-th percentile (0–100) of W + the sample's stream waits, W drawn from the traced samples:
 * the smallest x with P(total ≤ x) ≥ p/100, by bisection on the mixture's distribution function.
 */
export const floorPercentileOf = (samples: readonly FloorSample[], p: number): number => {
  if (samples.length === 0) return Number.NaN;
  const target = p / 100;
  const cdf = (x: number): number =>
    samples.reduce((total, sample) => total + sumOfWaitsCdf(x - sample.workMs, sample.waitsMs), 0) /
    samples.length;
  let low = Math.min(...samples.map((sample) => sample.workMs)) - 1;
  let high = Math.max(
    ...samples.map((sample) => sample.workMs + sample.waitsMs.reduce((sum, width) => sum + width, 0)),
  );
  for (let i = 0; i < 60 && high - low > 1e-6; i++) {
    const middle = (low + high) / 2;
    if (cdf(middle) >= target) high = middle;
    else low = middle;
  }
  return high;
};

/**
 * The p-th percentile (0–100) of W + P·(U₁ + … + U_k), W drawn from the measured work samples:
 * every task with the same k waits on streams of the same poll interval P.
 */
export const floorPercentile = (
  work: readonly number[],
  streamWaits: number,
  pollIntervalMs: number,
  p: number,
): number =>
  floorPercentileOf(
    work.map((workMs) => ({ workMs, waitsMs: Array.from({ length: streamWaits }, () => pollIntervalMs) })),
    p,
  );

const sampleOf = (route: readonly RouteStep[]): FloorSample => ({
  workMs: route.reduce((total, step) => (step.streamWait ? total : total + step.ms), 0),
  waitsMs: route.filter((step) => step.streamWait).map((step) => step.pollIntervalMs ?? 0),
});

/** The nearest-rank median (an observed value), as the report's other figures. */
const medianOf = (values: readonly number[]): number =>
  percentile(
    [...values].sort((x, y) => x - y),
    50,
  );

/**
 * The floor of one target from its traced routes (one per task; tasks may take different routes —
 * a write-through that found its predecessor unprojected leaves the revision to the backstop).
 * `from` also gives the floor without each route's first `skip` steps.
 */
export const routeFloor = (
  routes: readonly (readonly RouteStep[])[],
  from?: { readonly label: string; readonly skip: number },
): LatencyFloor => {
  const groups = new Map<string, RouteStep[][]>();
  for (const route of routes) {
    const signature = route.map((step) => `${step.label}${step.streamWait ? ' ~' : ''}`).join(' → ');
    groups.set(signature, [...(groups.get(signature) ?? []), [...route]]);
  }
  const grouped: FloorRoute[] = [...groups.values()]
    .sort((a, b) => b.length - a.length)
    .map((rows) => {
      const steps = rows[0] as RouteStep[];
      return {
        n: rows.length,
        streamWaits: steps.filter((step) => step.streamWait).length,
        parts: steps.map((step, i) => {
          const measured = medianOf(rows.map((row) => (row[i] as RouteStep).ms));
          return {
            label: step.label,
            streamWait: step.streamWait === true,
            measuredP50Ms: measured,
            floorP50Ms: step.streamWait ? (step.pollIntervalMs ?? 0) / 2 : measured,
          };
        }),
      };
    });
  const main = grouped[0];
  const samples = routes.map(sampleOf);
  const firstWait = routes.flatMap((route) => route.filter((step) => step.streamWait))[0];
  const tails = from ? routes.map((route) => sampleOf(route.slice(from.skip))) : [];
  return {
    n: routes.length,
    pollIntervalMs: firstWait?.pollIntervalMs ?? Number.NaN,
    streamWaits: main?.streamWaits ?? 0,
    parts: main?.parts ?? [],
    routes: grouped,
    p50: floorPercentileOf(samples, 50),
    p95: floorPercentileOf(samples, 95),
    ...(from
      ? { from: { label: from.label, p50: floorPercentileOf(tails, 50), p95: floorPercentileOf(tails, 95) } }
      : {}),
  };
};

/**
 * The floor of one path whose steps are the same for every task (one row per task: the time of
 * each step, in the order of `steps`), all stream waits on streams polled every `pollIntervalMs`.
 */
export const latencyFloor = (
  steps: readonly PathStep[],
  rows: readonly (readonly number[])[],
  pollIntervalMs: number,
): LatencyFloor => {
  const floor = routeFloor(
    rows.map((row) =>
      steps.map((step, i) => ({
        ...step,
        ms: row[i] as number,
        ...(step.streamWait ? { pollIntervalMs } : {}),
      })),
    ),
  );
  return { ...floor, pollIntervalMs };
};

export interface MachineBound {
  readonly clients: number;
  readonly cores: number;
  /** CPU seconds per completed task, all processes of the local stack together. */
  readonly cpuSecondsPerTask: number;
  /** CPU seconds per completed task of the Node process's main thread (absent: not measured). */
  readonly mainThreadSecondsPerTask?: number;
  /**
   * The lower of cores ÷ CPU seconds per task and 1 ÷ the main thread's seconds per task: the
   * local stack's JavaScript all runs on one thread, which can use one core at most.
   */
  readonly maxTasksPerSecond: number;
  /** Which of the two limits `maxTasksPerSecond` is. */
  readonly boundBy: 'cores' | 'main thread';
  /** clients ÷ the highest throughput: the lowest mean latency the clients can see, ms. */
  readonly meanLatencyMs: number;
  /** The same bound for the floor's task alone, run in the same benchmark (`floorTaskBound`). */
  readonly floorTask?: FloorTaskBound;
  /** The same for the floor's task in its `fewest` shape: any design's fewest requests (decision 0090). */
  readonly fewestTask?: FloorTaskBound;
}

/**
 * The floor's task (bench/lib/floor-task.ts: the cost floor's requests, one bare HTTP exchange and
 * the backstops' stream reads, nothing else), run on this machine in the same benchmark, as a
 * bound at `clients` clients.
 */
export interface FloorTaskBound {
  /** DynamoDB requests per floor task (it has no queue hop: decision 0096). */
  readonly dynamodbRequests: number;
  /** The backstops' stream reads per floor task: GetRecords requests and the records they returned. */
  readonly streamReads: number;
  readonly streamRecords: number;
  /** CPU ms per floor task: all processes, this Node process's main thread, DynamoDB Local. */
  readonly cpuMsPerTask: number;
  readonly mainThreadMsPerTask: number;
  readonly javaMsPerTask: number;
  readonly maxTasksPerSecond: number;
  readonly meanLatencyMs: number;
}

/**
 * The lowest mean latency at `clients` closed-loop clients if a task cost only the floor task's
 * CPU: the lower of cores ÷ its CPU and one core ÷ its main-thread share (the JavaScript's one
 * thread). A lower bound: the floor task leaves out JSON-RPC, the handlers' work, sealing and
 * what the backstops do with the stream records they read.
 */
export const floorTaskBound = (
  clients: number,
  cores: number,
  run: {
    readonly dynamodbRequests: number;
    readonly streamReads: number;
    readonly streamRecords: number;
    readonly cpuMsPerTask: number;
    readonly mainThreadMsPerTask: number;
    readonly javaMsPerTask: number;
  },
): FloorTaskBound => {
  const maxTasksPerSecond = Math.min((cores * 1000) / run.cpuMsPerTask, 1000 / run.mainThreadMsPerTask);
  return {
    dynamodbRequests: run.dynamodbRequests,
    streamReads: run.streamReads,
    streamRecords: run.streamRecords,
    cpuMsPerTask: run.cpuMsPerTask,
    mainThreadMsPerTask: run.mainThreadMsPerTask,
    javaMsPerTask: run.javaMsPerTask,
    maxTasksPerSecond,
    meanLatencyMs: (clients / maxTasksPerSecond) * 1000,
  };
};

export const machineBound = (
  clients: number,
  cores: number,
  cpuSecondsPerTask: number,
  mainThreadSecondsPerTask?: number,
): MachineBound => {
  const byCores = cores / cpuSecondsPerTask;
  const byThread = mainThreadSecondsPerTask ? 1 / mainThreadSecondsPerTask : Number.POSITIVE_INFINITY;
  const maxTasksPerSecond = Math.min(byCores, byThread);
  return {
    clients,
    cores,
    cpuSecondsPerTask,
    ...(mainThreadSecondsPerTask !== undefined && { mainThreadSecondsPerTask }),
    maxTasksPerSecond,
    boundBy: byThread < byCores ? 'main thread' : 'cores',
    meanLatencyMs: (clients / maxTasksPerSecond) * 1000,
  };
};

// ---- routes, read from the trace

const completed = 'TASK_STATE_COMPLETED';

/** The poll intervals of the two streams a revision can wait on (the local pollers', as Lambda's). */
export interface StreamIntervals {
  /** The state table's stream, which feeds the projector. */
  readonly stateStreamMs: number;
  /** The journal's stream, which feeds the pusher. */
  readonly journalStreamMs: number;
}

const functionOf = (hop: string): string => hop.slice(0, hop.indexOf(': '));

const earliest = (marks: readonly HopMark[], test: (mark: HopMark) => boolean): HopMark | undefined => {
  let found: HopMark | undefined;
  for (const mark of marks) if (test(mark) && (found === undefined || mark.at < found.at)) found = mark;
  return found;
};

const latest = (marks: readonly HopMark[], test: (mark: HopMark) => boolean): HopMark | undefined => {
  let found: HopMark | undefined;
  for (const mark of marks) if (test(mark) && (found === undefined || mark.at >= found.at)) found = mark;
  return found;
};

const step = (label: string, from: HopMark, to: HopMark): RouteStep => ({ label, ms: to.at - from.at });

/** The COMPLETED revision's status timestamp and commit, by whichever function committed it. */
const completion = (marks: readonly HopMark[]) => {
  const commit = earliest(marks, (m) => m.hop.endsWith(': commit') && m.state === completed);
  const stamp = earliest(
    marks,
    (m) => m.hop === `${commit ? functionOf(commit.hop) : ''}: status timestamp` && m.state === completed,
  );
  return commit?.revision === undefined || !stamp ? undefined : { commit, stamp, revision: commit.revision };
};

/**
 * From the commit to the first journal put (`view put` or `event put`) of the revision: one step
 * when the committing writer projected it itself (write-through), or the state stream's wait and
 * the projector's work when the backstop did.
 */
const projection = (
  marks: readonly HopMark[],
  commit: HopMark,
  revision: number,
  put: 'view put' | 'event put',
  intervals: StreamIntervals,
): { steps: RouteStep[]; put: HopMark } | undefined => {
  const first = earliest(marks, (m) => m.hop.endsWith(`: ${put}`) && m.revision === revision);
  if (!first) return undefined;
  const by = functionOf(first.hop);
  if (by !== 'projector') {
    return { steps: [step(`commit → ${put} (${by}: write-through)`, commit, first)], put: first };
  }
  const receive = earliest(marks, (m) => m.hop === 'projector: receive' && m.revision === revision);
  if (!receive) return undefined;
  return {
    steps: [
      {
        ...step('State stream → projector', commit, receive),
        streamWait: true,
        pollIntervalMs: intervals.stateStreamMs,
      },
      step(`projector: receive → ${put}`, receive, first),
    ],
    put: first,
  };
};

/** Request → status timestamp → commit: the first two steps of every route. */
const toCommit = (request: HopMark, done: NonNullable<ReturnType<typeof completion>>): RouteStep[] => [
  step(
    'request → COMPLETED status timestamp (create; the run queue and claim when queued; the run)',
    request,
    done.stamp,
  ),
  step('status timestamp → commit (the completing write)', done.stamp, done.commit),
];

/**
 * The route of one blocking SendMessage (the marks of its task): request → the COMPLETED commit →
 * the first COMPLETED view put → response. Undefined when a hop is missing.
 */
export const blockingRoute = (
  marks: readonly HopMark[],
  intervals: StreamIntervals,
): RouteStep[] | undefined => {
  const request = earliest(marks, (m) => m.hop === 'client: request');
  const response = earliest(marks, (m) => m.hop === 'client: response');
  const done = completion(marks);
  if (!request || !response || !done) return undefined;
  const projected = projection(marks, done.commit, done.revision, 'view put', intervals);
  if (!projected) return undefined;
  return [
    ...toCommit(request, done),
    ...projected.steps,
    step(
      "view put → response (the blocking wait's next journal poll, its reads, the answer)",
      projected.put,
      response,
    ),
  ];
};

/**
 * The route of one SendStreamingMessage: request → the COMPLETED commit → the first COMPLETED
 * event put → the stream's read of it (when traced) → the terminal frame at the client.
 */
export const sseRoute = (marks: readonly HopMark[], intervals: StreamIntervals): RouteStep[] | undefined => {
  const request = earliest(marks, (m) => m.hop === 'client: request');
  const frame = earliest(marks, (m) => m.hop === 'client: frame' && m.state === completed);
  const done = completion(marks);
  if (!request || !frame || !done) return undefined;
  const projected = projection(marks, done.commit, done.revision, 'event put', intervals);
  if (!projected) return undefined;
  const read = earliest(
    marks,
    (m) => m.hop === 'rpc: event read' && m.revision === done.revision && m.at >= projected.put.at,
  );
  return [
    ...toCommit(request, done),
    ...projected.steps,
    ...(read
      ? [
          step("event put → the stream's read (its next journal poll)", projected.put, read),
          step('read → frame at the client', read, frame),
        ]
      : [
          step(
            "event put → frame (the stream's next journal poll, its read, the frame)",
            projected.put,
            frame,
          ),
        ]),
  ];
};

/**
 * The route of one pushed task's COMPLETED webhook: request → the COMPLETED commit → the first
 * COMPLETED event put → the delivery queue send (the writer's direct fan-out, or the pusher on the
 * journal stream) → deliverer receive → the receiver has the POST.
 *
 * The route follows **the receive that made the POST**: the task's last deliverer receive before
 * the receiver has it (its FIFO group is served one message at a time, so no later message of it
 * is received before the POST ends; one push config per traced task). That is COMPLETED's own
 * message, or one of a newer revision (a retry of another, a catch-up of 0045), whose queue send
 * and fan-out are then the ones on the route — not the first receive of COMPLETED's revision,
 * which may come after the POST. A message of an older revision that posted COMPLETED too is on
 * the route as the step from the event put to the POST.
 */
export const webhookRoute = (
  marks: readonly HopMark[],
  intervals: StreamIntervals,
): RouteStep[] | undefined => {
  const request = earliest(marks, (m) => m.hop === 'client: request');
  const body = earliest(marks, (m) => m.hop === 'receiver: body' && m.state === completed);
  const done = completion(marks);
  if (!request || !body || !done) return undefined;
  const { revision } = done;
  const projected = projection(marks, done.commit, revision, 'event put', intervals);
  const deliver = latest(marks, (m) => m.hop === 'deliverer: receive' && m.at <= body.at);
  if (!projected || deliver?.revision === undefined) return undefined;
  const head = [...toCommit(request, done), ...projected.steps];
  if (deliver.revision < revision) {
    return [
      ...head,
      step(
        "event put → the receiver has the POST (an older revision's message, already received, posted it)",
        projected.put,
        body,
      ),
    ];
  }
  const carried = deliver.revision;
  const send = earliest(marks, (m) => m.hop.endsWith(': queue send') && m.revision === carried);
  if (!send) return undefined;
  const by = functionOf(send.hop);
  let fanOut: RouteStep[];
  if (by === 'pusher') {
    const receive = earliest(marks, (m) => m.hop === 'pusher: receive' && m.revision === carried);
    if (!receive) return undefined;
    fanOut = [
      {
        ...step('Journal stream → pusher', projected.put, receive),
        streamWait: true,
        pollIntervalMs: intervals.journalStreamMs,
      },
      step('pusher: receive → delivery queue send', receive, send),
    ];
  } else {
    fanOut = [step(`event put → delivery queue send (${by}: direct fan-out)`, projected.put, send)];
  }
  return [
    ...head,
    ...fanOut,
    step('FIFO delivery queue → deliverer', send, deliver),
    step('deliverer: receive → the receiver has the POST', deliver, body),
  ];
};

/** The three paths' routes, per task, from one trace (tasks of each path are told apart by their marks). */
export const tracedRoutes = (
  marks: readonly HopMark[],
  intervals: StreamIntervals,
): { blocking: RouteStep[][]; sse: RouteStep[][]; webhook: RouteStep[][] } => {
  const byTask = new Map<string, HopMark[]>();
  for (const mark of marks) byTask.set(mark.taskId, [...(byTask.get(mark.taskId) ?? []), mark]);
  const out = { blocking: [] as RouteStep[][], sse: [] as RouteStep[][], webhook: [] as RouteStep[][] };
  for (const taskMarks of byTask.values()) {
    const has = (hop: string) => taskMarks.some((m) => m.hop === hop);
    const route = has('client: response')
      ? { path: 'blocking' as const, steps: blockingRoute(taskMarks, intervals) }
      : has('client: frame')
        ? { path: 'sse' as const, steps: sseRoute(taskMarks, intervals) }
        : has('receiver: body')
          ? { path: 'webhook' as const, steps: webhookRoute(taskMarks, intervals) }
          : undefined;
    if (route?.steps) out[route.path].push(route.steps);
  }
  return out;
};

/** Each route's first two steps (request → status timestamp → commit) end at the commit. */
export const STEPS_TO_COMMIT = 2;
/** The SSE and webhook targets of issue 8 start at the status timestamp: skip the first step. */
export const STEPS_TO_STATUS_TIMESTAMP = 1;
