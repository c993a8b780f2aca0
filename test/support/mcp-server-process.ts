import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** A loopback port free right now (server-everything takes its port from PORT, and 0 is not one). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });

export interface McpServerProcess {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp` (the test server) or `/mcp` of server-everything. */
  readonly url: string;
  readonly origin: string;
  /** The server's own log of every `tools/call` it received (test server only). */
  calls(): Promise<{ tool: string; arguments: unknown }[]>;
  faults(faults: { hangMs?: number; exitOnCall?: boolean }): Promise<void>;
  readonly exited: Promise<number | null>;
  stop(): Promise<void>;
}

const waitForPort = (child: ChildProcess, pattern: RegExp): Promise<number> =>
  new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const match = pattern.exec(seen);
      if (match) {
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        resolve(Number(match[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`MCP server exited (${code}) before listening: ${seen.slice(-500)}`)),
    );
  });

const wrap = (child: ChildProcess, origin: string, path: string): McpServerProcess => {
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    url: `${origin}${path}`,
    origin,
    calls: async () =>
      (await (await fetch(`${origin}/calls`)).json()) as { tool: string; arguments: unknown }[],
    faults: async (faults) => {
      await fetch(`${origin}/faults`, { method: 'POST', body: JSON.stringify(faults) });
    },
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
};

/** The test server of test/support/mcp-test-server.ts in its own process, on a free loopback port. */
export const startMcpTestServer = async (
  options: { apiKey?: string; oauth?: { clientId: string; clientSecret: string }; port?: number } = {},
): Promise<McpServerProcess> => {
  const { port, ...serverOptions } = options;
  // One process: node with tsx's loader, not the tsx command (which starts node once more).
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(new URL('./mcp-test-server.ts', import.meta.url)),
      JSON.stringify(serverOptions),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PORT: String(port ?? 0) },
    },
  );
  const found = await waitForPort(child, /listening (\d+)/);
  return wrap(child, `http://127.0.0.1:${found}`, '/mcp');
};

/**
 * `@modelcontextprotocol/server-everything` from the npm registry (a third-party server) over
 * Streamable HTTP, on a free port of our choosing.
 */
export const startServerEverything = async (): Promise<McpServerProcess> => {
  const port = await freePort();
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
  const child = spawn(process.execPath, [entry, 'streamableHttp'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: String(port) },
  });
  await waitForPort(child, new RegExp(`(${port})`));
  return wrap(child, `http://127.0.0.1:${port}`, '/mcp');
};
