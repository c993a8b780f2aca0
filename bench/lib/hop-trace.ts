import diagnostics from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { type InvocationStart, observeInvocationStarts } from '../../infra/local/lambda-invocation.ts';
import { assignedItem, type UpdateRequest } from '../../shared/adapters/dynamodb/write-plan.ts';
import { addSdkClientHook, type SdkClient } from '../../shared/adapters/sdk-clients.ts';
import { creatorOf } from './meter.ts';
import { median } from './stats.ts';

/**
 * Per-hop timestamps of a task's path through the local stack (decision 0028), from the outside:
 * an SDK middleware on the handlers' clients (commits, queue sends, journal puts, the rpc's journal
 * reads), the pollers' invocation-start observer (what each function received), and Node's HTTP
 * client diagnostics channel (webhook POSTs). Bench-only and opt-in: nothing is registered until
 * `installHopTrace()` runs, which must happen before the handler modules are imported (they create
 * their SDK clients at import). Marks carry ids, revisions and states only, never content.
 */

export interface HopMark {
  readonly hop: string;
  readonly taskId: string;
  readonly revision?: number;
  readonly state?: string;
  /** Epoch milliseconds with sub-millisecond precision. */
  readonly at: number;
}

type Attribute = unknown;
type Item = Record<string, Attribute>;

const now = (): number => performance.timeOrigin + performance.now();

/** A string attribute in wire form ({S}) or plain (the document client marshals later in the stack). */
const str = (value: Attribute): string | undefined => {
  if (typeof value === 'string') return value;
  const wire = (value as { S?: unknown } | undefined)?.S;
  return typeof wire === 'string' ? wire : undefined;
};

const num = (value: Attribute): number | undefined => {
  if (typeof value === 'number') return value;
  const wire = (value as { N?: unknown } | undefined)?.N;
  return typeof wire === 'string' ? Number(wire) : undefined;
};

const taskIdOf = (pk: Attribute): string | undefined => str(pk)?.replace(/^TASK#/, '');

const parseBody = (body: unknown): { taskId?: string; revision?: number } => {
  try {
    return JSON.parse(String(body)) as { taskId?: string; revision?: number };
  } catch {
    return {};
  }
};

export interface HopTrace {
  readonly marks: HopMark[];
  /** SDK requests per `function Service.Operation` since install, with each one's duration (ms). */
  readonly requests: Map<string, number[]>;
  /** Records a mark the bench itself observes (a request sent, a response received). */
  mark(hop: string, taskId: string, extra?: { revision?: number; state?: string; at?: number }): void;
  /** Event-loop utilisation (0–1) and delay percentiles (ms) since install. */
  eventLoop(): { utilization: number; delayP50: number; delayP99: number };
  /**
   * The start and response times of the next webhook POST made from this client port not yet
   * taken (a kept-alive connection carries several, in order), if traced.
   */
  takePost(clientPort: number): { readonly start: number; readonly response?: number } | undefined;
  /** Every webhook POST started, in start order, with its response time if one came. */
  readonly posts: ReadonlyArray<{ readonly start: number; readonly response?: number }>;
  /**
   * Turns recording on or off (on at install). Off, the middleware and observers pass everything
   * through untouched, so a run can trace one phase and leave the others unburdened.
   */
  record(on: boolean): void;
  uninstall(): void;
}

export const installHopTrace = (options: { readonly webhookPathPrefix?: string } = {}): HopTrace => {
  const marks: HopMark[] = [];
  let recording = true;
  const mark: HopTrace['mark'] = (hop, taskId, extra = {}) => {
    marks.push({
      hop,
      taskId,
      ...(extra.revision !== undefined ? { revision: extra.revision } : {}),
      ...(extra.state !== undefined ? { state: extra.state } : {}),
      at: extra.at ?? now(),
    });
  };
  const itemMark = (hop: string, item: Item | undefined, at?: number): void => {
    const taskId = taskIdOf(item?.pk);
    if (!item || !taskId) return;
    const sk = str(item.sk) ?? '';
    const revision = sk.startsWith('EVT#') ? Number(sk.slice(4)) : num(item.revision);
    mark(hop, taskId, {
      ...(revision !== undefined ? { revision } : {}),
      state: str(item.state),
      ...(at !== undefined ? { at } : {}),
    });
  };
  const undo: Array<() => void> = [];
  const requests = new Map<string, number[]>();

  /**
   * A task write is an update of the task row (decision 0038), alone or in a transaction; one that
   * sets a revision commits it.
   */
  const taskRowCommit = (fn: string, update: UpdateRequest | undefined) => {
    const item = update && (assignedItem(update) as Item);
    if (!item || str(item.sk) !== 'TASK' || item.revision === undefined) return;
    itemMark(`${fn}: commit`, item);
    // The commit → SSE/webhook figures start here: the status timestamp set before the commit.
    const timestamp = str(item.statusTimestamp);
    if (timestamp) itemMark(`${fn}: status timestamp`, item, Date.parse(timestamp));
  };

  /** A journal item written (put, or an update of the view): a view put or an event put. */
  const journalPut = (fn: string, item: Item | undefined): void => {
    const sk = str(item?.sk) ?? '';
    if (sk === 'VIEW') itemMark(`${fn}: view put`, item);
    if (sk.startsWith('EVT#')) itemMark(`${fn}: event put`, item);
  };

  /** A delivery record appended (decision 0025), when the append returned: `DELIVERY#<config>#<revision>`. */
  const deliveryRecord = (fn: string, key: Item | undefined): void => {
    const taskId = taskIdOf(key?.pk);
    const revision = /^DELIVERY#.*#(\d+)$/.exec(str(key?.sk) ?? '')?.[1];
    if (taskId && revision !== undefined)
      mark(`${fn}: delivery record`, taskId, { revision: Number(revision) });
  };

  const sdkMarks = (fn: string, operation: string, input: Record<string, unknown>, output: unknown): void => {
    if (operation === 'TransactWriteItems') {
      const items = (input.TransactItems ?? []) as Array<{
        Put?: { Item?: Item };
        Update?: UpdateRequest;
      }>;
      for (const write of items) {
        taskRowCommit(fn, write.Update);
        journalPut(fn, write.Put?.Item);
        if (write.Update && str((write.Update.Key as Item | undefined)?.sk) === 'VIEW')
          journalPut(fn, assignedItem(write.Update) as Item);
      }
    } else if (operation === 'UpdateItem') {
      taskRowCommit(fn, input as UpdateRequest);
      deliveryRecord(fn, input.Key as Item | undefined);
      if (str((input.Key as Item | undefined)?.sk) === 'VIEW')
        journalPut(fn, assignedItem(input as UpdateRequest) as Item);
    } else if (operation === 'PutItem') {
      journalPut(fn, input.Item as Item | undefined);
    } else if (operation === 'BatchWriteItem') {
      const tables = (input.RequestItems ?? {}) as Record<string, Array<{ PutRequest?: { Item?: Item } }>>;
      for (const writes of Object.values(tables))
        for (const write of writes) journalPut(fn, write.PutRequest?.Item);
    } else if (operation === 'GetItem' && str((input.Key as Item | undefined)?.sk) === 'VIEW') {
      itemMark(`${fn}: view read`, (output as { Item?: Item } | undefined)?.Item);
    } else if (operation === 'Query') {
      for (const item of ((output as { Items?: Item[] } | undefined)?.Items ?? []) as Item[]) {
        if (str(item.sk)?.startsWith('EVT#')) itemMark(`${fn}: event read`, item);
      }
    } else if (operation === 'SendMessage') {
      const body = parseBody(input.MessageBody);
      if (body.taskId) mark(`${fn}: queue send`, body.taskId, { revision: body.revision });
    } else if (operation === 'SendMessageBatch') {
      for (const entry of (input.Entries ?? []) as Array<{ MessageBody?: string }>) {
        const body = parseBody(entry.MessageBody);
        if (body.taskId) mark(`${fn}: queue send`, body.taskId, { revision: body.revision });
      }
    }
  };

  const instrument = (client: SdkClient, fn: string): void => {
    // biome-ignore lint/suspicious/noExplicitAny: one middleware for three client types.
    const stack = client.middlewareStack as any;
    stack.add(
      // biome-ignore lint/suspicious/noExplicitAny: the SDK's handler types differ per client.
      (next: any, context: { clientName?: string; commandName?: string }) => async (args: any) => {
        if (!recording) return next(args);
        const operation = (context.commandName ?? '').replace(/Command$/, '');
        const name = `${fn} ${(context.clientName ?? '').replace(/Client$/, '')}.${operation}`;
        const began = performance.now();
        const result = await next(args);
        const durations = requests.get(name) ?? [];
        durations.push(performance.now() - began);
        requests.set(name, durations);
        sdkMarks(fn, operation, args.input as Record<string, unknown>, result.output);
        return result;
      },
      { step: 'initialize', name: 'hopTrace', priority: 'low', override: true },
    );
  };
  undo.push(addSdkClientHook((client) => instrument(client, creatorOf())));

  undo.push(
    observeInvocationStarts(({ functionName, event }: InvocationStart) => {
      if (!recording) return;
      for (const record of event.Records as Array<Record<string, unknown>>) {
        if (typeof record.body === 'string') {
          const body = parseBody(record.body);
          if (body.taskId) mark(`${functionName}: receive`, body.taskId, { revision: body.revision });
        }
        const image = record.dynamodb as { Keys?: Item; NewImage?: Item } | undefined;
        if (image?.Keys) {
          itemMark(`${functionName}: receive`, { ...image.NewImage, ...image.Keys });
        }
      }
    }),
  );

  // Webhook POSTs: the client request (the deliverer's) starts and receives its response; matched to
  // the receiver's view of the same request by the client socket's local port and, on a kept-alive
  // connection, by their order on it.
  const prefix = options.webhookPathPrefix ?? '/hook';
  const onPort = new Map<number, Array<{ start: number; response?: number }>>();
  const allPosts: Array<{ start: number; response?: number }> = [];
  const byRequest = new WeakMap<ClientRequest, { start: number; response?: number }>();
  const onStart = (message: unknown): void => {
    const { request } = message as { request: ClientRequest };
    const port = request.socket?.localPort;
    if (!recording || !request.path.startsWith(prefix)) return;
    const post = { start: now() };
    allPosts.push(post);
    byRequest.set(request, post);
    if (port !== undefined) onPort.set(port, [...(onPort.get(port) ?? []), post]);
  };
  const onResponse = (message: unknown): void => {
    const { request } = message as { request: ClientRequest; response: IncomingMessage };
    const post = byRequest.get(request);
    if (post) post.response = now();
  };
  diagnostics.subscribe('http.client.request.start', onStart);
  diagnostics.subscribe('http.client.response.finish', onResponse);
  undo.push(() => {
    diagnostics.unsubscribe('http.client.request.start', onStart);
    diagnostics.unsubscribe('http.client.response.finish', onResponse);
  });

  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const elu = performance.eventLoopUtilization();
  undo.push(() => delay.disable());

  return {
    marks,
    requests,
    mark,
    eventLoop: () => ({
      utilization: performance.eventLoopUtilization(elu).utilization,
      delayP50: delay.percentile(50) / 1e6,
      delayP99: delay.percentile(99) / 1e6,
    }),
    takePost: (clientPort) => onPort.get(clientPort)?.shift(),
    posts: allPosts,
    record: (on) => {
      recording = on;
    },
    uninstall: () => {
      for (const step of undo.splice(0).reverse()) step();
    },
  };
};

/**
 * A key per (task, revision): the mark's own revision, or for marks that carry only a state (POSTs,
 * SSE frames) the revision of the commit that set that state.
 */
export const revisionKey = (marks: readonly HopMark[]): ((mark: HopMark) => string | undefined) => {
  const revisionOf = new Map<string, number>();
  for (const mark of marks) {
    if (mark.hop.endsWith(': commit') && mark.revision !== undefined && mark.state)
      revisionOf.set(`${mark.taskId}/${mark.state}`, mark.revision);
  }
  return (mark) => {
    const revision =
      mark.revision ?? (mark.state ? revisionOf.get(`${mark.taskId}/${mark.state}`) : undefined);
    return revision === undefined ? undefined : `${mark.taskId}/${revision}`;
  };
};

type Chain = readonly { readonly hop: string; readonly state?: string; readonly label?: string }[];

/** For each key (a task, or a task's revision), the first mark of each hop of the chain, by index. */
const firstMarks = (
  marks: readonly HopMark[],
  chain: Chain,
  keyOf: (mark: HopMark) => string | undefined,
): Map<string, Map<number, number>> => {
  const first = new Map<string, Map<number, number>>();
  for (const mark of marks) {
    const key = keyOf(mark);
    if (key === undefined) continue;
    for (const [index, step] of chain.entries()) {
      if (step.hop !== mark.hop || (step.state !== undefined && step.state !== mark.state)) continue;
      const row = first.get(key) ?? new Map<number, number>();
      if (!row.has(index)) row.set(index, mark.at);
      first.set(key, row);
    }
  }
  return first;
};

/**
 * For each key (a task, or a task's revision), the first mark of each hop; then for a chain of hops,
 * the median time from each hop to the next over the keys that have both, and from the chain's
 * first hop to each.
 */
export const hopMedians = (
  marks: readonly HopMark[],
  chain: Chain,
  keyOf: (mark: HopMark) => string | undefined,
): Array<{ label: string; n: number; stepMs: number; fromStartMs: number }> => {
  const first = firstMarks(marks, chain, keyOf);
  return chain.map((step, index) => {
    const steps: number[] = [];
    const totals: number[] = [];
    for (const row of first.values()) {
      const at = row.get(index);
      const before = row.get(index - 1);
      const start = row.get(0);
      if (at === undefined) continue;
      if (before !== undefined) steps.push(at - before);
      if (start !== undefined) totals.push(at - start);
    }
    return {
      label: step.label ?? (step.state ? `${step.hop} (${step.state})` : step.hop),
      n: totals.length,
      stepMs: index === 0 ? 0 : median(steps),
      fromStartMs: median(totals),
    };
  });
};

/**
 * The keys that have every hop of the chain: for each, the time from each hop to the next
 * (chain.length − 1 steps, in chain order). The latency floor (bench/lib/latency-floor.ts) is
 * computed from these.
 */
export const chainSteps = (
  marks: readonly HopMark[],
  chain: Chain,
  keyOf: (mark: HopMark) => string | undefined,
): number[][] =>
  [...firstMarks(marks, chain, keyOf).values()]
    .filter((row) => row.size === chain.length)
    .map((row) =>
      chain.slice(1).map((_, index) => (row.get(index + 1) as number) - (row.get(index) as number)),
    );

export const printHops = (title: string, rows: ReturnType<typeof hopMedians>): void => {
  console.log(`\n${title}`);
  console.log('  hop                                          n    step p50   from start p50');
  for (const row of rows) {
    console.log(
      `  ${row.label.padEnd(44)} ${String(row.n).padStart(4)} ${row.stepMs.toFixed(1).padStart(10)} ${row.fromStartMs.toFixed(1).padStart(14)}`,
    );
  }
};
