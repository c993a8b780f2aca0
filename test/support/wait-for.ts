/**
 * Polls `condition` until it holds; throws after `timeoutMs`. For what a test waits for from the
 * outside (a poller's invocation, a webhook, a reaper's tick): the deadline bounds a hang, it is
 * never what the test asserts.
 */
export const waitFor = async (
  condition: () => boolean | Promise<boolean>,
  {
    timeoutMs = 60_000,
    intervalMs = 50,
    what = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((wake) => setTimeout(wake, intervalMs));
  }
};
