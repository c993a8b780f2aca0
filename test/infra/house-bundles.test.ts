import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { handlerEntries } from '../../bench/lib/cold-start.ts';
import {
  DEPLOYED_DEFINES,
  ESM_REQUIRE_BANNER,
  REPO_ROOT,
  UNREACHED_CREDENTIAL_PROVIDERS,
} from '../../infra/house-function.ts';

/**
 * Decision 0018: every function bundles what it loads, and nothing Lambda never loads. The
 * esbuild options are HouseFunction's (infra/house-function.ts), with the metafile on.
 */
const metafileOf = async (entry: string): Promise<Metafile> => {
  const result = await build({
    entryPoints: [entry],
    outfile: join(REPO_ROOT, '.cache', 'house-bundles-test', 'index.mjs'),
    write: false,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    mainFields: ['module', 'main'],
    banner: { js: ESM_REQUIRE_BANNER },
    minify: true,
    metafile: true,
    external: [...UNREACHED_CREDENTIAL_PROVIDERS],
    define: DEPLOYED_DEFINES,
    tsconfig: join(REPO_ROOT, 'tsconfig.json'),
    logLevel: 'error',
  });
  return result.metafile;
};

/** Issue 8: every function's bundle ≤ 512 KB (KiB, as the bench reports it). */
const MAX_BUNDLE_BYTES = 512 * 1024;

const isUnreached = (path: string): boolean =>
  UNREACHED_CREDENTIAL_PROVIDERS.some((name) => path === name || path.startsWith(`${name}/`));

describe('function bundles (decision 0018)', () => {
  it.each(handlerEntries())(
    '$functionName loads the external credential sources only lazily',
    async ({ entry }) => {
      const metafile = await metafileOf(entry);
      const externalImports = Object.entries(metafile.inputs).flatMap(([from, input]) =>
        input.imports
          .filter((imported) => isUnreached(imported.path))
          .map((imported) => ({ from, ...imported })),
      );
      // A static import of an external module would fail the cold start in Lambda (not bundled).
      expect(externalImports.filter((imported) => imported.kind !== 'dynamic-import')).toEqual([]);
      // No module of those packages is bundled either.
      expect(
        Object.keys(metafile.inputs).filter((input) =>
          UNREACHED_CREDENTIAL_PROVIDERS.some((name) => input.includes(`node_modules/${name}/`)),
        ),
      ).toEqual([]);
      // zod is imported as a namespace, so its ~250 KB of error-message locales stay out (only en).
      const output = Object.values(metafile.outputs)[0];
      const bundledLocales = Object.entries(output?.inputs ?? {})
        .filter(
          ([input, { bytesInOutput }]) => input.includes('node_modules/zod/v4/locales/') && bytesInOutput > 0,
        )
        .map(([input]) => input);
      expect(bundledLocales.filter((input) => !input.endsWith('/en.js'))).toEqual([]);
      // Issue 8's target: every function's bundle is at most 512 KB (decision 0022).
      expect(output?.bytes).toBeLessThanOrEqual(MAX_BUNDLE_BYTES);
    },
  );
});
