import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
  type ShardIteratorType,
  type _Record as StreamSdkRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { toLambdaStreamRecord } from '../../shared/adapters/dynamodb/stream-records.ts';
import {
  consoleLog,
  createLambdaContext,
  type DynamoDbStreamLambdaHandler,
  errorName,
  errorSummary,
  failedIndexes,
  type LocalLog,
  observed,
  type Poller,
  Sleeper,
} from './lambda-invocation.ts';

/** The DynamoDB streams event-source mapping emulation (see lambda-invocation.ts). */

export interface StreamBatchFailure {
  readonly functionName: string;
  readonly streamArn: string;
  readonly shardId: string;
  /** Invocations of this batch that failed, the first included. */
  readonly attempts: number;
  /** `name: message` of the last error thrown, if it threw (may quote content: do not log it). */
  readonly error?: string;
  readonly errorName?: string;
  /** The records from the first failed one to the end of the last batch tried. */
  readonly records: readonly DynamoDBRecord[];
}

export interface StreamPollerOptions {
  readonly streams: DynamoDBStreamsClient;
  readonly streamArn: string;
  readonly handler: DynamoDbStreamLambdaHandler;
  readonly functionName: string;
  /**
   * Where a shard that exists at start is read from. LATEST (the default) skips what a table
   * held before; TRIM_HORIZON is right for a table created just now. Shards that appear later
   * are always read from their start.
   */
  readonly startingPosition?: 'LATEST' | 'TRIM_HORIZON';
  /** Records per GetRecords and per invocation (default 100). */
  readonly batchSize?: number;
  /** Retries of a failing batch before it goes to `onFailure` (default 5). */
  readonly maximumRetryAttempts?: number;
  /** Halve a batch whose invocation threw, until the failing record is alone (default true). */
  readonly bisectBatchOnFunctionError?: boolean;
  /** Like event-source filter criteria: records it rejects are skipped and never invoked. */
  readonly filter?: (record: DynamoDBRecord) => boolean;
  /** The on-failure destination; the default logs. */
  readonly onFailure?: (failure: StreamBatchFailure) => void | Promise<void>;
  /**
   * After an empty read, the next GetRecords of the shard starts this long after the previous one
   * started. Lambda polls a DynamoDB stream shard at a base rate of 4 times per second and reads
   * again at once while records keep coming (default STREAM_POLL_INTERVAL_MS, as on AWS: decision 0017).
   */
  readonly pollIntervalMs?: number;
  /**
   * Like MaximumBatchingWindowInSeconds: how long records are gathered, from the first one read,
   * before the function is invoked with them, unless `batchSize` fills first (default 0: at once).
   */
  readonly maximumBatchingWindowMs?: number;
  /** The longest wait before a failing batch is tried again; the waits double from 10 ms (default 1 s). */
  readonly retryBackoffCapMs?: number;
  /** How often DescribeStream looks for new shards (default 1000 ms). */
  readonly shardRefreshMs?: number;
  readonly timeoutMs?: number;
  readonly region?: string;
  readonly log?: LocalLog;
}

export interface StreamPollerStats {
  readonly invocations: number;
  readonly records: number;
  readonly filtered: number;
  readonly retries: number;
  /** Batches handed to the on-failure destination. */
  readonly failedBatches: number;
  readonly shards: number;
}

export interface StreamPoller extends Poller {
  stats(): StreamPollerStats;
  /** After an empty read, the time from one GetRecords start to the next (the benchmark's floor reads it). */
  readonly pollIntervalMs: number;
  /**
   * Resolves once every shard has been read empty by a read begun after the call: every record
   * the stream held before it has been handled (or handed to the on-failure destination). For
   * tests whose next step must follow the backstop (a purge after a task's last revision).
   */
  caughtUp(timeoutMs?: number): Promise<void>;
}

/** Lambda's base rate for a DynamoDB stream shard: 4 polls a second. */
export const STREAM_POLL_INTERVAL_MS = 250;

/** Where in a shard an iterator starts. */
export type ShardPosition =
  | { readonly type: 'LATEST' | 'TRIM_HORIZON' }
  | { readonly type: 'AT_SEQUENCE_NUMBER' | 'AFTER_SEQUENCE_NUMBER'; readonly sequenceNumber: string };

/** A shard iterator at `position` (the stream pollers' and the benchmark's floor task's one way to take one). */
export const shardIteratorAt = async (
  streams: DynamoDBStreamsClient,
  streamArn: string,
  shardId: string,
  position: ShardPosition,
): Promise<string | undefined> => {
  const { ShardIterator } = await streams.send(
    new GetShardIteratorCommand({
      StreamArn: streamArn,
      ShardId: shardId,
      ShardIteratorType: position.type as ShardIteratorType,
      ...('sequenceNumber' in position ? { SequenceNumber: position.sequenceNumber } : {}),
    }),
  );
  return ShardIterator;
};

interface ShardState {
  readonly shardId: string;
  readonly parentShardId: string | undefined;
  readonly start: ShardPosition;
  status: 'waiting' | 'reading' | 'done';
  /** Resolves once the reader holds its first iterator: a LATEST start is fixed from then on. */
  readonly positioned: Promise<void>;
  readonly markPositioned: () => void;
  /** GetRecords calls of the reader that found nothing (`caughtUp`). */
  emptyReads: number;
}

export const createStreamPoller = (options: StreamPollerOptions): StreamPoller => {
  const { streams, streamArn, functionName } = options;
  const handler = observed(functionName, options.handler);
  const batchSize = Math.max(1, options.batchSize ?? 100);
  const maximumRetryAttempts = Math.max(0, options.maximumRetryAttempts ?? 5);
  const retryBackoffCapMs = options.retryBackoffCapMs ?? 1_000;
  const bisect = options.bisectBatchOnFunctionError ?? true;
  const pollIntervalMs = Math.max(0, options.pollIntervalMs ?? STREAM_POLL_INTERVAL_MS);
  const maximumBatchingWindowMs = Math.max(0, options.maximumBatchingWindowMs ?? 0);
  const shardRefreshMs = options.shardRefreshMs ?? 1_000;
  const region = options.region ?? 'us-east-1';
  const log = options.log ?? consoleLog;
  const onFailure =
    options.onFailure ??
    ((failure: StreamBatchFailure) =>
      log('error', `${functionName}: batch sent to the on-failure destination`, {
        shardId: failure.shardId,
        attempts: failure.attempts,
        error: failure.errorName,
        sequenceNumbers: failure.records.map((record) => record.dynamodb?.SequenceNumber),
      }));
  const sleeper = new Sleeper();
  const stats = { invocations: 0, records: 0, filtered: 0, retries: 0, failedBatches: 0 };
  const shards = new Map<string, ShardState>();
  const shardLoops = new Set<Promise<void>>();
  let running = false;
  let refresher: Promise<void> | undefined;
  let refreshing: Promise<void> | undefined;

  const describeShards = async (): Promise<Shard[]> => {
    const found: Shard[] = [];
    let exclusiveStartShardId: string | undefined;
    do {
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: exclusiveStartShardId }),
      );
      found.push(...(StreamDescription?.Shards ?? []));
      exclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId);
    return found;
  };

  const iteratorAt = (shardId: string, position: ShardPosition): Promise<string | undefined> =>
    shardIteratorAt(streams, streamArn, shardId, position);

  type Outcome =
    | { readonly ok: true }
    | {
        readonly ok: false;
        readonly firstFailed: number;
        readonly threw: boolean;
        readonly error?: string;
        readonly errorName?: string;
      };

  const invoke = async (batch: DynamoDBRecord[]): Promise<Outcome> => {
    stats.invocations += 1;
    const ids = batch.map((record) => record.dynamodb?.SequenceNumber ?? '');
    try {
      const context = createLambdaContext({
        functionName,
        region,
        ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      });
      const failed = failedIndexes(await handler({ Records: batch }, context), ids);
      if (failed === 'all')
        return { ok: false, firstFailed: 0, threw: false, error: 'invalid batchItemFailures' };
      if (failed.length === 0) return { ok: true };
      return { ok: false, firstFailed: Math.min(...failed), threw: false };
    } catch (error) {
      return {
        ok: false,
        firstFailed: 0,
        threw: true,
        error: errorSummary(error),
        errorName: errorName(error),
      };
    }
  };

  const toRecords = (raw: readonly StreamSdkRecord[]): DynamoDBRecord[] =>
    raw.map((record) => toLambdaStreamRecord(record, streamArn, region));
  const passing = (records: readonly DynamoDBRecord[]): number =>
    options.filter ? records.filter(options.filter).length : records.length;

  /**
   * The batching window: from the read that found the batch's first record, reads go on at the
   * poll rate until the batch holds `limit` records the filter passes (filtered ones count for
   * nothing, as in Lambda) or the window has passed. A failed read ends the gathering; the next
   * read meets the error. Returns what the reads added, raw and converted, and the next iterator.
   */
  const gather = async (
    iterator: string | undefined,
    passed: number,
    limit: number,
    windowEnds: number,
  ): Promise<{ raw: StreamSdkRecord[]; records: DynamoDBRecord[]; next: string | undefined }> => {
    let next = iterator;
    const raw: StreamSdkRecord[] = [];
    const records: DynamoDBRecord[] = [];
    while (running && next && passed < limit && performance.now() < windowEnds) {
      await sleeper.sleep(Math.min(pollIntervalMs, windowEnds - performance.now()));
      if (!running) break;
      try {
        const out = await streams.send(new GetRecordsCommand({ ShardIterator: next, Limit: limit - passed }));
        const found = out.Records ?? [];
        const converted = toRecords(found);
        raw.push(...found);
        records.push(...converted);
        passed += passing(converted);
        next = out.NextShardIterator;
      } catch {
        break;
      }
    }
    return { raw, records, next };
  };

  const readShard = async (shard: ShardState): Promise<void> => {
    // Where to resume if an iterator expires: after the last record passed on.
    let resume: ShardPosition = shard.start;
    let iterator: string | undefined;
    let limit = batchSize;
    let failPoint: string | undefined;
    let attempts = 0;

    const reposition = async (position: ShardPosition): Promise<void> => {
      try {
        iterator = await iteratorAt(shard.shardId, position);
      } catch (error) {
        if (errorName(error) !== 'TrimmedDataAccessException') throw error;
        log('warn', `${functionName}: records trimmed before they were read`, { shardId: shard.shardId });
        iterator = await iteratorAt(shard.shardId, { type: 'TRIM_HORIZON' });
      }
    };

    try {
      await reposition(resume);
    } finally {
      shard.markPositioned();
    }
    while (running && iterator) {
      let raw: StreamSdkRecord[];
      let next: string | undefined;
      const polledAt = performance.now();
      try {
        const out = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: limit }));
        raw = out.Records ?? [];
        next = out.NextShardIterator;
      } catch (error) {
        if (!running) break;
        if (
          errorName(error) === 'ExpiredIteratorException' ||
          errorName(error) === 'TrimmedDataAccessException'
        ) {
          await reposition(resume);
        } else {
          log('warn', `${functionName}: GetRecords failed`, {
            shardId: shard.shardId,
            error: errorSummary(error),
          });
          await sleeper.sleep(500);
        }
        continue;
      }
      if (raw.length === 0) {
        shard.emptyReads += 1;
        iterator = next;
        if (next) await sleeper.sleep(Math.max(0, pollIntervalMs - (performance.now() - polledAt)));
        continue;
      }
      let records = toRecords(raw);
      const passed = passing(records);
      if (maximumBatchingWindowMs > 0 && passed > 0) {
        const gathered = await gather(next, passed, limit, polledAt + maximumBatchingWindowMs);
        raw = [...raw, ...gathered.raw];
        records = [...records, ...gathered.records];
        next = gathered.next;
      }
      const lastSequence = raw.at(-1)?.dynamodb?.SequenceNumber;
      const passOn = (): void => {
        if (lastSequence) resume = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: lastSequence };
        iterator = next;
        failPoint = undefined;
        attempts = 0;
        limit = batchSize;
      };
      const batch = options.filter ? records.filter(options.filter) : records;
      stats.filtered += records.length - batch.length;
      if (batch.length === 0) {
        passOn();
        continue;
      }
      const outcome = await invoke(batch);
      if (outcome.ok) {
        stats.records += batch.length;
        passOn();
        continue;
      }
      const failed = batch.slice(outcome.firstFailed);
      const failedSequence = failed[0]?.dynamodb?.SequenceNumber ?? '';
      const rawFromFailure =
        raw.length - raw.findIndex((record) => record.dynamodb?.SequenceNumber === failedSequence);
      stats.records += outcome.firstFailed;
      if (failedSequence === failPoint) attempts += 1;
      else {
        failPoint = failedSequence;
        attempts = 1;
      }
      // Halving narrows the batch to the poison record; narrowing does not spend retries. The
      // narrowed limit holds until the failing record is passed on.
      if (outcome.threw && bisect && rawFromFailure > 1) {
        limit = Math.ceil(rawFromFailure / 2);
        attempts = 0;
      } else if (attempts > maximumRetryAttempts) {
        stats.failedBatches += 1;
        try {
          await onFailure({
            functionName,
            streamArn,
            shardId: shard.shardId,
            attempts,
            ...(outcome.error ? { error: outcome.error } : {}),
            ...(outcome.errorName ? { errorName: outcome.errorName } : {}),
            records: failed,
          });
        } catch (error) {
          log('error', `${functionName}: the on-failure destination failed`, { error: errorSummary(error) });
        }
        passOn();
        continue;
      }
      stats.retries += 1;
      log('warn', `${functionName}: retrying from the first failed record`, {
        shardId: shard.shardId,
        sequenceNumber: failedSequence,
        attempt: attempts,
        error: outcome.errorName ?? (outcome.threw ? undefined : 'batchItemFailures'),
      });
      const before =
        outcome.firstFailed > 0 ? batch[outcome.firstFailed - 1]?.dynamodb?.SequenceNumber : undefined;
      if (before) resume = { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: before };
      await sleeper.sleep(Math.min(retryBackoffCapMs, 10 * 2 ** Math.max(0, attempts - 1)));
      if (!running) break;
      await reposition({ type: 'AT_SEQUENCE_NUMBER', sequenceNumber: failedSequence });
    }
  };

  const startEligible = (): void => {
    for (const shard of shards.values()) {
      if (shard.status !== 'waiting') continue;
      const parent = shard.parentShardId ? shards.get(shard.parentShardId) : undefined;
      // A child waits for its parent to be read to the end, so per-item order holds across a split.
      if (parent && parent.status !== 'done') continue;
      shard.status = 'reading';
      const loop = readShard(shard)
        .catch((error: unknown) => {
          log('error', `${functionName}: shard reader failed`, {
            shardId: shard.shardId,
            error: errorSummary(error),
          });
        })
        .finally(() => {
          shardLoops.delete(loop);
          if (!running) return;
          shard.status = 'done';
          // Its children (after a split) can start now.
          refresh(false).catch((error: unknown) => {
            log('warn', `${functionName}: DescribeStream failed`, { error: errorSummary(error) });
          });
        });
      shardLoops.add(loop);
    }
  };

  const refresh = (initial: boolean): Promise<void> => {
    refreshing ??= (async () => {
      try {
        for (const shard of await describeShards()) {
          const shardId = shard.ShardId;
          if (!shardId || shards.has(shardId)) continue;
          const closed = shard.SequenceNumberRange?.EndingSequenceNumber !== undefined;
          const position: ShardPosition = initial
            ? { type: options.startingPosition ?? 'LATEST' }
            : { type: 'TRIM_HORIZON' };
          let markPositioned = (): void => {};
          const positioned = new Promise<void>((resolve) => {
            markPositioned = resolve;
          });
          shards.set(shardId, {
            shardId,
            parentShardId: shard.ParentShardId,
            start: position,
            positioned,
            markPositioned,
            emptyReads: 0,
            // At LATEST, a closed shard has nothing new to give.
            status: initial && position.type === 'LATEST' && closed ? 'done' : 'waiting',
          });
        }
        if (running) startEligible();
      } finally {
        refreshing = undefined;
      }
    })();
    return refreshing;
  };

  const refreshLoop = async (): Promise<void> => {
    while (running) {
      await sleeper.sleep(shardRefreshMs);
      if (!running) break;
      try {
        await refresh(false);
      } catch (error) {
        log('warn', `${functionName}: DescribeStream failed`, { error: errorSummary(error) });
      }
    }
  };

  return {
    async start() {
      if (running) return;
      running = true;
      try {
        await refresh(true);
        // Like an event source mapping that is enabled: what is written after start() is read,
        // so a LATEST start must hold its iterators before start() returns.
        const reading = [...shards.values()].filter((shard) => shard.status === 'reading');
        await Promise.all(reading.map((shard) => shard.positioned));
      } catch (error) {
        running = false;
        throw error;
      }
      refresher = refreshLoop();
    },
    async stop() {
      running = false;
      sleeper.wakeAll();
      await refresher;
      await refreshing;
      while (shardLoops.size > 0) await Promise.all([...shardLoops]);
    },
    stats: () => ({ ...stats, shards: shards.size }),
    pollIntervalMs,
    async caughtUp(timeoutMs = 30_000) {
      await refresh(false);
      // The first empty read counted after the call may have begun before it; the second has not.
      const needed = new Map([...shards.values()].map((shard) => [shard.shardId, shard.emptyReads + 2]));
      const deadline = performance.now() + timeoutMs;
      const behind = () =>
        [...shards.values()].some(
          (shard) => shard.status !== 'done' && shard.emptyReads < (needed.get(shard.shardId) ?? 2),
        );
      while (behind()) {
        if (!running) throw new Error(`${functionName}: stopped before it caught up`);
        if (performance.now() > deadline)
          throw new Error(`${functionName}: not caught up within ${timeoutMs} ms`);
        await new Promise((wake) => setTimeout(wake, 25));
      }
    },
  };
};
