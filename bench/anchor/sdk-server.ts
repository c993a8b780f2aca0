import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../infra/house-function.ts';

/**
 * The anchor (issue 8): `@a2a-js/sdk` 1.3.0's own server — `DefaultRequestHandler` behind its
 * Express JSON-RPC handler — with its durable `DatabaseTaskStore` on SQLite (better-sqlite3 via
 * Kysely), running the same echo agent the scripted provider plays: the task is submitted,
 * worked on, given one text artifact equal to the user's text, and completed with a status
 * message — each event saved to the store, as ours commits each revision.
 *
 * The SDK's peer dependencies (better-sqlite3 12, kysely 0.28, express 5) are devDependencies
 * (better-sqlite3 needs its native build); they are loaded by name at run time, so a clone whose
 * install skipped them still runs the rest of the bench and reports the anchor as skipped.
 */

export const anchorPackages = ['better-sqlite3', 'kysely', 'express'] as const;
export const anchorInstallLine =
  'npm install --save-dev --save-exact better-sqlite3@12.11.1 kysely@0.28.19 express@5.3.0';

export interface AnchorServer {
  readonly url: string;
  stop(): Promise<void>;
}

export type AnchorStart =
  | { readonly ok: true; readonly server: AnchorServer }
  | { readonly ok: false; readonly reason: string };

// biome-ignore lint/suspicious/noExplicitAny: the peer packages are loaded by name (untyped here), and the SDK's ts-proto shapes are built by hand.
type Loose = any;

// A specifier in a variable: TypeScript does not resolve it, so absent packages do not break tsc.
const load = (specifier: string): Promise<Loose> => import(specifier);

const missingPackages = async (): Promise<string[]> => {
  const missing: string[] = [];
  for (const name of anchorPackages) {
    try {
      await load(name);
    } catch {
      missing.push(name);
    }
  }
  return missing;
};

export const startAnchor = async (): Promise<AnchorStart> => {
  const missing = await missingPackages();
  if (missing.length > 0) {
    return {
      ok: false,
      reason: `anchor skipped: install better-sqlite3@12 and express (missing: ${missing.join(', ')}) — ${anchorInstallLine}`,
    };
  }
  const directory = mkdtempSync(join(tmpdir(), 'a2a-anchor-'));
  const file = join(directory, 'a2a.db');
  // The store's tables come from the SDK's own migrations (its a2a-db CLI), as an operator would.
  const migrate = spawnSync(
    process.execPath,
    [join(REPO_ROOT, 'node_modules/@a2a-js/sdk/dist/cli/a2a_db.js'), 'upgrade', '--url', `sqlite:${file}`],
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
  const { DefaultRequestHandler, AgentEvent } = await import('@a2a-js/sdk/server');
  const { Role, TaskState } = await import('@a2a-js/sdk');

  const sqlite = new Database(file);
  // Durable: write-ahead log, synced at each commit like DynamoDB acknowledges durable writes.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  const db = new Kysely({ dialect: new SqliteDialect({ database: sqlite }) });
  const store = new DatabaseTaskStore(db);

  const textOf = (message: Loose): string =>
    (message?.parts ?? [])
      .map((part: Loose) => (part.content?.$case === 'text' ? part.content.value : ''))
      .join('');
  const agentMessage = (taskId: string, contextId: string, suffix: string, text: string): Loose => ({
    messageId: `${taskId}-${suffix}`,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  });
  const now = (): string => new Date().toISOString();

  const executor = {
    execute: async (context: Loose, bus: Loose): Promise<void> => {
      const { taskId, contextId } = context;
      const user = context.userMessage;
      if (!context.task) {
        bus.publish(
          AgentEvent.task({
            id: taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
            artifacts: [],
            history: [user],
            metadata: undefined,
          }),
        );
      }
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() },
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: `${taskId}-artifact-0`,
            name: 'echo',
            description: '',
            parts: [
              {
                content: { $case: 'text', value: textOf(user) },
                metadata: undefined,
                filename: '',
                mediaType: '',
              },
            ],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            message: agentMessage(taskId, contextId, 'status', 'Echoed your message.'),
            timestamp: now(),
          },
          metadata: undefined,
        }),
      );
      bus.finished();
    },
    cancelTask: async (): Promise<void> => {},
  };

  const app = express();
  let url = '';
  const card = () => ({
    name: 'Echo agent (anchor)',
    description: 'The same echo agent on @a2a-js/sdk with DatabaseTaskStore on SQLite.',
    version: '1.0.0',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'echo',
        name: 'Echo',
        description: 'Repeats the text.',
        tags: ['echo'],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  });
  const agentCard = card();
  const requestHandler = new DefaultRequestHandler(agentCard as Loose, store, executor as Loose);
  app.use('/', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  const server: Server = await new Promise((resolveListen) => {
    const listening = app.listen(0, '127.0.0.1', () => resolveListen(listening));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
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
