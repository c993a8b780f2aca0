/**
 * Holds every call of `target[method]` until `open()`, then lets it through to the original: the
 * test decides what runs in between (an interleaving forced by order, never by timing).
 * `reachedAt` resolves when the first call arrives.
 */
export const holdBefore = <T extends object, K extends keyof T>(target: T, method: K) => {
  const { open, opened, reached, reachedAt } = gate();
  const original = target[method] as (...args: unknown[]) => unknown;
  const held = async (...args: unknown[]) => {
    reached();
    await opened;
    return original.apply(target, args);
  };
  Object.assign(target, { [method]: held });
  return { open, reachedAt, restore: () => Object.assign(target, { [method]: original }) };
};

/** A gate of its own: `reached()` and `reachedAt`, `open()` and `opened`. */
export const gate = () => {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let reached = () => {};
  const reachedAt = new Promise<void>((resolve) => {
    reached = resolve;
  });
  return { open, opened, reached, reachedAt };
};
