import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { withTimeout } from '../../shared/adapters/providers/provider-errors.ts';

v8.setFlagsFromString('--expose-gc');
/** A full garbage collection, as a busy executor has many during a model call. */
const collect = vm.runInNewContext('gc') as () => void;

/** Resolves with the signal's reason when it aborts; the test's timeout fails it otherwise. */
const abortOf = (signal: AbortSignal): Promise<unknown> =>
  new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));

describe('a provider request deadline (withTimeout)', () => {
  it('fires with a caller signal even when garbage collections run while the request waits', async () => {
    const caller = new AbortController();
    const aborted = abortOf(withTimeout(100, caller.signal));
    // With only the combined signal referenced (as fetch holds it), collections during the wait
    // used to collect the timeout signal: the request never ended (Node 20).
    const collecting = setInterval(collect, 10);
    try {
      const reason = await aborted;
      expect((reason as DOMException).name).toBe('TimeoutError');
      expect(caller.signal.aborted).toBe(false);
    } finally {
      clearInterval(collecting);
    }
  }, 10_000);

  it("carries the caller's abort and its reason before the deadline", async () => {
    const caller = new AbortController();
    const signal = withTimeout(60_000, caller.signal);
    const aborted = abortOf(signal);
    caller.abort(new Error('cancelled'));
    expect(await aborted).toEqual(new Error('cancelled'));
  });

  it('is the timeout signal itself without a caller signal', async () => {
    const reason = await abortOf(withTimeout(20));
    expect((reason as DOMException).name).toBe('TimeoutError');
  });
});
