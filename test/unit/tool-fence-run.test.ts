import { describe, expect, it } from 'vitest';
import { ScriptedToolModel } from '../../shared/adapters/providers/scripted-tool-model.ts';
import { StaticToolRegistry } from '../../shared/adapters/tools/static-tool-registry.ts';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import type { Tool } from '../../shared/domain/tools.ts';
import { createCore, testConfig } from '../support/core-fixture.ts';

/** A run whose write tool call is fenced on the run row before it is sent (I-EFFECT). */
describe('a fenced tool call in a run', () => {
  const config = testConfig({
    providers: { tooling: { type: 'scripted', behavior: 'call-tool', tool: 'append' } },
    profiles: {
      default: { name: 'T', description: 'd', providers: ['tooling'], tools: [{ name: 'append' }] },
    },
  });

  const writeTool = (onSend: () => void): Tool => ({
    name: 'append',
    description: 'Appends.',
    inputSchema: { type: 'object' },
    readOnly: false,
    effect: 'write',
    destructive: false,
    invoke: async () => {
      onSend();
      return { ok: true, content: 'appended' };
    },
  });

  it('records the fence on the run before the call is sent, and completes', async () => {
    const seen: unknown[] = [];
    const core = createCore({
      config,
      providers: { tooling: new ToolLoopAgent(new ScriptedToolModel('tooling', 'append')) },
    });
    const tool = writeTool(() => seen.push([...core.tasks.runs.values()][0]?.fence));
    const created = await core.send('{"text":"x"}');
    expect(created).toBeDefined();
    const result = await core.runNext({ ...core.deps, tools: new StaticToolRegistry([tool]) } as never);
    expect(result).toBe('completed');
    expect(seen).toEqual([{ callId: expect.any(String), tool: 'append', at: expect.any(String) }]);
  });

  it('a write whose outcome is unknown ends the run FAILED TOOL_CALL_INTERRUPTED, sent once', async () => {
    let sends = 0;
    const core = createCore({
      config,
      providers: { tooling: new ToolLoopAgent(new ScriptedToolModel('tooling', 'append')) },
    });
    const tool: Tool = {
      ...writeTool(() => sends++),
      invoke: async () => {
        sends++;
        return { ok: false, error: 'deadline passed', outcomeUnknown: true };
      },
    };
    await core.send('{}');
    const result = await core.runNext({ ...core.deps, tools: new StaticToolRegistry([tool]) } as never);
    expect(result).toBe('failed');
    expect(sends).toBe(1);
    const task = [...core.tasks.tasks.values()][0];
    expect(task?.state).toBe('TASK_STATE_FAILED');
    expect(task?.metadata).toMatchObject({ reason: 'TOOL_CALL_INTERRUPTED' });
  });
});
