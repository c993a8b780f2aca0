/**
 * US dollars per million tasks from counted requests, at public on-demand list prices (us-east-1).
 * Pure arithmetic, unit-tested (test/unit/bench-cost-model.test.ts); the counts come from the
 * benchmark's SDK middleware and invocation observers, never from estimates — except the lines
 * marked `estimated` (log bytes the platform adds, X-Ray traces, authorizer duration).
 */

export interface Prices {
  /** When and where the prices were read. */
  readonly asOf: string;
  readonly source: string;
  readonly region: string;
  /** DynamoDB on-demand, Standard table class, per million request units. */
  readonly dynamodbWriteRequestUnit: number;
  readonly dynamodbReadRequestUnit: number;
  /** KMS symmetric API requests, per million. */
  readonly kmsRequest: number;
  /** SQS per million requests (every 64 KB chunk of a payload is one request). */
  readonly sqsStandardRequest: number;
  readonly sqsFifoRequest: number;
  /** Lambda per million invocations, and per GB-second on arm64 (first tier). */
  readonly lambdaRequest: number;
  readonly lambdaArmGbSecond: number;
  /** API Gateway REST API, per million requests (first tier). */
  readonly apiGatewayRestRequest: number;
  /** CloudWatch Logs standard ingestion, per GB. */
  readonly logsIngestedGb: number;
  /** X-Ray, per million traces recorded. */
  readonly xrayTraceRecorded: number;
}

/**
 * Public list prices, us-east-1, on-demand, as published on the AWS pricing pages (DynamoDB's
 * on-demand prices after the 2024-11-01 reduction). Not re-read from this machine (no internet
 * here): check them on the pricing pages when the final figures are taken.
 */
export const usEast1Prices: Prices = {
  asOf: '2026-11-30 (list prices as last published; DynamoDB on-demand after the 2024-11-01 cut)',
  source:
    'aws.amazon.com/{dynamodb,kms,sqs,lambda,api-gateway,cloudwatch,xray}/pricing — not re-checked from this machine',
  region: 'us-east-1',
  dynamodbWriteRequestUnit: 0.625,
  dynamodbReadRequestUnit: 0.125,
  kmsRequest: 3.0,
  sqsStandardRequest: 0.4,
  sqsFifoRequest: 0.5,
  lambdaRequest: 0.2,
  lambdaArmGbSecond: 0.0000133334,
  apiGatewayRestRequest: 3.5,
  logsIngestedGb: 0.5,
  xrayTraceRecorded: 5.0,
};

export interface FunctionUsage {
  readonly functionName: string;
  /** Invocations per task (a batch of n tasks counts 1/n). */
  readonly invocations: number;
  /** Billed milliseconds per task: each invocation's duration rounded up to 1 ms, summed. */
  readonly billedMs: number;
  readonly memoryMb: number;
  /** Not run locally; modelled (e.g. the API Gateway authorizer). */
  readonly estimated?: boolean;
}

/** What one task uses, averaged over the tasks of a run. */
export interface PerTaskUsage {
  readonly dynamodbReadUnits: number;
  readonly dynamodbWriteUnits: number;
  readonly kmsRequests: number;
  readonly sqsStandardRequests: number;
  readonly sqsFifoRequests: number;
  readonly functions: readonly FunctionUsage[];
  readonly apiRequests: number;
  /** Log bytes the handlers wrote plus the platform's own lines (estimated). */
  readonly logBytes: number;
  /** X-Ray traces recorded per task (estimated from the sampling rule). */
  readonly xrayTraces: number;
}

export interface CostLine {
  readonly item: string;
  readonly perTask: number;
  readonly unit: string;
  readonly usdPerMillionTasks: number;
  readonly estimated?: boolean;
}

export interface CostBreakdown {
  readonly lines: readonly CostLine[];
  readonly usdPerMillionTasks: number;
}

/** Bytes → GB as AWS bills them (1 GB = 2^30 bytes). */
const GB = 1024 ** 3;

/** Lambda billed duration of one invocation: rounded up to the next millisecond. */
export const billedMilliseconds = (durationMs: number): number => Math.max(1, Math.ceil(durationMs));

/** GB-seconds of a billed duration at a memory size. */
export const gbSeconds = (billedMs: number, memoryMb: number): number =>
  (billedMs / 1000) * (memoryMb / 1024);

/** SQS requests a payload is billed as: one per started 64 KB chunk, at least one. */
export const sqsBilledRequests = (payloadBytes: number): number =>
  Math.max(1, Math.ceil(payloadBytes / 65_536));

export const costPerMillionTasks = (usage: PerTaskUsage, prices: Prices = usEast1Prices): CostBreakdown => {
  // Prices are per million units, so units per task × price = dollars per million tasks.
  const lines: CostLine[] = [
    {
      item: 'DynamoDB write request units',
      perTask: usage.dynamodbWriteUnits,
      unit: 'WRU',
      usdPerMillionTasks: usage.dynamodbWriteUnits * prices.dynamodbWriteRequestUnit,
    },
    {
      item: 'DynamoDB read request units',
      perTask: usage.dynamodbReadUnits,
      unit: 'RRU',
      usdPerMillionTasks: usage.dynamodbReadUnits * prices.dynamodbReadRequestUnit,
    },
    {
      item: 'KMS requests',
      perTask: usage.kmsRequests,
      unit: 'requests',
      usdPerMillionTasks: usage.kmsRequests * prices.kmsRequest,
    },
    {
      item: 'SQS requests (standard)',
      perTask: usage.sqsStandardRequests,
      unit: 'requests',
      usdPerMillionTasks: usage.sqsStandardRequests * prices.sqsStandardRequest,
    },
  ];
  if (usage.sqsFifoRequests > 0) {
    lines.push({
      item: 'SQS requests (FIFO)',
      perTask: usage.sqsFifoRequests,
      unit: 'requests',
      usdPerMillionTasks: usage.sqsFifoRequests * prices.sqsFifoRequest,
    });
  }
  for (const fn of usage.functions) {
    lines.push({
      item: `Lambda ${fn.functionName} invocations`,
      perTask: fn.invocations,
      unit: 'invocations',
      usdPerMillionTasks: fn.invocations * prices.lambdaRequest,
      ...(fn.estimated ? { estimated: true } : {}),
    });
    const seconds = gbSeconds(fn.billedMs, fn.memoryMb);
    lines.push({
      item: `Lambda ${fn.functionName} duration (${fn.memoryMb} MB arm64)`,
      perTask: seconds,
      unit: 'GB-s',
      usdPerMillionTasks: seconds * prices.lambdaArmGbSecond * 1_000_000,
      ...(fn.estimated ? { estimated: true } : {}),
    });
  }
  lines.push(
    {
      item: 'API Gateway REST requests',
      perTask: usage.apiRequests,
      unit: 'requests',
      usdPerMillionTasks: usage.apiRequests * prices.apiGatewayRestRequest,
    },
    {
      item: 'CloudWatch Logs ingestion',
      perTask: usage.logBytes,
      unit: 'bytes',
      usdPerMillionTasks: (usage.logBytes / GB) * prices.logsIngestedGb * 1_000_000,
      estimated: true,
    },
    {
      item: 'X-Ray traces recorded',
      perTask: usage.xrayTraces,
      unit: 'traces',
      usdPerMillionTasks: usage.xrayTraces * prices.xrayTraceRecorded,
      estimated: true,
    },
  );
  return { lines, usdPerMillionTasks: lines.reduce((total, line) => total + line.usdPerMillionTasks, 0) };
};

/**
 * X-Ray's default sampling rule: the first request in each second, then 5 % of the rest. At
 * steady load above one request per second per function the 5 % dominates.
 */
export const defaultXraySampleRate = 0.05;

/** DynamoDB provisioned capacity, Standard table class, per unit-hour (decision 0048). */
export interface ProvisionedPrices {
  readonly asOf: string;
  readonly source: string;
  readonly writeCapacityUnitHour: number;
  readonly readCapacityUnitHour: number;
}

/** us-east-1 list prices for provisioned capacity (unchanged by the 2024-11-01 on-demand cut). */
export const usEast1ProvisionedPrices: ProvisionedPrices = {
  asOf: usEast1Prices.asOf,
  source: 'aws.amazon.com/dynamodb/pricing/provisioned — not re-checked from this machine',
  writeCapacityUnitHour: 0.00065,
  readCapacityUnitHour: 0.00013,
};

/** What one table or index consumes per task (units, as the meter counts them). */
export interface CapacityDemand {
  /** `Table` or `Table/index`. */
  readonly where: string;
  readonly readUnitsPerTask: number;
  readonly writeUnitsPerTask: number;
}

export interface ProvisionedLine {
  readonly where: string;
  /** Units provisioned: max(min, rate × units per task ÷ target utilisation). */
  readonly readCapacity: number;
  readonly writeCapacity: number;
  readonly usdPerHour: number;
}

export interface ProvisionedCost {
  readonly tasksPerSecond: number;
  readonly targetUtilization: number;
  readonly minCapacity: number;
  readonly lines: readonly ProvisionedLine[];
  readonly usdPerHour: number;
  readonly usdPerMillionTasks: number;
}

/**
 * DynamoDB at a steady `tasksPerSecond` with provisioned capacity whose auto scaling holds
 * consumed ÷ provisioned at `targetUtilization` (target tracking): every table and index
 * provisions its own read and write units, at least `minCapacity` each (the auto scaling minimum),
 * billed per unit-hour. A provisioned unit serves one unit per second, so a table that consumes
 * `u` units per task needs rate × u ÷ target units. Bursts above what is provisioned are not
 * modelled: target tracking takes minutes to scale up (DynamoDB's burst capacity covers short ones).
 */
export const provisionedDynamodbCost = (
  demand: readonly CapacityDemand[],
  options: {
    readonly tasksPerSecond: number;
    readonly targetUtilization: number;
    readonly minCapacity?: number;
    readonly prices?: ProvisionedPrices;
  },
): ProvisionedCost => {
  const { tasksPerSecond, targetUtilization } = options;
  const minCapacity = options.minCapacity ?? 1;
  const prices = options.prices ?? usEast1ProvisionedPrices;
  const units = (perTask: number) => Math.max(minCapacity, (tasksPerSecond * perTask) / targetUtilization);
  const lines = demand.map((table) => {
    const readCapacity = units(table.readUnitsPerTask);
    const writeCapacity = units(table.writeUnitsPerTask);
    return {
      where: table.where,
      readCapacity,
      writeCapacity,
      usdPerHour: readCapacity * prices.readCapacityUnitHour + writeCapacity * prices.writeCapacityUnitHour,
    };
  });
  const usdPerHour = lines.reduce((total, line) => total + line.usdPerHour, 0);
  return {
    tasksPerSecond,
    targetUtilization,
    minCapacity,
    lines,
    usdPerHour,
    usdPerMillionTasks: (usdPerHour / (tasksPerSecond * 3600)) * 1_000_000,
  };
};

/** The DynamoDB lines of a breakdown (on-demand request units). */
const isDynamodbLine = (line: CostLine): boolean => line.item.startsWith('DynamoDB ');

/**
 * US$ per million tasks of a breakdown in both capacity modes: as counted (on demand), and with
 * its DynamoDB lines replaced by the provisioned cost at the steady rate.
 */
export const capacityModes = (
  breakdown: CostBreakdown,
  provisioned: ProvisionedCost,
): { onDemand: { dynamodb: number; total: number }; provisioned: { dynamodb: number; total: number } } => {
  const dynamodb = breakdown.lines
    .filter(isDynamodbLine)
    .reduce((total, line) => total + line.usdPerMillionTasks, 0);
  const rest = breakdown.usdPerMillionTasks - dynamodb;
  return {
    onDemand: { dynamodb, total: breakdown.usdPerMillionTasks },
    provisioned: { dynamodb: provisioned.usdPerMillionTasks, total: rest + provisioned.usdPerMillionTasks },
  };
};

/**
 * The demand per table and index from the meter's per-function figures (`function: Table[/index]`
 * → units per task), with every declared table and index present (an idle one still pays its
 * minimum capacity).
 */
export const demandByTable = (
  capacityByFunction: Readonly<Record<string, { readonly read: number; readonly write: number }>>,
  declared: readonly string[],
): CapacityDemand[] => {
  const totals = new Map<string, { read: number; write: number }>(
    declared.map((where) => [where, { read: 0, write: 0 }]),
  );
  for (const [key, units] of Object.entries(capacityByFunction)) {
    const where = key.slice(key.indexOf(': ') + 2);
    const total = totals.get(where) ?? { read: 0, write: 0 };
    totals.set(where, { read: total.read + units.read, write: total.write + units.write });
  }
  return [...totals].map(([where, units]) => ({
    where,
    readUnitsPerTask: units.read,
    writeUnitsPerTask: units.write,
  }));
};

/**
 * The committed report before write-through projection (commit ba4d7a3, `npx tsx bench/run.ts`,
 * 2026-11-30, 3 × 500 tasks at 20 clients): the figures the issue 16 work is compared with.
 */
export const beforeWriteThrough = {
  commit: 'ba4d7a3',
  usdPerMillionTasks: 24.46,
  usdPerMillionTasksOneClient: 25.14,
  writeUnits: 25,
  readUnits: 4.234,
  rpcDurationUsdPerMillionTasks: 1.889,
  blockingP50OneClientMs: 268.7,
  blockingP50Ms: 596.6,
  sseTerminalP50Ms: 527.6,
  commitToSseP50Ms: 238,
  commitToWebhookP50Ms: 1115,
} as const;
