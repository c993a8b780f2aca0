import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pool, RpcClient, stateOf } from './client.ts';

/**
 * A round of blocking SendMessage calls from a process of its own (decision 0082): the load
 * generator then shares no event loop with the server it drives. The SDK server runs in its own
 * process; this server's local stack runs in the benchmark's, all of its JavaScript on the main
 * thread — a generator there would take its CPU from the server it measures.
 */

export interface LoadRound {
  readonly url: string;
  readonly token?: string;
  readonly tasks: number;
  readonly concurrency: number;
  readonly label: string;
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
  /** From the first call to the last answer (the process's start left out). */
  readonly wallMs: number;
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

const drive = async (round: LoadRound): Promise<LoadRoundResult> => {
  const cpuBefore = process.cpuUsage();
  const began = performance.now();
  const client = new RpcClient(round.url, round.token);
  const { latencies, ids } = await blockingRound(client, round);
  const cpu = process.cpuUsage(cpuBefore);
  return {
    latencies,
    ids,
    requests: client.requests,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    wallMs: performance.now() - began,
  };
};

/**
 * Runs the round in a process of its own (Node with tsx's loader, as `npx tsx` runs the
 * benchmark) and returns its figures.
 */
export const roundInItsOwnProcess = (round: LoadRound): Promise<LoadRoundResult> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [], {
      execArgv: ['--import', 'tsx'],
      stdio: 'inherit',
    });
    let answered = false;
    child.once('message', (message: { ok: true; result: LoadRoundResult } | { ok: false; error: string }) => {
      answered = true;
      if (message.ok) resolve(message.result);
      else reject(new Error(message.error));
      child.disconnect();
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!answered) reject(new Error(`the load process exited with ${code} before it answered`));
    });
    child.send(round);
  });

// The load process: one round, asked for by its parent.
if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) {
  const send = process.send.bind(process);
  process.once('message', (round: LoadRound) => {
    drive(round).then(
      (result) => send({ ok: true, result }),
      (error: unknown) => send({ ok: false, error: (error as Error).message }),
    );
  });
}
