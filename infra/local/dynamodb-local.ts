import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

/**
 * Amazon's DynamoDB Local, run from the jar that the npm package `amplify-dynamodb-simulator`
 * carries in its tarball (no npm package downloads the jar at run time on these machines, see
 * docs/decisions/0002-local-stack.md). Only `package/emulator/` is extracted; the package itself is never installed.
 */

const execFileAsync = promisify(execFile);

export const dynamoDbLocalPackage = 'amplify-dynamodb-simulator@2.9.30';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const defaultDynamoDbLocalCacheDir = join(repoRoot, '.cache', 'dynamodb-local');

const jarName = 'DynamoDBLocal.jar';

export const hasDynamoDbLocalJar = (cacheDir: string = defaultDynamoDbLocalCacheDir): boolean =>
  existsSync(join(cacheDir, jarName));

/**
 * Makes sure the jar folder is in `cacheDir` and returns that folder. Idempotent, and safe when
 * several processes call it at once: each extracts into its own temporary folder next to the
 * cache and renames it into place; a rename that loses the race is discarded.
 */
export const ensureDynamoDbLocalJar = async (
  cacheDir: string = defaultDynamoDbLocalCacheDir,
): Promise<string> => {
  if (hasDynamoDbLocalJar(cacheDir)) return cacheDir;
  const parent = dirname(cacheDir);
  await mkdir(parent, { recursive: true });
  // Same parent as the cache folder, so the final rename never crosses a file system.
  const work = await mkdtemp(join(parent, '.dynamodb-local-'));
  try {
    const { stdout } = await execFileAsync(
      'npm',
      ['pack', dynamoDbLocalPackage, '--pack-destination', work, '--json', '--silent'],
      { cwd: work, maxBuffer: 64 * 1024 * 1024 },
    );
    const tarball = join(work, parsePackedFileName(stdout));
    const extracted = join(work, 'extracted');
    await mkdir(extracted);
    await execFileAsync('tar', ['-xzf', tarball, '-C', extracted, 'package/emulator']);
    const emulatorDir = join(extracted, 'package', 'emulator');
    if (!existsSync(join(emulatorDir, jarName))) {
      throw new Error(`${dynamoDbLocalPackage} has no emulator/${jarName}`);
    }
    try {
      await rename(emulatorDir, cacheDir);
    } catch (error) {
      // Another process got there first; its copy is complete because rename is atomic.
      if (!hasDynamoDbLocalJar(cacheDir)) throw error;
    }
    return cacheDir;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
};

const parsePackedFileName = (stdout: string): string => {
  const packed: unknown = JSON.parse(stdout);
  const first = Array.isArray(packed) ? (packed[0] as { filename?: unknown } | undefined) : undefined;
  if (typeof first?.filename !== 'string') {
    throw new Error(`npm pack printed no file name: ${stdout.slice(0, 200)}`);
  }
  return first.filename;
};

/** A free TCP port on the loopback interface (released before it is returned). */
export const findFreePort = (host = '127.0.0.1'): Promise<number> =>
  new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolvePort(address.port);
        else reject(new Error('could not read the port of a listening socket'));
      });
    });
  });

// ---- child-process registry: no Java survives the Node process that started it ----

const liveGroups = new Set<ChildProcess>();
let hooksInstalled = false;
const forwardedSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

const killGroup = (child: ChildProcess, signal: NodeJS.Signals): void => {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
};

const onProcessExit = (): void => {
  for (const child of liveGroups) killGroup(child, 'SIGKILL');
};

const onSignal = (signal: NodeJS.Signals): void => {
  // If someone else listens (start.ts, vitest), they own the orderly shutdown and the 'exit'
  // hook is the backstop. Alone, we would swallow the signal: kill Java, then re-raise it so
  // the process still ends the way it would have without us.
  if (process.listenerCount(signal) > 1) return;
  onProcessExit();
  uninstallHooks();
  process.kill(process.pid, signal);
};

const installHooks = (): void => {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', onProcessExit);
  for (const signal of forwardedSignals) process.on(signal, onSignal);
};

const uninstallHooks = (): void => {
  if (!hooksInstalled) return;
  hooksInstalled = false;
  process.off('exit', onProcessExit);
  for (const signal of forwardedSignals) process.off(signal, onSignal);
};

const track = (child: ChildProcess): void => {
  liveGroups.add(child);
  installHooks();
  child.once('exit', () => {
    liveGroups.delete(child);
    if (liveGroups.size === 0) uninstallHooks();
  });
};

/**
 * Java runs under a small `sh` watchdog in its own process group: a reader kills Java as soon
 * as its stdin (a pipe from this process) reaches end of file — which also happens when this
 * process dies by SIGKILL and no hook can run — and `sh` exits when Java does. Its own group keeps a terminal's Ctrl-C
 * away from Java, so the harness can stop pollers before the database goes away.
 */
// `sh` gives background jobs /dev/null as stdin unless redirected, hence the copy on fd 3.
const watchdogScript =
  'exec 3<&0; java "$@" </dev/null 3<&- & j=$!; (read -r _ignored; kill $j 2>/dev/null) <&3 & exec 3<&-; wait $j';

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

export interface StartDynamoDbLocalOptions {
  /** Fixed port; a free one is picked when omitted. */
  readonly port?: number;
  readonly host?: string;
  readonly cacheDir?: string;
  /** How long to wait for the first answer. */
  readonly startTimeoutMs?: number;
}

export const startDynamoDbLocal = async (options: StartDynamoDbLocalOptions = {}): Promise<DynamoDbLocal> => {
  const dir = await ensureDynamoDbLocalJar(options.cacheDir);
  const host = options.host ?? '127.0.0.1';
  // A picked port can be taken between the probe and Java's bind; try again with another one.
  const attempts = options.port === undefined ? 3 : 1;
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    const port = options.port ?? (await findFreePort(host));
    try {
      return await launch(dir, host, port, options.startTimeoutMs ?? 30_000);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
};

const launch = async (dir: string, host: string, port: number, timeoutMs: number): Promise<DynamoDbLocal> => {
  // The JVM's tiered JIT, C2 included, compiling at a fifth of its usual thresholds (decision
  // 0087): C2's compiling is over within the first few hundred tasks of a load, after which a
  // request costs about a fifth less of DynamoDB Local's CPU than with C1 alone.
  const javaArgs = [
    '-XX:+UseSerialGC',
    '-XX:CompileThresholdScaling=0.2',
    '-Xmx256m',
    `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
    '-jar',
    join(dir, jarName),
    '-inMemory',
    '-sharedDb',
    '-port',
    String(port),
    '-disableTelemetry',
  ];
  const child = spawn('sh', ['-c', watchdogScript, 'dynamodb-local', ...javaArgs], {
    cwd: dir,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  track(child);
  let output = '';
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // The watchdog's stdin must not keep this process alive by itself, nor throw on EPIPE.
  child.stdin?.on('error', () => {});

  const exited = new Promise<void>((resolveExit) => {
    if (child.exitCode !== null || child.signalCode !== null) resolveExit();
    else child.once('exit', () => resolveExit());
  });
  const endpoint = `http://${host}:${port}`;

  const stop = async (): Promise<void> => {
    child.stdin?.end();
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
    // The stdin reader may outlive `sh` when Java died on its own; it is in the same group.
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // The group is empty.
    }
    child.stdout?.destroy();
    child.stderr?.destroy();
  };

  try {
    await waitUntilAnswering(endpoint, exited, timeoutMs);
  } catch (error) {
    await stop();
    throw new Error(`DynamoDB Local did not start on ${endpoint}: ${(error as Error).message}\n${output}`, {
      cause: error,
    });
  }
  return { endpoint, port, stop };
};

const waitUntilAnswering = async (
  endpoint: string,
  exited: Promise<void>,
  timeoutMs: number,
): Promise<void> => {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (gone) throw new Error('the Java process exited');
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(1_000) });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      }
      await new Promise((wake) => setTimeout(wake, 50));
    }
  } finally {
    client.destroy();
  }
};

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);

if (isMain) {
  if (process.argv.includes('--fetch')) {
    const started = performance.now();
    const present = hasDynamoDbLocalJar();
    if (!present) console.log(`Fetching DynamoDB Local from ${dynamoDbLocalPackage} (npm pack) …`);
    const dir = await ensureDynamoDbLocalJar();
    const files = await readdir(dir);
    console.log(
      present
        ? `DynamoDB Local already in ${dir}`
        : `DynamoDB Local ready in ${dir} (${files.length} entries, ${Math.round(performance.now() - started)} ms)`,
    );
  } else {
    console.log('usage: tsx infra/local/dynamodb-local.ts --fetch');
    process.exitCode = 1;
  }
}
