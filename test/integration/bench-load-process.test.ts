import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchConfig, benchTokens } from '../../bench/lib/bench-config.ts';
import { RpcClient, stateOf } from '../../bench/lib/client.ts';
import { type LoadGenerator, startLoadGenerator } from '../../bench/lib/load-process.ts';
import { diffSnapshots, Meter, type MeterSnapshot } from '../../bench/lib/meter.ts';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';

/**
 * The benchmark's load generator (bench/README.md, "The load generator"): one process of its own
 * for every round, against the local stack with the benchmark's configuration; and the write units
 * of the benchmark's single-turn task, metered as the benchmark meters them (bench/README.md, "Method").
 */
let stack: LocalStack;
let generator: LoadGenerator;
const meter = new Meter();
beforeAll(async () => {
  generator = startLoadGenerator();
  // Before the stack: the meter hooks the SDK clients the handlers create.
  meter.install();
  stack = await startLocalStack({
    port: 0,
    config: benchConfig,
    endpoints: providedEndpoints(),
    prefix: 'bench-load-process',
    log: () => {},
  });
});
afterAll(async () => {
  await generator?.stop();
  await stack?.stop();
  meter.uninstall();
});

describe('the load generator', () => {
  it('sends every task of a round, returns each latency and COMPLETED id and its own CPU', async () => {
    expect(generator.pid).not.toBe(process.pid);
    const result = await generator.round({
      url: `${stack.baseUrl}/agents/default`,
      token: benchTokens.main,
      tasks: 6,
      concurrency: 3,
      label: 'load process',
    });
    expect(result.latencies).toHaveLength(6);
    expect(new Set(result.ids).size).toBe(6);
    expect(result.requests).toBe(6);
    expect(result.cpuSeconds).toBeGreaterThan(0);
  });

  it('streams a round: each SendStreamingMessage read to its terminal event', async () => {
    const result = await generator.round({
      url: `${stack.baseUrl}/agents/default`,
      token: benchTokens.main,
      tasks: 3,
      concurrency: 3,
      label: 'streamed',
      kind: 'streaming',
    });
    expect(new Set(result.ids).size).toBe(3);
    expect(result.latencies).toHaveLength(3);
    expect(result.firstEventMs).toHaveLength(3);
    // The first event (the Task) comes before the terminal one.
    for (const [i, first] of (result.firstEventMs ?? []).entries())
      expect(first).toBeLessThanOrEqual(result.latencies[i] ?? 0);
    expect(result.commitToEventMs).toHaveLength(3);
  });

  it('fails the round when a call does not complete (a wrong token here), and serves the next', async () => {
    await expect(
      generator.round({
        url: `${stack.baseUrl}/agents/default`,
        token: 'not-a-token',
        tasks: 2,
        concurrency: 1,
        label: 'refused',
      }),
    ).rejects.toThrow(/refused: expected TASK_STATE_COMPLETED/);
    // The same process, its client kept: the round's requests only, not the earlier rounds'.
    const next = await generator.round({
      url: `${stack.baseUrl}/agents/default`,
      token: benchTokens.main,
      tasks: 2,
      concurrency: 2,
      label: 'after a failure',
    });
    expect(next.ids).toHaveLength(2);
    expect(next.requests).toBe(2);
  });
});

/** Write units per function and table (or `table/index`), as AWS bills them. */
const writeUnits = (snapshot: MeterSnapshot) =>
  Object.fromEntries(
    Object.entries(snapshot.capacity).flatMap(([fn, tables]) =>
      Object.entries(tables)
        .filter(([, units]) => units.write > 0)
        .map(([table, units]) => [`${fn}: ${table}`, units.write]),
    ),
  );

describe("the benchmark's single-turn task", () => {
  it('writes 18 units: the blocking slot 2, the task row 4 and its lease index 2, the journal 6 and its owner index 2, the audit 2', async () => {
    const client = new RpcClient(`${stack.baseUrl}/agents/default`, benchTokens.main);
    // The first tasks create the owner's counter and warm the caches; one at a time, so no slot
    // put meets another send's slot.
    for (let i = 0; i < 2; i++)
      expect(stateOf(await client.send(`warm-up ${i}`))).toBe('TASK_STATE_COMPLETED');
    await meter.untilIdle();
    for (let i = 0; i < 3; i++) {
      const before = meter.snapshot();
      expect(stateOf(await client.send(`single-turn task ${i}`))).toBe('TASK_STATE_COMPLETED');
      await meter.untilIdle();
      // The rpc runs the blocking send's run itself (deployment.blockingRunsInRpc): every write is its.
      expect(writeUnits(diffSnapshots(meter.snapshot(), before))).toEqual({
        // The caller's blocking slot (put, delete: limits.blockingSendsPerCaller), the task row
        // created with its run claimed and completed (1–2 KB each).
        'rpc: State': 6,
        // The run's lease in the reaper's index, put with the claim and deleted at completion.
        'rpc: State/byLease': 2,
        // Two events (1 each), the view with the owner's counter in one transaction (2 × 2).
        'rpc: Journal': 6,
        // The view's entry in the owner index, counted twice for the transaction (bench/README.md).
        'rpc: Journal/byOwner': 2,
        // The run's start marker and its one attempt.
        'rpc: Audit': 2,
      });
    }
  });
});

/** One SendStreamingMessage read to its end: the states its frames showed. */
const streamed = async (text: string): Promise<string[]> => {
  const response = await fetch(`${stack.baseUrl}/agents/default`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'A2A-Version': '1.0',
      Accept: 'text/event-stream',
      Authorization: `Bearer ${benchTokens.main}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendStreamingMessage',
      params: { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] } },
    }),
  });
  const body = await response.text();
  return body
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => JSON.parse(line.slice(5)).result)
    .map((result) => result?.statusUpdate?.status?.state ?? result?.task?.status?.state)
    .filter((state): state is string => state !== undefined);
};

/** Requests per function and `Service.Operation`. */
const requests = (snapshot: MeterSnapshot) =>
  Object.fromEntries(
    Object.entries(snapshot.requests).flatMap(([fn, row]) =>
      Object.entries(row).map(([operation, count]) => [`${fn}: ${operation}`, count]),
    ),
  );

describe("the benchmark's streamed task", () => {
  it('makes the blocking task’s requests and writes: its run runs in the rpc and feeds the stream, no queue hop, no journal read', async () => {
    const client = new RpcClient(`${stack.baseUrl}/agents/default`, benchTokens.main);
    expect(await streamed('warm-up')).toContain('TASK_STATE_COMPLETED');
    await meter.untilIdle(1_500);
    let before = meter.snapshot();
    expect(stateOf(await client.send('blocking'))).toBe('TASK_STATE_COMPLETED');
    await meter.untilIdle(1_500);
    const blocking = diffSnapshots(meter.snapshot(), before);
    before = meter.snapshot();
    expect(await streamed('streamed')).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
    await meter.untilIdle(1_500);
    const streaming = diffSnapshots(meter.snapshot(), before);
    // The same writes, from the rpc alone: the create claims the run, the rpc runs it and
    // completes it; nothing is queued and the executor is never invoked.
    const rpcOnly = (counts: Record<string, number>) =>
      Object.fromEntries(Object.entries(counts).filter(([key]) => key.startsWith('rpc: ')));
    expect(rpcOnly(writeUnits(streaming))).toEqual(rpcOnly(writeUnits(blocking)));
    expect(Object.values(rpcOnly(writeUnits(streaming))).reduce((sum, units) => sum + units, 0)).toBe(18);
    // The same requests too: the run feeds the stream each revision it journaled (RunFeed), so
    // the stream reads no journal — no Query beside the blocking task's requests.
    expect(rpcOnly(requests(streaming))).toEqual(rpcOnly(requests(blocking)));
    expect(requests(streaming)['rpc: DynamoDB.Query']).toBeUndefined();
    expect(Object.keys(requests(streaming)).filter((key) => key.includes('SQS'))).toEqual([]);
    expect(streaming.invocations.executor).toBeUndefined();
  });
});
