import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { abandonedRunReason, unstartedRunReason } from '../../shared/app/runs/reap-runs.ts';
import { rpc } from '../conformance/sse.ts';
import { terminalStates } from '../support/fault-drive.ts';
import { readTaskRows } from '../support/fault-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import type { ChildStackOptions } from '../support/stack-process.ts';

/**
 * Crash recovery (issue #7.3, docs/reliability.md): the process that runs every handler, poller and
 * the HTTP harness is killed with SIGKILL while runs are in flight, then started again on the same
 * tables and queues. Afterwards every task is terminal (the reaper settles the runs whose executor
 * died), no run called its provider twice (calls are logged to a file before they are made), and
 * every COMPLETED task holds exactly the answer to its own message — nothing lost, nothing invented.
 */

const tasks = Number(process.env.A2A_CRASH_TASKS ?? 60);
const dir = mkdtempSync(join(tmpdir(), 'a2a-crash-'));
const callLog = join(dir, 'provider-calls.log');
const prefix = `e2e-crash-${randomUUID().slice(0, 8)}`;
const childEntry = fileURLToPath(new URL('../support/stack-process.ts', import.meta.url));
let child: ChildProcess | undefined;

afterAll(() => {
  child?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the stack process; resolves with its base URL. */
const startChild = (existingStreamStart: 'LATEST' | 'TRIM_HORIZON'): Promise<string> => {
  const options: ChildStackOptions = {
    endpoints: providedEndpoints(),
    prefix,
    callLog,
    // Short, so the test does not wait for the deployed 90 s lease and 60 s reaper schedule.
    runLeaseMs: 3_000,
    runStartDeadlineMs: 20_000,
    reaperIntervalMs: 1_000,
    existingStreamStart,
  };
  const started = spawn(process.execPath, ['--import', 'tsx', childEntry], {
    env: { ...process.env, A2A_CHILD_STACK: JSON.stringify(options) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child = started;
  return new Promise((resolve, reject) => {
    let output = '';
    started.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const ready = /READY (\S+)/.exec(output);
      if (ready) resolve(ready[1]!);
    });
    started.once('exit', (code) => reject(new Error(`stack process exited (${code}) before it was ready`)));
  });
};

const providerCalls = (): string[] =>
  existsSync(callLog) ? readFileSync(callLog, 'utf8').split('\n').filter(Boolean) : [];

interface Sent {
  readonly profile: 'echo' | 'slow';
  readonly text: string;
  taskId?: string;
}

const send = async (baseUrl: string, sent: Sent): Promise<void> => {
  const answer = await rpc(`${baseUrl}/agents/${sent.profile}`, 'SendMessage', {
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: sent.text }] },
    configuration: { returnImmediately: true },
  });
  const task = answer.kind === 'json' ? (answer.body.result?.task as { id?: string } | undefined) : undefined;
  if (task?.id) sent.taskId = task.id;
};

const sendAll = async (baseUrl: string, batch: Sent[], concurrency: number, stop?: () => boolean) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batch.length && !stop?.()) await send(baseUrl, batch[next++]!).catch(() => {});
    }),
  );
};

describe('crash recovery', () => {
  it('SIGKILL mid-run, restart: every task terminal, no run twice, no result lost or invented', async () => {
    const began = performance.now();
    const sent: Sent[] = Array.from({ length: tasks }, (_, index) => ({
      profile: index % 2 === 0 ? 'slow' : 'echo',
      text: `crash task ${index} ${randomUUID()}`,
    }));
    const firstLife = sent.slice(0, Math.ceil((tasks * 2) / 3));
    const secondLife = sent.slice(firstLife.length);

    let baseUrl = await startChild('LATEST');
    // Kill once several runs have called their provider: slow ones are then still working.
    let killedAt: number | undefined;
    const killer = setInterval(() => {
      if (killedAt === undefined && providerCalls().length >= 8) {
        killedAt = providerCalls().length;
        child?.kill('SIGKILL');
      }
    }, 100);
    await sendAll(baseUrl, firstLife, 8, () => killedAt !== undefined);
    while (killedAt === undefined) await new Promise((wake) => setTimeout(wake, 100));
    clearInterval(killer);
    const killed = child;
    if (killed && killed.exitCode === null && killed.signalCode === null) {
      await new Promise((exited) => killed.once('exit', exited));
    }
    const progress = (step: string) =>
      console.log(`crash: ${step} after ${Math.round(performance.now() - began)} ms`);
    progress(`killed at ${killedAt} provider calls`);

    // The same tables and queues; the streams replay from the oldest record (at least once).
    baseUrl = await startChild('TRIM_HORIZON');
    progress('restarted');
    await sendAll(baseUrl, [...firstLife.filter((task) => task.taskId === undefined), ...secondLife], 8);
    progress('all sent');

    const created = sent.filter((task) => task.taskId !== undefined);
    const deadline = Date.now() + 90_000;
    let rows = await readTaskRows(providedEndpoints(), prefix);
    while (Date.now() < deadline && [...rows.tasks.values()].some((row) => !terminalStates.has(row.state))) {
      await new Promise((wake) => setTimeout(wake, 500));
      rows = await readTaskRows(providedEndpoints(), prefix);
    }

    progress('settled');
    const calls = providerCalls();
    const callsByRun = new Map<string, number>();
    for (const runId of calls) callsByRun.set(runId, (callsByRun.get(runId) ?? 0) + 1);
    const outcomes: Record<string, number> = {};
    const problems: string[] = [];
    for (const [taskId, row] of rows.tasks) {
      const run = rows.runs.get(row.currentRunId);
      const key = row.state === 'TASK_STATE_FAILED' ? `FAILED ${row.reason}` : row.state;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
      if (!terminalStates.has(row.state)) problems.push(`${taskId} ended ${row.state}`);
      if (row.state === 'TASK_STATE_COMPLETED') {
        if (run?.status !== 'COMPLETED') problems.push(`${taskId} COMPLETED with run ${run?.status}`);
        if (callsByRun.get(row.currentRunId) !== 1) problems.push(`${taskId} COMPLETED without one call`);
        if (!row.hasResult) problems.push(`${taskId} COMPLETED without its sealed result`);
      }
      if (
        row.state === 'TASK_STATE_FAILED' &&
        ![abandonedRunReason, unstartedRunReason].includes(row.reason ?? '')
      ) {
        problems.push(`${taskId} FAILED for ${row.reason}`);
      }
    }
    for (const [runId, count] of callsByRun)
      if (count > 1) problems.push(`run ${runId} called its provider ${count}×`);
    // The answer each client reads back is the answer to its own message.
    for (const task of created) {
      if (rows.tasks.get(task.taskId!)?.state !== 'TASK_STATE_COMPLETED') continue;
      const answer = await rpc(`${baseUrl}/agents/${task.profile}`, 'GetTask', { id: task.taskId });
      const result = answer.kind === 'json' ? answer.body.result : undefined;
      const text = (result?.artifacts as { parts: { text?: string }[] }[] | undefined)?.[0]?.parts[0]?.text;
      if (text !== task.text) problems.push(`${task.taskId} answers ${JSON.stringify(text)}`);
    }
    console.log(
      JSON.stringify({
        tasks: rows.tasks.size,
        acceptedByClients: created.length,
        providerCallsBeforeKill: killedAt,
        providerCalls: calls.length,
        outcomes,
        durationMs: Math.round(performance.now() - began),
      }),
    );

    expect(problems).toEqual([]);
    expect(rows.tasks.size).toBeGreaterThanOrEqual(created.length);
    // The kill landed mid-run: at least one run lost its executor and was settled by the reaper.
    expect(outcomes[`FAILED ${abandonedRunReason}`] ?? 0).toBeGreaterThan(0);
    expect(outcomes.TASK_STATE_COMPLETED ?? 0).toBeGreaterThan(tasks / 3);
  }, 240_000);
});
