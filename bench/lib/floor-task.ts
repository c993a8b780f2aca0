/**
 * The floor's task, run (decision 0086): the requests the cost floor allows one single-turn task
 * (bench/lib/floor.ts — 6 DynamoDB writes, no read, no queue hop: decisions 0096, 0097) and
 * nothing else, sent the way the handlers send them (DocumentClient, SigV4, default middleware)
 * on tables created from the product's own declarations (their indexes, streams and TTL:
 * infra/local/resources.ts), with copies of a real completed task's items, plus one bare HTTP
 * exchange of the task's request and answer sizes (no handler behind it). `concurrency` such
 * tasks in flight, CPU of this process (its main thread apart) and of DynamoDB Local read from
 * /proc, the idle rate of both before the run subtracted.
 *
 * The design's backstops read every record of both streams (docs/architecture.md: the state
 * stream feeds the projector, the journal stream the pusher), so the floor's task reads them too
 * (decision 0088): one reader per stream, as Lambda's event source reads a shard — at once again
 * after a read that found records, a poll interval after an empty one — with nothing converted
 * and nothing invoked.
 *
 * What it leaves out, so that what it measures is a lower bound for any implementation of the
 * design on this machine: JSON-RPC and the handlers' work, sealing, the run's agent, what the
 * projector and pusher do with a record, and the view counters' transaction.
 *
 * The `fewest` shape (decision 0090) is the same task with the fewest requests any design could
 * send while keeping the invariants and the write-unit target: a lower bound for every design on
 * this machine, not only this one.
 */

import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
} from '@aws-sdk/client-dynamodb-streams';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { createLocalClients, type Endpoints } from '../../infra/local/local-stack.ts';
import { createResources } from '../../infra/local/resources.ts';
import { STREAM_POLL_INTERVAL_MS, shardIteratorAt } from '../../infra/local/stream-poller.ts';
import { pool } from './client.ts';
import { cpuMsOf, mainThreadSeconds } from './cpu.ts';

type Item = Record<string, unknown>;

/**
 * What a floor's task sends (decisions 0090, 0096). `design`: the cost floor of this design
 * (bench/lib/floor.ts) — each revision's commit (the create, which claims the run the caller
 * runs, and the settle) and event, the one view (created with the settle, decision 0097) as
 * conditional puts, and the audit row; the answer is the settle's image, so nothing is read.
 * `fewest`: the fewest requests a design keeping the invariants and the write-unit target could
 * send — each revision committed together with its journal event in one two-item transaction
 * (create, complete), no view, no audit row.
 */
export type FloorTaskShape = 'design' | 'fewest';

/** The `fewest` shape's DynamoDB requests per task: two transactions. */
export const fewestDynamodbRequests = 2;

/** One completed task's items as stored, unmarshalled: the copies the floor's task writes. */
export interface FloorTaskItems {
  readonly task: Item;
  readonly view: Item;
  /** The task's events in revision order (WORKING, COMPLETED for a blocking single turn, decision 0096). */
  readonly events: readonly Item[];
  readonly audit: Item;
  /** Bytes of the task's JSON-RPC request and of its answer, for the bare HTTP exchange. */
  readonly requestBytes: number;
  readonly answerBytes: number;
}

export interface FloorTaskRun {
  readonly shape: FloorTaskShape;
  readonly tasks: number;
  readonly concurrency: number;
  /** CPU ms per task: both processes, this Node process's main thread, DynamoDB Local. */
  readonly cpuMsPerTask: number;
  readonly mainThreadMsPerTask: number;
  readonly javaMsPerTask: number;
  /** DynamoDB requests per task (the floor has no queue hop: decision 0096). */
  readonly dynamodbRequests: number;
  /** The backstops' stream reads per task: GetRecords requests, and the records they returned. */
  readonly streamReads: number;
  readonly streamRecords: number;
  readonly tasksPerSecond: number;
}

interface StreamReader {
  /** GetRecords requests and the records they returned, so far. */
  readonly reads: () => number;
  readonly records: () => number;
  /** Resolves after a read that started after this call found nothing: every earlier record is read. */
  caughtUp(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Reads a stream's one open shard from its oldest record on (a fresh table has one), as Lambda's
 * event source does: again at once after a read that found records, `STREAM_POLL_INTERVAL_MS`
 * after the start of one that found none.
 */
const readStream = async (streams: DynamoDBStreamsClient, streamArn: string): Promise<StreamReader> => {
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  const shard = StreamDescription?.Shards?.find(
    (candidate) => !candidate.SequenceNumberRange?.EndingSequenceNumber,
  );
  const shardId = shard?.ShardId;
  if (!shardId) throw new Error(`The stream ${streamArn} has no open shard`);
  // DynamoDB Local can refuse an iterator taken on an empty shard once records arrive
  // (TrimmedDataAccessException), as the local pollers meet it: a new one resumes after the last
  // record read.
  let lastSequence: string | undefined;
  const position = (): Promise<string | undefined> =>
    shardIteratorAt(
      streams,
      streamArn,
      shardId,
      lastSequence
        ? { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: lastSequence }
        : { type: 'TRIM_HORIZON' },
    );
  let iterator = await position();
  let reads = 0;
  let records = 0;
  let stopping = false;
  let refusals = 0;
  let waiters: Array<{ readonly after: number; readonly wake: () => void }> = [];
  const loop = (async () => {
    while (!stopping && iterator) {
      const started = performance.now();
      const readNumber = ++reads;
      let out: GetRecordsCommandOutput;
      try {
        out = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      } catch (error) {
        const name = (error as Error).name;
        const refused = name === 'TrimmedDataAccessException' || name === 'ExpiredIteratorException';
        // One fresh iterator per refusal; a shard that keeps refusing them ends the run.
        if (!refused || ++refusals > 3) throw error;
        iterator = await position();
        continue;
      }
      refusals = 0;
      iterator = out.NextShardIterator;
      const found = out.Records ?? [];
      records += found.length;
      lastSequence = found.at(-1)?.dynamodb?.SequenceNumber ?? lastSequence;
      if (found.length > 0) continue;
      const woken = waiters.filter((waiter) => waiter.after < readNumber);
      waiters = waiters.filter((waiter) => waiter.after >= readNumber);
      for (const waiter of woken) waiter.wake();
      await new Promise((wake) =>
        setTimeout(wake, Math.max(0, STREAM_POLL_INTERVAL_MS - (performance.now() - started))),
      );
    }
  })();
  // Its failure is thrown where it is awaited (`caughtUp` races it, `stop` awaits it).
  loop.catch(() => {});
  return {
    reads: () => reads,
    records: () => records,
    caughtUp: () =>
      Promise.race([
        new Promise<void>((wake) => waiters.push({ after: reads, wake })),
        loop.then(() => {
          throw new Error(`The reader of ${streamArn} ended before it caught up`);
        }),
      ]),
    stop: async () => {
      stopping = true;
      await loop;
    },
  };
};

/** Reads one completed task's items from the stack's tables (`tables`: their names). */
export const sampleFloorItems = async (
  documents: DynamoDBDocumentClient,
  tables: { readonly state: string; readonly journal: string; readonly audit: string },
  taskId: string,
  sizes: { readonly requestBytes: number; readonly answerBytes: number },
): Promise<FloorTaskItems> => {
  const pk = `TASK#${taskId}`;
  const [task, view, events, audit] = await Promise.all([
    documents.send(new GetCommand({ TableName: tables.state, Key: { pk, sk: 'TASK' } })),
    documents.send(new GetCommand({ TableName: tables.journal, Key: { pk, sk: 'VIEW' } })),
    documents.send(
      new QueryCommand({
        TableName: tables.journal,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :evt)',
        ExpressionAttributeValues: { ':pk': pk, ':evt': 'EVT#' },
      }),
    ),
    documents.send(
      new QueryCommand({
        TableName: tables.audit,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        Limit: 1,
      }),
    ),
  ]);
  const found = (item: Item | undefined, what: string): Item => {
    if (item === undefined) throw new Error(`floor task: no ${what} for task ${taskId}`);
    return item;
  };
  const eventItems = events.Items ?? [];
  if (eventItems.length < 2) throw new Error(`floor task: ${eventItems.length} events for task ${taskId}`);
  return {
    task: found(task.Item, 'task row'),
    view: found(view.Item, 'view'),
    events: eventItems.slice(0, 2),
    audit: found(audit.Items?.[0], 'audit row'),
    ...sizes,
  };
};

/** CPU ms per second of this process and of `javaPid` while nothing is sent. */
const idleRates = async (javaPid: number): Promise<{ node: number; main: number; java: number }> => {
  const node = cpuMsOf('self');
  const main = mainThreadSeconds();
  const java = cpuMsOf(javaPid);
  const began = performance.now();
  await new Promise((wake) => setTimeout(wake, 1_000));
  const seconds = (performance.now() - began) / 1000;
  return {
    node: (cpuMsOf('self') - node) / seconds,
    main: ((mainThreadSeconds() - main) * 1000) / seconds,
    java: (cpuMsOf(javaPid) - java) / seconds,
  };
};

/**
 * Runs `warmUp` and then `tasks` floor tasks, `concurrency` in flight, on tables of their own
 * (`prefix`) at `endpoints` (a DynamoDB Local with the pid `javaPid`, the SQS and KMS emulators).
 */
export const runFloorTasks = async (options: {
  readonly endpoints: Endpoints;
  readonly javaPid: number;
  readonly items: FloorTaskItems;
  readonly tasks: number;
  readonly warmUp: number;
  readonly concurrency: number;
  readonly prefix: string;
  /** The requests each task sends (default `design`). */
  readonly shape?: FloorTaskShape;
}): Promise<FloorTaskRun> => {
  const { items } = options;
  const shape = options.shape ?? 'design';
  const clients = createLocalClients(options.endpoints);
  const documents = DynamoDBDocumentClient.from(clients.dynamodb, {
    marshallOptions: { removeUndefinedValues: true },
  });
  const answer = Buffer.alloc(items.answerBytes, 'a');
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
      response.end(answer);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const requestBody = 'r'.repeat(items.requestBytes);
  const readers: StreamReader[] = [];
  try {
    const resources = await createResources({ prefix: options.prefix, clients });
    const state = resources.tables.State.name;
    const journal = resources.tables.Journal.name;
    const audit = resources.tables.Audit.name;
    const streamArns = [resources.tables.State.streamArn, resources.tables.Journal.streamArn];
    // One after the other, each kept as it starts, so that `finally` stops every reader started.
    for (const arn of streamArns) {
      if (!arn) throw new Error('The state and journal tables must have streams');
      readers.push(await readStream(clients.streams, arn));
    }
    const streamReads = () => readers.reduce((sum, reader) => sum + reader.reads(), 0);
    const streamRecords = () => readers.reduce((sum, reader) => sum + reader.records(), 0);
    let dynamodbRequests = 0;

    type Condition = { readonly expression: string; readonly values?: Item };
    const putInput = (TableName: string, Item: Item, condition: Condition): PutCommandInput => ({
      TableName,
      Item,
      ConditionExpression: condition.expression,
      ...(condition.values && { ExpressionAttributeValues: condition.values }),
    });
    const put = (TableName: string, Item: Item, condition: Condition) => {
      dynamodbRequests += 1;
      return documents.send(new PutCommand(putInput(TableName, Item, condition)));
    };
    /** One two-item transaction: a revision's commit with its journal event. */
    const commitWithEvent = (commit: PutCommandInput, event: PutCommandInput) => {
      dynamodbRequests += 1;
      return documents.send(new TransactWriteCommand({ TransactItems: [{ Put: commit }, { Put: event }] }));
    };
    const absent = { expression: 'attribute_not_exists(pk)' };
    const atVersion = (version: number) => ({ expression: 'floorVersion = :v', values: { ':v': version } });
    const taskAt = (pk: string, floorVersion: number) => ({ ...items.task, pk, floorVersion });
    const event = (pk: string, revision: number) => ({ ...items.events[revision - 1], pk });
    const view = (pk: string, revision: number) => ({ ...items.view, pk, revision });
    const designTask = async (pk: string): Promise<void> => {
      // create: the task WORKING with its run claimed (decision 0096), its first event (decision 0097).
      await put(state, taskAt(pk, 1), absent);
      await put(journal, event(pk, 1), absent);
      // The run in the rpc: its audit row, then the settle and its projection; the answer is the
      // settle's image.
      await put(audit, { ...items.audit, pk }, absent);
      await put(state, taskAt(pk, 2), atVersion(1));
      await put(journal, event(pk, 2), absent);
      await put(journal, view(pk, 2), absent);
    };
    const fewestTask = async (pk: string): Promise<void> => {
      const revision = (n: number, condition: Condition) =>
        commitWithEvent(putInput(state, taskAt(pk, n), condition), putInput(journal, event(pk, n), absent));
      await revision(1, absent);
      await revision(2, atVersion(1));
    };
    const floorTask = async (run: string, i: number): Promise<void> => {
      // The task's request and answer over HTTP (API Gateway → the rpc function, without either).
      const exchange = await fetch(url, { method: 'POST', body: requestBody });
      await exchange.arrayBuffer();
      await (shape === 'fewest' ? fewestTask : designTask)(`TASK#floor-${run}-${i}`);
    };

    await pool(options.warmUp, options.concurrency, (i) => floorTask('warm', i));
    await Promise.all(readers.map((reader) => reader.caughtUp()));
    const idle = await idleRates(options.javaPid);
    const dynamodbBefore = dynamodbRequests;
    const streamReadsBefore = streamReads();
    const streamRecordsBefore = streamRecords();
    const node0 = cpuMsOf('self');
    const main0 = mainThreadSeconds();
    const java0 = cpuMsOf(options.javaPid);
    const began = performance.now();
    await pool(options.tasks, options.concurrency, (i) => floorTask('run', i));
    // The run ends when the backstops have read its last record.
    await Promise.all(readers.map((reader) => reader.caughtUp()));
    const seconds = (performance.now() - began) / 1000;
    const node = cpuMsOf('self') - node0 - idle.node * seconds;
    const main = (mainThreadSeconds() - main0) * 1000 - idle.main * seconds;
    const java = cpuMsOf(options.javaPid) - java0 - idle.java * seconds;
    return {
      shape,
      tasks: options.tasks,
      concurrency: options.concurrency,
      cpuMsPerTask: (node + java) / options.tasks,
      mainThreadMsPerTask: main / options.tasks,
      javaMsPerTask: java / options.tasks,
      dynamodbRequests: (dynamodbRequests - dynamodbBefore) / options.tasks,
      streamReads: (streamReads() - streamReadsBefore) / options.tasks,
      streamRecords: (streamRecords() - streamRecordsBefore) / options.tasks,
      tasksPerSecond: options.tasks / seconds,
    };
  } finally {
    await Promise.allSettled(readers.map((reader) => reader.stop()));
    server.close();
    clients.destroy();
  }
};
