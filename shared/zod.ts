import { config } from 'zod';
import { en } from 'zod/locales';

/**
 * The schema library of every layer (decision 0063). Schemas are written against zod/mini's
 * functional API (`z.optional(s)`, `s.check(z.minLength(1))`, `z.pipe(s, z.transform(f))`),
 * which zod's classic API offers too: classic is one object graph, so one import of it bundles
 * all of it (~100 KB in each function), where zod/mini's functions are bundled one by one.
 *
 * This re-exports classic until shared/adapters/dynamodb/entities.ts is on zod/mini: bundled
 * beside classic, mini would add its own ~2.6 KB, and the executor is 736 B under its limit. The
 * commit that moves entities.ts changes both `'zod'` imports here to `'zod/mini'`;
 * test/infra/house-bundles.test.ts fails while a function bundles both.
 *
 * zod/mini registers no locale (every issue would read "Invalid input"): the English messages
 * that JSON-RPC field violations, configuration errors and tool argument errors carry are
 * installed here, for every module that imports its schemas from this one.
 */
config(en());

export * from 'zod';
