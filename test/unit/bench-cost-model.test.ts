import { describe, expect, it } from 'vitest';
import {
  billedMilliseconds,
  capacityModes,
  costPerMillionTasks,
  demandByTable,
  gbSeconds,
  type PerTaskUsage,
  type Prices,
  provisionedDynamodbCost,
  sqsBilledRequests,
  usEast1Prices,
  usEast1ProvisionedPrices,
} from '../../bench/lib/cost-model.ts';
import { computeFloor } from '../../bench/lib/floor.ts';
import {
  emptyReadTopUp,
  itemSize,
  transactionalIndexUnits,
  transactionalUnits,
} from '../../bench/lib/meter.ts';
import { evaluateTargets } from '../../bench/lib/report.ts';
import { median, medianOfRounds, percentile, summarize } from '../../bench/lib/stats.ts';
import { assignedItem } from '../../shared/adapters/dynamodb/write-plan.ts';

const none: PerTaskUsage = {
  dynamodbReadUnits: 0,
  dynamodbWriteUnits: 0,
  kmsRequests: 0,
  sqsStandardRequests: 0,
  sqsFifoRequests: 0,
  functions: [],
  apiRequests: 0,
  logBytes: 0,
  xrayTraces: 0,
};

const lineOf = (usage: PerTaskUsage, item: string, prices?: Prices) =>
  costPerMillionTasks(usage, prices).lines.find((line) => line.item.startsWith(item));

describe('percentile (nearest rank)', () => {
  const sorted = Array.from({ length: 100 }, (_, i) => i + 1);

  it('returns an observed sample: p50 of 1..100 is 50, p95 is 95, p99 is 99, p100 is 100', () => {
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 95)).toBe(95);
    expect(percentile(sorted, 99)).toBe(99);
    expect(percentile(sorted, 100)).toBe(100);
  });

  it('rounds the rank up for small samples', () => {
    expect(percentile([10, 20, 30], 50)).toBe(20);
    expect(percentile([10, 20, 30], 95)).toBe(30);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([10, 20, 30], 0)).toBe(10);
  });

  it('is NaN without samples', () => {
    expect(percentile([], 50)).toBeNaN();
    expect(median([])).toBeNaN();
  });

  it('summarize sorts first; median averages the middle pair', () => {
    expect(summarize([30, 10, 20, 40])).toEqual({ n: 4, p50: 20, p95: 40, p99: 40, max: 40 });
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5, 1, 3])).toBe(3);
  });

  it('medianOfRounds takes each percentile as the median over rounds', () => {
    const rounds = [summarize([100, 200]), summarize([110, 900]), summarize([90, 150])];
    const combined = medianOfRounds(rounds);
    expect(combined.p50).toBe(100);
    expect(combined.p95).toBe(200);
    expect(combined.n).toBe(6);
    expect(combined.max).toBe(900);
  });
});

describe('cost model arithmetic', () => {
  it('Lambda bills each invocation rounded up to the next millisecond, at least 1 ms', () => {
    expect(billedMilliseconds(0.2)).toBe(1);
    expect(billedMilliseconds(12.01)).toBe(13);
    expect(billedMilliseconds(12)).toBe(12);
  });

  it('GB-seconds scale with memory: 1,000 ms at 512 MB is half a GB-second', () => {
    expect(gbSeconds(1000, 512)).toBe(0.5);
    expect(gbSeconds(250, 1024)).toBe(0.25);
  });

  it('SQS bills one request per started 64 KB chunk', () => {
    expect(sqsBilledRequests(0)).toBe(1);
    expect(sqsBilledRequests(65_536)).toBe(1);
    expect(sqsBilledRequests(65_537)).toBe(2);
    expect(sqsBilledRequests(256 * 1024)).toBe(4);
  });

  it('prices per million units times units per task give dollars per million tasks', () => {
    const usage: PerTaskUsage = {
      ...none,
      dynamodbWriteUnits: 10,
      dynamodbReadUnits: 4,
      kmsRequests: 0.5,
      apiRequests: 1,
    };
    expect(lineOf(usage, 'DynamoDB write')?.usdPerMillionTasks).toBeCloseTo(6.25, 10);
    expect(lineOf(usage, 'DynamoDB read')?.usdPerMillionTasks).toBeCloseTo(0.5, 10);
    expect(lineOf(usage, 'KMS')?.usdPerMillionTasks).toBeCloseTo(1.5, 10);
    expect(lineOf(usage, 'API Gateway')?.usdPerMillionTasks).toBeCloseTo(3.5, 10);
  });

  it('Lambda: requests plus GB-seconds at the function memory (arm64 price)', () => {
    const usage: PerTaskUsage = {
      ...none,
      functions: [{ functionName: 'rpc', invocations: 1, billedMs: 100, memoryMb: 512 }],
    };
    // 0.05 GB-s per task × 1e6 tasks × $0.0000133334 = $0.66667
    expect(lineOf(usage, 'Lambda rpc duration')?.usdPerMillionTasks).toBeCloseTo(0.66667, 4);
    expect(lineOf(usage, 'Lambda rpc invocations')?.usdPerMillionTasks).toBeCloseTo(0.2, 10);
  });

  it('logs are priced per GB ingested; FIFO requests get their own line and price', () => {
    const usage: PerTaskUsage = { ...none, logBytes: 1024 ** 3 / 1_000_000, sqsFifoRequests: 2 };
    expect(lineOf(usage, 'CloudWatch Logs')?.usdPerMillionTasks).toBeCloseTo(0.5, 10);
    expect(lineOf(usage, 'SQS requests (FIFO)')?.usdPerMillionTasks).toBeCloseTo(1.0, 10);
    expect(lineOf(none, 'SQS requests (FIFO)')).toBeUndefined();
  });

  it('the total is the sum of the lines', () => {
    const usage: PerTaskUsage = {
      ...none,
      dynamodbWriteUnits: 20,
      sqsStandardRequests: 1.4,
      apiRequests: 1,
      functions: [{ functionName: 'executor', invocations: 0.2, billedMs: 30, memoryMb: 1024 }],
    };
    const breakdown = costPerMillionTasks(usage, usEast1Prices);
    const sum = breakdown.lines.reduce((total, line) => total + line.usdPerMillionTasks, 0);
    expect(breakdown.usdPerMillionTasks).toBeCloseTo(sum, 10);
    expect(breakdown.usdPerMillionTasks).toBeCloseTo(12.5 + 0.56 + 3.5 + 0.04 + 0.4, 3);
  });
});

describe('DynamoDB sizing for transactions (AWS rules, not DynamoDB Local’s)', () => {
  it('sizes items by attribute names and values, in wire form or as plain values alike', () => {
    expect(itemSize({ pk: { S: 'abc' } })).toBe(5);
    expect(itemSize({ pk: 'abc' })).toBe(5);
    expect(itemSize({ n: { N: '12345' } })).toBe(1 + 4);
    expect(itemSize({ m: { M: { a: { S: 'xy' } } } })).toBe(1 + 3 + 1 + 2 + 1);
    expect(itemSize({ m: { a: 'xy' } })).toBe(1 + 3 + 1 + 2 + 1);
  });

  it('bills 2 units per started KB of each item put, per table', () => {
    const big = { pk: 'x', blob: 'y'.repeat(1500) };
    const units = transactionalUnits({
      TransactItems: [
        { Put: { TableName: 'bench-State', Item: { pk: 'a' } } },
        { Put: { TableName: 'bench-State', Item: big } },
        { Put: { TableName: 'bench-Journal', Item: { pk: 'b' } } },
        { ConditionCheck: { TableName: 'bench-Journal' } },
      ],
    });
    expect(units.get('State')).toBe(2 + 4);
    expect(units.get('Journal')).toBe(2);
  });

  it('sizes an update in a transaction by its key and the attributes it sets (0038)', () => {
    const update = {
      TableName: 'bench-State',
      Key: { pk: { S: 'TASK#t' }, sk: { S: 'TASK' } },
      UpdateExpression: 'SET #history = :history, #revision = :revision REMOVE #leaseUntil',
      ConditionExpression: '#revision = :expectedRevision',
      ExpressionAttributeNames: {
        '#history': 'history',
        '#revision': 'revision',
        '#leaseUntil': 'leaseUntil',
      },
      ExpressionAttributeValues: {
        ':history': { S: 'h'.repeat(1500) },
        ':revision': { N: '3' },
        ':expectedRevision': { N: '2' },
      },
    };
    expect(assignedItem(update)).toEqual({
      pk: { S: 'TASK#t' },
      sk: { S: 'TASK' },
      history: { S: 'h'.repeat(1500) },
      revision: { N: '3' },
    });
    // 1,500 B of history with its key: 2 KB started, 2 units each inside a transaction.
    expect(transactionalUnits({ TransactItems: [{ Update: update }] }).get('State')).toBe(4);
  });

  it('counts the index writes of a transaction twice and keeps the undocumented second unit apart (0036)', () => {
    // DynamoDB Local reports 4 for one index entry a transaction puts or deletes (a PutItem: 1).
    expect(transactionalIndexUnits(4)).toEqual({ billed: 2, assumed: 1 });
    // An index key move (delete + put) inside a transaction.
    expect(transactionalIndexUnits(8)).toEqual({ billed: 4, assumed: 2 });
    expect(transactionalIndexUnits(0)).toEqual({ billed: 0, assumed: 0 });
  });

  it('bills a read request that finds nothing at least AWS’s minimum, which DynamoDB Local reports as 0 (0036)', () => {
    expect(emptyReadTopUp('Query', { ConsistentRead: true }, 0)).toBe(1);
    expect(emptyReadTopUp('Query', {}, 0)).toBe(0.5);
    expect(emptyReadTopUp('Scan', { ConsistentRead: false }, 0)).toBe(0.5);
    expect(emptyReadTopUp('GetItem', { ConsistentRead: true }, 1)).toBe(0);
    expect(emptyReadTopUp('Query', { ConsistentRead: true }, 7.5)).toBe(0);
    expect(emptyReadTopUp('PutItem', {}, 0)).toBe(0);
    expect(emptyReadTopUp('TransactWriteItems', {}, 0)).toBe(0);
  });
});

describe('floor', () => {
  it('adds the single-item writes, projected revisions and reads the invariants need', () => {
    const floor = computeFloor(
      {
        taskFirst: 600,
        taskFinal: 1800,
        run: 400,
        viewFirst: 400,
        viewFinal: 1200,
        eventFirst: 300,
        eventFinal: 1000,
        auditRows: 0,
        auditRowBytes: 0,
      },
      { projectorBatchSize: 25 },
    );
    // create 1 + complete 3 (2,200 B) + rev1 WORKING's event 1 + rev2 COMPLETED (1+2+2): the run is
    // claimed by its create and runs in the caller, with no SUBMITTED revision (decision 0096), and
    // the view is created with the settle (decision 0097).
    expect(floor.writeUnits).toBe(1 + 3 + 1 + 5);
    expect(floor.projectedRevisions).toBe(2);
    // The backstop's eventually consistent read per revision; the answer is the settle's image.
    expect(floor.readUnits).toBe(1);
    expect(floor.sqsRequests).toBe(0);
    expect(floor.kmsRequests).toBe(0);
    expect(floor.queueHops).toBe(0);
    expect(floor.invocations).toEqual({ rpc: 1, executor: 0, projector: 2 / 25 });
    // create, complete, an event per revision and one view; no audit row here.
    expect(floor.dynamodbWriteRequests).toBe(5);
    expect(floor.dynamodbReadRequests).toBe(0);
  });
});

describe('target verdicts', () => {
  it('says met, not met, or not measured', () => {
    const verdicts = evaluateTargets({
      singleTurn: { cost: { usdPerMillionTasks: 14 }, latency: { p50: 151, p95: 250 } },
      ratioToFloor: { cost: 1.3 },
      coldStarts: [{ bundleBytes: 600 * 1024, ratio: 0.3 }],
      scale: [
        { usdPerMillionTasks: 10, listTasks: { latency: { p50: 20 } } },
        { usdPerMillionTasks: 12.5, listTasks: { latency: { p50: 24 } } },
      ],
    });
    const of = (prefix: string) => verdicts.find((v) => v.target.startsWith(prefix))?.verdict;
    expect(of('infrastructure cost')).toBe('met');
    expect(of('cost ≤ 1.3×')).toBe('met');
    expect(of('blocking SendMessage p50')).toBe('not met');
    expect(of('blocking SendMessage p95')).toBe('met');
    expect(of('commit → SSE')).toBe('not measured');
    expect(of('every function bundle')).toBe('not met');
    expect(of('module init')).toBe('met');
    expect(of('per-task cost at 10,000')).toBe('not met');
    expect(of('ListTasks p50')).toBe('met');
  });
});

describe('provisioned DynamoDB capacity at a steady rate (decision 0048)', () => {
  it('provisions rate × units per task ÷ target utilisation, per table and index, billed per unit-hour', () => {
    const cost = provisionedDynamodbCost([{ where: 'State', readUnitsPerTask: 2, writeUnitsPerTask: 7 }], {
      tasksPerSecond: 10,
      targetUtilization: 0.7,
    });
    // 10 × 7 ÷ 0.7 = 100 WCU, 10 × 2 ÷ 0.7 = 28.57 RCU.
    expect(cost.lines[0]?.writeCapacity).toBeCloseTo(100, 9);
    expect(cost.lines[0]?.readCapacity).toBeCloseTo(200 / 7, 9);
    const perHour = 100 * 0.00065 + (200 / 7) * 0.00013;
    expect(cost.usdPerHour).toBeCloseTo(perHour, 12);
    // 36,000 tasks an hour.
    expect(cost.usdPerMillionTasks).toBeCloseTo((perHour / 36_000) * 1e6, 9);
    // Per task: 7 WRU on demand = US$4.375 per million; provisioned at 70 %: 7 ÷ 0.7 × 0.00065 ÷ 3600 × 1e6.
    expect(cost.usdPerMillionTasks).toBeCloseTo((7 / 0.7) * 0.180556 + (2 / 0.7) * 0.0361111, 3);
  });

  it('an idle table or index still pays its minimum capacity, which a higher rate spreads thinner', () => {
    const idle = [{ where: 'Audit', readUnitsPerTask: 0, writeUnitsPerTask: 0 }];
    const slow = provisionedDynamodbCost(idle, { tasksPerSecond: 1, targetUtilization: 0.7 });
    const fast = provisionedDynamodbCost(idle, { tasksPerSecond: 10, targetUtilization: 0.7 });
    expect(slow.lines[0]).toMatchObject({ readCapacity: 1, writeCapacity: 1 });
    expect(slow.usdPerHour).toBeCloseTo(0.00078, 12);
    expect(fast.usdPerMillionTasks).toBeCloseTo(slow.usdPerMillionTasks / 10, 9);
    expect(usEast1ProvisionedPrices.writeCapacityUnitHour).toBe(0.00065);
  });

  it('sums the per-function demand per table and lists every declared table and index', () => {
    expect(
      demandByTable(
        {
          'rpc: State': { read: 1, write: 2 },
          'executor: State': { read: 1, write: 4 },
          'projector: Journal/byOwner': { read: 0, write: 6 },
        },
        ['State', 'State/byLease', 'Journal/byOwner'],
      ),
    ).toEqual([
      { where: 'State', readUnitsPerTask: 2, writeUnitsPerTask: 6 },
      { where: 'State/byLease', readUnitsPerTask: 0, writeUnitsPerTask: 0 },
      { where: 'Journal/byOwner', readUnitsPerTask: 0, writeUnitsPerTask: 6 },
    ]);
  });

  it('replaces only the DynamoDB lines of a breakdown', () => {
    const breakdown = costPerMillionTasks({
      ...none,
      dynamodbWriteUnits: 25,
      dynamodbReadUnits: 4,
      apiRequests: 1,
    });
    const provisioned = provisionedDynamodbCost(
      [{ where: 'State', readUnitsPerTask: 4, writeUnitsPerTask: 25 }],
      { tasksPerSecond: 10, targetUtilization: 0.7 },
    );
    const modes = capacityModes(breakdown, provisioned);
    expect(modes.onDemand.dynamodb).toBeCloseTo(25 * 0.625 + 4 * 0.125, 9);
    expect(modes.onDemand.total).toBeCloseTo(breakdown.usdPerMillionTasks, 9);
    expect(modes.provisioned.total).toBeCloseTo(
      breakdown.usdPerMillionTasks - modes.onDemand.dynamodb + provisioned.usdPerMillionTasks,
      9,
    );
    expect(modes.provisioned.dynamodb).toBeCloseTo(provisioned.usdPerMillionTasks, 9);
  });
});
