import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { houseEsbuildOptionsFor, REPO_ROOT } from '../../infra/bundling.ts';
import { defaultConfig } from '../../shared/config/config.ts';
import { median } from './stats.ts';

/**
 * Cold-start proxy per function (issue 8): the handler bundled exactly as `HouseFunction` has
 * CDK bundle it (`houseEsbuildOptionsFor` of infra/bundling.ts: ESM, minified, node22 target,
 * the require banner, linked source maps without sources, AWS SDK bundled but for the credential
 * sources Lambda never reaches, the event-stream stand-ins: decisions 0018, 0029), then the time to
 * import it in a fresh Node process, median of N spawns — against the same handler with the
 * project's own TypeScript compiled but every dependency loaded unbundled from node_modules.
 */

export interface ColdStartResult {
  readonly functionName: string;
  readonly bundleBytes: number;
  readonly sourceMapBytes: number;
  readonly bundledInitMs: number;
  readonly baselineInitMs: number;
  /** bundled / baseline. */
  readonly ratio: number;
  readonly spawns: number;
  readonly samples: { readonly bundled: number[]; readonly baseline: number[] };
  readonly error?: string;
}

/** The entry files: every functions/<name>/handler.ts present now. */
export const handlerEntries = (): Array<{ functionName: string; entry: string }> =>
  readdirSync(join(REPO_ROOT, 'functions'))
    .filter((name) => existsSync(join(REPO_ROOT, 'functions', name, 'handler.ts')))
    .map((name) => ({ functionName: name, entry: join(REPO_ROOT, 'functions', name, 'handler.ts') }));

/** What handler modules read at import; a variable still missing is added when an import names it. */
const dummyEnv: Record<string, string> = {
  AWS_REGION: 'us-east-1',
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  STATE_TABLE_NAME: 'bench-State',
  JOURNAL_TABLE_NAME: 'bench-Journal',
  AUDIT_TABLE_NAME: 'bench-Audit',
  RUN_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/bench-RunQueue',
  KMS_KEY_ID: 'arn:aws:kms:us-east-1:000000000000:key/00000000-0000-0000-0000-000000000000',
  A2A_INSTALLATION: 'bench',
  // The default profile, explicitly public: a deployed configuration must say how callers authenticate.
  A2A_CONFIG: JSON.stringify({ ...defaultConfig, auth: { ...defaultConfig.auth, public: true } }),
  POWERTOOLS_LOG_LEVEL: 'ERROR',
};

/** Imports the module given as argv[2] and prints how long the import took. */
const runnerSource = `
const g = globalThis;
g.awslambda ??= { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };
const began = performance.now();
try {
  await import(process.argv[2]);
  process.stdout.write(JSON.stringify({ initMs: performance.now() - began }));
} catch (error) {
  process.stdout.write(JSON.stringify({ error: String(error && error.message || error) }));
}
`;

const spawnInit = (
  runner: string,
  moduleUrl: string,
  env: Record<string, string>,
): Promise<{ initMs?: number; error?: string }> =>
  new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [runner, moduleUrl], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', () => {
      try {
        resolveRun(JSON.parse(out.slice(out.lastIndexOf('{"'))));
      } catch {
        resolveRun({ error: `no result (stderr: ${err.slice(0, 200)})` });
      }
    });
  });

/** Spawns until `spawns` samples exist, adding a dummy for each variable an import reports missing. */
const measureInit = async (
  runner: string,
  moduleUrl: string,
  env: Record<string, string>,
  spawns: number,
): Promise<{ samples: number[]; error?: string }> => {
  const samples: number[] = [];
  for (let attempt = 0; samples.length < spawns && attempt < spawns + 5; attempt++) {
    const result = await spawnInit(runner, moduleUrl, env);
    if (result.initMs !== undefined) {
      samples.push(result.initMs);
      continue;
    }
    const missing = /Missing environment variable (\w+)/.exec(result.error ?? '')?.[1];
    if (!missing || env[missing] !== undefined) return { samples, error: result.error };
    env[missing] = missing.endsWith('_URL')
      ? `https://bench.invalid/${missing.toLowerCase()}`
      : `bench-${missing.toLowerCase()}`;
  }
  return { samples };
};

export const measureColdStarts = async (
  options: { spawns?: number; log?: (line: string) => void; only?: readonly string[] } = {},
): Promise<ColdStartResult[]> => {
  const spawns = options.spawns ?? 10;
  const log = options.log ?? (() => {});
  const bundleRoot = join(tmpdir(), `a2a-bench-bundles-${process.pid}`);
  // Under the repository, so bare imports resolve to its node_modules.
  const baselineRoot = join(REPO_ROOT, '.cache', 'bench', `baseline-${process.pid}`);
  mkdirSync(bundleRoot, { recursive: true });
  mkdirSync(baselineRoot, { recursive: true });
  const runner = join(bundleRoot, 'init-runner.mjs');
  writeFileSync(runner, runnerSource);
  const results: ColdStartResult[] = [];
  try {
    const entries = handlerEntries().filter(
      ({ functionName }) => !options.only || options.only.includes(functionName),
    );
    for (const { functionName, entry } of entries) {
      const bundleFile = join(bundleRoot, functionName, 'index.mjs');
      const baselineFile = join(baselineRoot, functionName, 'index.mjs');
      try {
        await build({
          ...houseEsbuildOptionsFor(entry),
          entryPoints: [entry],
          outfile: bundleFile,
          logLevel: 'error',
        });
        await build({
          entryPoints: [entry],
          outfile: baselineFile,
          bundle: true,
          packages: 'external',
          platform: 'node',
          format: 'esm',
          target: 'node20',
          tsconfig: join(REPO_ROOT, 'tsconfig.json'),
          logLevel: 'error',
        });
      } catch (error) {
        results.push(failed(functionName, spawns, `build failed: ${(error as Error).message.slice(0, 300)}`));
        continue;
      }
      const env = { ...dummyEnv };
      // Alternate bundled and baseline spawns so a burst of load hits both alike.
      const bundled: number[] = [];
      const baseline: number[] = [];
      let error: string | undefined;
      for (let i = 0; i < spawns && error === undefined; i++) {
        const one = await measureInit(runner, pathToFileURL(bundleFile).href, env, 1);
        const two = await measureInit(runner, pathToFileURL(baselineFile).href, env, 1);
        error = one.error ?? two.error;
        bundled.push(...one.samples);
        baseline.push(...two.samples);
      }
      const bundledInitMs = median(bundled);
      const baselineInitMs = median(baseline);
      log(
        `cold start ${functionName}: bundle ${statSync(bundleFile).size.toLocaleString('en-US')} bytes, init ${bundledInitMs.toFixed(1)} ms vs ${baselineInitMs.toFixed(1)} ms unbundled`,
      );
      results.push({
        functionName,
        bundleBytes: statSync(bundleFile).size,
        sourceMapBytes: existsSync(`${bundleFile}.map`) ? statSync(`${bundleFile}.map`).size : 0,
        bundledInitMs,
        baselineInitMs,
        ratio: bundledInitMs / baselineInitMs,
        spawns: Math.min(bundled.length, baseline.length),
        samples: { bundled, baseline },
        ...(error ? { error } : {}),
      });
    }
  } finally {
    rmSync(bundleRoot, { recursive: true, force: true });
    rmSync(baselineRoot, { recursive: true, force: true });
  }
  return results;
};

const failed = (functionName: string, spawns: number, error: string): ColdStartResult => ({
  functionName,
  bundleBytes: 0,
  sourceMapBytes: 0,
  bundledInitMs: Number.NaN,
  baselineInitMs: Number.NaN,
  ratio: Number.NaN,
  spawns,
  samples: { bundled: [], baseline: [] },
  error,
});
