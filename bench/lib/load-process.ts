import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pool, RpcClient, sendMessageParams, stateIn, stateOf } from './client.ts';

/**
 * The load generator (bench/README.md, "The load generator"): one process of its own for the
 * whole benchmark, as an outside load generator is, which sends both servers' warm-up tasks and
 * every round of blocking SendMessage calls. It shares no event loop with a server it drives (this
 * server's local stack runs in the benchmark's process, the SDK server in a process of its own),
 * and it keeps, per server, one client with its keep-alive connections and its JIT-compiled code
 * from the warm-up to the last round: a process forked per round measured its own cold start —
 * its first few hundred calls interpreted, its connections opened — into every round.
 */

export interface LoadRound {
  readonly url: string;
  readonly token?: string;
  readonly tasks: number;
  readonly concurrency: number;
  readonly label: string;
  /** Blocking SendMessage calls (the default), or SendStreamingMessage calls read to their terminal event. */
  readonly kind?: 'blocking' | 'streaming';
}

export interface LoadRoundResult {
  /** Each call's client-side wall time, in completion order. */
  readonly latencies: number[];
  /** The COMPLETED tasks' ids. */
  readonly ids: string[];
  /** HTTP requests sent (API Gateway requests). */
  readonly requests: number;
  /** The load process's own CPU for the round, in seconds. */
  readonly cpuSeconds: number;
  /** From the first call to the last answer. */
  readonly wallMs: number;
  /** Streaming rounds: each stream's first event, from its send (ms). */
  readonly firstEventMs?: number[];
  /** Streaming rounds: the terminal revision's status timestamp → its event's arrival (ms). */
  readonly commitToEventMs?: number[];
}

/**
 * `tasks` blocking SendMessage calls, `concurrency` in flight, each expected to answer COMPLETED:
 * their latencies and task ids. The load process's round, and the metered round the benchmark
 * runs in its own process (it counts the API requests there).
 */
export const blockingRound = async (
  client: RpcClient,
  round: Pick<LoadRound, 'tasks' | 'concurrency' | 'label'>,
): Promise<{ latencies: number[]; ids: string[] }> => {
  const latencies: number[] = [];
  const ids: string[] = [];
  await pool(round.tasks, round.concurrency, async (i) => {
    const answer = await client.send(`${round.label} ${i}`);
    const state = stateOf(answer);
    if (state !== 'TASK_STATE_COMPLETED' || !answer.result?.task) {
      throw new Error(
        `${round.label}: expected TASK_STATE_COMPLETED, got ${state ?? JSON.stringify(answer.error)}`,
      );
    }
    ids.push(answer.result.task.id);
    latencies.push(answer.ms);
  });
  return { latencies, ids };
};

/**
 * `tasks` SendStreamingMessage calls, `concurrency` in flight, each read to its terminal event,
 * expected COMPLETED: send → terminal event (`latencies`), send → first event, and the terminal
 * revision's commit → its event at the client.
 */
export const streamingRound = async (
  client: RpcClient,
  round: Pick<LoadRound, 'tasks' | 'concurrency' | 'label'>,
): Promise<{ latencies: number[]; ids: string[]; firstEventMs: number[]; commitToEventMs: number[] }> => {
  const latencies: number[] = [];
  const ids: string[] = [];
  const firstEventMs: number[] = [];
  const commitToEventMs: number[] = [];
  await pool(round.tasks, round.concurrency, async (i) => {
    const { began, events } = await client.stream(
      'SendStreamingMessage',
      sendMessageParams(`${round.label} ${i}`),
    );
    const final = events.at(-1);
    const { state, timestamp } = stateIn(final?.data?.result);
    if (final === undefined || state !== 'TASK_STATE_COMPLETED') {
      throw new Error(
        `${round.label}: expected TASK_STATE_COMPLETED, got ${state ?? JSON.stringify(final?.data?.error ?? final?.data)}`,
      );
    }
    ids.push(final.data.result.statusUpdate?.taskId ?? final.data.result.task?.id);
    latencies.push(final.t - began);
    firstEventMs.push((events[0]?.t ?? began) - began);
    if (timestamp) commitToEventMs.push(final.at - Date.parse(timestamp));
  });
  return { latencies, ids, firstEventMs, commitToEventMs };
};

/** One client per server and caller, kept for the process's life. */
const clients = new Map<string, RpcClient>();

const drive = async (round: LoadRound): Promise<LoadRoundResult> => {
  const key = `${round.url} ${round.token ?? ''}`;
  const client = clients.get(key) ?? new RpcClient(round.url, round.token);
  clients.set(key, client);
  const requestsBefore = client.requests;
  const cpuBefore = process.cpuUsage();
  const began = performance.now();
  const { latencies, ids, ...streamed } =
    round.kind === 'streaming' ? await streamingRound(client, round) : await blockingRound(client, round);
  const cpu = process.cpuUsage(cpuBefore);
  return {
    ...streamed,
    latencies,
    ids,
    requests: client.requests - requestsBefore,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    wallMs: performance.now() - began,
  };
};

export interface LoadGenerator {
  /** Its process id (its CPU is not the servers'). */
  readonly pid: number;
  /** One round, sent by the generator's process; rounds run one at a time. */
  round(round: LoadRound): Promise<LoadRoundResult>;
  stop(): Promise<void>;
}

type Answer = { id: number } & ({ ok: true; result: LoadRoundResult } | { ok: false; error: string });

/** Starts the load generator's process (Node with tsx's loader, as `npx tsx` runs the benchmark). */
export const startLoadGenerator = (): LoadGenerator => {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    stdio: 'inherit',
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const waiting = new Map<
    number,
    { resolve: (result: LoadRoundResult) => void; reject: (e: Error) => void }
  >();
  let next = 0;
  let queue: Promise<unknown> = Promise.resolve();
  child.on('message', (answer: Answer) => {
    const pending = waiting.get(answer.id);
    waiting.delete(answer.id);
    if (answer.ok) pending?.resolve(answer.result);
    else pending?.reject(new Error(answer.error));
  });
  void exited.then((code) => {
    for (const pending of waiting.values())
      pending.reject(new Error(`the load generator exited with ${code} before it answered`));
    waiting.clear();
  });
  const round = (load: LoadRound): Promise<LoadRoundResult> => {
    const sent = queue.then(
      () =>
        new Promise<LoadRoundResult>((resolve, reject) => {
          const id = next++;
          waiting.set(id, { resolve, reject });
          child.send({ id, round: load });
        }),
    );
    queue = sent.catch(() => undefined);
    return sent;
  };
  return {
    pid: child.pid ?? -1,
    round,
    stop: async () => {
      if (child.connected) child.disconnect();
      await exited;
    },
  };
};

// The generator's process: rounds as its parent asks for them, until the parent goes away.
if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) {
  const send = process.send.bind(process);
  process.on('message', ({ id, round }: { id: number; round: LoadRound }) => {
    drive(round).then(
      (result) => send({ id, ok: true, result }),
      (error: unknown) => send({ id, ok: false, error: (error as Error).message }),
    );
  });
  process.once('disconnect', () => {
    for (const client of clients.values()) client.close();
    process.exit(0);
  });
}
