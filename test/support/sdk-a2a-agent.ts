import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { createEchoExecutor, echoAgentCard, sdkTextOf } from './sdk-echo-agent.ts';

/**
 * A third-party A2A agent for the delegation tests: the echo agent (sdk-echo-agent.ts) served by
 * the official `@a2a-js/sdk` server — its `DefaultRequestHandler` over an in-memory task store,
 * behind its Express JSON-RPC handler, its card at `/.well-known/agent-card.json` — on a free
 * loopback port of the test's process. It logs every message its executor is given, so a test
 * asserts on the agent's side how often it was reached.
 */
export interface SdkA2aAgent {
  /** The card's full URL, as `a2aAgents.<id>.cardUrl` names it. */
  readonly cardUrl: string;
  /** Each execution: the task it ran for, and the user message's id and text. */
  readonly received: readonly {
    readonly taskId: string;
    readonly messageId: string;
    readonly text: string;
  }[];
  stop(): Promise<void>;
}

/** What this file needs of Express (a dependency of the MCP SDK here; it has no types installed). */
interface ExpressApp {
  use(path: string, handler: unknown): void;
  listen(port: number, host: string, listening: () => void): Server;
}

// A specifier in a variable: TypeScript does not look for Express's (absent) declarations.
const expressModule = 'express';

export const startSdkA2aAgent = async (): Promise<SdkA2aAgent> => {
  const { default: express } = (await import(expressModule)) as { default: () => ExpressApp };
  const received: { taskId: string; messageId: string; text: string }[] = [];
  const echo = createEchoExecutor({ AgentEvent, Role, TaskState });
  const card = echoAgentCard('', 'Echo agent (SDK)', 'The echo agent on @a2a-js/sdk’s own server.');
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), {
    execute: (context, bus) => {
      received.push({
        taskId: context.taskId,
        messageId: context.userMessage.messageId,
        text: sdkTextOf(context.userMessage),
      });
      return echo.execute(context, bus);
    },
    cancelTask: echo.cancelTask,
  });
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The card names its own URL, known only once the port is; the handler holds this object.
  const [jsonRpc] = card.supportedInterfaces;
  if (jsonRpc !== undefined) jsonRpc.url = `${base}/a2a/jsonrpc`;
  return {
    cardUrl: `${base}/.well-known/agent-card.json`,
    received,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
