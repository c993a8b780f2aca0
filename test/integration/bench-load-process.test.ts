import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchConfig, benchTokens } from '../../bench/lib/bench-config.ts';
import { roundInItsOwnProcess } from '../../bench/lib/load-process.ts';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { providedEndpoints } from '../support/local-guard.ts';

/** The benchmark's clients in a process of their own (decision 0082), against the local stack. */
let stack: LocalStack;
beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config: benchConfig,
    endpoints: providedEndpoints(),
    prefix: 'bench-load-process',
    log: () => {},
  });
});
afterAll(async () => {
  await stack?.stop();
});

describe('a load round in its own process', () => {
  it('sends every task, returns each latency and COMPLETED id and its own CPU', async () => {
    const result = await roundInItsOwnProcess({
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

  it('fails the round when a call does not complete (a wrong token here)', async () => {
    await expect(
      roundInItsOwnProcess({
        url: `${stack.baseUrl}/agents/default`,
        token: 'not-a-token',
        tasks: 2,
        concurrency: 1,
        label: 'refused',
      }),
    ).rejects.toThrow(/refused: expected TASK_STATE_COMPLETED/);
  });
});
