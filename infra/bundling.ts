import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';

/**
 * How every function is bundled: the one definition HouseFunction hands to CDK (as its
 * `bundling` options), the cold-start bench (bench/lib/cold-start.ts) and
 * test/infra/house-bundles.test.ts hand to esbuild, so what is measured and tested is what
 * deploys (decisions 0018, 0022, 0029).
 */

/** The repository root: package-lock.json, tsconfig.json and every entry file live under it. */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * ESM bundles have no `require`; CommonJS dependencies bundled into them (parts of the AWS SDK
 * among them) call it for Node built-ins. The alias keeps the import clear of bundled names.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __houseCreateRequire } from 'node:module'; const require = __houseCreateRequire(import.meta.url);";

/**
 * Credential sources Lambda never reaches, left out of every bundle. Lambda puts
 * the function's role credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN
 * and sets no AWS_PROFILE, so the SDK's default chain stops at its first link (the environment);
 * it loads these only by dynamic `import()` when that link fails. Bundled, they and the STS/SSO
 * clients they pull in were ~130 KB of every function. A static import of one of them would fail
 * at load, which the cold-start bench (bundles loaded outside the repository) and
 * test/infra/house-bundles.test.ts catch.
 */
export const UNREACHED_CREDENTIAL_PROVIDERS = [
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-web-identity',
  '@aws-sdk/credential-provider-http',
  '@smithy/credential-provider-imds',
  // The STS/SSO/sign-in clients of those providers and of Bedrock's SSO token refresh.
  '@aws-sdk/nested-clients',
] as const;

/**
 * Compile-time constants of deployed bundles: failpoints (shared/app/operations/failpoints.ts) are compiled
 * out, so no configuration or variable can switch fault injection on in a deployment.
 */
export const DEPLOYED_DEFINES = {
  A2A_FAILPOINTS: 'false',
  // Where shared/adapters/tools/lazy-tool-sources.ts loads the tool sources from.
  A2A_TOOL_SOURCES_FILE: '"./tool-sources.mjs"',
} as const;

/** A module bundled into a file of its own, written beside a function's bundle, which loads it by a dynamic import. */
export interface SideBundle {
  readonly entry: string;
  readonly file: string;
}

/**
 * The tool sources (shared/adapters/tools/tool-sources.ts: the MCP client with the official MCP
 * SDK, the scripted tool model) as their own bundle file, written beside the bundles of the
 * functions that run runs (rpc and executor): those load it by a dynamic import when a run first
 * needs it, and never carry it themselves (their bundles stay within MAX_BUNDLE_BYTES).
 */
export const TOOL_SOURCES_BUNDLE: SideBundle = {
  entry: join(REPO_ROOT, 'shared', 'adapters', 'tools', 'tool-sources.ts'),
  file: 'tool-sources.mjs',
};

const requireFromRoot = createRequire(join(REPO_ROOT, 'package.json'));

/** The ESM files of `@smithy/core`'s event-stream module, the copy the SDK clients load. */
const SMITHY_EVENT_STREAMS = join(
  dirname(requireFromRoot.resolve('@smithy/core/package.json')),
  'dist-es',
  'submodules',
  'event-streams',
);

/**
 * The real `@smithy/core/event-streams` (the binary event-stream codec) as its own bundle file,
 * written beside the bundles of `EVENT_STREAM_ENTRIES`: infra/bundle-stubs/lazy-event-streams.ts
 * loads it on a function's first streamed model turn.
 */
export const EVENT_STREAMS_BUNDLE: SideBundle = {
  entry: join(SMITHY_EVENT_STREAMS, 'index.js'),
  file: 'event-streams.mjs',
};

/** The esbuild command that writes `bundle` into `outputDir` (a CDK afterBundling hook). */
export const sideBundleCommand = (bundle: SideBundle, outputDir: string): string =>
  [
    JSON.stringify(join(REPO_ROOT, 'node_modules', '.bin', 'esbuild')),
    JSON.stringify(bundle.entry),
    '--bundle',
    '--platform=node',
    '--format=esm',
    '--target=node22',
    '--minify',
    '--main-fields=module,main',
    `--banner:js=${JSON.stringify(ESM_REQUIRE_BANNER)}`,
    `--outfile=${JSON.stringify(join(outputDir, bundle.file))}`,
    '--log-level=warning',
  ].join(' ');

/**
 * Issue 8's "every function's bundle ≤ 512 KB", read as 512 KiB = 524,288 bytes since the rpc
 * function serves two bindings (docs/protocol.md §14; it was 512,000 while it served one):
 * test/infra/house-bundles.test.ts fails above it and the bench's verdict uses it.
 */
export const MAX_BUNDLE_BYTES = 524_288;

const STUBS = join(REPO_ROOT, 'infra', 'bundle-stubs');

/**
 * Modules replaced by a stand-in (decision 0029): code only an event-stream operation runs, in
 * every function that bundles none (all but `EVENT_STREAM_ENTRIES`). test/infra/house-bundles.test.ts fails when a function bundles an
 * operation with an event-stream member, and runs bundled Converse calls through the stand-ins.
 */
export const UNREACHED_MODULE_STUBS = {
  '@smithy/core/event-streams': join(STUBS, 'smithy-event-streams.ts'),
  '@aws-sdk/eventstream-handler-node': join(STUBS, 'eventstream-handler-node.ts'),
} as const;

/**
 * Modules replaced by a smaller one with the same behaviour (decision 0043): the DynamoDB
 * client's endpoint-discovery cache takes a Map-based LRU instead of mnemonist's (~7 KB less in
 * every function that talks to DynamoDB; test/unit/lru-cache.test.ts).
 */
export const SMALLER_MODULES = {
  'mnemonist/lru-cache': join(STUBS, 'lru-cache.ts'),
} as const;

/**
 * Aliases that make every import of `name` load the copy `dependent` loads: each export of its
 * package.json, mapped to that copy's ESM file (an alias replaces the path, so the package's
 * `exports` would not apply to a subpath otherwise).
 */
export const sameCopyAliases = (name: string, dependent: string): Record<string, string> => {
  const entry = createRequire(requireFromRoot.resolve(dependent)).resolve(name);
  const marker = `/node_modules/${name}/`;
  const directory = entry.slice(0, entry.lastIndexOf(marker) + marker.length - 1);
  const { exports } = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as {
    exports: Record<string, { import: string | { default: string } }>;
  };
  return Object.fromEntries(
    Object.entries(exports).map(([subpath, { import: esm }]) => [
      subpath === '.' ? name : `${name}/${subpath.slice(2)}`,
      join(directory, typeof esm === 'string' ? esm : esm.default),
    ]),
  );
};

/**
 * Powertools Logger and Metrics each install their own, identical copy of
 * `@aws-lambda-powertools/commons` (same version, same files: the test checks); bundled twice it
 * cost ~2.5 KB. The alias bundles the Logger's copy once, for both.
 */
const POWERTOOLS_COMMONS_ONCE = sameCopyAliases(
  '@aws-lambda-powertools/commons',
  '@aws-lambda-powertools/logger',
);

/**
 * The esbuild options of every function bundle. `bundle` and `platform: 'node'` are implied by
 * CDK; the rest maps onto CDK's `BundlingOptions` in HouseFunction (`houseCdkBundling`).
 */
export const HOUSE_ESBUILD_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  // Prefer packages' ESM builds so esbuild can tree-shake them.
  mainFields: ['module', 'main'],
  banner: { js: ESM_REQUIRE_BANNER },
  minify: true,
  sourcemap: 'linked',
  sourcesContent: false,
  external: [...UNREACHED_CREDENTIAL_PROVIDERS],
  define: DEPLOYED_DEFINES,
  tsconfig: join(REPO_ROOT, 'tsconfig.json'),
  alias: { ...UNREACHED_MODULE_STUBS, ...SMALLER_MODULES, ...POWERTOOLS_COMMONS_ONCE } as Readonly<
    Record<string, string>
  >,
} as const satisfies BuildOptions;

/**
 * Entries that call an SDK operation with an event-stream member: the executor, whose Bedrock
 * provider streams a turn with ConverseStream when a profile asks for progressive output
 * (docs/configuration.md, profile `output`). Their bundles take `@smithy/core/event-streams` from
 * infra/bundle-stubs/lazy-event-streams.ts (the codec loads from EVENT_STREAMS_BUNDLE on the first
 * streamed turn); ConverseStream has no event-stream input, so the payload handler of
 * `@aws-sdk/eventstream-handler-node` stays a stand-in. Every other function keeps both stand-ins.
 */
export const EVENT_STREAM_ENTRIES: readonly string[] = [
  join(REPO_ROOT, 'functions', 'executor', 'handler.ts'),
];

/** The aliases of an `EVENT_STREAM_ENTRIES` bundle: the lazy event-stream module and the real serde it keeps. */
export const LAZY_EVENT_STREAM_ALIASES = {
  '@smithy/core/event-streams': join(STUBS, 'lazy-event-streams.ts'),
  'a2a-real-event-stream-serde': join(SMITHY_EVENT_STREAMS, 'EventStreamSerde.js'),
  '@aws-sdk/eventstream-handler-node': UNREACHED_MODULE_STUBS['@aws-sdk/eventstream-handler-node'],
} as const;

/** The esbuild options of one function's bundle: the house options, with the lazy event-stream module where it streams. */
export const houseEsbuildOptionsFor = (entry: string): typeof HOUSE_ESBUILD_OPTIONS =>
  EVENT_STREAM_ENTRIES.includes(entry)
    ? {
        ...HOUSE_ESBUILD_OPTIONS,
        alias: { ...LAZY_EVENT_STREAM_ALIASES, ...SMALLER_MODULES, ...POWERTOOLS_COMMONS_ONCE },
      }
    : HOUSE_ESBUILD_OPTIONS;

/** The side bundles written beside a function's bundle: the tool sources where it runs runs, the event-stream codec where it streams. */
export const sideBundlesFor = (entry: string, toolSources: boolean): SideBundle[] => [
  ...(toolSources ? [TOOL_SOURCES_BUNDLE] : []),
  ...(EVENT_STREAM_ENTRIES.includes(entry) ? [EVENT_STREAMS_BUNDLE] : []),
];
