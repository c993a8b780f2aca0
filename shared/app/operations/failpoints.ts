/**
 * Failpoints (docs/reliability.md): named places where the local stack or a
 * test can make the code fail on purpose, to prove the invariants hold when things break.
 * Nothing arms them in Lambda, and deployed bundles define `A2A_FAILPOINTS` as `false`
 * (infra/house-function.ts), so esbuild drops every body below and a call is an empty function.
 *
 * Spec (the local stack's `--failpoints` / `A2A_FAILPOINTS`, or `armFailpoints` in a test):
 * comma-separated `name=rule`, where `name` is a failpoint or `*` (every one not named) and
 * `rule` is a probability per hit (`0.05`), optionally capped (`0.05*20`: at most 20 faults), or
 * `#N` (exactly the Nth hit). `seed=N` makes the random choices repeatable.
 * Example: `*=0.02,projector.midBatch=0.1,create.afterCommit=#3,seed=7`.
 */

declare const A2A_FAILPOINTS: boolean | undefined;
const compiledIn = typeof A2A_FAILPOINTS === 'undefined' || A2A_FAILPOINTS;

export const failpointNames = [
  /** createTask: the task and its run are committed, the run is not yet queued. */
  'create.afterCommit',
  /** executeRun: the run is claimed (RUNNING, lease taken), the provider not yet called. */
  'executor.afterClaim',
  /** A delegated call's remote task is recorded on the run row; the executor crashes before it waits. */
  'executor.afterDelegationHeld',
  /** A chunk of the answer is committed while the model works; the executor crashes mid-stream. */
  'executor.afterChunk',
  /** A `write` tool call is fenced on the run row, not yet sent; the executor crashes (I-EFFECT). */
  'executor.afterFence',
  /** A fenced tool call was sent and answered; the executor crashes before the model reads the result. */
  'executor.afterToolCall',
  /** The completing transaction is about to be sent: nothing of the result is stored. */
  'executor.beforeSettle',
  /** The completing transaction was applied, but the executor fails before it hears so. */
  'executor.insideSettle',
  /** The run is settled; the executor fails before its SQS message is deleted (redelivered). */
  'executor.beforeDelete',
  /** A task revision is committed; its writer's write-through does not start (the projector has it). */
  'writeThrough.afterCommit',
  /** A write-through wrote its revision's event and stops before the view (the projector finishes it). */
  'writeThrough.afterEvent',
  /** A projector record fails in the middle of its batch (the stream retries from it). */
  'projector.midBatch',
  /** A pusher record fails in the middle of its batch (the stream retries from it). */
  'pusher.midBatch',
  /** A writer's direct fan-out of a revision it projected fails before queuing (the pusher backs it up). */
  'push.directFanOut',
  /** A webhook delivery fails after one of its POSTs was received (the answer lost): a duplicate. */
  'deliverer.post',
  /** Any KMS call (GenerateDataKey, Decrypt …) fails with KMSInternalException. */
  'kms.error',
  /** Any DynamoDB call is throttled (ProvisionedThroughputExceededException after the SDK's retries). */
  'dynamodb.throttle',
] as const;

export type FailpointName = (typeof failpointNames)[number];

/** The error a failpoint throws (SDK-level points throw the service's own exception instead). */
export class InjectedFaultError extends Error {
  override readonly name = 'InjectedFaultError';
  constructor(readonly failpoint: FailpointName) {
    super(`Injected fault at ${failpoint}`);
  }
}

interface Rule {
  readonly probability?: number;
  readonly max?: number;
  readonly nth?: number;
}

export interface FailpointCount {
  /** Times the code passed the point while armed. */
  readonly hits: number;
  /** Times it failed there. */
  readonly faults: number;
}

interface Armed {
  readonly rules: ReadonlyMap<FailpointName, Rule>;
  readonly counts: Map<FailpointName, { hits: number; faults: number }>;
  readonly random: () => number;
}

let armed: Armed | undefined;

/**
 * A small seeded generator (mulberry32): the same seed gives the same faults for the same hits
 * (and `bench/poll-schedule.ts` the same run lengths on every run).
 */
export const seededRandom = (seed: number): (() => number) => {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
};

const isName = (name: string): name is FailpointName => (failpointNames as readonly string[]).includes(name);

const parseRule = (entry: string, text: string): Rule => {
  const nth = /^#(\d+)$/.exec(text);
  if (nth) return { nth: Number(nth[1]) };
  const probability = /^(0|1|0?\.\d+|1\.0*)(?:\*(\d+))?$/.exec(text);
  if (probability) {
    return {
      probability: Number(probability[1]),
      ...(probability[2] !== undefined ? { max: Number(probability[2]) } : {}),
    };
  }
  throw new Error(`Failpoint spec "${entry}": the rule must be a probability (0.05, 0.05*20) or #N`);
};

/** Parses a spec (see the module comment); throws naming the entry that is wrong. */
export const parseFailpointSpec = (spec: string): { rules: Map<FailpointName, Rule>; seed?: number } => {
  const rules = new Map<FailpointName, Rule>();
  let every: Rule | undefined;
  let seed: number | undefined;
  for (const entry of spec
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const [name = '', text = ''] = entry.split('=').map((part) => part.trim());
    if (name === 'seed') {
      seed = Number(text);
      if (!Number.isInteger(seed)) throw new Error(`Failpoint spec "${entry}": the seed must be an integer`);
    } else if (name === '*') every = parseRule(entry, text);
    else if (isName(name)) rules.set(name, parseRule(entry, text));
    else
      throw new Error(`Failpoint spec "${entry}": unknown failpoint (known: ${failpointNames.join(', ')})`);
  }
  if (every) for (const name of failpointNames) if (!rules.has(name)) rules.set(name, every);
  return seed === undefined ? { rules } : { rules, seed };
};

/** Arms the failpoints a spec names (replacing any armed before). Throws in a deployed bundle. */
export const armFailpoints = (spec: string): void => {
  if (!compiledIn) throw new Error('Failpoints are compiled out of this build');
  const { rules, seed } = parseFailpointSpec(spec);
  armed = {
    rules,
    counts: new Map(),
    random: seed === undefined ? Math.random : seededRandom(seed),
  };
};

export const disarmFailpoints = (): void => {
  armed = undefined;
};

export const failpointsArmed = (): boolean => compiledIn && armed !== undefined;

/** Hits and faults per armed failpoint since it was armed. */
export const failpointCounts = (): Record<string, FailpointCount> =>
  Object.fromEntries(
    [...(armed?.rules.keys() ?? [])].map((name) => [
      name,
      { hits: armed?.counts.get(name)?.hits ?? 0, faults: armed?.counts.get(name)?.faults ?? 0 },
    ]),
  );

/** True when the point should fail now (counts the hit). For adapters that throw their own error. */
export const failpointFires = (name: FailpointName): boolean => {
  if (!compiledIn || armed === undefined) return false;
  const rule = armed.rules.get(name);
  if (rule === undefined) return false;
  const count = armed.counts.get(name) ?? { hits: 0, faults: 0 };
  armed.counts.set(name, count);
  count.hits += 1;
  const fires =
    rule.nth !== undefined
      ? count.hits === rule.nth
      : (rule.max === undefined || count.faults < rule.max) && armed.random() < (rule.probability ?? 0);
  if (fires) count.faults += 1;
  return fires;
};

/** Throws an InjectedFaultError when the point is armed and its rule says so; otherwise nothing. */
export const failpoint = (name: FailpointName): void => {
  // `compiledIn` first: esbuild folds the constant and drops the rest, class included.
  if (compiledIn && failpointFires(name)) throw new InjectedFaultError(name);
};

/** True for the error a failpoint threw (a simulated crash); always false in a deployed bundle. */
export const isInjectedFault = (error: unknown): boolean => compiledIn && error instanceof InjectedFaultError;
