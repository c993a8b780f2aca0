import { en } from 'zod/locales';
import { config } from 'zod/mini';

/**
 * The schema library of every layer: zod/mini. Its functions (`z.optional(s)`,
 * `s.check(z.minLength(1))`, `z.pipe(s, z.transform(f))`) are bundled one by one, where zod's
 * classic API is one object graph: one classic import anywhere bundles all of it (~100 KB in
 * each function; test/infra/house-bundles.test.ts fails when a function bundles classic).
 *
 * zod/mini registers no locale (every issue would read "Invalid input"): the English messages
 * that JSON-RPC field violations, configuration errors and tool argument errors carry are
 * installed here, for every module that imports its schemas from this one.
 */
config(en());

export * from 'zod/mini';
