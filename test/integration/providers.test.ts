import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createProviderFor } from '../../functions/executor/providers.ts';
import { BedrockProvider } from '../../shared/adapters/providers/bedrock-provider.ts';
import { OpenAiProvider } from '../../shared/adapters/providers/openai-provider.ts';
import { McpToolSource } from '../../shared/adapters/tools/mcp-tool-source.ts';
import { createToolRegistry } from '../../shared/adapters/tools/static-tool-registry.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import { parseConfig } from '../../shared/config/config.ts';
import type { RuntimeEnv } from '../../shared/config/runtime-env.ts';
import type { Message } from '../../shared/domain/a2a.ts';
import { ProviderUnavailableError } from '../../shared/domain/errors.ts';
import type { AgentStep } from '../../shared/domain/model.ts';
import type { AgentProvider } from '../../shared/domain/ports.ts';
import { createCore } from '../support/core-fixture.ts';
import {
  bedrockCalculatorScript,
  bedrockError,
  bedrockText,
  bedrockToolUse,
  type FakeModelServer,
  openAiCalculatorScript,
  openAiError,
  openAiText,
  openAiToolCall,
  startFakeModelServer,
} from '../support/fake-model-servers.ts';
import { type McpServerProcess, startMcpTestServer } from '../support/mcp-server-process.ts';

/**
 * The Bedrock Converse and OpenAI chat-completions adapters over real HTTP against local servers
 * that speak those wire formats: the real BedrockRuntimeClient (endpoint + dummy credentials)
 * and plain fetch. Runs go through the real executor use case (fallback, attempts, ceilings),
 * with in-memory repositories; the model calls of every run are counted at the servers.
 */

const bedrockModel = 'anthropic.claude-test-v1:0';

describe('model providers over real HTTP', () => {
  let openai: FakeModelServer;
  let bedrock: FakeModelServer;
  let slow: FakeModelServer;
  /** The MCP test server (its own process): the tools of the `*-mcp` profiles. */
  let mcp: McpServerProcess;
  let releaseSlow: () => void = () => {};
  /** Model calls per scenario, counted at the servers (reported in decision 0011). */
  const report: Array<{ scenario: string; openai: number; bedrock: number; slow: number }> = [];
  let mark = { openai: 0, bedrock: 0, slow: 0 };

  const bedrockClient = (url: string) =>
    new BedrockRuntimeClient({
      endpoint: url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });

  const config = () =>
    parseConfig({
      privacy: { level: 'metadata' },
      providers: {
        'primary-openai': { type: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'gpt-test' },
        'primary-bedrock': { type: 'bedrock', model: bedrockModel, region: 'us-east-1' },
        'slow-openai': { type: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'gpt-test' },
      },
      profiles: {
        'openai-first': {
          name: 'OpenAI first',
          description: 'x',
          instructions: 'You are a careful calculator.',
          providers: ['primary-openai', 'primary-bedrock'],
          tools: [{ name: 'calculator' }],
        },
        'bedrock-first': {
          name: 'Bedrock first',
          description: 'x',
          instructions: 'You are a careful calculator.',
          providers: ['primary-bedrock', 'primary-openai'],
          tools: [{ name: 'calculator' }],
        },
        'slow-first': {
          name: 'Slow first',
          description: 'x',
          providers: ['slow-openai', 'primary-bedrock'],
        },
        'openai-mcp': {
          name: 'OpenAI with MCP tools',
          description: 'x',
          providers: ['primary-openai'],
          mcp: { tools: { tools: { set_flag: {}, lookup: {} } } },
        },
        'bedrock-mcp': {
          name: 'Bedrock with MCP tools',
          description: 'x',
          providers: ['primary-bedrock'],
          mcp: { tools: { tools: { set_flag: {}, lookup: {} } } },
        },
      },
      mcpServers: { tools: { url: mcp?.url ?? 'http://127.0.0.1:1/mcp', timeoutMs: 5_000 } },
    });

  beforeAll(async () => {
    openai = await startFakeModelServer(() => openAiText('unused'));
    bedrock = await startFakeModelServer(() => bedrockText('unused'), 'h2c');
    const held = new Promise<void>((resolve) => {
      releaseSlow = resolve;
    });
    slow = await startFakeModelServer(() => ({ ...openAiText('too late'), hold: held }));
    mcp = await startMcpTestServer();
  });

  afterAll(async () => {
    releaseSlow();
    await Promise.all([openai?.stop(), bedrock?.stop(), slow?.stop(), mcp?.stop()]);
    console.info('model calls per run (counted at the fake servers)');
    console.table(report);
  });

  beforeEach(() => {
    mark = { openai: openai.requests.length, bedrock: bedrock.requests.length, slow: slow.requests.length };
  });

  const callsSinceMark = () => ({
    openai: openai.requests.length - mark.openai,
    bedrock: bedrock.requests.length - mark.bedrock,
    slow: slow.requests.length - mark.slow,
  });

  const record = (scenario: string) => {
    const calls = callsSinceMark();
    report.push({ scenario, ...calls });
    return calls;
  };

  const agents = (): Record<string, AgentProvider> => ({
    'primary-openai': new ToolLoopAgent(
      new OpenAiProvider({
        providerId: 'primary-openai',
        baseUrl: `${openai.url}/v1`,
        model: 'gpt-test',
        apiKey: 'sk-test-key',
      }),
    ),
    'primary-bedrock': new ToolLoopAgent(
      new BedrockProvider({
        providerId: 'primary-bedrock',
        model: bedrockModel,
        client: bedrockClient(bedrock.url),
      }),
    ),
    'slow-openai': new ToolLoopAgent(
      new OpenAiProvider({
        providerId: 'slow-openai',
        baseUrl: `${slow.url}/v1`,
        model: 'gpt-test',
        timeoutMs: 400,
      }),
    ),
  });

  /** Sends one message on a profile and runs it through the executor; returns the settled task. */
  const runOne = async (profileId: string, text: string) => {
    const core = createCore({ config: config(), providers: agents() });
    const steps: AgentStep[] = [];
    const { taskId } = await core.send(text, profileId);
    const message = core.queued.shift()!;
    const result = await executeRun(
      {
        ...core.deps,
        tools: createToolRegistry(),
        remoteTools: new McpToolSource({
          servers: config().mcpServers,
          policy: { allowHttp: true, allowLoopback: true },
          credentials: { localMode: true, env: {}, extensionEndpoint: '', sessionToken: '' },
        }),
        onAgentStep: (_run, step) => void steps.push(step),
      },
      message,
    );
    const task = core.tasks.tasks.get(taskId)!;
    const run = core.tasks.runs.get(message.runId)!;
    const artifacts = await core.codec.openArtifacts(taskId, task.sealedArtifacts);
    const history = await core.codec.openHistory(taskId, task.sealedHistory);
    const status = await core.codec.openStatusMessage(taskId, task.sealedStatusMessage);
    return { core, result, task, run, artifacts, history, status, steps };
  };

  const textOfArtifacts = (artifacts: ReadonlyArray<{ parts: Message['parts'] }>) =>
    artifacts.flatMap((artifact) => artifact.parts.map((part) => ('text' in part ? part.text : '')));

  it('OpenAI: a plain answer completes the task with the text, tokens and the instructions sent', async () => {
    openai.script = () => openAiText('Forty-two.');
    const { result, task, run, artifacts } = await runOne('openai-first', 'What is six times seven?');
    expect(result).toBe('completed');
    expect(task.state).toBe('TASK_STATE_COMPLETED');
    expect(textOfArtifacts(artifacts)).toEqual(['Forty-two.']);
    expect(run.attempts).toEqual([
      expect.objectContaining({
        providerId: 'primary-openai',
        outcome: 'succeeded',
        inputTokens: 11,
        outputTokens: 5,
      }),
    ]);
    const sent = openai.requests.at(-1)!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe('Bearer sk-test-key');
    expect(sent.body).toMatchObject({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'You are a careful calculator.' },
        { role: 'user', content: 'What is six times seven?' },
      ],
      tools: [{ type: 'function', function: { name: 'calculator', parameters: { type: 'object' } } }],
    });
    expect(record('openai plain answer')).toEqual({ openai: 1, bedrock: 0, slow: 0 });
  });

  it('Bedrock: a plain answer through the real SDK client on POST /model/{id}/converse', async () => {
    bedrock.script = () => bedrockText('Forty-two.');
    const { result, run, artifacts } = await runOne('bedrock-first', 'What is six times seven?');
    expect(result).toBe('completed');
    expect(textOfArtifacts(artifacts)).toEqual(['Forty-two.']);
    expect(run.attempts).toEqual([
      expect.objectContaining({
        providerId: 'primary-bedrock',
        outcome: 'succeeded',
        inputTokens: 13,
        outputTokens: 6,
      }),
    ]);
    const sent = bedrock.requests.at(-1)!;
    expect(decodeURIComponent(sent.path)).toBe(`/model/${bedrockModel}/converse`);
    expect(sent.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=local\//);
    expect(sent.body).toMatchObject({
      system: [{ text: 'You are a careful calculator.' }],
      messages: [{ role: 'user', content: [{ text: 'What is six times seven?' }] }],
      toolConfig: {
        tools: [{ toolSpec: { name: 'calculator', inputSchema: { json: { type: 'object' } } } }],
      },
    });
    expect(record('bedrock plain answer')).toEqual({ openai: 0, bedrock: 1, slow: 0 });
  });

  it('OpenAI: a tool loop — the model calls the calculator, reads its result, answers', async () => {
    openai.script = openAiCalculatorScript;
    const { result, artifacts, history, status, steps, run } = await runOne(
      'openai-first',
      'Multiply 6 by 7.',
    );
    expect(result).toBe('completed');
    expect(textOfArtifacts(artifacts)).toEqual(['The product is 42.']);
    const second = openai.requests.at(-1)!.body.messages as Array<Record<string, unknown>>;
    expect(second.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_calc_1',
            type: 'function',
            function: {
              name: 'calculator',
              arguments: JSON.stringify({ operation: 'multiply', a: 6, b: 7 }),
            },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_calc_1', content: JSON.stringify({ result: 42 }) },
    ]);
    // Token counts of both turns add up on the one attempt.
    expect(run.attempts[0]).toMatchObject({ inputTokens: 20 + 11, outputTokens: 7 + 5 });
    // Tool arguments and results reach the audit seam only: never the stored task (I-LEAVE).
    expect(steps.filter((step) => step.kind === 'tool-call')).toEqual([
      expect.objectContaining({
        call: expect.objectContaining({ arguments: { operation: 'multiply', a: 6, b: 7 } }),
      }),
    ]);
    expect(JSON.stringify({ history, status })).not.toMatch(/multiply|"result"|call_calc_1/);
    expect(record('openai tool loop')).toEqual({ openai: 2, bedrock: 0, slow: 0 });
  });

  it('Bedrock: a tool loop with toolUse and toolResult blocks and stopReason tool_use', async () => {
    bedrock.script = bedrockCalculatorScript;
    const { result, artifacts } = await runOne('bedrock-first', 'Multiply 6 by 7.');
    expect(result).toBe('completed');
    expect(textOfArtifacts(artifacts)).toEqual(['The product is 42.']);
    const messages = bedrock.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown[] }>;
    expect(messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: [
          { text: 'Let me compute that.' },
          {
            toolUse: {
              toolUseId: 'tooluse_calc_1',
              name: 'calculator',
              input: { operation: 'multiply', a: 6, b: 7 },
            },
          },
        ],
      },
      {
        role: 'user',
        content: [
          {
            toolResult: {
              toolUseId: 'tooluse_calc_1',
              content: [{ text: JSON.stringify({ result: 42 }) }],
              status: 'success',
            },
          },
        ],
      },
    ]);
    expect(record('bedrock tool loop')).toEqual({ openai: 0, bedrock: 2, slow: 0 });
  });

  /** The input schema the MCP server lists for `set_flag` (SDK server side, zod → JSON Schema). */
  const setFlagSchema = {
    type: 'object',
    properties: { name: { type: 'string' }, on: { type: 'boolean' } },
    required: ['name', 'on'],
  };

  it("OpenAI: MCP tools carry their servers' input schemas as function parameters; a call reaches the server once", async () => {
    openai.script = (request) => {
      const messages = (request.body.messages ?? []) as Array<{ role: string; content?: string }>;
      const result = messages.at(-1)?.role === 'tool' ? messages.at(-1)?.content : undefined;
      return result === undefined
        ? openAiToolCall('call_flag_1', 'tools__set_flag', { name: 'dark-mode', on: true })
        : openAiText(`Done: ${JSON.parse(result).content[0].text}.`);
    };
    const before = (await mcp.calls()).length;
    const { result, artifacts } = await runOne('openai-mcp', 'Turn dark mode on.');
    expect(result).toBe('completed');
    expect(textOfArtifacts(artifacts)).toEqual(['Done: dark-mode is on.']);
    const offered = openai.requests.at(-2)!.body.tools as Array<{
      type: string;
      function: { name: string; parameters: Record<string, unknown> };
    }>;
    const flag = offered.find((tool) => tool.function.name === 'tools__set_flag');
    expect(flag?.type).toBe('function');
    expect(flag?.function.parameters).toMatchObject(setFlagSchema);
    expect(flag?.function.parameters).not.toHaveProperty('$schema');
    expect(offered.map((tool) => tool.function.name).sort()).toEqual(['tools__lookup', 'tools__set_flag']);
    expect((await mcp.calls()).slice(before)).toEqual([
      expect.objectContaining({ tool: 'set_flag', arguments: { name: 'dark-mode', on: true } }),
    ]);
    expect(record('openai mcp tool')).toEqual({ openai: 2, bedrock: 0, slow: 0 });
  });

  it("Bedrock: MCP tools carry their servers' input schemas as toolSpec.inputSchema.json; a call reaches the server once", async () => {
    bedrock.script = (request) => {
      const messages = (request.body.messages ?? []) as Array<{
        content: Array<{ toolResult?: { content: Array<{ text?: string }> } }>;
      }>;
      const result = messages.at(-1)?.content.find((block) => block.toolResult)?.toolResult;
      return result === undefined
        ? bedrockToolUse('tooluse_flag_1', 'tools__set_flag', { name: 'beta', on: false })
        : bedrockText(`Done: ${JSON.parse(result.content[0]?.text ?? '{}').content[0].text}.`);
    };
    const before = (await mcp.calls()).length;
    const { result, artifacts } = await runOne('bedrock-mcp', 'Turn beta off.');
    expect(result).toBe('completed');
    expect(textOfArtifacts(artifacts)).toEqual(['Done: beta is off.']);
    const tools = (
      bedrock.requests.at(-2)!.body.toolConfig as {
        tools: Array<{ toolSpec: { name: string; inputSchema: { json: Record<string, unknown> } } }>;
      }
    ).tools;
    const flag = tools.find((tool) => tool.toolSpec.name === 'tools__set_flag');
    expect(flag?.toolSpec.inputSchema.json).toMatchObject(setFlagSchema);
    expect(flag?.toolSpec.inputSchema.json).not.toHaveProperty('$schema');
    expect((await mcp.calls()).slice(before)).toEqual([
      expect.objectContaining({ tool: 'set_flag', arguments: { name: 'beta', on: false } }),
    ]);
    expect(record('bedrock mcp tool')).toEqual({ openai: 0, bedrock: 2, slow: 0 });
  });

  it('falls back when the primary does not answer within its timeout', async () => {
    bedrock.script = () => bedrockText('From the fallback.');
    const { result, run, artifacts } = await runOne('slow-first', 'hello');
    expect(result).toBe('completed');
    expect(textOfArtifacts(artifacts)).toEqual(['From the fallback.']);
    expect(run.attempts.map((attempt) => [attempt.providerId, attempt.outcome])).toEqual([
      ['slow-openai', 'failed'],
      ['primary-bedrock', 'succeeded'],
    ]);
    expect(record('fallback on timeout')).toEqual({ openai: 0, bedrock: 1, slow: 1 });
  });

  it('falls back on HTTP 503 from OpenAI to Bedrock, recording both attempts', async () => {
    openai.script = () => openAiError(503, 'overloaded');
    bedrock.script = () => bedrockText('From the fallback.');
    const { result, run, artifacts } = await runOne('openai-first', 'hello');
    expect(result).toBe('completed');
    expect(textOfArtifacts(artifacts)).toEqual(['From the fallback.']);
    expect(run.attempts.map((attempt) => [attempt.providerId, attempt.outcome])).toEqual([
      ['primary-openai', 'failed'],
      ['primary-bedrock', 'succeeded'],
    ]);
    expect(record('fallback on 503')).toEqual({ openai: 1, bedrock: 1, slow: 0 });
  });

  it('falls back on 429 ThrottlingException from Bedrock to OpenAI', async () => {
    bedrock.script = () => bedrockError(429, 'ThrottlingException', 'Too many requests');
    openai.script = () => openAiText('From the fallback.');
    const { result, run } = await runOne('bedrock-first', 'hello');
    expect(result).toBe('completed');
    expect(run.attempts.map((attempt) => attempt.outcome)).toEqual(['failed', 'succeeded']);
    expect(record('fallback on 429 (Bedrock throttling)')).toEqual({ openai: 1, bedrock: 1, slow: 0 });
  });

  it('falls back on 429 from OpenAI to Bedrock', async () => {
    openai.script = () => openAiError(429, 'rate limited');
    bedrock.script = () => bedrockText('From the fallback.');
    const { result } = await runOne('openai-first', 'hello');
    expect(result).toBe('completed');
    expect(record('fallback on 429 (OpenAI)')).toEqual({ openai: 1, bedrock: 1, slow: 0 });
  });

  it('does not fall back on HTTP 400: the task fails and the second provider is never called', async () => {
    openai.script = () => openAiError(400, 'bad request');
    const { result, task, run } = await runOne('openai-first', 'hello');
    expect(result).toBe('failed');
    expect(task.state).toBe('TASK_STATE_FAILED');
    expect(task.metadata).toMatchObject({ reason: 'PROVIDER_FAILED' });
    expect(run.attempts).toHaveLength(1);
    expect(record('no fallback on 400 (OpenAI)')).toEqual({ openai: 1, bedrock: 0, slow: 0 });
  });

  it('does not fall back on a Bedrock ValidationException (400)', async () => {
    bedrock.script = () => bedrockError(400, 'ValidationException', 'Malformed input request');
    const { result, run } = await runOne('bedrock-first', 'hello');
    expect(result).toBe('failed');
    expect(run.attempts).toHaveLength(1);
    expect(record('no fallback on 400 (Bedrock)')).toEqual({ openai: 0, bedrock: 1, slow: 0 });
  });

  it('continues the transcript on the fallback: a tool that ran is not called again', async () => {
    // The primary asks for the tool, then fails with 503 on the turn after the tool result.
    openai.script = (_request, index) =>
      index === mark.openai
        ? openAiToolCall('call_calc_9', 'calculator', { operation: 'add', a: 40, b: 2 })
        : openAiError(503);
    bedrock.script = bedrockCalculatorScript;
    const { result, artifacts, steps } = await runOne('openai-first', 'Add 40 and 2.');
    expect(result).toBe('completed');
    expect(textOfArtifacts(artifacts)).toEqual(['The product is 42.']);
    expect(steps.filter((step) => step.kind === 'tool-call')).toHaveLength(1);
    const messages = bedrock.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown[] }>;
    expect(messages.at(-1)).toEqual({
      role: 'user',
      content: [
        {
          toolResult: {
            toolUseId: 'call_calc_9',
            content: [{ text: JSON.stringify({ result: 42 }) }],
            status: 'success',
          },
        },
      ],
    });
    expect(record('fallback mid tool loop')).toEqual({ openai: 2, bedrock: 1, slow: 0 });
  });

  it('aborts an in-flight call through the signal: no fallback-worthy error (OpenAI and Bedrock)', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    openai.script = () => ({ ...openAiText('late'), hold: held });
    bedrock.script = () => ({ ...bedrockText('late'), hold: held });
    const { openai: openaiAgent, bedrock: bedrockAgent } = {
      openai: agents()['primary-openai']!,
      bedrock: agents()['primary-bedrock']!,
    };
    for (const [agent, server] of [
      [openaiAgent, openai],
      [bedrockAgent, bedrock],
    ] as const) {
      const controller = new AbortController();
      const before = server.requests.length;
      const running = agent.run({
        runId: 'r-abort',
        taskId: 't-abort',
        contextId: 'c-abort',
        instructions: '',
        history: [{ messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hello' }] }],
        signal: controller.signal,
      });
      const outcome = running.then(
        () => 'resolved',
        (error: unknown) => error,
      );
      await server.received(before + 1);
      controller.abort(new DOMException('canceled by the test', 'AbortError'));
      const error = await outcome;
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(ProviderUnavailableError);
      expect((error as Error).name).toBe('AbortError');
    }
    release();
    expect(record('abort (one call per provider)')).toEqual({ openai: 1, bedrock: 1, slow: 0 });
  });

  it('composition builds both providers from the configuration (endpoint from AWS_ENDPOINT_URL_BEDROCK_RUNTIME)', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      TEST_OPENAI_KEY: 'sk-from-env',
    });
    try {
      const configured = parseConfig({
        providers: {
          o: { type: 'openai', baseUrl: `${openai.url}/v1`, model: 'gpt-test', apiKeyEnv: 'TEST_OPENAI_KEY' },
          b: { type: 'bedrock', model: bedrockModel, region: 'us-east-1' },
        },
        profiles: { default: { name: 'x', description: 'x', providers: ['o'] } },
      });
      const providerFor = createProviderFor({ config: configured } as RuntimeEnv);
      openai.script = () => openAiText('via composition');
      bedrock.script = () => bedrockText('via composition');
      const request = {
        runId: 'r-comp',
        taskId: 't',
        contextId: 'c',
        instructions: '',
        history: [{ messageId: 'm', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] }],
      };
      for (const id of ['o', 'b']) {
        const { outcome } = await providerFor(id).run(request);
        expect(outcome).toMatchObject({
          kind: 'completed',
          artifacts: [{ parts: [{ text: 'via composition' }] }],
        });
      }
      expect(openai.requests.at(-1)!.headers.authorization).toBe('Bearer sk-from-env');
      expect(() =>
        createProviderFor({ config: configured } as RuntimeEnv, { ...process.env, TEST_OPENAI_KEY: '' }),
      ).toThrow(/TEST_OPENAI_KEY/);
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
    expect(record('composition (one call each)')).toEqual({ openai: 1, bedrock: 1, slow: 0 });
  });
});
