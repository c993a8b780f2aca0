import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { agentCall, settledTask, toolAnswerOf } from '../support/agent-calls.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { freePort } from '../support/mcp-server-process.ts';
import { type SdkA2aAgent, startSdkA2aAgent } from '../support/sdk-a2a-agent.ts';

/**
 * Delegation to a third-party A2A agent (docs/configuration.md `a2aAgents`): the echo agent served
 * by the official `@a2a-js/sdk` server (test/support/sdk-a2a-agent.ts, its JSON-RPC transport),
 * not a profile of this server. The profile `e` runs the scripted `call-tool` model, which calls
 * `a2a__sdk` once; counted on the agent's own log of the messages it was given.
 */

let stack: LocalStack;
let agent: SdkA2aAgent;

beforeAll(async () => {
  agent = await startSdkA2aAgent();
  const port = await freePort();
  stack = await startLocalStack({
    port,
    config: parseConfig({
      privacy: { level: 'metadata' },
      providers: {
        delegate: {
          type: 'scripted',
          behavior: 'call-tool',
          tool: 'a2a__sdk',
          arguments: { message: 'hello, SDK agent' },
        },
      },
      profiles: {
        e: {
          name: 'E',
          description: 'Delegates to an agent on the A2A SDK',
          providers: ['delegate'],
          privacyLevel: 'full',
          agents: { sdk: {} },
        },
      },
      a2aAgents: { sdk: { cardUrl: agent.cardUrl, timeoutMs: 10_000 } },
    }),
    endpoints: providedEndpoints(),
    prefix: `e2e-delegation-sdk-${randomUUID().slice(0, 6)}`,
    log: () => {},
  });
});
afterAll(async () => {
  await stack?.stop();
  await agent?.stop();
});

const call = agentCall(() => stack.baseUrl);

describe('delegation to an agent on the official A2A SDK server', () => {
  it('e sends it one message and completes with its artifact as the tool result; the agent was given that message once', async () => {
    const accepted = (
      await call('e', 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'ask the SDK agent' }] },
        configuration: { returnImmediately: true },
      })
    )?.task as { id: string };
    const task = await settledTask(call, 'e', accepted.id);
    expect(task?.status.state).toBe('TASK_STATE_COMPLETED');
    const answer = toolAnswerOf(task);
    expect(answer.state).toBe('completed');
    expect(answer.artifacts).toEqual([{ name: 'echo', parts: [{ text: 'hello, SDK agent' }] }]);
    expect(answer.message).toEqual([{ text: 'Echoed your message.' }]);
    expect(agent.received).toEqual([
      {
        taskId: answer.taskId,
        messageId: expect.stringMatching(/^dlg-[0-9a-f]{32}$/),
        text: 'hello, SDK agent',
      },
    ]);
  });
});
