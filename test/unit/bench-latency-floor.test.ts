import { describe, expect, it } from 'vitest';
import { chainSteps, type HopMark, revisionKey } from '../../bench/lib/hop-trace.ts';
import {
  floorPercentile,
  floorTaskBound,
  latencyFloor,
  machineBound,
  routeFloor,
  STEPS_TO_STATUS_TIMESTAMP,
  sumOfUniformsCdf,
  sumOfWaitsCdf,
  tracedRoutes,
} from '../../bench/lib/latency-floor.ts';
import { evaluateTargets, latencyTarget } from '../../bench/lib/report.ts';

describe('the stream wait as Lambda polls a shard (uniform 0–P per hop)', () => {
  it('one hop: the distribution function rises linearly from 0 to 1 over one interval', () => {
    expect(sumOfUniformsCdf(-0.1, 1)).toBe(0);
    expect(sumOfUniformsCdf(0.25, 1)).toBeCloseTo(0.25, 12);
    expect(sumOfUniformsCdf(0.5, 1)).toBeCloseTo(0.5, 12);
    expect(sumOfUniformsCdf(1.2, 1)).toBe(1);
  });

  it('two hops: the sum of two waits is triangular (half of it below one interval)', () => {
    expect(sumOfUniformsCdf(0.5, 2)).toBeCloseTo(0.125, 12);
    expect(sumOfUniformsCdf(1, 2)).toBeCloseTo(0.5, 12);
    expect(sumOfUniformsCdf(1.5, 2)).toBeCloseTo(0.875, 12);
    expect(sumOfUniformsCdf(2, 2)).toBe(1);
  });

  it('no hop: no wait', () => {
    expect(sumOfUniformsCdf(-1e-9, 0)).toBe(0);
    expect(sumOfUniformsCdf(0, 0)).toBe(1);
  });
});

describe('floor percentiles: measured work + the stream waits', () => {
  it('with no work, one 250 ms hop waits p50 125 ms and p95 237.5 ms', () => {
    expect(floorPercentile([0], 1, 250, 50)).toBeCloseTo(125, 3);
    expect(floorPercentile([0], 1, 250, 95)).toBeCloseTo(237.5, 3);
  });

  it('two hops: p50 one interval, p95 P·(2 − √0.1)', () => {
    expect(floorPercentile([0], 2, 250, 50)).toBeCloseTo(250, 3);
    expect(floorPercentile([0], 2, 250, 95)).toBeCloseTo(250 * (2 - Math.sqrt(0.1)), 3);
  });

  it('constant work shifts the waits; without waits the work percentile is a measured sample', () => {
    expect(floorPercentile([100, 100, 100], 1, 250, 50)).toBeCloseTo(225, 3);
    expect(floorPercentile([10, 30, 20], 0, 250, 50)).toBeCloseTo(20, 3);
    expect(floorPercentile([10, 30, 20], 0, 250, 95)).toBeCloseTo(30, 3);
    expect(floorPercentile([], 1, 250, 50)).toBeNaN();
  });

  it('is the percentile of the sum, not the sum of percentiles', () => {
    // Work 0, 0 or 300 ms (median 0) plus one wait: the sum of medians would say 125 ms, but a
    // third of the tasks end after 300 ms, so half of all end only at 0.5 ÷ (2/3) × 250 = 187.5 ms.
    expect(floorPercentile([0, 0, 300], 1, 250, 50)).toBeCloseTo(187.5, 3);
  });
});

describe('latencyFloor of a traced path', () => {
  const steps = [
    { label: 'work to commit' },
    { label: 'stream hop', streamWait: true },
    { label: 'put' },
    { label: 'read' },
  ];

  it('takes the work as measured and the stream hop as the poll wait, not as measured', () => {
    const rows = [
      [70, 10, 40, 20],
      [74, 240, 42, 26],
      [80, 150, 44, 30],
    ];
    const floor = latencyFloor(steps, rows, 250);
    // Work per task 130, 142, 154: p50 of work + U(0, 250).
    expect(floor.p50).toBeCloseTo(floorPercentile([130, 142, 154], 1, 250, 50), 6);
    expect(floor.p50).toBeGreaterThan(142 + 125 - 15);
    expect(floor.p50).toBeLessThan(142 + 125 + 15);
    expect(floor.streamWaits).toBe(1);
    expect(floor.n).toBe(3);
    expect(floor.parts.map((part) => part.floorP50Ms)).toEqual([74, 125, 42, 26]);
    expect(floor.parts[1]?.measuredP50Ms).toBe(150);
    // The measured stream hop (here fast: 10 ms) never lowers the floor.
    expect(latencyFloor(steps, [[70, 10, 40, 20]], 250).p50).toBeCloseTo(255, 3);
  });

  it('the webhook path has two stream hops, the blocking and SSE paths one, when streams feed them', () => {
    const routes = tracedRoutes(backstopTrace, intervals);
    expect(routes.webhook[0]?.filter((step) => step.streamWait)).toHaveLength(2);
    expect(routes.blocking[0]?.filter((step) => step.streamWait)).toHaveLength(1);
    expect(routes.sse[0]?.filter((step) => step.streamWait)).toHaveLength(1);
  });
});

const completedState = 'TASK_STATE_COMPLETED';
const intervals = { stateStreamMs: 250, journalStreamMs: 200 };
const at = (hop: string, taskId: string, ms: number, extra: Partial<HopMark> = {}): HopMark => ({
  hop,
  taskId,
  at: ms,
  ...extra,
});
const committed = (taskId: string, fn = 'executor') => [
  at('client: request', taskId, 0),
  at(`${fn}: status timestamp`, taskId, 30, { revision: 3, state: completedState }),
  at(`${fn}: commit`, taskId, 36, { revision: 3, state: completedState }),
];

/** Today's trace before write-through: every journal put by the projector, every webhook by the pusher. */
const backstopTrace: HopMark[] = [
  ...committed('b'),
  at('projector: receive', 'b', 160, { revision: 3, state: completedState }),
  at('projector: view put', 'b', 170, { revision: 3, state: completedState }),
  at('client: response', 'b', 200),
  ...committed('s'),
  at('projector: receive', 's', 160, { revision: 3, state: completedState }),
  at('projector: event put', 's', 165, { revision: 3, state: completedState }),
  at('rpc: event read', 's', 180, { revision: 3, state: completedState }),
  at('client: frame', 's', 182, { state: completedState }),
  ...committed('w'),
  at('projector: receive', 'w', 160, { revision: 3, state: completedState }),
  at('projector: event put', 'w', 165, { revision: 3, state: completedState }),
  at('pusher: receive', 'w', 265, { revision: 3 }),
  at('pusher: queue send', 'w', 270, { revision: 3 }),
  at('deliverer: receive', 'w', 290, { revision: 3 }),
  at('receiver: body', 'w', 300, { state: completedState }),
];

/** With write-through and the writer's direct fan-out: no stream on any path. */
const writeThroughTrace: HopMark[] = [
  ...committed('b'),
  at('executor: view put', 'b', 44, { revision: 3, state: completedState }),
  at('executor: event put', 'b', 48, { revision: 3, state: completedState }),
  at('projector: receive', 'b', 160, { revision: 3, state: completedState }),
  at('client: response', 'b', 60),
  ...committed('s'),
  at('executor: event put', 's', 42, { revision: 3, state: completedState }),
  at('rpc: event read', 's', 41, { revision: 2 }),
  at('rpc: event read', 's', 55, { revision: 3, state: completedState }),
  at('client: frame', 's', 57, { state: completedState }),
  ...committed('w'),
  at('executor: event put', 'w', 42, { revision: 3, state: completedState }),
  at('executor: queue send', 'w', 47, { revision: 3 }),
  at('pusher: receive', 'w', 200, { revision: 3 }),
  at('deliverer: receive', 'w', 67, { revision: 3 }),
  at('receiver: body', 'w', 75, { state: completedState }),
];

describe('routes read from the trace (decision 0047)', () => {
  it("a stream-fed path waits on each stream it crosses, at that stream's poll interval", () => {
    const routes = tracedRoutes(backstopTrace, intervals);
    expect(routes.webhook[0]?.map((step) => [step.label, step.ms, step.pollIntervalMs])).toEqual([
      [
        'request → COMPLETED status timestamp (create; the run queue and claim when queued; the run)',
        30,
        undefined,
      ],
      ['status timestamp → commit (the completing write)', 6, undefined],
      ['State stream → projector', 124, 250],
      ['projector: receive → event put', 5, undefined],
      ['Journal stream → pusher', 100, 200],
      ['pusher: receive → delivery queue send', 5, undefined],
      ['FIFO delivery queue → deliverer', 20, undefined],
      ['deliverer: receive → the receiver has the POST', 10, undefined],
    ]);
    // Work 30 + 6 + 5 + 5 + 20 + 10 = 76 ms, plus U(0, 250) + U(0, 200).
    const floor = routeFloor(routes.webhook);
    expect(floor.p50).toBeCloseTo(76 + 225, 3);
    expect(floor.streamWaits).toBe(2);
  });

  it('write-through and direct fan-out take the stream waits off every path', () => {
    const routes = tracedRoutes(writeThroughTrace, intervals);
    expect(routes.blocking[0]?.map((step) => [step.label, step.ms])).toEqual([
      ['request → COMPLETED status timestamp (create; the run queue and claim when queued; the run)', 30],
      ['status timestamp → commit (the completing write)', 6],
      ['commit → view put (executor: write-through)', 8],
      ["view put → response (the blocking wait's next journal poll, its reads, the answer)", 16],
    ]);
    // The projector's later receive (the backstop finding it projected) is not on the path.
    expect(routeFloor(routes.blocking).p50).toBeCloseTo(60, 3);
    expect(routes.sse[0]?.map((step) => step.ms)).toEqual([30, 6, 6, 13, 2]);
    const webhook = routeFloor(routes.webhook, {
      label: 'from the status timestamp',
      skip: STEPS_TO_STATUS_TIMESTAMP,
    });
    expect(webhook.streamWaits).toBe(0);
    expect(webhook.parts.map((part) => part.label)).toContain(
      'event put → delivery queue send (executor: direct fan-out)',
    );
    expect(webhook.p50).toBeCloseTo(75, 3);
    expect(webhook.from?.p50).toBeCloseTo(45, 3);
  });

  it('tasks on different routes are grouped, the most common first, and the floor mixes them', () => {
    const both = [
      ...backstopTrace.filter((m) => m.taskId === 'b'),
      ...writeThroughTrace.filter((m) => m.taskId === 'b').map((m) => ({ ...m, taskId: 'b2' })),
      ...writeThroughTrace.filter((m) => m.taskId === 'b').map((m) => ({ ...m, taskId: 'b3' })),
    ];
    const floor = routeFloor(tracedRoutes(both, intervals).blocking);
    expect(floor.n).toBe(3);
    expect(floor.routes.map((route) => [route.n, route.streamWaits])).toEqual([
      [2, 0],
      [1, 1],
    ]);
    // Two of three end at 60 ms; the third at 36 + 10 + 30 = 76 ms + U(0, 250): the p50 is 60.
    expect(floor.p50).toBeCloseTo(60, 3);
  });

  it("a webhook's route follows the receive that made the POST, not its revision's first receive", () => {
    // A first attempt of COMPLETED's message fails (the receiver answers 500) and waits its backoff;
    // the retry posts it.
    const retried: HopMark[] = [
      ...writeThroughTrace.filter((m) => m.taskId === 'w' && m.hop !== 'receiver: body'),
      at('deliverer: receive', 'w', 1067, { revision: 3 }),
      at('receiver: body', 'w', 1075, { state: completedState }),
    ];
    expect(
      tracedRoutes(retried, intervals)
        .webhook[0]?.slice(-2)
        .map((s) => [s.label, s.ms]),
    ).toEqual([
      ['FIFO delivery queue → deliverer', 1020],
      ['deliverer: receive → the receiver has the POST', 8],
    ]);
  });

  it("a POST made before its revision's own message was received is not paired with that message", () => {
    // WORKING's message (revision 2) is in the deliverer when COMPLETED is put, and its POST of
    // COMPLETED comes first; COMPLETED's own message — the pusher's, off the journal stream — is
    // received only after it (and posts nothing: settled).
    const caughtUp: HopMark[] = [
      ...committed('c'),
      at('executor: queue send', 'c', 20, { revision: 2 }),
      at('deliverer: receive', 'c', 25, { revision: 2 }),
      at('executor: event put', 'c', 42, { revision: 3, state: completedState }),
      at('receiver: body', 'c', 50, { state: completedState }),
      at('pusher: receive', 'c', 60, { revision: 3 }),
      at('pusher: queue send', 'c', 64, { revision: 3 }),
      at('deliverer: receive', 'c', 70, { revision: 3 }),
    ];
    const route = tracedRoutes(caughtUp, intervals).webhook[0];
    expect(route?.map((s) => [s.label, s.ms])).toEqual([
      ['request → COMPLETED status timestamp (create; the run queue and claim when queued; the run)', 30],
      ['status timestamp → commit (the completing write)', 6],
      ['commit → event put (executor: write-through)', 6],
      ["event put → the receiver has the POST (an older revision's message, already received, posted it)", 8],
    ]);
    // No stream wait: the pusher's late copy was not on the path (paired with it, the floor took a
    // journal-stream wait of U(0, 200) and a receive after the POST).
    expect(routeFloor(route ? [route] : []).p50).toBeCloseTo(50, 3);
  });

  it('a task with a missing hop has no route', () => {
    const partial = writeThroughTrace.filter((m) => !(m.taskId === 'b' && m.hop === 'client: response'));
    expect(tracedRoutes(partial, intervals).blocking).toEqual([]);
  });

  it('sums waits of different widths exactly', () => {
    // U(0, 1) + U(0, 2): P(≤ 1) = 0.25, P(≤ 2) = 0.75, P(≤ 3) = 1.
    expect(sumOfWaitsCdf(1, [1, 2])).toBeCloseTo(0.25, 12);
    expect(sumOfWaitsCdf(2, [1, 2])).toBeCloseTo(0.75, 12);
    expect(sumOfWaitsCdf(3, [1, 2])).toBe(1);
    expect(sumOfWaitsCdf(0.7, [1, 1])).toBeCloseTo(sumOfUniformsCdf(0.7, 2), 12);
    expect(sumOfWaitsCdf(0, [])).toBe(1);
  });
});

describe('chainSteps: per key, the time between consecutive hops', () => {
  const mark = (hop: string, taskId: string, at: number, extra: Partial<HopMark> = {}): HopMark => ({
    hop,
    taskId,
    at,
    ...extra,
  });

  it('keeps only keys with every hop, and the first mark of each hop', () => {
    const chain = [{ hop: 'a' }, { hop: 'b', state: 'DONE' }, { hop: 'c' }];
    const marks = [
      mark('a', 't1', 0),
      mark('b', 't1', 5, { state: 'WORKING' }),
      mark('b', 't1', 10, { state: 'DONE' }),
      mark('c', 't1', 30),
      mark('c', 't1', 99),
      mark('a', 't2', 0),
      mark('c', 't2', 40),
    ];
    expect(chainSteps(marks, chain, (m) => m.taskId)).toEqual([[10, 20]]);
  });

  it('revisionKey places state-only marks (frames, POSTs) on the revision their commit set', () => {
    const marks = [
      mark('executor: commit', 't1', 0, { revision: 3, state: 'TASK_STATE_COMPLETED' }),
      mark('client: frame', 't1', 9, { state: 'TASK_STATE_COMPLETED' }),
      mark('client: frame', 't1', 9, { state: 'TASK_STATE_FAILED' }),
    ];
    const key = revisionKey(marks);
    expect(marks.map(key)).toEqual(['t1/3', 't1/3', undefined]);
  });
});

describe('the machine bound at closed-loop clients', () => {
  it('mean latency ≥ clients × CPU per task ÷ cores', () => {
    const bound = machineBound(20, 2, 0.06);
    expect(bound.maxTasksPerSecond).toBeCloseTo(33.333, 3);
    expect(bound.meanLatencyMs).toBeCloseTo(600, 6);
    expect(bound.boundBy).toBe('cores');
  });

  it('is the main thread when its CPU per task fills one core first', () => {
    // 45 ms per task over 2 cores allows 44.4 tasks/s; 25 ms on the one JavaScript thread only 40.
    const bound = machineBound(20, 2, 0.045, 0.025);
    expect(bound.maxTasksPerSecond).toBeCloseTo(40, 6);
    expect(bound.boundBy).toBe('main thread');
    expect(bound.meanLatencyMs).toBeCloseTo(500, 6);
    expect(machineBound(20, 2, 0.045, 0.02).boundBy).toBe('cores');
  });

  it("bounds the latency by the floor task's CPU: the cores, or the one JavaScript thread", () => {
    const run = {
      dynamodbRequests: 7,
      streamReads: 0.6,
      streamRecords: 9,
      mainThreadMsPerTask: 10,
      javaMsPerTask: 8,
    };
    // 22 ms per task over 2 cores: 90.9 tasks/s; its 10 ms on the main thread would allow 100.
    const bound = floorTaskBound(20, 2, { ...run, cpuMsPerTask: 22 });
    expect(bound.maxTasksPerSecond).toBeCloseTo(2000 / 22, 9);
    expect(bound.meanLatencyMs).toBeCloseTo((20 * 22) / 2, 9);
    expect(bound.dynamodbRequests).toBe(7);
    expect(bound.streamRecords).toBe(9);
    // The main thread binds when its share is over half of the whole: 14 of 26 ms → 71.4 tasks/s.
    const threadBound = floorTaskBound(20, 2, { ...run, cpuMsPerTask: 26, mainThreadMsPerTask: 14 });
    expect(threadBound.maxTasksPerSecond).toBeCloseTo(1000 / 14, 9);
    expect(threadBound.meanLatencyMs).toBeCloseTo(20 * 14, 9);
  });
});

describe('latency verdicts against the floor', () => {
  it('says "below the floor" only when the floor itself is above the target', () => {
    expect(latencyTarget('p50 ≤ 150 ms', 150, 650, 270)).toEqual({
      target: 'p50 ≤ 150 ms',
      measured: '650 ms',
      verdict: 'not met',
      note: 'below the floor (270 ms)',
    });
    expect(latencyTarget('p50 ≤ 150 ms', 150, 650, 120)).toEqual({
      target: 'p50 ≤ 150 ms',
      measured: '650 ms',
      verdict: 'not met',
    });
    expect(latencyTarget('p50 ≤ 150 ms', 150, 140, 270).note).toBeUndefined();
    expect(latencyTarget('p50 ≤ 150 ms', 150, undefined, 270).verdict).toBe('not measured');
  });

  it("adds the machine's bound when it too is above the target", () => {
    expect(latencyTarget('p50 ≤ 150 ms', 150, 650, 120, { clients: 20, meanLatencyMs: 600 }).note).toBe(
      'this machine at 20 clients: ≥ 600 ms mean',
    );
    expect(
      latencyTarget('p50 ≤ 150 ms', 150, 650, 120, { clients: 20, meanLatencyMs: 100 }).note,
    ).toBeUndefined();
  });

  it('evaluateTargets reads the floors from the report', () => {
    const report = {
      singleTurn: { latency: { p50: 650, p95: 850 } },
      streaming: { latency: { commitToSseEvent: { p50: 230 } } },
      push: { latency: { commitToWebhook: { p50: 1220 } } },
      latencyFloor: {
        blocking: { p50: 290, p95: 280 },
        sse: { p50: 170 },
        webhook: { p50: 200 },
        machine: { clients: 20, meanLatencyMs: 50 },
      },
    };
    const byTarget = Object.fromEntries(evaluateTargets(report).map((t) => [t.target, t]));
    expect(byTarget['blocking SendMessage p50 ≤ 150 ms']?.note).toBe('below the floor (290 ms)');
    expect(byTarget['blocking SendMessage p95 ≤ 300 ms']?.note).toBeUndefined();
    expect(byTarget['commit → SSE event p50 ≤ 100 ms']?.note).toBe('below the floor (170 ms)');
    expect(byTarget['commit → webhook p50 ≤ 250 ms']?.verdict).toBe('not met');
    expect(byTarget['commit → webhook p50 ≤ 250 ms']?.note).toBeUndefined();
  });
});

describe("issue 16's side-by-side target", () => {
  const ratioOf = (meanLatencyMs: number) =>
    evaluateTargets({
      parameters: { concurrency: 20 },
      singleTurn: { latency: { p50: 566 } },
      anchor: { latency: { p50: 55.3 } },
      latencyFloor: { machine: { clients: 20, meanLatencyMs } },
    }).find((t) => t.target.startsWith('blocking SendMessage at 20 clients'));

  it("names this machine's bound when it is itself above 5× the SDK server's p50", () => {
    expect(ratioOf(493)).toMatchObject({
      measured: '566 ms vs 55.3 ms: 10.2×',
      verdict: 'not met',
      note: "this machine at 20 clients: ≥ 493 ms mean = 8.92× the SDK server's p50",
    });
  });

  it('says nothing of the machine when its bound would allow the target', () => {
    expect(ratioOf(200)?.note).toBeUndefined();
  });

  it('names the fewest-request bound of any design, "below the floor of any design" only above 5× (decision 0090)', () => {
    const withFewest = (fewestMs: number) =>
      evaluateTargets({
        parameters: { concurrency: 20 },
        singleTurn: { latency: { p50: 566 } },
        anchor: { latency: { p50: 55.3 } },
        latencyFloor: {
          machine: { clients: 20, meanLatencyMs: 200, fewestTask: { meanLatencyMs: fewestMs } },
        },
      }).find((t) => t.target.startsWith('blocking SendMessage at 20 clients'))?.note;
    expect(withFewest(200)).toBe(
      'the fewest requests any design needs, alone (decision 0090): ≥ 200 ms = 3.62×',
    );
    expect(withFewest(300)).toBe(
      'below the floor of any design: the fewest requests any design needs, alone (decision 0090): ≥ 300 ms = 5.42×',
    );
  });
});

describe('ListTasks at scale (decision 0034)', () => {
  it('is judged on the alternated figures, not on each owner measured right after its own seeding', () => {
    const row = (stored: number, p50: number, afterOwnSeeding: number) => ({
      stored,
      usdPerMillionTasks: 30,
      listTasks: { latency: { p50 }, latencyAfterOwnSeeding: { p50: afterOwnSeeding } },
    });
    const target = (scale: unknown[]) =>
      evaluateTargets({ scale }).find((t) => t.target.startsWith('ListTasks p50'));
    expect(target([row(100, 50, 50), row(10_000, 55, 70)])).toMatchObject({
      measured: '1.1×',
      verdict: 'met',
    });
    expect(target([row(100, 50, 50), row(10_000, 65, 52)])).toMatchObject({ verdict: 'not met' });
  });
});
