import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchConfig, benchTokens } from '../../bench/lib/bench-config.ts';
import { type LoadGenerator, startLoadGenerator } from '../../bench/lib/load-process.ts';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';

/**
 * The benchmark's load generator (bench/README.md, "The load generator"): one process of its own
 * for every round, against the local stack.
 */
let stack: LocalStack;
let generator: LoadGenerator;
beforeAll(async () => {
  generator = startLoadGenerator();
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
