import { join, relative } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/house-function.ts';

/**
 * The admin command cannot be reached from the public API (issue 7 item 5), shown on the code
 * that is deployed: bundling the public functions (rpc, and the authorizer in front of it) with
 * esbuild, as the house construct does, pulls in none of the admin command's modules — so no
 * request, however crafted, can run a purge, a run inspection or a profile validation. The CDK
 * side (no route, no admin function, no rights) is in stacks.test.ts; the HTTP side (404 for
 * admin-like paths) in test/e2e/content-leaks.test.ts.
 */

const adminOnly = [
  /^infra\/admin\//,
  /^shared\/app\/operations\/purge-expired\.ts$/,
  /^shared\/app\/operations\/inspect-runs\.ts$/,
  /^shared\/adapters\/dynamodb\/dynamodb-expired-items\.ts$/,
  /^shared\/adapters\/dynamodb\/dynamodb-run-catalog\.ts$/,
  /^shared\/app\/profiles\/save-profile\.ts$/,
  /^shared\/adapters\/dynamodb\/dynamodb-profile-store\.ts$/,
];

const inputsOf = async (entry: string): Promise<string[]> => {
  const result = await build({
    entryPoints: [join(REPO_ROOT, entry)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  return Object.keys(result.metafile.inputs).map((input) => relative(REPO_ROOT, join(process.cwd(), input)));
};

describe('the public functions’ bundles', () => {
  it.each(['functions/rpc/handler.ts', 'functions/authorizer/handler.ts'])(
    '%s holds none of the admin command’s modules',
    async (entry) => {
      const inputs = await inputsOf(entry);
      // Positive control: the bundle is the real one (its own entry and the dispatcher or authenticator).
      expect(inputs).toContain(entry);
      expect(inputs.some((input) => /^shared\/app\/rpc\/(dispatcher|authenticate)\.ts$/.test(input))).toBe(
        true,
      );
      expect(inputs.filter((input) => adminOnly.some((pattern) => pattern.test(input)))).toEqual([]);
    },
    60_000,
  );

  it('the admin modules exist where this test looks for them (so the test above can fail)', async () => {
    const inputs = await inputsOf('infra/admin/cli.ts');
    for (const pattern of adminOnly)
      expect(
        inputs.some((input) => pattern.test(input)),
        String(pattern),
      ).toBe(true);
  }, 60_000);
});
