import { describe, expect, it } from 'vitest';
import { ScriptedToolModel } from '../../shared/adapters/providers/scripted-tool-model.ts';
import { effectOf, outputOf } from '../../shared/adapters/tools/mcp-tool-source.ts';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { AgentStoppedError } from '../../shared/domain/errors.ts';
import type { ToolCall } from '../../shared/domain/model.ts';
import type { AgentRequest } from '../../shared/domain/ports.ts';
import type { Tool, ToolEffect, ToolOutput } from '../../shared/domain/tools.ts';

/** A tool with a given effect whose invocations answer from a list and are logged. */
const scriptedTool = (effect: ToolEffect, outputs: ToolOutput[], log: string[]): Tool => ({
  name: 'remote__act',
  description: 'Acts.',
  inputSchema: { type: 'object' },
  readOnly: effect === 'read-only',
  effect,
  destructive: false,
  invoke: async (args) => {
    log.push(`send ${JSON.stringify(args)}`);
    return outputs.shift() ?? { ok: true, content: 'done' };
  },
});

const request = (tool: Tool, log: string[], overrides: Partial<AgentRequest> = {}): AgentRequest => ({
  runId: 'run-1',
  taskId: 'task-1',
  contextId: 'ctx-1',
  instructions: '',
  history: [{ messageId: 'm1', role: 'ROLE_USER', parts: [{ text: '{"n":1}' }] }],
  tools: [{ tool, requiresApproval: false }],
  fence: async (call: ToolCall) => void log.push(`fence ${call.name}`),
  ...overrides,
});

describe('tool effects (I-EFFECT)', () => {
  it('fences a write before it is sent, and never a read-only or idempotent call', async () => {
    for (const [effect, fenced] of [
      ['write', true],
      ['idempotent', false],
      ['read-only', false],
    ] as const) {
      const log: string[] = [];
      const agent = new ToolLoopAgent(new ScriptedToolModel('s', 'remote__act'));
      const result = await agent.run(request(scriptedTool(effect, [], log), log));
      expect(log).toEqual(fenced ? ['fence remote__act', 'send {"n":1}'] : ['send {"n":1}']);
      expect(result.outcome).toMatchObject({
        kind: 'completed',
        artifacts: [{ parts: [{ text: 'Tool remote__act answered: "done"' }] }],
      });
    }
  });

  it('a fence that fails sends nothing', async () => {
    const log: string[] = [];
    const agent = new ToolLoopAgent(new ScriptedToolModel('s', 'remote__act'));
    const run = agent.run(
      request(scriptedTool('write', [], log), log, {
        fence: async () => {
          throw new Error('the run moved');
        },
      }),
    );
    await expect(run).rejects.toThrow('the run moved');
    expect(log).toEqual([]);
  });

  it('a write whose outcome is unknown ends the run TOOL_CALL_INTERRUPTED; an idempotent one goes back to the model', async () => {
    const log: string[] = [];
    const steps: unknown[] = [];
    const unknown: ToolOutput = { ok: false, error: 'deadline passed', outcomeUnknown: true };
    const write = new ToolLoopAgent(new ScriptedToolModel('s', 'remote__act')).run(
      request(scriptedTool('write', [unknown], log), log, { onStep: (step) => void steps.push(step) }),
    );
    await expect(write).rejects.toMatchObject({
      name: AgentStoppedError.name,
      reason: 'TOOL_CALL_INTERRUPTED',
    });
    expect(log).toEqual(['fence remote__act', 'send {"n":1}']);
    // The audit seam saw the call and its error before the run stopped.
    expect(steps).toContainEqual(
      expect.objectContaining({
        kind: 'tool-call',
        effect: 'write',
        result: expect.objectContaining({ isError: true }),
      }),
    );
    const again: string[] = [];
    const idempotent = await new ToolLoopAgent(new ScriptedToolModel('s', 'remote__act')).run(
      request(scriptedTool('idempotent', [unknown], again), again),
    );
    expect(idempotent.outcome).toMatchObject({
      artifacts: [{ parts: [{ text: expect.stringContaining('failed') }] }],
    });
  });

  it('reads effects from MCP annotations: unknown is a destructive, non-idempotent write', () => {
    expect(effectOf(undefined)).toEqual({ effect: 'write', destructive: true });
    expect(effectOf({ readOnlyHint: true })).toEqual({ effect: 'read-only', destructive: false });
    expect(effectOf({ idempotentHint: true, destructiveHint: false })).toEqual({
      effect: 'idempotent',
      destructive: false,
    });
    expect(effectOf({ readOnlyHint: false, destructiveHint: false })).toEqual({
      effect: 'write',
      destructive: false,
    });
  });

  it('maps an error result to the error text and refuses one above the cap', () => {
    expect(outputOf({ content: [{ type: 'text', text: 'no such ticket' }], isError: true }, 1000)).toEqual({
      ok: false,
      error: 'no such ticket',
    });
    expect(outputOf({ content: [{ type: 'text', text: 'y'.repeat(2000) }] }, 1024)).toMatchObject({
      ok: false,
    });
  });

  it('checks a profile names configured MCP servers and tool names models accept', () => {
    const base = {
      providers: { local: { type: 'scripted' } },
      mcpServers: { tickets: { url: 'https://mcp.example.com/mcp' } },
    };
    const profile = (mcp: unknown) => ({ p: { name: 'P', description: 'd', providers: ['local'], mcp } });
    expect(
      parseConfig({ ...base, profiles: profile({ tickets: { tools: { search: {} } } }) }).profiles.p?.mcp,
    ).toEqual({
      tickets: { tools: { search: {} } },
    });
    expect(() => parseConfig({ ...base, profiles: profile({ other: { tools: { search: {} } } }) })).toThrow(
      'profiles.p.mcp.other: unknown MCP server "other"',
    );
    expect(() => parseConfig({ ...base, profiles: profile({ tickets: { tools: { 'a b': {} } } }) })).toThrow(
      'is not a tool name models accept',
    );
    expect(() =>
      parseConfig({
        ...base,
        mcpServers: { tickets: { url: 'https://x.example/mcp', headers: { k: {} } } },
        profiles: {},
      }),
    ).toThrow('name an environment variable (env) or a secret (secret)');
  });
});
