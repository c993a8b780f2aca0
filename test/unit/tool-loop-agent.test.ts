import { describe, expect, it } from 'vitest';
import { BedrockProvider } from '../../shared/adapters/providers/bedrock-provider.ts';
import { classifyStatus, classifyThrown } from '../../shared/adapters/providers/provider-errors.ts';
import { calculatorTool } from '../../shared/adapters/tools/calculator.ts';
import { createToolRegistry } from '../../shared/adapters/tools/static-tool-registry.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import { parseConfig } from '../../shared/config/config.ts';
import {
  ApprovalRequiredError,
  ProviderFailedError,
  ProviderUnavailableError,
} from '../../shared/domain/errors.ts';
import {
  type ChatModel,
  type ModelRequest,
  type ModelStreamEvent,
  type ModelTurn,
  newAgentSession,
  transcriptOf,
} from '../../shared/domain/model.ts';
import type { AgentRequest, AnswerProgress } from '../../shared/domain/ports.ts';
import type { Tool } from '../../shared/domain/tools.ts';
import { createCore } from '../support/core-fixture.ts';

/**
 * A model that plays a fixed list of turns (or errors) and keeps what it was sent. Streamed, a
 * turn's text comes word by word before the turn; an error comes after the first word.
 */
class FakeModel implements ChatModel {
  readonly seen: ModelRequest[] = [];
  readonly calls: Array<'complete' | 'stream'> = [];
  constructor(
    readonly providerId: string,
    private readonly turns: Array<ModelTurn | Error>,
  ) {}
  async complete(request: ModelRequest): Promise<ModelTurn> {
    this.calls.push('complete');
    this.seen.push({ ...request, transcript: [...request.transcript] });
    const next = this.turns.shift();
    if (next === undefined) throw new Error('no more turns');
    if (next instanceof Error) throw next;
    return next;
  }
  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    this.calls.push('stream');
    this.seen.push({ ...request, transcript: [...request.transcript] });
    const next = this.turns.shift();
    if (next === undefined) throw new Error('no more turns');
    if (next instanceof Error) {
      yield { kind: 'text', text: 'Partial ' };
      throw next;
    }
    for (const word of next.text.split(/(?<=\s)(?=\S)/)) yield { kind: 'text', text: word };
    yield { kind: 'turn', turn: next };
  }
}

const answer = (text: string): ModelTurn => ({
  text,
  toolCalls: [],
  stopReason: 'end',
  inputTokens: 3,
  outputTokens: 2,
});
const callTool = (name: string, args: Record<string, number | string>, id = `call-${name}`): ModelTurn => ({
  text: '',
  toolCalls: [{ id, name, arguments: args }],
  stopReason: 'tool_use',
  inputTokens: 5,
  outputTokens: 1,
});

/** Counts its invocations: proves a tool is never run twice. */
const countingTool = (base: Tool, readOnly = base.readOnly): Tool & { calls: number } => {
  const tool = {
    ...base,
    readOnly,
    calls: 0,
    invoke: async (...args: Parameters<Tool['invoke']>) => {
      tool.calls++;
      return base.invoke(...args);
    },
  };
  return tool;
};

const request = (overrides: Partial<AgentRequest> = {}): AgentRequest => ({
  runId: 'run-1',
  taskId: 'task-1',
  contextId: 'ctx-1',
  instructions: 'Be exact.',
  history: [{ messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'What is 6*7?' }] }],
  ...overrides,
});

describe('ToolLoopAgent', () => {
  it('completes with the model text as the artifact and sums the tokens', async () => {
    const model = new FakeModel('m', [answer('42')]);
    const result = await new ToolLoopAgent(model).run(request());
    expect(result).toEqual({
      outcome: {
        kind: 'completed',
        artifacts: [{ artifactId: 'run-1-artifact-0', name: 'answer', parts: [{ text: '42' }] }],
      },
      inputTokens: 3,
      outputTokens: 2,
    });
    expect(model.seen[0]).toMatchObject({
      system: 'Be exact.',
      transcript: [{ role: 'user', text: 'What is 6*7?' }],
      tools: [],
    });
  });

  it('runs model → tool → model, sending the result back and the arguments to the audit seam only', async () => {
    const tool = countingTool(calculatorTool);
    const model = new FakeModel('m', [
      callTool('calculator', { operation: 'multiply', a: 6, b: 7 }),
      answer('It is 42.'),
    ]);
    const steps: unknown[] = [];
    const result = await new ToolLoopAgent(model).run(
      request({ tools: [{ tool, requiresApproval: false }], onStep: (step) => void steps.push(step) }),
    );
    expect(result.outcome).toMatchObject({
      kind: 'completed',
      artifacts: [{ parts: [{ text: 'It is 42.' }] }],
    });
    expect(result).toMatchObject({ inputTokens: 8, outputTokens: 3 });
    expect(tool.calls).toBe(1);
    expect(model.seen[1]!.transcript.slice(-2)).toEqual([
      {
        role: 'assistant',
        text: '',
        toolCalls: [
          { id: 'call-calculator', name: 'calculator', arguments: { operation: 'multiply', a: 6, b: 7 } },
        ],
      },
      {
        role: 'tool',
        results: [
          { callId: 'call-calculator', name: 'calculator', content: '{"result":42}', isError: false },
        ],
      },
    ]);
    expect(model.seen[0]!.tools).toEqual([expect.objectContaining({ name: 'calculator', readOnly: true })]);
    expect(steps).toEqual([
      expect.objectContaining({ kind: 'model-turn', toolCalls: ['calculator'], stopReason: 'tool_use' }),
      expect.objectContaining({
        kind: 'tool-call',
        call: expect.objectContaining({ arguments: { operation: 'multiply', a: 6, b: 7 } }),
      }),
      expect.objectContaining({ kind: 'model-turn', toolCalls: [] }),
    ]);
  });

  it('tells the model about bad arguments and unknown tools instead of failing the run', async () => {
    const model = new FakeModel('m', [
      callTool('calculator', { operation: 'power', a: 2, b: 3 }),
      callTool('shell', { command: 'rm -rf /' }),
      answer('Sorry.'),
    ]);
    await new ToolLoopAgent(model).run(
      request({ tools: [{ tool: calculatorTool, requiresApproval: false }] }),
    );
    const results = (index: number) => model.seen[index]!.transcript.at(-1);
    expect(results(1)).toMatchObject({
      role: 'tool',
      results: [{ isError: true, content: expect.stringContaining('Invalid arguments: operation') }],
    });
    expect(results(2)).toMatchObject({
      role: 'tool',
      results: [{ isError: true, content: expect.stringContaining('shell is not available') }],
    });
  });

  it('stops at the round cap with TOOL_ROUNDS_EXCEEDED (the cap counts rounds across attempts)', async () => {
    const loop = () => callTool('calculator', { operation: 'add', a: 1, b: 1 });
    const tool = countingTool(calculatorTool);
    const model = new FakeModel('m', [loop(), loop(), loop(), loop()]);
    const run = new ToolLoopAgent(model).run(
      request({ tools: [{ tool, requiresApproval: false }], maxToolRounds: 2 }),
    );
    await expect(run).rejects.toMatchObject({ name: 'AgentStoppedError', reason: 'TOOL_ROUNDS_EXCEEDED' });
    expect(tool.calls).toBe(2);
    expect(model.seen).toHaveLength(3);
  });

  it('stops before any call of a turn with an approval-gated tool, handing back the pending turn', async () => {
    const tool = countingTool(calculatorTool);
    const free = countingTool({ ...calculatorTool, name: 'free_calc' });
    const model = new FakeModel('m', [
      {
        ...callTool('free_calc', { operation: 'add', a: 1, b: 1 }),
        toolCalls: [
          { id: 'c-free', name: 'free_calc', arguments: { operation: 'add', a: 1, b: 1 } },
          { id: 'c-gated', name: 'calculator', arguments: { operation: 'add', a: 2, b: 2 } },
        ],
      },
    ]);
    const session = newAgentSession();
    const run = new ToolLoopAgent(model).run(
      request({
        session,
        tools: [
          { tool, requiresApproval: true },
          { tool: free, requiresApproval: false },
        ],
      }),
    );
    await expect(run).rejects.toBeInstanceOf(ApprovalRequiredError);
    await expect(run).rejects.toMatchObject({
      pending: { toolCalls: [{ id: 'c-free' }, { id: 'c-gated' }] },
      tokens: { inputTokens: 5, outputTokens: 1 },
    });
    // Not half a turn: neither call ran, and the session holds no part of the pending turn.
    expect(tool.calls + free.calls).toBe(0);
    expect(session).toMatchObject({ steps: [], rounds: 0 });
  });

  it('resumes a decided turn without asking the model for it: approved calls run, denied gated ones read the denial', async () => {
    for (const verdict of ['approved', 'denied'] as const) {
      const tool = countingTool(calculatorTool);
      const free = countingTool({ ...calculatorTool, name: 'free_calc' });
      const model = new FakeModel('m', [answer('done')]);
      const turn = {
        text: '',
        toolCalls: [
          { id: 'c-free', name: 'free_calc', arguments: { operation: 'add', a: 1, b: 1 } },
          { id: 'c-gated', name: 'calculator', arguments: { operation: 'add', a: 2, b: 2 } },
        ],
      };
      const session = { ...newAgentSession(), decided: { turn, verdict, reason: 'no' } };
      const { outcome } = await new ToolLoopAgent(model).run(
        request({
          session,
          tools: [
            { tool, requiresApproval: true },
            { tool: free, requiresApproval: false },
          ],
        }),
      );
      expect(outcome).toMatchObject({ kind: 'completed' });
      expect(model.seen).toHaveLength(1);
      expect(free.calls).toBe(1);
      expect(tool.calls).toBe(verdict === 'approved' ? 1 : 0);
      const results = model.seen[0]!.transcript.at(-1);
      if (results?.role !== 'tool') throw new Error('the last transcript entry should hold the tool results');
      const gated = results.results[1]!;
      expect(gated.isError).toBe(verdict === 'denied');
      if (verdict === 'denied') expect(gated.content).toContain('denied');
      expect(session.decided).toBeUndefined();
      expect(session.rounds).toBe(1);
    }
  });

  it('hands the session to the fallback: finished tool calls are not made again', async () => {
    const tool = countingTool(calculatorTool, false);
    const session = newAgentSession();
    const tools = [{ tool, requiresApproval: false }];
    const primary = new FakeModel('p', [
      callTool('calculator', { operation: 'add', a: 40, b: 2 }),
      new ProviderUnavailableError('p', 503),
    ]);
    await expect(new ToolLoopAgent(primary).run(request({ tools, session }))).rejects.toBeInstanceOf(
      ProviderUnavailableError,
    );
    const fallback = new FakeModel('f', [answer('42')]);
    const result = await new ToolLoopAgent(fallback).run(request({ tools, session }));
    expect(result.outcome).toMatchObject({ kind: 'completed' });
    expect(tool.calls).toBe(1);
    expect(fallback.seen[0]!.transcript.map((entry) => entry.role)).toEqual(['user', 'assistant', 'tool']);
    expect(session.rounds).toBe(1);
  });

  it('stops on an aborted signal before calling the model', async () => {
    const model = new FakeModel('m', [answer('never')]);
    const controller = new AbortController();
    controller.abort(new Error('lease lost'));
    await expect(new ToolLoopAgent(model).run(request({ signal: controller.signal }))).rejects.toThrow(
      'lease lost',
    );
    expect(model.seen).toHaveLength(0);
  });

  it('turns a refused answer (guardrail, content filter) into a rejected task', async () => {
    const model = new FakeModel('m', [{ text: '', toolCalls: [], stopReason: 'refused' }]);
    const { outcome } = await new ToolLoopAgent(model).run(request());
    expect(outcome.kind).toBe('rejected');
  });

  describe('progressive output (onAnswer)', () => {
    const answerOf = (progress: AnswerProgress[]): string => {
      let text = '';
      for (const event of progress) text = event.kind === 'reset' ? '' : text + event.text;
      return text;
    };

    it('streams the turn only when asked, reporting the text in order; the result is the same', async () => {
      const whole = new FakeModel('m', [answer('Six times seven is 42.')]);
      const streamed = new FakeModel('m', [answer('Six times seven is 42.')]);
      const progress: AnswerProgress[] = [];
      const plain = await new ToolLoopAgent(whole).run(request());
      const live = await new ToolLoopAgent(streamed).run(request({ onAnswer: (p) => void progress.push(p) }));
      expect(whole.calls).toEqual(['complete']);
      expect(streamed.calls).toEqual(['stream']);
      expect(live).toEqual(plain);
      expect(progress).toEqual([
        { kind: 'text', text: 'Six ' },
        { kind: 'text', text: 'times ' },
        { kind: 'text', text: 'seven ' },
        { kind: 'text', text: 'is ' },
        { kind: 'text', text: '42.' },
      ]);
    });

    it('resets after a turn whose text was a preamble to tool calls: the answer is the last turn', async () => {
      const model = new FakeModel('m', [
        { ...callTool('calculator', { operation: 'multiply', a: 6, b: 7 }), text: 'Let me compute.' },
        answer('It is 42.'),
      ]);
      const progress: AnswerProgress[] = [];
      const result = await new ToolLoopAgent(model).run(
        request({
          tools: [{ tool: calculatorTool, requiresApproval: false }],
          onAnswer: (p) => void progress.push(p),
        }),
      );
      expect(progress.map((p) => (p.kind === 'text' ? p.text : '<reset>'))).toEqual([
        'Let ',
        'me ',
        'compute.',
        '<reset>',
        'It ',
        'is ',
        '42.',
      ]);
      expect(result.outcome).toMatchObject({
        kind: 'completed',
        artifacts: [{ parts: [{ text: 'It is 42.' }] }],
      });
      expect(answerOf(progress)).toBe('It is 42.');
    });

    it('a turn of tool calls without text reports nothing, not even a reset', async () => {
      const model = new FakeModel('m', [
        callTool('calculator', { operation: 'add', a: 1, b: 1 }),
        answer('2'),
      ]);
      const progress: AnswerProgress[] = [];
      await new ToolLoopAgent(model).run(
        request({
          tools: [{ tool: calculatorTool, requiresApproval: false }],
          onAnswer: (p) => void progress.push(p),
        }),
      );
      expect(progress).toEqual([{ kind: 'text', text: '2' }]);
    });

    it('a stream that breaks off after some text rejects with the provider error (fallback still applies)', async () => {
      const model = new FakeModel('m', [new ProviderUnavailableError('m', 503)]);
      const progress: AnswerProgress[] = [];
      const run = new ToolLoopAgent(model).run(request({ onAnswer: (p) => void progress.push(p) }));
      await expect(run).rejects.toBeInstanceOf(ProviderUnavailableError);
      expect(progress).toEqual([{ kind: 'text', text: 'Partial ' }]);
    });

    it('a stream that ends without its turn is an unavailable provider, never an empty answer', async () => {
      const cut: ChatModel = {
        providerId: 'cut',
        complete: () => Promise.reject(new Error('unused')),
        async *stream() {
          yield { kind: 'text', text: 'Half' };
        },
      };
      const run = new ToolLoopAgent(cut).run(request({ onAnswer: () => {} }));
      await expect(run).rejects.toBeInstanceOf(ProviderUnavailableError);
    });
  });
});

describe('transcriptOf', () => {
  it('maps roles, sends data parts as JSON text and describes files without their content', () => {
    expect(
      transcriptOf([
        {
          messageId: 'a',
          role: 'ROLE_USER',
          parts: [
            { text: 'see' },
            { data: { k: 1 } },
            { raw: 'AAAA', filename: 'x.bin', mediaType: 'application/octet-stream' },
          ],
        },
        {
          messageId: 'b',
          role: 'ROLE_AGENT',
          parts: [{ url: 'https://example.com/r.pdf', mediaType: 'application/pdf' }],
        },
        { messageId: 'c', role: 'ROLE_USER', parts: [] },
      ]),
    ).toEqual([
      {
        role: 'user',
        text: 'see\n{"k":1}\n[file x.bin (application/octet-stream) attached; its content is not shown]',
      },
      {
        role: 'assistant',
        text: '[file https://example.com/r.pdf (application/pdf) attached; its content is not shown]',
        toolCalls: [],
      },
    ]);
  });
});

describe('provider error classification', () => {
  it.each([408, 429, 500, 502, 503, 504])('HTTP %i is unavailable: fall back', (status) => {
    expect(classifyStatus('p', status)).toBeInstanceOf(ProviderUnavailableError);
  });

  it.each([400, 401, 403, 404, 413, 422])('HTTP %i is a plain failure: no fallback', (status) => {
    expect(classifyStatus('p', status)).toBeInstanceOf(ProviderFailedError);
  });

  it('a connection error or our own timeout is unavailable; the caller’s abort is not', () => {
    expect(classifyThrown('p', new TypeError('fetch failed'))).toBeInstanceOf(ProviderUnavailableError);
    const controller = new AbortController();
    const reason = new Error('canceled');
    controller.abort(reason);
    expect(classifyThrown('p', new Error('aborted'), controller.signal)).toBe(reason);
  });

  const bedrockFailing = (error: Error) =>
    new BedrockProvider({
      providerId: 'b',
      model: 'm',
      client: { send: async () => Promise.reject(error) } as unknown as ConstructorParameters<
        typeof BedrockProvider
      >[0]['client'],
    });
  const serviceError = (name: string, status: number) =>
    Object.assign(new Error(name), {
      name,
      $fault: status >= 500 ? 'server' : 'client',
      $metadata: { httpStatusCode: status },
    });
  const modelRequest: ModelRequest = { system: '', transcript: [{ role: 'user', text: 'hi' }], tools: [] };

  it.each([
    ['ThrottlingException', 429],
    ['ServiceUnavailableException', 503],
    ['ModelNotReadyException', 429],
    ['InternalServerException', 500],
    ['ModelTimeoutException', 408],
  ])('Bedrock %s is unavailable: fall back', async (name, status) => {
    await expect(bedrockFailing(serviceError(name, status)).complete(modelRequest)).rejects.toBeInstanceOf(
      ProviderUnavailableError,
    );
  });

  it.each([
    ['ValidationException', 400],
    ['AccessDeniedException', 403],
    ['ResourceNotFoundException', 404],
    ['ModelErrorException', 424],
  ])('Bedrock %s is a plain failure: no fallback', async (name, status) => {
    await expect(bedrockFailing(serviceError(name, status)).complete(modelRequest)).rejects.toBeInstanceOf(
      ProviderFailedError,
    );
  });

  it('a Bedrock connection error (no HTTP status) is unavailable', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    await expect(bedrockFailing(refused).complete(modelRequest)).rejects.toBeInstanceOf(
      ProviderUnavailableError,
    );
  });
});

describe('executeRun with tools', () => {
  const config = (tools: Array<{ name: string; requiresApproval?: boolean }>, maxToolRounds?: number) =>
    parseConfig({
      providers: { llm: { type: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'x' } },
      profiles: {
        default: {
          name: 'x',
          description: 'x',
          providers: ['llm'],
          tools,
          ...(maxToolRounds ? { maxToolRounds } : {}),
        },
      },
    });

  const runWith = async (configured: ReturnType<typeof config>, model: FakeModel) => {
    const core = createCore({ config: configured, providers: { llm: new ToolLoopAgent(model) } });
    const { taskId } = await core.send('compute');
    const result = await executeRun({ ...core.deps, tools: createToolRegistry() }, core.queued.shift()!);
    return { result, task: core.tasks.tasks.get(taskId)!, core, taskId };
  };

  it('suspends the run when the model asks for an approval-gated tool (decision 0013)', async () => {
    const { result, task, core, taskId } = await runWith(
      config([{ name: 'calculator', requiresApproval: true }]),
      new FakeModel('llm', [callTool('calculator', { operation: 'add', a: 1, b: 2 })]),
    );
    expect(result).toBe('awaiting-approval');
    expect(task.state).toBe('TASK_STATE_WORKING');
    const run = [...core.tasks.runs.values()].find((entry) => entry.taskId === taskId)!;
    expect(run.status).toBe('AWAITING_APPROVAL');
    expect([...core.tasks.approvals.values()]).toEqual([
      expect.objectContaining({ taskId, runId: run.runId, decision: 'PENDING', toolNames: ['calculator'] }),
    ]);
    const status = await core.codec.openStatusMessage(taskId, task.sealedStatusMessage);
    expect(status?.parts).toEqual([{ text: expect.stringContaining('waiting for an operator') }]);
  });

  it('fails with TOOL_ROUNDS_EXCEEDED at the profile’s cap, and with TOOL_UNAVAILABLE for a tool this build lacks', async () => {
    const loop = () => callTool('calculator', { operation: 'add', a: 1, b: 1 });
    const capped = await runWith(config([{ name: 'calculator' }], 1), new FakeModel('llm', [loop(), loop()]));
    expect(capped.task.metadata).toMatchObject({ reason: 'TOOL_ROUNDS_EXCEEDED' });
    const missing = await runWith(config([{ name: 'teleport' }]), new FakeModel('llm', [answer('never')]));
    expect(missing.task.metadata).toMatchObject({ reason: 'TOOL_UNAVAILABLE' });
  });
});
