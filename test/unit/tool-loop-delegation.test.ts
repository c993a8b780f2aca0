import { describe, expect, it } from 'vitest';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import type {
  ChatModel,
  DelegatedStep,
  ModelRequest,
  ModelStreamEvent,
  ModelTurn,
  ToolCall,
} from '../../shared/domain/model.ts';
import type { AgentRequest } from '../../shared/domain/ports.ts';
import type { EnabledTool, Tool, ToolContext } from '../../shared/domain/tools.ts';

/**
 * The tool loop's side of delegation (docs/configuration.md `a2aAgents`, I-EFFECT): a delegated
 * call records its remote task (with the turn and the results before it) before it waits, is
 * released when it returns, and a run continued at it reads the recorded task — no fence, no
 * second send — while the calls of the turn that had their results are not made again.
 */

class TurnsModel implements ChatModel {
  readonly providerId = 'fake';
  constructor(private readonly turns: ModelTurn[]) {}
  async complete(_request: ModelRequest): Promise<ModelTurn> {
    const next = this.turns.shift();
    if (next === undefined) throw new Error('no more turns');
    return next;
  }
  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    yield { kind: 'turn', turn: await this.complete(request) };
  }
}

const end = (text: string): ModelTurn => ({ text, toolCalls: [], stopReason: 'end' });
const calls: ToolCall[] = [
  { id: 'c1', name: 'lookup', arguments: {} },
  { id: 'c2', name: 'a2a__helper', arguments: { message: 'hi' } },
];
const turn: ModelTurn = { text: '', toolCalls: calls, stopReason: 'tool_use' };

const tools = () => {
  const seen: { lookup: number; delegate: ToolContext[] } = { lookup: 0, delegate: [] };
  const lookup: Tool = {
    name: 'lookup',
    description: 'x',
    inputSchema: { type: 'object' },
    readOnly: true,
    effect: 'read-only',
    destructive: false,
    invoke: async () => {
      seen.lookup += 1;
      return { ok: true, content: 'found' };
    },
  };
  const delegate: Tool = {
    name: 'a2a__helper',
    description: 'x',
    inputSchema: { type: 'object' },
    readOnly: false,
    effect: 'write',
    destructive: false,
    invoke: async (_args, context) => {
      seen.delegate.push(context);
      const remoteTaskId = context.remoteTask?.recorded ?? 'remote-1';
      if (context.remoteTask?.recorded === undefined) await context.remoteTask?.record(remoteTaskId);
      return { ok: true, content: { taskId: remoteTaskId, state: 'completed' } };
    },
  };
  const enabled: EnabledTool[] = [
    { tool: lookup, requiresApproval: false },
    { tool: delegate, requiresApproval: false },
  ];
  return { seen, enabled };
};

const requestWith = (
  enabled: EnabledTool[],
  ledger: { holds: DelegatedStep[]; releases: string[]; fences: string[] },
  extra: Partial<AgentRequest> = {},
): AgentRequest => ({
  runId: 'run-1',
  taskId: 't',
  contextId: 'c',
  instructions: '',
  history: [{ messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'go' }] }],
  tools: enabled,
  fence: async (call) => {
    ledger.fences.push(call.id);
  },
  delegations: {
    hold: async (step) => {
      ledger.holds.push(step);
      return undefined;
    },
    release: async (call) => {
      ledger.releases.push(call.id);
    },
  },
  ...extra,
});

describe('delegated calls in the tool loop', () => {
  it('records the remote task with the turn and the results before it, then releases it', async () => {
    const { seen, enabled } = tools();
    const ledger = { holds: [] as DelegatedStep[], releases: [] as string[], fences: [] as string[] };
    await new ToolLoopAgent(new TurnsModel([turn, end('done')])).run(requestWith(enabled, ledger));
    expect(ledger.fences).toEqual(['c2']);
    expect(ledger.holds).toHaveLength(1);
    const [hold] = ledger.holds;
    expect(hold?.call.id).toBe('c2');
    expect(hold?.remoteTaskId).toBe('remote-1');
    expect(hold?.turn.toolCalls.map((call) => call.id)).toEqual(['c1', 'c2']);
    expect(hold?.done.map((result) => result.callId)).toEqual(['c1']);
    expect(hold?.rounds).toBe(0);
    expect(ledger.releases).toEqual(['c2']);
    expect(seen.delegate[0]?.callId).toBe('c2');
    expect(seen.delegate[0]?.round).toBe(0);
  });

  it('a run continued at the call reads the recorded task: no fence, no hold, the earlier call not made again', async () => {
    const { seen, enabled } = tools();
    const ledger = { holds: [] as DelegatedStep[], releases: [] as string[], fences: [] as string[] };
    const result = await new ToolLoopAgent(new TurnsModel([end('after')])).run(
      requestWith(enabled, ledger, {
        session: {
          steps: [],
          rounds: 0,
          decided: {
            turn: { text: '', toolCalls: calls },
            verdict: 'approved',
            done: [{ callId: 'c1', name: 'lookup', content: '"found"', isError: false }],
            remoteTask: { callId: 'c2', remoteTaskId: 'remote-7' },
          },
        },
      }),
    );
    expect(result.outcome.kind).toBe('completed');
    expect(seen.lookup).toBe(0);
    expect(seen.delegate.map((context) => context.remoteTask?.recorded)).toEqual(['remote-7']);
    expect(ledger.fences).toEqual([]);
    expect(ledger.holds).toEqual([]);
    expect(ledger.releases).toEqual(['c2']);
  });

  it('a hold that fails stops the attempt: the error is the run’s, not a result the model reads', async () => {
    const { enabled } = tools();
    const lost = new Error('run moved');
    const request = requestWith(enabled, { holds: [], releases: [], fences: [] });
    await expect(
      new ToolLoopAgent(new TurnsModel([turn, end('never')])).run({
        ...request,
        delegations: {
          hold: async () => {
            throw lost;
          },
          release: async () => {},
        },
      }),
    ).rejects.toBe(lost);
  });
});
