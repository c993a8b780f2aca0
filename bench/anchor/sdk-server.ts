import { fork, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from '../../infra/house-function.ts';
import { createEchoExecutor, echoAgentCard } from '../../test/support/sdk-echo-agent.ts';

/**
 * The anchor (issues 8 and 16): `@a2a-js/sdk` 1.3.0's own server — `DefaultRequestHandler` behind
 * its Express JSON-RPC handler — with its durable `DatabaseTaskStore` on SQLite (better-sqlite3 via
 * Kysely), running the same echo agent the scripted provider plays (test/support/sdk-echo-agent.ts,
 * shared with the delegation tests' third-party agent): the task is submitted, worked on, given
 * one text artifact equal to the user's text, and completed with a status message — each event
 * saved to the store, as ours commits each revision.
 *
 * Its packages are not the project's: they live in their own package, `bench/anchor/package.json`
 * with its own lockfile, which `npm run bench` installs on demand (`installAnchor`, `npm ci
 * --prefix bench/anchor`), so the root install compiles nothing (better-sqlite3 builds a native
 * module). The anchor package holds the SDK too, at the root's version: the SDK's Express and
 * database adapters import their peers from where the SDK itself is installed. Everything is
 * imported by bare name from this file, so it resolves in `bench/anchor/node_modules`; the names
 * are held in variables, so TypeScript does not resolve them and typecheck needs no install.
 */

export const ANCHOR_DIR = join(REPO_ROOT, 'bench/anchor');
const anchorModules = join(ANCHOR_DIR, 'node_modules');
/** Written after a successful install: the lockfile's hash, so a changed lockfile installs again. */
const installStamp = join(anchorModules, '.a2a-anchor-installed');
export const anchorInstallLine = 'npm ci --prefix bench/anchor';

const lockHash = (): string =>
  createHash('sha256')
    .update(readFileSync(join(ANCHOR_DIR, 'package-lock.json')))
    .digest('hex');

const pinnedVersion = (file: string, name: string): string | undefined =>
  (JSON.parse(readFileSync(file, 'utf8')) as { dependencies?: Record<string, string> }).dependencies?.[name];

/** The SDK version of the anchor package and of the project (they must be the same). */
export const sdkVersions = (): { anchor?: string; project?: string } => ({
  anchor: pinnedVersion(join(ANCHOR_DIR, 'package.json'), '@a2a-js/sdk'),
  project: pinnedVersion(join(REPO_ROOT, 'package.json'), '@a2a-js/sdk'),
});

export type AnchorInstall =
  | { readonly ok: true; readonly installed: boolean; readonly seconds: number }
  | { readonly ok: false; readonly reason: string };

/**
 * Installs the anchor package from its lockfile unless the same lockfile is installed already
 * (one `npm ci`, about a minute with the native build; nothing on later runs).
 */
export const installAnchor = async (log: (line: string) => void): Promise<AnchorInstall> => {
  const { anchor, project } = sdkVersions();
  if (anchor !== project) {
    return {
      ok: false,
      reason: `anchor skipped: bench/anchor pins @a2a-js/sdk ${anchor}, the project ${project}`,
    };
  }
  const hash = lockHash();
  if (existsSync(installStamp) && readFileSync(installStamp, 'utf8').trim() === hash) {
    return { ok: true, installed: false, seconds: 0 };
  }
  log(`anchor: installing its package (${anchorInstallLine}; better-sqlite3 builds a native module)`);
  const began = performance.now();
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = await new Promise<{ code: number | null; output: string }>((done) => {
    const child = spawn(npm, ['ci', '--prefix', ANCHOR_DIR, '--no-audit', '--no-fund'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.on('error', (error) => done({ code: -1, output: error.message }));
    child.on('close', (code) => done({ code, output }));
  });
  const seconds = Math.round((performance.now() - began) / 100) / 10;
  if (result.code !== 0) {
    return {
      ok: false,
      reason: `anchor skipped: \`${anchorInstallLine}\` failed (exit ${result.code}): ${result.output.trim().slice(-400)}`,
    };
  }
  writeFileSync(installStamp, `${hash}\n`);
  log(`anchor: installed in ${seconds} s`);
  return { ok: true, installed: true, seconds };
};

export interface AnchorServer {
  readonly url: string;
  /** The process serving it (absent for the server in the anchor's own process). */
  readonly pid?: number;
  stop(): Promise<void>;
}

export type AnchorStart =
  | { readonly ok: true; readonly server: AnchorServer }
  | { readonly ok: false; readonly reason: string };

// biome-ignore lint/suspicious/noExplicitAny: the anchor's packages are loaded by name (untyped here), and the SDK's ts-proto shapes are built by hand.
type Loose = any;

// A specifier in a variable: TypeScript does not resolve it, so typecheck needs no anchor install.
// Resolved from this file's directory, i.e. in bench/anchor/node_modules.
const load = (specifier: string): Promise<Loose> => import(specifier);

/**
 * Starts the SDK server on a free port in a process of its own; `installAnchor` must have
 * succeeded. The benchmark's own process hosts this server's local stack, whose stream pollers,
 * queue pollers and reaper keep its event loop busy even between this server's rounds; an SDK
 * server in that process would share that loop and measure slower than a client outside sees it
 * (see bench/README.md, "The anchor runs in its own process").
 */
export const startAnchor = (): Promise<AnchorStart> =>
  new Promise((resolve) => {
    const child = fork(fileURLToPath(import.meta.url), [], {
      execArgv: ['--import', 'tsx'],
      stdio: 'inherit',
    });
    let answered = false;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.once('message', (message: AnchorStart) => {
      answered = true;
      if (!message.ok) {
        resolve(message);
        return;
      }
      resolve({
        ok: true,
        server: {
          url: message.server.url,
          ...(child.pid !== undefined && { pid: child.pid }),
          stop: async () => {
            if (child.connected) child.send('stop');
            await exited;
          },
        },
      });
    });
    child.once('error', (error) => {
      if (!answered) resolve({ ok: false, reason: `anchor skipped: ${error.message}` });
    });
    child.once('exit', (code) => {
      if (!answered) resolve({ ok: false, reason: `anchor skipped: its process exited with ${code}` });
    });
  });

/** The SDK server in this process: what the anchor's own process runs. */
const serveAnchor = async (): Promise<AnchorStart> => {
  if (!existsSync(installStamp)) {
    return { ok: false, reason: `anchor skipped: not installed (${anchorInstallLine})` };
  }
  const directory = mkdtempSync(join(tmpdir(), 'a2a-anchor-'));
  const file = join(directory, 'a2a.db');
  // The store's tables come from the SDK's own migrations (its a2a-db CLI), as an operator would.
  const migrate = spawnSync(
    process.execPath,
    [join(anchorModules, '@a2a-js/sdk/dist/cli/a2a_db.js'), 'upgrade', '--url', `sqlite:${file}`],
    { encoding: 'utf8' },
  );
  if (migrate.status !== 0) {
    rmSync(directory, { recursive: true, force: true });
    return {
      ok: false,
      reason: `anchor skipped: a2a-db upgrade failed: ${(migrate.stderr || migrate.stdout).slice(0, 300)}`,
    };
  }

  const { default: Database } = await load('better-sqlite3');
  const { Kysely, SqliteDialect } = await load('kysely');
  const { default: express } = await load('express');
  const { DatabaseTaskStore } = await load('@a2a-js/sdk/server/database');
  const { jsonRpcHandler, UserBuilder } = await load('@a2a-js/sdk/server/express');
  const { DefaultRequestHandler, AgentEvent } = await load('@a2a-js/sdk/server');
  const { Role, TaskState } = await load('@a2a-js/sdk');

  const sqlite = new Database(file);
  // Durable: write-ahead log, synced at each commit like DynamoDB acknowledges durable writes.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  const db = new Kysely({ dialect: new SqliteDialect({ database: sqlite }) });
  const store = new DatabaseTaskStore(db);

  // The same echo agent as the delegation tests' third-party agent, on the anchor's SDK install.
  const executor = createEchoExecutor({ AgentEvent, Role, TaskState });

  const app = express();
  const agentCard = echoAgentCard(
    '',
    'Echo agent (anchor)',
    'The same echo agent on @a2a-js/sdk with DatabaseTaskStore on SQLite.',
  );
  const requestHandler = new DefaultRequestHandler(agentCard, store, executor);
  app.use('/', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  const server: Server = await new Promise((resolveListen) => {
    const listening = app.listen(0, '127.0.0.1', () => resolveListen(listening));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  // The card names its own URL, known only once the port is; the handler holds this object.
  (agentCard.supportedInterfaces[0] as { url: string }).url = url;
  return {
    ok: true,
    server: {
      url,
      stop: async () => {
        await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
        server.closeAllConnections?.();
        await db.destroy();
        rmSync(directory, { recursive: true, force: true });
      },
    },
  };
};

// The anchor's process: serves until its parent says stop (or goes away), then closes the store.
if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) {
  const send = process.send.bind(process);
  serveAnchor().then(
    (started) => {
      if (!started.ok) {
        send(started, undefined, {}, () => process.exit(0));
        return;
      }
      const { url, stop } = started.server;
      const quit = (): void => {
        stop().finally(() => process.exit(0));
      };
      process.once('message', quit);
      process.once('disconnect', quit);
      send({ ok: true, server: { url } });
    },
    (error: unknown) =>
      send({ ok: false, reason: `anchor skipped: ${(error as Error).message}` }, undefined, {}, () =>
        process.exit(1),
      ),
  );
}
