import { execFile, execSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { NormalizedSchema } from '@smithy/core/schema';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handlerEntries } from '../../bench/lib/cold-start.ts';
import { EVENT_STREAMS_NOT_BUNDLED } from '../../infra/bundle-stubs/smithy-event-streams.ts';
import {
  EVENT_STREAM_ENTRIES,
  EVENT_STREAMS_BUNDLE,
  HOUSE_ESBUILD_OPTIONS,
  houseEsbuildOptionsFor,
  MAX_BUNDLE_BYTES,
  REPO_ROOT,
  sameCopyAliases,
  sideBundleCommand,
  TOOL_SOURCES_BUNDLE,
  UNREACHED_CREDENTIAL_PROVIDERS,
  UNREACHED_MODULE_STUBS,
} from '../../infra/bundling.ts';
import { HouseFunction } from '../../infra/house-function.ts';
import { RPC_JOURNAL_TABLE_ACTIONS, RPC_STATE_TABLE_ACTIONS } from '../../infra/service-stack.ts';
import { BedrockProvider } from '../../shared/adapters/providers/bedrock-provider.ts';
import type { ModelRequest, ModelTurn } from '../../shared/domain/model.ts';
import {
  bedrockError,
  bedrockEvent,
  bedrockExceptionEvent,
  bedrockStream,
  bedrockStreamTextEvents,
  bedrockText,
  type FakeModelServer,
  startFakeModelServer,
} from '../support/fake-model-servers.ts';
import { startMcpTestServer } from '../support/mcp-server-process.ts';

const execFileAsync = promisify(execFile);

/**
 * Decisions 0018, 0029: every function bundles what it loads, and nothing Lambda never loads.
 * The esbuild options are HOUSE_ESBUILD_OPTIONS (infra/bundling.ts), CDK's and the bench's too.
 */
const bundleOf = async (entry: string): Promise<{ metafile: Metafile; bytes: number }> => {
  const result = await build({
    ...houseEsbuildOptionsFor(entry),
    entryPoints: [entry],
    outfile: join(REPO_ROOT, '.cache', 'house-bundles-test', 'index.mjs'),
    write: false,
    metafile: true,
    logLevel: 'error',
  });
  const code = result.outputFiles.find((file) => file.path.endsWith('.mjs'));
  return { metafile: result.metafile, bytes: code?.contents.byteLength ?? Number.NaN };
};

const isUnreached = (path: string): boolean =>
  UNREACHED_CREDENTIAL_PROVIDERS.some((name) => path === name || path.startsWith(`${name}/`));

/** The SDK operations a bundle can call: those whose command class is in its output. */
const bundledOperations = (
  output: Metafile['outputs'][string],
): Array<{ client: string; operation: string }> =>
  Object.entries(output.inputs).flatMap(([input, { bytesInOutput }]) => {
    const match = /node_modules\/(@aws-sdk\/client-[\w-]+)\/dist-es\/commands\/(\w+)Command\.js$/.exec(input);
    return bytesInOutput > 0 && match ? [{ client: match[1] as string, operation: match[2] as string }] : [];
  });

type OperationSchema = readonly [number, string, string, unknown, unknown, unknown];

/** The members of the operation's input and output that are event streams (schema traits). */
const eventStreamMembers = async ({ client, operation }: { client: string; operation: string }) => {
  const exports = (await import(client)) as Record<string, OperationSchema | undefined>;
  const schema = exports[`${operation}$`];
  if (!schema) throw new Error(`no schema for ${client} ${operation}`);
  return [schema[4], schema[5]]
    .map((shape) => NormalizedSchema.of(shape as never).getEventStreamMember())
    .filter((member) => member !== '');
};

/** The bundled operations with an event-stream member: what the stand-ins cannot serve. */
const eventStreamOperations = async (output: Metafile['outputs'][string]): Promise<string[]> => {
  const found: string[] = [];
  for (const operation of bundledOperations(output)) {
    if ((await eventStreamMembers(operation)).length > 0) found.push(operation.operation);
  }
  return found;
};

describe('function bundles (decisions 0018, 0029)', () => {
  it.each(handlerEntries())(
    '$functionName loads the external credential sources only lazily, within 512 KiB',
    async ({ entry }) => {
      const { metafile, bytes } = await bundleOf(entry);
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
      const output = Object.entries(metafile.outputs).find(([file]) => file.endsWith('.mjs'))?.[1];
      if (!output) throw new Error('esbuild wrote no .mjs');
      const bundledLocales = Object.entries(output.inputs)
        .filter(
          ([input, { bytesInOutput }]) => input.includes('node_modules/zod/v4/locales/') && bytesInOutput > 0,
        )
        .map(([input]) => input);
      expect(bundledLocales.filter((input) => !input.endsWith('/en.js'))).toEqual([]);
      // zod/mini only (decision 0063): one classic import anywhere bundles all of classic, ~100 KB.
      expect(
        Object.keys(output.inputs).filter((input) => input.includes('node_modules/zod/v4/classic/')),
      ).toEqual([]);
      // The event-stream stand-ins (decision 0029) hold only while no bundled SDK operation has
      // an event-stream member (Bedrock's ConverseStream, InvokeModelWith*Stream, …): one that
      // has needs the real modules. The check reads each bundled command's schema.
      // The executor streams Bedrock turns (ConverseStream) and bundles the real modules instead.
      const streams = EVENT_STREAM_ENTRIES.includes(entry);
      expect(await eventStreamOperations(output)).toEqual(streams ? ['ConverseStream'] : []);
      const realEventStreamModules = Object.keys(output.inputs).filter(
        (input) =>
          input.includes('/@smithy/core/dist-es/submodules/event-streams/') ||
          input.includes('/@aws-sdk/eventstream-handler-node/'),
      );
      if (streams) {
        // The bundle keeps the serde (it reads the client's schemas and error registry) and the
        // lazy module; the codec loads from its own file on the first streamed turn.
        expect(realEventStreamModules.map((input) => input.slice(input.lastIndexOf('/') + 1))).toEqual([
          'EventStreamSerde.js',
        ]);
        expect(Object.keys(output.inputs)).toContain('infra/bundle-stubs/lazy-event-streams.ts');
      } else {
        // The real event-stream modules are not bundled (the alias applies).
        expect(realEventStreamModules).toEqual([]);
      }
      // Issue 8's target (decisions 0022, 0029).
      expect(bytes).toBeLessThanOrEqual(MAX_BUNDLE_BYTES);
    },
  );

  it('grants the rpc function every DynamoDB operation its bundle can send, and no other (decision 0055)', async () => {
    const { metafile } = await bundleOf(join(REPO_ROOT, 'functions', 'rpc', 'handler.ts'));
    const output = Object.entries(metafile.outputs).find(([file]) => file.endsWith('.mjs'))?.[1];
    if (!output) throw new Error('esbuild wrote no .mjs');
    const operations = bundledOperations(output)
      .filter(({ client }) => client === '@aws-sdk/client-dynamodb')
      .map(({ operation }) => operation);
    // Bundled with the client but never sent: endpoint discovery is off, and no rpc path scans
    // (the document client's Scan command comes with its Query). A transaction's items are
    // authorized as the item actions they are (PutItem, UpdateItem).
    const neverSent = ['DescribeEndpoints', 'Scan'];
    const asActions = (operation: string) =>
      operation === 'TransactWriteItems'
        ? ['dynamodb:PutItem', 'dynamodb:UpdateItem']
        : [`dynamodb:${operation}`];
    const needed = [
      ...new Set(operations.filter((operation) => !neverSent.includes(operation)).flatMap(asActions)),
    ];
    expect(needed.length).toBeGreaterThan(3);
    const granted = new Set<string>([...RPC_STATE_TABLE_ACTIONS, ...RPC_JOURNAL_TABLE_ACTIONS]);
    expect(needed.filter((action) => !granted.has(action))).toEqual([]);
    expect([...granted].filter((action) => !needed.includes(action))).toEqual([]);
  });

  it('recognises an operation with an event-stream member (the check above can fail)', async () => {
    const bedrock = '@aws-sdk/client-bedrock-runtime';
    expect(await eventStreamMembers({ client: bedrock, operation: 'ConverseStream' })).toEqual(['stream']);
    expect(await eventStreamMembers({ client: bedrock, operation: 'InvokeModelWithResponseStream' })).toEqual(
      ['body'],
    );
    expect(await eventStreamMembers({ client: bedrock, operation: 'Converse' })).toEqual([]);
  });

  it('is what CDK builds: HouseFunction bundles the executor byte for byte as esbuild does here', async () => {
    const entry = join(REPO_ROOT, 'functions', 'executor', 'handler.ts');
    const outdir = mkdtempSync(join(tmpdir(), 'house-bundles-cdk-'));
    try {
      const app = new App({ outdir });
      new HouseFunction(new Stack(app, 'Probe'), 'Executor', { entry, timeout: Duration.seconds(30) });
      const assembly = app.synth();
      const [asset] = readdirSync(assembly.directory).filter((name) =>
        existsSync(join(assembly.directory, name, 'index.mjs')),
      );
      const cdkBundle = readFileSync(join(assembly.directory, asset as string, 'index.mjs'));
      const result = await build({
        ...houseEsbuildOptionsFor(entry),
        entryPoints: [entry],
        outfile: join(outdir, 'esbuild', 'index.mjs'),
        write: false,
        logLevel: 'error',
      });
      const esbuildBundle = result.outputFiles.find((file) => file.path.endsWith('.mjs'))?.contents;
      expect(cdkBundle.byteLength).toBe(esbuildBundle?.byteLength);
      expect(cdkBundle.equals(Buffer.from(esbuildBundle ?? []))).toBe(true);
      // CDK's afterBundling hook writes the event-stream codec beside it.
      const codec = readFileSync(
        join(assembly.directory, asset as string, EVENT_STREAMS_BUNDLE.file),
        'utf8',
      );
      expect(codec).toContain(':message-type');
      expect(cdkBundle.toString('utf8')).toContain(`./${EVENT_STREAMS_BUNDLE.file}`);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);

  it("writes tool-sources.mjs beside a bundle with CDK's afterBundling hook, and the bundle loads it from there", async () => {
    const entry = join(REPO_ROOT, 'test', 'support', 'tool-sources-probe.ts');
    const outdir = mkdtempSync(join(tmpdir(), 'house-bundles-tools-'));
    const server = await startMcpTestServer();
    try {
      const app = new App({ outdir });
      new HouseFunction(new Stack(app, 'Probe'), 'Probe', {
        entry,
        timeout: Duration.seconds(30),
        toolSources: true,
      });
      const assembly = app.synth();
      const [asset] = readdirSync(assembly.directory)
        .map((name) => join(assembly.directory, name))
        .filter((path) => existsSync(join(path, 'index.mjs')));
      const bundle = readFileSync(join(asset as string, 'index.mjs'), 'utf8');
      const toolSources = readFileSync(join(asset as string, TOOL_SOURCES_BUNDLE.file), 'utf8');
      // The MCP SDK's client is in the tool sources' file only, which the bundle names as a module path.
      expect(toolSources).toContain('mcp-session-id');
      expect(bundle).not.toContain('mcp-session-id');
      expect(bundle).toContain('./tool-sources.mjs');
      // Loaded by Node as Lambda loads it (not through the test runner's module loader).
      const { stdout } = await execFileAsync(process.execPath, [
        '--input-type=module',
        '--eval',
        `const { handler } = await import(${JSON.stringify(pathToFileURL(join(asset as string, 'index.mjs')).href)});
         process.stdout.write(JSON.stringify(await handler(${JSON.stringify({ url: server.url, key: 'k7' })})));`,
      ]);
      expect(JSON.parse(stdout)).toEqual({
        names: ['tools__lookup'],
        effect: 'read-only',
        result: {
          ok: true,
          content: {
            content: [{ type: 'text', text: 'value of k7' }],
            structured: { key: 'k7', value: 'value of k7' },
          },
        },
      });
      expect(await server.calls()).toEqual([
        expect.objectContaining({ tool: 'lookup', arguments: { key: 'k7' } }),
      ]);
    } finally {
      await server.stop();
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);

  it('bundles one copy of Powertools commons, and the copies it merges are identical', () => {
    const logger = sameCopyAliases('@aws-lambda-powertools/commons', '@aws-lambda-powertools/logger');
    const metrics = sameCopyAliases('@aws-lambda-powertools/commons', '@aws-lambda-powertools/metrics');
    expect(Object.keys(metrics)).toEqual(Object.keys(logger));
    for (const [specifier, file] of Object.entries(logger)) {
      expect(HOUSE_ESBUILD_OPTIONS.alias).toHaveProperty([specifier], file);
      expect(readFileSync(metrics[specifier] as string, 'utf8'), specifier).toBe(readFileSync(file, 'utf8'));
    }
  });
});

/**
 * The Bedrock provider bundled with the stand-ins, against a local server speaking Converse over
 * h2c: Converse (what the executor calls) works, errors still map, and an event-stream operation
 * reaches a stand-in, which says so.
 */
describe('the Bedrock client bundled with the event-stream stand-ins (decision 0029)', () => {
  interface Probe {
    complete(endpoint: string, request: ModelRequest): Promise<ModelTurn>;
    converseStream(endpoint: string): Promise<unknown>;
  }
  let probe: Probe;
  let server: FakeModelServer;
  let directory: string;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'house-bundles-probe-'));
    const outfile = join(directory, 'probe.mjs');
    const { metafile } = await build({
      ...HOUSE_ESBUILD_OPTIONS,
      stdin: {
        resolveDir: REPO_ROOT,
        loader: 'ts',
        contents: `
          import { BedrockRuntimeClient, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
          import { BedrockProvider } from './shared/adapters/providers/bedrock-provider.ts';
          const client = (endpoint) => new BedrockRuntimeClient({
            endpoint, region: 'us-east-1', maxAttempts: 1,
            credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
          });
          export const complete = (endpoint, request) =>
            new BedrockProvider({ providerId: 'probe', model: 'probe-model', client: client(endpoint) }).complete(request);
          export const converseStream = (endpoint) => client(endpoint).send(new ConverseStreamCommand({
            modelId: 'probe-model', messages: [{ role: 'user', content: [{ text: 'hi' }] }],
          }));`,
      },
      outfile,
      sourcemap: false,
      metafile: true,
      logLevel: 'error',
    });
    // The probe's own ConverseStream is what the per-function check above refuses (and reads).
    expect(
      await eventStreamOperations(Object.values(metafile.outputs)[0] as Metafile['outputs'][string]),
    ).toEqual(['ConverseStream']);
    const stubs = Object.values(UNREACHED_MODULE_STUBS).map((path) => path.slice(REPO_ROOT.length));
    expect(
      Object.keys(metafile.inputs).filter((input) => stubs.some((stub) => input.endsWith(stub))),
    ).toHaveLength(stubs.length);
    probe = (await import(pathToFileURL(outfile).href)) as Probe;
    server = await startFakeModelServer(() => bedrockText('unused'), 'h2c');
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  const request: ModelRequest = { system: 'be brief', transcript: [{ role: 'user', text: 'hi' }], tools: [] };

  it('runs a Converse turn', async () => {
    server.script = () => bedrockText('hello from the bundle');
    const turn = await probe.complete(server.url, request);
    expect(turn).toMatchObject({ text: 'hello from the bundle', stopReason: 'end' });
    expect(server.requests.at(-1)?.path).toBe('/model/probe-model/converse');
  });

  it.each([
    [429, 'ThrottlingException'],
    [400, 'ValidationException'],
    [503, 'ServiceUnavailableException'],
  ])('maps a Converse error (%i %s) as the unbundled provider does', async (status, type) => {
    server.script = () => bedrockError(status, type, 'from the fake');
    const unbundled = new BedrockProvider({
      providerId: 'probe',
      model: 'probe-model',
      client: new BedrockRuntimeClient({
        endpoint: server.url,
        region: 'us-east-1',
        maxAttempts: 1,
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    });
    const failure = (promise: Promise<unknown>) =>
      promise.then(
        () => ({ resolved: true }),
        (error: Error & { status?: number; cause?: { name?: string } }) => ({
          name: error.name,
          message: error.message,
          status: error.status,
          cause: error.cause?.name,
        }),
      );
    const expected = await failure(unbundled.complete(request));
    expect(expected).toMatchObject({ cause: type });
    expect(await failure(probe.complete(server.url, request))).toEqual(expected);
  });

  it('fails an event-stream operation at the stand-in, naming the decision', async () => {
    server.script = () => bedrockText('a stream would be binary');
    await expect(probe.converseStream(server.url)).rejects.toThrow(EVENT_STREAMS_NOT_BUNDLED);
  });
});

/**
 * The executor's Bedrock client as it deploys: bundled with the executor's aliases (the lazy
 * event-stream module), the codec written beside it as CDK's afterBundling hook writes it, loaded
 * by Node outside the test runner, against a local server speaking ConverseStream over h2c.
 */
describe("the executor's Bedrock client, its event-stream codec loaded on the first streamed turn", () => {
  let server: FakeModelServer;
  let directory: string;
  let probeFile: string;
  const executor = join(REPO_ROOT, 'functions', 'executor', 'handler.ts');
  const request: ModelRequest = { system: 'be brief', transcript: [{ role: 'user', text: 'hi' }], tools: [] };

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'house-bundles-stream-'));
    probeFile = join(directory, 'index.mjs');
    await build({
      ...houseEsbuildOptionsFor(executor),
      stdin: {
        resolveDir: REPO_ROOT,
        loader: 'ts',
        contents: `
          import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
          import { BedrockProvider } from './shared/adapters/providers/bedrock-provider.ts';
          const provider = (endpoint) => new BedrockProvider({
            providerId: 'probe', model: 'probe-model',
            client: new BedrockRuntimeClient({
              endpoint, region: 'us-east-1', maxAttempts: 1,
              credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
            }),
          });
          const outcome = (promise) => promise.then(
            (value) => ({ value }),
            (error) => ({ error: { name: error.name, message: error.message, code: error.code, status: error.status } }),
          );
          export const complete = (endpoint, request) => outcome(provider(endpoint).complete(request));
          export const stream = (endpoint, request) => outcome((async () => {
            const events = [];
            for await (const event of provider(endpoint).stream(request)) events.push(event);
            return events;
          })());`,
      },
      outfile: probeFile,
      sourcemap: false,
      logLevel: 'error',
    });
    server = await startFakeModelServer(() => bedrockText('unused'), 'h2c');
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  /** Calls the bundled provider in a Node process of its own, as Lambda loads the bundle. */
  const call = async (method: 'complete' | 'stream') => {
    const { stdout } = await execFileAsync(process.execPath, [
      '--input-type=module',
      '--eval',
      `const probe = await import(${JSON.stringify(pathToFileURL(probeFile).href)});
       process.stdout.write(JSON.stringify(await probe.${method}(${JSON.stringify(server.url)}, ${JSON.stringify(request)})));`,
    ]);
    return JSON.parse(stdout) as {
      value?: unknown;
      error?: { name: string; code?: string; status?: number };
    };
  };

  /** The same call through the unbundled provider, for comparison. */
  const unbundled = () =>
    new BedrockProvider({
      providerId: 'probe',
      model: 'probe-model',
      client: new BedrockRuntimeClient({
        endpoint: server.url,
        region: 'us-east-1',
        maxAttempts: 1,
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    });

  it('runs a Converse turn without the codec file, and a streamed turn fails without it (it is loaded, not bundled)', async () => {
    rmSync(join(directory, EVENT_STREAMS_BUNDLE.file), { force: true });
    server.script = () => bedrockText('plain');
    expect((await call('complete')).value).toMatchObject({ text: 'plain', stopReason: 'end' });
    server.script = () => bedrockStream(bedrockStreamTextEvents(['Forty', '-two.']));
    // The provider classifies the failed import like any failed response: the run falls back.
    expect((await call('stream')).error).toMatchObject({ name: 'ProviderFailedError', status: 200 });
  }, 60_000);

  it('streams a turn with the codec written beside the bundle, as the unbundled client does', async () => {
    execSync(sideBundleCommand(EVENT_STREAMS_BUNDLE, directory));
    server.script = () => bedrockStream(bedrockStreamTextEvents(['Forty', '-two.']));
    const expected: unknown[] = [];
    for await (const event of unbundled().stream(request)) expected.push(event);
    expect(expected.length).toBeGreaterThan(2);
    expect((await call('stream')).value).toEqual(JSON.parse(JSON.stringify(expected)));
  }, 60_000);

  it("maps an exception event mid-stream as the unbundled client does (the serde reads the bundle's error registry)", async () => {
    execSync(sideBundleCommand(EVENT_STREAMS_BUNDLE, directory));
    server.script = () =>
      bedrockStream([
        bedrockEvent('messageStart', { role: 'assistant' }),
        bedrockExceptionEvent('throttlingException', 'slow down'),
      ]);
    const expected = await (async () => {
      try {
        for await (const _ of unbundled().stream(request));
        return undefined;
      } catch (error) {
        return {
          name: (error as Error).name,
          message: (error as Error).message,
          status: (error as { status?: number }).status,
        };
      }
    })();
    expect(expected?.name).toBeDefined();
    expect((await call('stream')).error).toEqual(expected);
  }, 60_000);
});
