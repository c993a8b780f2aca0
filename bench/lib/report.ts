/**
 * The readable report (bench/results/latest.md) and the target verdicts, from the JSON report.
 */
import { MAX_BUNDLE_BYTES } from '../../infra/bundling.ts';

// biome-ignore lint/suspicious/noExplicitAny: the report is the JSON the run wrote, read back.
type Report = any;

export type Verdict = 'met' | 'not met' | 'not measured';

export interface TargetResult {
  readonly target: string;
  readonly measured: string;
  readonly verdict: Verdict;
  /** Why a target is not met when no implementation could meet it: its floor (decision 0033). */
  readonly note?: string;
  /** The issue that set the target (16: decision 0047; 8: decision 0012). */
  readonly issue?: 8 | 16;
}

const fmt = (value: unknown, digits = 3): string => {
  if (typeof value !== 'number' || !Number.isFinite(value)) return '—';
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return String(Number(value.toPrecision(digits)));
};

const verdict = (measured: number | undefined, ok: (value: number) => boolean): Verdict =>
  measured === undefined || !Number.isFinite(measured) ? 'not measured' : ok(measured) ? 'met' : 'not met';

/** Issue 8's cost target, US$ per million single-turn tasks (model time excluded). */
const costTargetUsd = 15;

/**
 * A latency target (≤ `limit` ms) against its measured figure and the architecture's floor for it
 * (bench/lib/latency-floor.ts): "not met — below the floor (N ms)" when the floor itself is above
 * the target, plain "not met" when it is not; `machineMs` adds the machine's bound at the run's
 * clients (a mean) when that is above the target too.
 */
export const latencyTarget = (
  target: string,
  limit: number,
  measured: number | undefined,
  floorMs: number | undefined,
  machine?: { readonly clients: number; readonly meanLatencyMs: number },
): TargetResult => {
  const result = verdict(measured, (v) => v <= limit);
  if (result !== 'not met') return { target, measured: `${fmt(measured)} ms`, verdict: result };
  const notes: string[] = [];
  if (floorMs !== undefined && Number.isFinite(floorMs) && floorMs > limit)
    notes.push(`below the floor (${fmt(floorMs)} ms)`);
  if (machine && machine.meanLatencyMs > limit)
    notes.push(`this machine at ${machine.clients} clients: ≥ ${fmt(machine.meanLatencyMs)} ms mean`);
  return {
    target,
    measured: `${fmt(measured)} ms`,
    verdict: result,
    ...(notes.length > 0 ? { note: notes.join('; ') } : {}),
  };
};

/**
 * Issue 16's side-by-side target. When it is not met, the note gives this machine's bound at the
 * run's clients (a mean latency, Little's law over the CPU the rounds used) and the bound of the
 * floor's task alone (run in the same session, bench/lib/floor-task.ts): "below the floor" only when
 * even that is above 5× the SDK server's p50; otherwise what stands between is this stack's own
 * CPU beyond the floor task's.
 */
const ratioTarget = (
  clients: number,
  ours: number,
  theirs: number,
  ratio: number,
  machine?: {
    readonly clients: number;
    readonly meanLatencyMs: number;
    readonly floorTask?: { readonly meanLatencyMs: number };
    readonly fewestTask?: { readonly meanLatencyMs: number };
  },
): TargetResult => {
  const target = `blocking SendMessage at ${clients} clients: p50 ≤ 5× the SDK server's p50 (same run)`;
  const result = verdict(ratio, (v) => v <= 5);
  const notes: string[] = [];
  const floorMs = machine?.floorTask?.meanLatencyMs;
  if (result === 'not met' && floorMs !== undefined && floorMs > 5 * theirs)
    notes.push(`below the floor (the floor's task alone: ≥ ${fmt(floorMs)} ms mean)`);
  if (result === 'not met' && machine && machine.meanLatencyMs > 5 * theirs)
    notes.push(
      `this machine at ${machine.clients} clients: ≥ ${fmt(machine.meanLatencyMs)} ms mean = ${fmt(machine.meanLatencyMs / theirs)}× the SDK server's p50`,
    );
  if (result === 'not met' && floorMs !== undefined && floorMs <= 5 * theirs)
    notes.push(
      `the floor's task alone allows ≥ ${fmt(floorMs)} ms = ${fmt(floorMs / theirs)}× (the latency floor section)`,
    );
  const fewestMs = machine?.fewestTask?.meanLatencyMs;
  if (result === 'not met' && fewestMs !== undefined)
    notes.push(
      `${fewestMs > 5 * theirs ? 'below the floor of any design: ' : ''}the fewest requests any design needs, alone (decision 0090): ≥ ${fmt(fewestMs)} ms = ${fmt(fewestMs / theirs)}×`,
    );
  return {
    target,
    measured: `${fmt(ours)} ms vs ${fmt(theirs)} ms: ${fmt(ratio)}×`,
    verdict: result,
    ...(notes.length > 0 ? { note: notes.join('; ') } : {}),
  };
};

const issue8Targets = (report: Report): TargetResult[] => {
  const cost = report.singleTurn?.cost?.usdPerMillionTasks as number | undefined;
  const floorRatio = report.ratioToFloor?.cost as number | undefined;
  const latency = report.singleTurn?.latency;
  const floors = report.latencyFloor;
  const sse = report.streaming?.latency?.commitToSseEvent?.p50 as number | undefined;
  const webhook = report.push?.latency?.commitToWebhook?.p50 as number | undefined;
  const cold = Array.isArray(report.coldStarts) ? (report.coldStarts as Report[]) : [];
  const largest = cold.length > 0 ? Math.max(...cold.map((c) => c.bundleBytes)) : undefined;
  const worstRatio = cold.length > 0 ? Math.max(...cold.map((c) => c.ratio)) : undefined;
  const scale = Array.isArray(report.scale) ? (report.scale as Report[]) : [];
  const [small, large] = scale;
  const costRatio = small && large ? large.usdPerMillionTasks / small.usdPerMillionTasks : undefined;
  const listRatio =
    small?.listTasks && large?.listTasks
      ? large.listTasks.latency.p50 / small.listTasks.latency.p50
      : undefined;
  return [
    {
      target: `infrastructure cost ≤ US$${costTargetUsd} per million single-turn tasks`,
      measured: `US$${fmt(cost)}`,
      verdict: verdict(cost, (v) => v <= costTargetUsd),
    },
    {
      target: 'cost ≤ 1.3× the floor (counted items; Lambda duration is equal on both sides)',
      measured: `${fmt(floorRatio)}×`,
      verdict: verdict(floorRatio, (v) => v <= 1.3),
    },
    latencyTarget(
      'blocking SendMessage p50 ≤ 150 ms',
      150,
      latency?.p50,
      floors?.blocking?.p50,
      floors?.machine,
    ),
    latencyTarget('blocking SendMessage p95 ≤ 300 ms', 300, latency?.p95, floors?.blocking?.p95),
    sse === undefined
      ? { target: 'commit → SSE event p50 ≤ 100 ms', measured: 'no streaming yet', verdict: 'not measured' }
      : latencyTarget(
          'commit → SSE event p50 ≤ 100 ms',
          100,
          sse,
          floors?.sse?.from?.p50 ?? floors?.sse?.p50,
        ),
    webhook === undefined
      ? { target: 'commit → webhook p50 ≤ 250 ms', measured: 'no push yet', verdict: 'not measured' }
      : latencyTarget(
          'commit → webhook p50 ≤ 250 ms',
          250,
          webhook,
          floors?.webhook?.from?.p50 ?? floors?.webhook?.p50,
        ),
    {
      target: `every function bundle ≤ 512 KB (${MAX_BUNDLE_BYTES.toLocaleString('en-US')} bytes)`,
      measured: largest === undefined ? '—' : `largest ${largest.toLocaleString('en-US')} bytes`,
      verdict: verdict(largest, (v) => v <= MAX_BUNDLE_BYTES),
    },
    {
      target: 'module init ≤ 0.4× unbundled baseline',
      measured: worstRatio === undefined ? '—' : `worst ${fmt(worstRatio)}×`,
      verdict: verdict(worstRatio, (v) => v <= 0.4),
    },
    {
      target: 'per-task cost at 10,000 tasks ≤ 1.2× at 100',
      measured: `${fmt(costRatio)}×`,
      verdict: verdict(costRatio, (v) => v <= 1.2),
    },
    {
      target: 'ListTasks p50 at 10,000 tasks ≤ 1.2× at 100',
      measured: listRatio === undefined ? 'no ListTasks yet' : `${fmt(listRatio)}×`,
      verdict: verdict(listRatio, (v) => v <= 1.2),
    },
  ];
};

/** Issue 16's targets of this server against the SDK server and the floor. */
const issue16Targets = (report: Report, shared: readonly TargetResult[]): TargetResult[] => {
  const floors = report.latencyFloor;
  const ours = report.singleTurn?.latency?.p50 as number | undefined;
  const theirs = report.anchor?.latency?.p50 as number | undefined;
  const ratio = ours !== undefined && theirs !== undefined && theirs > 0 ? ours / theirs : undefined;
  const one = report.oneClient;
  const sse = one?.sse?.sendToFinalEvent?.p50 as number | undefined;
  const webhook = one?.push?.requestToWebhook?.p50 as number | undefined;
  const commitToWebhook = report.push?.latency?.commitToWebhook?.p50 as number | undefined;
  const writeUnits = report.singleTurn?.perTask?.writeUnits as number | undefined;
  const clients = report.parameters?.concurrency ?? 20;
  const notMeasured = (target: string, why: string): TargetResult => ({
    target,
    measured: why,
    verdict: 'not measured',
  });
  const sameAs = (prefix: string) => shared.find((t) => t.target.startsWith(prefix));
  return [
    latencyTarget(
      'blocking SendMessage → COMPLETED at 1 client: p50 ≤ 80 ms',
      80,
      report.singleTurn?.sequentialLatency?.p50,
      floors?.blocking?.p50,
    ),
    ratio === undefined
      ? notMeasured(
          `blocking SendMessage at ${clients} clients: p50 ≤ 5× the SDK server's p50 (same run)`,
          report.anchor?.skipped ?? report.anchor?.failed ?? 'no SDK server figure',
        )
      : ratioTarget(clients, ours as number, theirs as number, ratio, floors?.machine),
    sse === undefined
      ? notMeasured('SendStreamingMessage → terminal event at 1 client: p50 ≤ 120 ms', 'no streaming figure')
      : latencyTarget(
          'SendStreamingMessage → terminal event at 1 client: p50 ≤ 120 ms',
          120,
          sse,
          floors?.sse?.p50,
        ),
    webhook === undefined
      ? notMeasured('request → webhook COMPLETED at 1 client: p50 ≤ 200 ms', 'no push figure')
      : latencyTarget(
          'request → webhook COMPLETED at 1 client: p50 ≤ 200 ms',
          200,
          webhook,
          floors?.webhook?.p50,
        ),
    commitToWebhook === undefined
      ? notMeasured(`commit → webhook at ${clients} clients: p50 ≤ 400 ms`, 'no push figure')
      : latencyTarget(
          `commit → webhook at ${clients} clients: p50 ≤ 400 ms`,
          400,
          commitToWebhook,
          floors?.webhook?.from?.p50,
        ),
    {
      target: 'write units per single-turn task ≤ 25',
      measured: `${fmt(writeUnits, 4)} WRU`,
      verdict: verdict(writeUnits, (v) => v <= 25),
    },
    ...(['every function bundle', 'module init'] as const).flatMap((prefix) => {
      const result = sameAs(prefix);
      return result ? [result] : [];
    }),
  ].map((result) => ({ ...result, issue: 16 as const }));
};

/**
 * Every target with its verdict: issue 8's first, then issue 16's,
 * which repeat the bundle and init targets.
 */
export const evaluateTargets = (report: Report): TargetResult[] => {
  const earlier = issue8Targets(report).map((result) => ({ ...result, issue: 8 as const }));
  return [...earlier, ...issue16Targets(report, earlier)];
};

const table = (header: string[], rows: unknown[][]): string =>
  [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map((cell) => String(cell)).join(' | ')} |`),
  ].join('\n');

/** The cold-start table: one row per function (bench/lib/cold-start.ts results). */
export const coldStartTable = (coldStarts: Report[]): string =>
  table(
    [
      'function',
      'bundle bytes',
      'source map KB',
      'init ms (bundle, median)',
      'init ms (unbundled, median)',
      'ratio',
      'spawns',
    ],
    coldStarts.map((row: Report) => [
      row.functionName,
      row.bundleBytes.toLocaleString('en-US'),
      fmt(row.sourceMapBytes / 1024),
      fmt(row.bundledInitMs),
      fmt(row.baselineInitMs),
      fmt(row.ratio),
      row.error ? `${row.spawns} (${row.error})` : row.spawns,
    ]),
  );

const latencyRow = (label: string, summary: Report): unknown[] =>
  summary
    ? [label, summary.n, fmt(summary.p50), fmt(summary.p95), fmt(summary.p99), fmt(summary.max)]
    : [label, '—', '—', '—', '—', '—'];

const latencyHeader = ['measurement', 'n', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'];

const costTable = (cost: Report): string =>
  table(
    ['item', 'per task', 'unit', 'US$ per million tasks'],
    [
      ...cost.lines.map((line: Report) => [
        `${line.item}${line.estimated ? ' (estimated)' : ''}`,
        fmt(line.perTask, 4),
        line.unit,
        fmt(line.usdPerMillionTasks, 4),
      ]),
      ['**total**', '', '', `**${fmt(cost.usdPerMillionTasks, 4)}**`],
    ],
  );

/** Each latency target's floor: which floor (whole route or from the status timestamp) and its measured figures. */
const floorRows: Array<{
  key: 'blocking' | 'sse' | 'webhook';
  label: string;
  from?: boolean;
  oneClient: (report: Report) => Report;
  loaded: (report: Report) => Report;
}> = [
  {
    key: 'blocking',
    label: 'blocking SendMessage → COMPLETED',
    oneClient: (r) => r.singleTurn?.sequentialLatency,
    loaded: (r) => r.singleTurn?.latency,
  },
  {
    key: 'sse',
    label: 'SendStreamingMessage → terminal event',
    oneClient: (r) => r.oneClient?.sse?.sendToFinalEvent,
    loaded: (r) => r.streaming?.latency?.sendToFinalEvent,
  },
  {
    key: 'sse',
    label: 'commit → SSE event',
    from: true,
    oneClient: (r) => r.oneClient?.sse?.commitToSseEvent,
    loaded: (r) => r.streaming?.latency?.commitToSseEvent,
  },
  {
    key: 'webhook',
    label: 'request → webhook COMPLETED',
    oneClient: (r) => r.oneClient?.push?.requestToWebhook,
    loaded: () => undefined,
  },
  {
    key: 'webhook',
    label: 'commit → webhook',
    from: true,
    oneClient: (r) => r.oneClient?.push?.commitToWebhook,
    loaded: (r) => r.push?.latency?.commitToWebhook,
  },
];

const pathLabels: Record<string, string> = {
  blocking: 'blocking SendMessage → COMPLETED',
  sse: 'SendStreamingMessage → terminal event',
  webhook: 'request → webhook COMPLETED',
};

/**
 * The latency floor (decisions 0033, 0047): per target, the floor of the routes the trace shows
 * and their parts; the machine's bound.
 */
export const latencyFloorSection = (report: Report): string => {
  const floors = report.latencyFloor;
  const intervals = floors.intervals ?? {
    stateStreamMs: floors.pollIntervalMs,
    journalStreamMs: floors.pollIntervalMs,
  };
  const clients = report.parameters.concurrency;
  const out: string[] = ['## The latency floor', ''];
  out.push(
    `The lowest latency the architecture allows for each latency target, from parts measured at one client (no queueing; ${floors.tasksPerPath} tasks per path, traced hop by hop with bench/lib/hop-trace.ts). ` +
      "Each task's route is read from the trace: which function first put the COMPLETED revision into the journal — the writer that committed it (write-through: request → commits → the writer's view/event put → the reader's next journal poll → response) or the stream projector (the backstop: a stream hop in between) — and which function sent it to the delivery queue (the writer's direct fan-out, or the pusher on the journal stream). " +
      `Only a stream hop the trace shows is replaced by Lambda's poll wait: a shard is read 4 times a second — after an empty read the next GetRecords starts one poll interval after the previous one (the local pollers' intervals, infra/local/stream-poller.ts: state stream ${fmt(intervals.stateStreamMs)} ms, journal stream ${fmt(intervals.journalStreamMs)} ms) — so a commit landing at a random moment of a quiet shard waits uniformly 0–P ms (decision 0017). ` +
      "Every other step, the readers' own journal polls included, is taken as measured, per task. The floor's percentiles are those of (a task's measured work + its stream waits) over the traced tasks — not the sum of the parts' medians. Method: decisions 0033 and 0047.",
  );
  out.push('');
  out.push(
    table(
      [
        'target path',
        'floor p50 ms',
        'floor p95 ms',
        'measured p50 ms (1 client)',
        `measured p50 ms (${clients} clients)`,
      ],
      floorRows.map((row) => {
        const floor = floors[row.key];
        const figures = row.from ? floor?.from : floor;
        return [
          row.from ? `${row.label} (from the status timestamp)` : row.label,
          fmt(figures?.p50),
          fmt(figures?.p95),
          fmt(row.oneClient(report)?.p50),
          fmt(row.loaded(report)?.p50),
        ];
      }),
    ),
  );
  for (const key of ['blocking', 'sse', 'webhook'] as const) {
    const floor = floors[key];
    if (!floor) continue;
    const routes: Report[] = floor.routes ?? [
      { n: floor.n, streamWaits: floor.streamWaits, parts: floor.parts },
    ];
    for (const [index, route] of routes.entries()) {
      out.push('');
      out.push(
        `${pathLabels[key]}: ${routes.length > 1 ? `route ${index + 1}, ` : ''}${route.n} of ${floor.n} traced tasks, ${route.streamWaits} stream wait${route.streamWaits === 1 ? '' : 's'}:`,
      );
      out.push('');
      out.push(
        table(
          ['step', 'measured p50 ms (one client)', 'the floor takes (p50) ms'],
          route.parts.map((part: Report) => [
            part.streamWait ? `${part.label} (stream hop)` : part.label,
            fmt(part.measuredP50Ms),
            part.streamWait
              ? `${fmt(part.floorP50Ms)} (uniform 0–${fmt(part.floorP50Ms * 2)})`
              : fmt(part.floorP50Ms),
          ]),
        ),
      );
    }
    if (floor.n === 0) out.push('', `${pathLabels[key]}: no traced task had every hop of a known route.`);
  }
  const machine = floors.machine;
  if (machine) {
    out.push('');
    out.push(
      `The machine's bound at ${machine.clients} closed-loop clients (each sends its next task when answered): Little's law makes the mean latency clients ÷ throughput. ` +
        `The ${clients}-client rounds used ${fmt(machine.cpuSecondsPerTask * 1000)} ms of CPU per task (this Node process — handlers, pollers, SQS and KMS emulators — ${fmt(machine.cpuSeconds.node)} s${machine.cpuSeconds.mainThread ? `, ${fmt(machine.cpuSeconds.mainThread)} s of it on its main thread` : ''}, DynamoDB Local ${fmt(machine.cpuSeconds.dynamodbLocal)} s${machine.cpuSeconds.clients ? `, the benchmark's clients in their own process ${fmt(machine.cpuSeconds.clients)} s` : ''}), ` +
        (machine.mainThreadSecondsPerTask
          ? `so the throughput is at most the lower of ${machine.cores} cores ÷ ${fmt(machine.cpuSecondsPerTask * 1000)} ms = ${fmt(machine.cores / machine.cpuSecondsPerTask)} tasks/s and one core ÷ the main thread's ${fmt(machine.mainThreadSecondsPerTask * 1000)} ms = ${fmt(1 / machine.mainThreadSecondsPerTask)} tasks/s (all of the local stack's JavaScript runs on that one thread): ` +
            `${fmt(machine.maxTasksPerSecond)} tasks/s, bound by ${machine.boundBy === 'main thread' ? 'the main thread' : 'the cores'} (measured: ${fmt(machine.measuredTasksPerSecond)}), and the mean latency at ${machine.clients} clients is at least ${fmt(machine.meanLatencyMs)} ms. `
          : `so ${machine.cores} cores complete at most ${fmt(machine.maxTasksPerSecond)} tasks/s (measured: ${fmt(machine.measuredTasksPerSecond)}) and the mean latency at ${machine.clients} clients is at least ${fmt(machine.meanLatencyMs)} ms. `) +
        `A p50 of 150 ms at ${machine.clients} clients would take at most ${fmt((150 * machine.cores) / machine.clients)} ms of CPU per task on this machine. ` +
        'This bound is the local stack on one machine; on AWS each function instance has its own CPU.',
    );
    const floor = machine.floorTask;
    if (floor) {
      out.push('');
      out.push(
        `The floor's task alone (bench/lib/floor-task.ts, decision 0086): the cost floor's ${fmt(floor.dynamodbRequests)} DynamoDB requests per task (conditional puts: the create that claims the run, the settle, each revision's event, the one view, the audit row; no read and no queue hop, decisions 0096, 0097), sent as the handlers send them on tables created from the product's declarations (their indexes, streams and TTL) with copies of a real task's items, plus one bare HTTP exchange of the task's request and answer, and the backstops' reads of both streams (decision 0088: ${fmt(floor.streamReads)} GetRecords per task returning its ${fmt(floor.streamRecords)} stream records, nothing converted or invoked) — no JSON-RPC, handler, sealing, agent or projector — at ${machine.clients} in flight on a DynamoDB Local of its own: ` +
          `${fmt(floor.cpuMsPerTask)} ms of CPU per task (main thread ${fmt(floor.mainThreadMsPerTask)} ms, DynamoDB Local ${fmt(floor.javaMsPerTask)} ms): at most ${fmt(floor.maxTasksPerSecond)} tasks/s, a mean latency at ${machine.clients} clients of at least ${fmt(floor.meanLatencyMs)} ms. ` +
          `The rounds used ${fmt(machine.cpuSecondsPerTask * 1000)} ms, ${fmt((machine.cpuSecondsPerTask * 1000) / floor.cpuMsPerTask)}× the floor task's: ${fmt(machine.cpuSecondsPerTask * 1000 - floor.cpuMsPerTask)} ms per task are this stack's own — requests beyond the floor's (DynamoDB requests per task above: update expressions, the view counters' transaction, extra reads), the task's JSON-RPC and handlers, sealing, what the projector and the local Lambda runtime do with the stream records.`,
      );
    }
    const fewest = machine.fewestTask;
    if (fewest) {
      out.push('');
      out.push(
        `The fewest requests any design needs (decision 0090): the same floor's task, but each revision committed together with its journal event in one two-item transaction (the create that claims the run, and the settle), no view, no audit row: ${fmt(fewest.dynamodbRequests)} DynamoDB requests per task, the same HTTP exchange, ${fmt(fewest.streamRecords)} stream records read per task. ` +
          `${fmt(fewest.cpuMsPerTask)} ms of CPU per task (main thread ${fmt(fewest.mainThreadMsPerTask)} ms, DynamoDB Local ${fmt(fewest.javaMsPerTask)} ms): at most ${fmt(fewest.maxTasksPerSecond)} tasks/s, a mean latency at ${machine.clients} clients of at least ${fmt(fewest.meanLatencyMs)} ms — with no JSON-RPC, handler, sealing, agent, projector, ListTasks index, view or audit trail at all. ` +
          `A server of any design on this machine has the difference between that and its target for all of its own work.`,
      );
    }
  }
  return out.join('\n');
};

const ratioOf = (ours: number | undefined, theirs: number | undefined): string =>
  ours !== undefined && theirs !== undefined && theirs > 0 ? `${fmt(ours / theirs)}×` : '—';

/**
 * Issue 37: the streaming path beside the blocking one at the same clients (rounds from the load
 * generator), progressive output at one client, and the write units of a long conversation.
 */
export const progressiveSection = (report: Report): string => {
  const single = report.singleTurn;
  const clients = report.parameters?.concurrency ?? 20;
  const out: string[] = ['## Progressive output, long conversations and the streaming path (issue 37)', ''];
  const blocking = single?.latency;
  const streamed = single?.streamingLatency;
  const streamedRounds = (single?.streamingRounds ?? []) as Report[];
  if (streamed) {
    out.push(
      `Both paths from the load generator, unmetered, at ${clients} clients: each streamed round of ${fmt(streamed.n / Math.max(1, streamedRounds.length))} SendStreamingMessage calls right after this server's blocking round (each read to its terminal event; bench/README.md, "The load generator").`,
    );
    out.push('');
    const median = (key: 'firstEvent' | 'commitToEvent', field: 'p50' | 'p95') => {
      const values = streamedRounds.map((r) => r[key]?.[field]).filter((v) => typeof v === 'number');
      const sorted = [...values].sort((a, b) => a - b);
      return sorted.length === 0 ? undefined : sorted[Math.floor((sorted.length - 1) / 2)];
    };
    out.push(
      table(
        [`at ${clients} clients (median of rounds)`, 'p50 ms', 'p95 ms', 'p50 vs blocking'],
        [
          ['blocking SendMessage → COMPLETED', fmt(blocking?.p50), fmt(blocking?.p95), '1×'],
          [
            'SendStreamingMessage → terminal event',
            fmt(streamed.p50),
            fmt(streamed.p95),
            ratioOf(streamed.p50, blocking?.p50),
          ],
          [
            'SendStreamingMessage → first event',
            fmt(median('firstEvent', 'p50')),
            fmt(median('firstEvent', 'p95')),
            '—',
          ],
          [
            'commit → terminal SSE event',
            fmt(median('commitToEvent', 'p50')),
            fmt(median('commitToEvent', 'p95')),
            '—',
          ],
        ],
      ),
    );
    out.push('');
    // Each streamed round runs right after its blocking round, under the same load: the pairs
    // compare the two paths without the round-to-round spread of the medians.
    const blockingRounds = (single?.rounds ?? []) as Report[];
    const pairs = streamedRounds
      .map((r, i) => [blockingRounds[i]?.p50, r.p50] as const)
      .filter(
        (pair): pair is readonly [number, number] =>
          typeof pair[0] === 'number' && typeof pair[1] === 'number',
      );
    if (pairs.length > 0) {
      const ratios = pairs.map(([b, s]) => s / b).sort((a, b) => a - b);
      out.push(
        `Round by round (blocking p50 → streamed p50): ${pairs.map(([b, s]) => `${fmt(b)} → ${fmt(s)} ms`).join('; ')}. ` +
          `The streamed round was no slower in ${pairs.filter(([b, s]) => s <= b).length} of ${pairs.length}; median of the paired ratios ${fmt(ratios[Math.floor((ratios.length - 1) / 2)])}×.`,
      );
      out.push('');
    }
    const met =
      typeof streamed.p50 === 'number' && typeof blocking?.p50 === 'number' && streamed.p50 <= blocking.p50;
    out.push(
      `Target (issue 37, item 4): the streamed p50 no slower than the blocking p50 in the same run — **${met ? 'met' : 'not met'}**. ` +
        'The streamed task makes exactly the blocking task\'s DynamoDB requests, with no journal read (its run feeds it the revisions it journaled, test/integration/bench-load-process.test.ts); what it adds is the streaming response: an SSE frame per revision and a response held open while the run works (bench/README.md, "Progressive output, long conversations and the streaming path").',
    );
    out.push('');
  }
  const p = report.progressive;
  out.push(
    skippedOr(p, () =>
      [
        `Progressive output at 1 client (scripted streaming model, ${p.words} words at 25 ms a word, the default cadence 1,000 ms / 4,096 B; ${p.tasks} tasks each way, one at a time):`,
        '',
        table(latencyHeader, [
          latencyRow('send → first committed chunk at the client', p.firstChunkMs),
          latencyRow('chunk commit → its SSE frame at the client', p.chunkToSseMs),
          latencyRow('send → terminal event', p.taskMs),
        ]),
        '',
        `Chunks per task ${fmt(p.chunksPerTask)}; write units per task ${fmt(p.writeUnitsPerTask?.progressive)} with progressive output, ${fmt(p.writeUnitsPerTask?.plain)} without (same model): **${fmt(p.writeUnitsPerChunk)} WRU per chunk**.`,
      ].join('\n'),
    ),
  );
  out.push('');
  const c = report.conversation;
  out.push(
    skippedOr(
      c,
      () =>
        `A conversation of ${c.turns} turns of ${fmt((c.messageBytes ?? 0) / 1024)} KB messages (blocking follow-ups, all tables): **turn 2 ${fmt(c.writeUnitsTurn2)} WRU, turn ${c.turns} ${fmt(c.writeUnitsLastTurn)} WRU**. Every turn: ${(c.writeUnitsPerTurn ?? []).map((u: number) => fmt(u)).join(', ')}.`,
    ),
  );
  return out.join('\n');
};

/** The same blocking load on this server and on the SDK server, and this server's other paths. */
export const sideBySideSection = (report: Report): string => {
  const single = report.singleTurn;
  const anchor = report.anchor;
  const clients = report.parameters.concurrency;
  const out: string[] = ['## Side by side: this server and the a2a-js SDK server', ''];
  out.push(
    `The SDK server is \`@a2a-js/sdk\` ${anchor?.sdkVersion ?? ''}'s own server (DefaultRequestHandler behind its Express JSON-RPC handler) with its DatabaseTaskStore on SQLite (WAL, synchronous=FULL), the same echo agent, driven by the same load generator (bench/lib/load-process.ts: one process of its own for the whole run, keep-alive connections, both servers warmed by the same tasks from it; bench/README.md, "The load generator") in the same run, each of its rounds right after the same round of this server once this server's stack is idle (decisions 0082, 0083). ` +
      'It is one process with an in-process bus and a local file: neither durable across instances nor serverless — the ratio prices those properties.',
  );
  out.push('');
  if (anchor?.skipped || anchor?.failed) {
    out.push(`_${anchor.skipped ?? `failed: ${anchor.failed}`}_`);
    out.push('');
  }
  const row = (label: string, ours: Report, theirs: Report) => [
    label,
    fmt(ours?.p50),
    fmt(ours?.p95),
    fmt(theirs?.p50),
    fmt(theirs?.p95),
    ratioOf(ours?.p50, theirs?.p50),
    ratioOf(ours?.p95, theirs?.p95),
  ];
  out.push(
    table(
      [
        'blocking SendMessage → COMPLETED',
        'this server p50 ms',
        'p95 ms',
        'SDK server p50 ms',
        'p95 ms',
        'ratio p50',
        'ratio p95',
      ],
      [
        row('1 client', single.sequentialLatency, anchor?.sequentialLatency),
        row(`${clients} clients (median of rounds)`, single.latency, anchor?.latency),
      ],
    ),
  );
  out.push('');
  const loads = (rounds: Report[] | undefined) =>
    (rounds ?? []).map((r: Report) => `p50 ${fmt(r.p50)} ms at load ${r.load?.loadavg1}`).join('; ');
  out.push(
    `Rounds at ${clients} clients — this server: ${loads(single.rounds)}. SDK server: ${loads(anchor?.rounds) || '—'}.`,
  );
  const background = (anchor?.stackBackgroundCpu ?? []) as Array<{ cpuSecondsPerSecond: number }>;
  if (background.length > 0) {
    out.push('');
    out.push(
      `While the SDK server's rounds ran, this server's idle stack (its stream and queue pollers) and DynamoDB Local still used ${background.map((b) => fmt(b.cpuSecondsPerSecond)).join(', ')} CPU seconds per second: CPU an outside client measuring the SDK server alone would leave to it.`,
    );
  }
  out.push('');
  const one = report.oneClient;
  out.push(
    `This server's other paths (${one?.tasks ?? '—'} tasks each at 1 client, one at a time; ${clients} clients from the streaming and push phases):`,
  );
  out.push('');
  out.push(
    table(latencyHeader, [
      latencyRow('SendStreamingMessage → terminal event, 1 client', one?.sse?.sendToFinalEvent),
      latencyRow('commit → SSE terminal event, 1 client', one?.sse?.commitToSseEvent),
      latencyRow('request → webhook COMPLETED at the receiver, 1 client', one?.push?.requestToWebhook),
      latencyRow('commit → webhook COMPLETED, 1 client', one?.push?.commitToWebhook),
      latencyRow(
        `SendStreamingMessage → terminal event, ${clients} clients (metered streaming phase; unmetered: the issue 37 section)`,
        report.streaming?.latency?.sendToFinalEvent,
      ),
      latencyRow(`commit → webhook COMPLETED, ${clients} clients`, report.push?.latency?.commitToWebhook),
    ]),
  );
  if (one?.failed) out.push('', `_one-client phase failed: ${one.failed}_`);
  if (one?.push?.missingCompletedWebhooks) {
    out.push(
      '',
      `${one.push.missingCompletedWebhooks} one-client tasks had no COMPLETED webhook within 10 s.`,
    );
  }
  return out.join('\n');
};

const rpcDuration = (cost: Report): number | undefined =>
  cost?.lines?.find((line: Report) => String(line.item).startsWith('Lambda rpc duration'))
    ?.usdPerMillionTasks;

/** The committed report before write-through (bench/lib/cost-model.ts `beforeWriteThrough`) beside this run. */
export const beforeAfterSection = (report: Report): string => {
  const before = report.before;
  if (!before) return '';
  const single = report.singleTurn;
  const clients = report.parameters.concurrency;
  const rows: unknown[][] = [
    [
      `US$ per million single-turn tasks (${clients} clients)`,
      fmt(before.usdPerMillionTasks, 4),
      fmt(single.cost.usdPerMillionTasks, 4),
    ],
    [
      'US$ per million single-turn tasks (1 client)',
      fmt(before.usdPerMillionTasksOneClient, 4),
      fmt(single.sequential?.cost?.usdPerMillionTasks, 4),
    ],
    ['DynamoDB write units per task', fmt(before.writeUnits, 4), fmt(single.perTask.writeUnits, 4)],
    ['DynamoDB read units per task', fmt(before.readUnits, 4), fmt(single.perTask.readUnits, 4)],
    [
      `rpc billed duration, US$ per million tasks (${clients} clients)`,
      fmt(before.rpcDurationUsdPerMillionTasks, 4),
      fmt(rpcDuration(single.cost), 4),
    ],
    [
      'blocking SendMessage p50, 1 client (ms)',
      fmt(before.blockingP50OneClientMs),
      fmt(single.sequentialLatency?.p50),
    ],
    [
      `blocking SendMessage p50, ${clients} clients (ms)`,
      fmt(before.blockingP50Ms),
      fmt(single.latency?.p50),
    ],
    [
      `SendStreamingMessage → terminal event p50, ${clients} clients (ms)`,
      fmt(before.sseTerminalP50Ms),
      fmt(report.streaming?.latency?.sendToFinalEvent?.p50),
    ],
    [
      `commit → SSE event p50, ${clients} clients (ms)`,
      fmt(before.commitToSseP50Ms),
      fmt(report.streaming?.latency?.commitToSseEvent?.p50),
    ],
    [
      `commit → webhook p50, ${clients} clients (ms)`,
      fmt(before.commitToWebhookP50Ms),
      fmt(report.push?.latency?.commitToWebhook?.p50),
    ],
  ];
  return [
    '## Cost and latency before and after',
    '',
    `Before: the committed report of commit ${before.commit} (\`npx tsx bench/run.ts\`, 2026-11-30, load 2 at its end), before write-through projection; after: this run. Issue 16 asks that the cost not rise: write units per task ≤ 25, the rpc's billed duration falling with its wait.`,
    '',
    table(['figure', `before (${before.commit})`, 'this run'], rows),
  ].join('\n');
};

/** US$ per million tasks on demand and provisioned at a steady rate (decision 0048). */
export const capacityModesSection = (report: Report): string => {
  const capacity = report.capacityModes;
  if (!capacity) return '';
  const { modes, provisioned } = capacity;
  return [
    `## Capacity modes at a steady ${fmt(capacity.tasksPerSecond)} tasks/s`,
    '',
    `DynamoDB on demand (the default) and provisioned with auto scaling (\`deployment.dynamodb.billing: "provisioned"\`, decision 0048), from this run's units per table and index at ${clients(report)} clients. ` +
      `Provisioned: each table and index holds max(${capacity.minCapacity}, ${fmt(capacity.tasksPerSecond)} tasks/s × its units per task ÷ ${fmt(capacity.targetUtilization * 100)} % target utilisation) units, at US$${report.provisionedPrices?.writeCapacityUnitHour ?? 0.00065} per WCU-hour and US$${report.provisionedPrices?.readCapacityUnitHour ?? 0.00013} per RCU-hour (us-east-1, Standard table class). ` +
      'Everything else (Lambda, API Gateway, SQS, KMS, logs) is the same in both modes. Bursts above the provisioned units throttle until auto scaling catches up (minutes); the model prices a steady load only.',
    '',
    table(
      ['mode', 'DynamoDB US$ per million tasks', 'total US$ per million tasks'],
      [
        ['on demand', fmt(modes.onDemand.dynamodb, 4), fmt(modes.onDemand.total, 4)],
        [
          `provisioned, auto scaling at ${fmt(capacity.targetUtilization * 100)} %`,
          fmt(modes.provisioned.dynamodb, 4),
          fmt(modes.provisioned.total, 4),
        ],
      ],
    ),
    '',
    table(
      ['table[/index]', 'RCU provisioned', 'WCU provisioned', 'US$ per hour'],
      provisioned.lines.map((line: Report) => [
        line.where,
        fmt(line.readCapacity),
        fmt(line.writeCapacity),
        fmt(line.usdPerHour, 4),
      ]),
    ),
  ].join('\n');
};

const clients = (report: Report): number => report.parameters?.concurrency ?? 20;

const skippedOr = (section: Report, render: () => string): string =>
  section?.skipped ? `_${section.skipped}_` : section?.failed ? `_failed: ${section.failed}_` : render();

export const renderMarkdown = (report: Report): string => {
  const targets = evaluateTargets(report);
  const single = report.singleTurn;
  const out: string[] = [];
  out.push('# Benchmark: price and latency per task (local stack), side by side with the a2a-js SDK server');
  out.push('');
  out.push(
    `Generated ${report.generatedAt} by \`${report.command}\` on ${report.machine.cores} cores, Node ${report.machine.node}${report.machine.nodeOptions ? ` (NODE_OPTIONS \`${report.machine.nodeOptions}\`, decisions 0085, 0089)` : ''}. ` +
      `Load average (1 min) at the end: ${report.machine.loadavg1}. Parameters: ${single.tasks} single-turn tasks ` +
      `(${report.parameters.rounds} × ${report.parameters.tasks}) at ${report.parameters.concurrency} concurrent clients` +
      `${report.parameters.warmUpTasks ? `, each server warmed by ${report.parameters.warmUpTasks} tasks first (decision 0087)` : ''}` +
      `${report.parameters.quick ? ' — **quick run, not for final figures**' : ''}. ` +
      'Counts are exact for the tasks driven; latencies are medians over the rounds and depend on the machine load stated per round. ' +
      'Method: bench/README.md, "Method".',
  );
  out.push('');
  const targetTable = (rows: readonly TargetResult[]) =>
    table(
      ['target', 'measured', 'verdict'],
      rows.map((t) => [t.target, t.measured, `**${t.verdict}**${t.note ? ` — ${t.note}` : ''}`]),
    );
  out.push('## Targets (issue 16)');
  out.push('');
  out.push(targetTable(targets.filter((t) => t.issue === 16)));
  out.push('');
  out.push(
    'A latency target that is not met says "below the floor" when the floor of the path the trace shows (the latency floor section) is itself above the target. ' +
      'Method: docs/decisions/0047-side-by-side-benchmark-and-the-write-through-floor.md.',
  );
  out.push('');
  out.push(sideBySideSection(report));
  out.push('');
  out.push(progressiveSection(report));
  out.push('');
  out.push(beforeAfterSection(report));
  out.push('');
  out.push(capacityModesSection(report));
  out.push('');
  out.push('## Earlier targets (issue 8)');
  out.push('');
  const repeated = new Set(targets.filter((t) => t.issue === 16).map((t) => t.target));
  out.push(targetTable(targets.filter((t) => t.issue === 8 && !repeated.has(t.target))));
  out.push('');
  out.push('## Cost per single-turn task (blocking SendMessage → COMPLETED, echo provider)');
  out.push('');
  out.push(costTable(single.cost));
  out.push('');
  if (single.sequential) {
    out.push(
      `With one client (no queueing; Lambda durations of an unloaded stack): US$${fmt(single.sequential.cost.usdPerMillionTasks, 4)} per million tasks ` +
        `(${single.sequential.tasks} tasks). The difference is Lambda duration only: the rpc function is billed while the blocking call waits, so its cost follows the latency.`,
    );
    out.push('');
  }
  out.push('Requests per task, by function and operation (counted by SDK middleware):');
  out.push('');
  out.push(
    table(
      ['function: operation', 'per task'],
      [
        ...Object.entries(single.perTask.requests).map(([key, value]) => [key, fmt(value, 4)]),
        ...Object.entries(single.perTask.eventSourceSqs).map(([key, value]) => [key, fmt(value, 4)]),
      ],
    ),
  );
  out.push('');
  out.push(
    `DynamoDB units per task as AWS bills them: ${fmt(single.perTask.writeUnits, 4)} WRU, ${fmt(single.perTask.readUnits, 4)} RRU ` +
      `(DynamoDB Local reported ${fmt(single.perTask.writeUnitsAsReportedByDynamoDbLocal, 4)} WRU and ${fmt(single.perTask.readUnitsAsReportedByDynamoDbLocal, 4)} RRU: ` +
      'it reports 4 units per started KB of a whole transaction, AWS bills 2 per started KB of each item; transactional writes are re-counted from the items. ' +
      'It reports 0 for a query that finds nothing, AWS bills every read request at least 1 unit, or 0.5 eventually consistent: those are topped up).',
  );
  const assumed = single.perTask.writeUnitsAssumedForTransactionalIndexes ?? 0;
  if (assumed > 0) {
    out.push('');
    out.push(
      `Of these, ${fmt(assumed, 4)} WRU per task are the second unit of index writes made inside transactions: AWS documents that a transaction writes each of its items twice, not whether the index writes it causes are doubled, so they are counted twice (decision 0036). Billed once, the figure would be ${fmt(single.perTask.writeUnits - assumed, 4)} WRU.`,
    );
  }
  out.push('');
  out.push(
    table(
      ['function: table[/index]', 'RRU per task', 'WRU per task'],
      Object.entries(single.perTask.capacityByTable).map(([key, units]: [string, Report]) => [
        key,
        fmt(units.read, 4),
        fmt(units.write, 4),
      ]),
    ),
  );
  out.push('');
  out.push(
    table(
      [
        'function',
        'invocations per task',
        'records per invocation',
        'billed ms per task',
        'mean ms',
        'errors',
      ],
      Object.entries(single.perTask.invocations).map(([fn, row]: [string, Report]) => [
        fn,
        fmt(row.perTask, 4),
        fmt(row.recordsPerInvocation),
        fmt(row.billedMsPerTask),
        fmt(row.meanMs),
        row.errors,
      ]),
    ),
  );
  out.push('');
  const check = single.crossCheck;
  out.push(
    `Cross-checks: KMS by operation, metered ${JSON.stringify(check.kms.metered)} vs the KMS emulator's own counts ${JSON.stringify(check.kms.emulator)} → ${check.kms.agree ? 'agree' : '**differ**'}; ` +
      `SQS SendMessage metered ${check.sqs.meteredSendMessage} vs messages the executor's event source received ${check.sqs.executorPollerReceived} and deleted ${check.sqs.executorPollerDeleted} → ${check.sqs.agree ? 'agree' : '**differ**'} ` +
      `(the SQS emulator keeps no request counter); rpc invocations ${check.rpcInvocationsVsApiRequests.rpc} vs API requests ${check.rpcInvocationsVsApiRequests.apiRequests}; ` +
      `DynamoDB answers without ConsumedCapacity: ${check.capacityMissing}.`,
  );
  out.push('');
  out.push(
    'Not billed per task: DynamoDB Streams GetRecords made by Lambda event source mappings (the projector trigger) are free; ' +
      "the executor's event source also long-polls an idle queue (≈ 5 pollers × 3 requests/min ≈ 650,000 requests/month ≈ US$0.26/month, fixed). " +
      'KMS: each function instance caches its data keys, so in AWS KMS calls scale with instances × (1 GenerateDataKey + Decrypts) per 5 minutes, not with tasks.',
  );
  out.push('');
  out.push('## The floor');
  out.push('');
  const floor = report.floor;
  out.push(
    `Fewest units the invariants allow for one single-turn task, from the sizes of a real task's items (${JSON.stringify(floor.itemSizes)} bytes): ` +
      `${fmt(floor.writeUnits)} WRU, ${fmt(floor.readUnits)} RRU, ${floor.kmsRequests} KMS calls, ${fmt(floor.sqsRequests)} SQS requests, ` +
      `${floor.queueHops} queue hop${floor.queueHops === 1 ? '' : 's'}, ${floor.projectedRevisions} projected revisions. Lambda duration is taken as measured (the blocking wait is the protocol's).`,
  );
  out.push('');
  out.push(
    table(
      ['step', 'units', 'why'],
      floor.lines.map((line: Report) => [line.what, fmt(line.units), line.why]),
    ),
  );
  out.push('');
  out.push(`Floor cost: US$${fmt(floor.cost.usdPerMillionTasks, 4)} per million tasks.`);
  if (floor.cost.usdPerMillionTasks > costTargetUsd) {
    const largest = [...(floor.cost.lines as Report[])]
      .sort((a, b) => b.usdPerMillionTasks - a.usdPerMillionTasks)
      .slice(0, 3)
      .map((line) => `${line.item} US$${fmt(line.usdPerMillionTasks)}`)
      .join(', ');
    out.push(
      `The floor itself is above the US$${costTargetUsd} target (largest lines: ${largest}): at these on-demand list prices no implementation that keeps the invariants can meet it; only other prices (e.g. provisioned DynamoDB capacity for a steady load) or a different specification can.`,
    );
  }
  out.push(
    `Measured / floor: cost of the counted items (all but Lambda duration) ${fmt(report.ratioToFloor.cost)}×, with the measured Lambda duration on both sides ${fmt(report.ratioToFloor.costWithDuration)}×, write units ${fmt(report.ratioToFloor.writeUnits)}×, read units ${fmt(report.ratioToFloor.readUnits)}×, SQS requests ${fmt(report.ratioToFloor.sqsRequestsPerTask)} per task (the floor has none).`,
  );
  out.push('');
  out.push('## Latency (local stack)');
  out.push('');
  out.push(
    table(latencyHeader, [
      ...single.rounds.map((r: Report, i: number) => [
        ...latencyRow(
          `blocking SendMessage, round ${i + 1} (${r.throughputPerSecond} tasks/s, load ${r.load.loadavg1})`,
          r,
        ),
      ]),
      latencyRow(
        `**blocking SendMessage → COMPLETED, ${report.parameters.concurrency} clients (median of rounds)**`,
        single.latency,
      ),
      latencyRow('blocking SendMessage, 1 client', single.sequentialLatency),
      // The costs' runs, with the meter counting every request (decision 0080).
      ...(single.meteredRound
        ? [
            latencyRow(
              `blocking SendMessage, ${report.parameters.concurrency} clients, metered round`,
              single.meteredRound,
            ),
          ]
        : []),
      ...(single.meteredSequentialLatency
        ? [latencyRow('blocking SendMessage, 1 client, metered', single.meteredSequentialLatency)]
        : []),
      latencyRow('GetTask', report.getTask?.latency),
      latencyRow('ListTasks', report.listTasks?.latency),
      latencyRow('multi-turn: first turn → INPUT_REQUIRED', report.multiTurn?.latency?.firstTurn),
      latencyRow('multi-turn: follow-up → COMPLETED', report.multiTurn?.latency?.followUp),
      latencyRow('commit → SSE event', report.streaming?.latency?.commitToSseEvent),
      latencyRow('SendStreamingMessage → final event', report.streaming?.latency?.sendToFinalEvent),
      latencyRow('commit → webhook', report.push?.latency?.commitToWebhook),
    ]),
  );
  out.push('');
  out.push(
    'Commit → SSE/webhook is measured from the status timestamp the executor sets just before its completing transaction (same clock), so it includes that transaction.',
  );
  if (report.listTasks?.skipped) out.push(`\nListTasks: _${report.listTasks.skipped}_`);
  out.push('');
  if (report.latencyFloor) out.push(latencyFloorSection(report), '');
  out.push('## Other task shapes');
  out.push('');
  out.push(
    `Multi-turn (two turns per task, tck provider): US$${fmt(report.multiTurn.cost.usdPerMillionTasks, 4)} per million tasks.`,
  );
  out.push('');
  out.push(
    `GetTask: US$${fmt(report.getTask.cost.usdPerMillionTasks, 4)} per million calls; ${fmt(report.getTask.perTask.readUnits, 4)} RRU per call.`,
  );
  out.push('');
  out.push(
    `Streaming: ${skippedOr(report.streaming, () => `US$${fmt(report.streaming.cost.usdPerMillionTasks, 4)} per million tasks.\n\n${costTable(report.streaming.cost)}`)}`,
  );
  out.push('');
  out.push(
    `Push: ${skippedOr(report.push, () => `US$${fmt(report.push.cost.usdPerMillionTasks, 4)} per million tasks; ${report.push.webhookPosts} webhook posts, ${report.push.missingCompletedWebhooks} completed tasks without a COMPLETED webhook.\n\n${costTable(report.push.cost)}`)}`,
  );
  out.push('');
  out.push('## Scale');
  out.push('');
  out.push(
    skippedOr(report.scale, () =>
      table(
        [
          'stored tasks of the caller',
          'US$ per million single-turn tasks',
          'ListTasks p50 ms',
          'ListTasks p95 ms',
          'RRU per ListTasks',
          'seeding s',
          'ListTasks p50 ms right after its own seeding',
        ],
        report.scale.map((row: Report) => [
          row.stored,
          fmt(row.usdPerMillionTasks, 4),
          fmt(row.listTasks?.latency?.p50),
          fmt(row.listTasks?.latency?.p95),
          fmt(row.listTasks?.readUnitsPerCall, 4),
          fmt(row.seedSeconds),
          fmt(row.listTasks?.latencyAfterOwnSeeding?.p50),
        ]),
      ),
    ),
  );
  if (Array.isArray(report.scale)) {
    out.push('');
    out.push(
      'Both owners are stored in the same table before either is measured; the ListTasks figures judged are from calls alternating between the two owners in one pool (10 in flight), so both sizes see the same table, JVM heap and machine load. ' +
        'The last column is each owner measured alone right after its own seeding, the order used before decision 0034: there the 10,000-task owner was measured after ~10,000 more writes than the 100-task one (DynamoDB Local, not the product — see 0034).',
    );
  }
  out.push('');
  out.push('## Cold-start proxy per function');
  out.push('');
  out.push(skippedOr(report.coldStarts, () => coldStartTable(report.coldStarts)));
  out.push('');
  out.push(
    'Bundles are built with HOUSE_ESBUILD_OPTIONS (infra/bundling.ts), the options HouseFunction hands CDK (ESM, minified, node22 target, AWS SDK bundled); the baseline is the same entry with only the project TypeScript compiled and every dependency imported from node_modules. Init = time to import the module in a fresh Node process (this machine runs Node 20; Lambda runs Node 22).',
  );
  out.push('');
  out.push('## Prices used');
  out.push('');
  const prices = report.prices;
  out.push(`${prices.region}, on-demand list prices, ${prices.asOf}; source: ${prices.source}.`);
  out.push('');
  out.push(
    table(
      ['item', 'US$'],
      [
        ['DynamoDB write request unit (per million)', prices.dynamodbWriteRequestUnit],
        ['DynamoDB read request unit (per million)', prices.dynamodbReadRequestUnit],
        ['KMS request (per million)', prices.kmsRequest],
        ['SQS standard request, 64 KB chunk (per million)', prices.sqsStandardRequest],
        ['SQS FIFO request, 64 KB chunk (per million)', prices.sqsFifoRequest],
        ['Lambda request (per million)', prices.lambdaRequest],
        ['Lambda arm64 GB-second', prices.lambdaArmGbSecond],
        ['API Gateway REST request (per million)', prices.apiGatewayRestRequest],
        ['CloudWatch Logs ingestion (per GB)', prices.logsIngestedGb],
        ['X-Ray trace recorded (per million)', prices.xrayTraceRecorded],
      ],
    ),
  );
  out.push('');
  out.push(
    `Memory sizes read from infra/service-stack.ts: ${Object.values(report.deployment.functions)
      .map((fn: Report) => `${fn.functionName} ${fn.memoryMb} MB`)
      .join(
        ', ',
      )}. Model time is excluded (scripted provider). Lambda response streaming bytes are below the 6 MB per request that streaming bills beyond, so they cost nothing here.`,
  );
  out.push('');
  out.push(`Anchor dependencies: \`${report.anchorInstall}\`.`);
  out.push('');
  return out.join('\n');
};
