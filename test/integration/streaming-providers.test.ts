import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BedrockProvider } from '../../shared/adapters/providers/bedrock-provider.ts';
import { OpenAiProvider } from '../../shared/adapters/providers/openai-provider.ts';
import { calculatorTool } from '../../shared/adapters/tools/calculator.ts';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import { ProviderFailedError, ProviderUnavailableError } from '../../shared/domain/errors.ts';
import type { ModelStreamEvent } from '../../shared/domain/model.ts';
import type { AgentRequest, AnswerProgress } from '../../shared/domain/ports.ts';
import {
  bedrockEvent,
  bedrockExceptionEvent,
  bedrockStream,
  bedrockStreamTextEvents,
  bedrockText,
  type FakeModelServer,
  openAiChunk,
  openAiError,
  openAiStream,
  openAiStreamText,
  openAiText,
  openAiUsageChunk,
  sseEvents,
  startFakeModelServer,
} from '../support/fake-model-servers.ts';

/**
 * Streamed model turns over real HTTP: the OpenAI adapter (plain fetch) against a local server
 * writing server-sent events, the Bedrock adapter (the real BedrockRuntimeClient over HTTP/2)
 * against a local server writing ConverseStream's binary event-stream encoding. The servers write
 * piece by piece and can hold a piece back until the test saw the text before it, or reset the
 * connection mid-answer.
 */

const bedrockModel = 'anthropic.claude-test-v1:0';

/** A gate the server waits on before its next piece. */
const gate = () => {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
};

const request = (overrides: Partial<AgentRequest> = {}): AgentRequest => ({
  runId: 'run-s',
  taskId: 'task-s',
  contextId: 'ctx-s',
  instructions: 'Be exact.',
  history: [{ messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'What is 6*7?' }] }],
  ...overrides,
});

const textsOf = (progress: readonly AnswerProgress[]) =>
  progress.map((p) => (p.kind === 'text' ? p.text : '<reset>'));

/** What a run ends with: 'resolved', or the error it rejected with. */
const settled = (running: Promise<unknown>): Promise<unknown> =>
  running.then(
    () => 'resolved',
    (error: unknown) => error,
  );

/** Runs the agent with progressive output until its first report; the run goes on. */
const runUntilFirstText = async (agent: ToolLoopAgent) => {
  const progress: AnswerProgress[] = [];
  const sawFirst = gate();
  const running = agent.run(
    request({
      onAnswer: (p) => {
        progress.push(p);
        sawFirst.open();
      },
    }),
  );
  await sawFirst.opened;
  return { progress, running };
};

describe('streamed model turns over real HTTP', () => {
  let openai: FakeModelServer;
  let bedrock: FakeModelServer;

  beforeAll(async () => {
    openai = await startFakeModelServer(() => openAiText('unused'));
    bedrock = await startFakeModelServer(() => bedrockText('unused'), 'h2c');
  });

  afterAll(async () => {
    await Promise.all([openai?.stop(), bedrock?.stop()]);
  });

  const openAiModel = () =>
    new OpenAiProvider({ providerId: 'o', baseUrl: `${openai.url}/v1`, model: 'gpt-test', apiKey: 'sk-s' });
  const bedrockModelAdapter = () =>
    new BedrockProvider({
      providerId: 'b',
      model: bedrockModel,
      client: new BedrockRuntimeClient({
        endpoint: bedrock.url,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        maxAttempts: 1,
      }),
    });

  describe('OpenAI stream: true', () => {
    it('reports each delta while the server still writes, and ends with the same turn as complete', async () => {
      const held = gate();
      const [role, first, second, stop, usage, done] = openAiStreamText(['Forty', '-two.']);
      openai.script = () => openAiStream([role!, first!, held.opened, second!, stop!, usage!, done!]);
      const { progress, running } = await runUntilFirstText(new ToolLoopAgent(openAiModel()));
      // The first delta arrived while the server holds the rest of the answer back.
      expect(textsOf(progress)).toEqual(['Forty']);
      held.open();
      const result = await running;
      expect(textsOf(progress)).toEqual(['Forty', '-two.']);
      const sent = openai.requests.at(-1)!;
      expect(sent.headers.accept).toBe('text/event-stream');
      expect(sent.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
      openai.script = () => openAiText('Forty-two.');
      const whole = await new ToolLoopAgent(openAiModel()).run(request());
      expect(openai.requests.at(-1)!.body.stream).toBeUndefined();
      expect(result).toEqual(whole);
      expect(result).toMatchObject({ inputTokens: 11, outputTokens: 5 });
    });

    it('assembles tool calls from index-keyed deltas split across chunks and across TCP writes', async () => {
      // Two calls, their deltas interleaved; arguments cut mid-token; one event split mid-line.
      const toolTurn = sseEvents([
        openAiChunk({ role: 'assistant', content: 'Let me compute.' }),
        openAiChunk({
          tool_calls: [
            { index: 0, id: 'call_a', type: 'function', function: { name: 'calculator', arguments: '' } },
          ],
        }),
        openAiChunk({ tool_calls: [{ index: 0, function: { arguments: '{"operation":"mul' } }] }),
        openAiChunk({
          tool_calls: [
            {
              index: 1,
              id: 'call_b',
              type: 'function',
              function: { name: 'calculator', arguments: '{"oper' },
            },
          ],
        }),
        openAiChunk({ tool_calls: [{ index: 0, function: { arguments: 'tiply","a":6,"b":7}' } }] }),
        openAiChunk({ tool_calls: [{ index: 1, function: { arguments: 'ation":"add","a":40,"b":2}' } }] }),
        openAiChunk({}, 'tool_calls'),
        openAiUsageChunk({ prompt_tokens: 20, completion_tokens: 7 }),
      ]);
      const split = toolTurn.flatMap((piece, index) =>
        index === 2 ? [piece.slice(0, 17), piece.slice(17, 40), piece.slice(40)] : [piece],
      );
      openai.script = (received) => {
        const messages = received.body.messages as Array<{ role: string; content?: string }>;
        if (messages.at(-1)?.role !== 'tool') return openAiStream(split);
        const results = messages.filter((m) => m.role === 'tool').map((m) => m.content);
        return openAiStream(openAiStreamText([`Results: ${results.join(' and ')}`]));
      };
      const progress: AnswerProgress[] = [];
      const result = await new ToolLoopAgent(openAiModel()).run(
        request({
          tools: [{ tool: calculatorTool, requiresApproval: false }],
          onAnswer: (p) => void progress.push(p),
        }),
      );
      const second = openai.requests.at(-1)!.body.messages as Array<Record<string, unknown>>;
      expect(second.slice(-3)).toEqual([
        {
          role: 'assistant',
          content: 'Let me compute.',
          tool_calls: [
            {
              id: 'call_a',
              type: 'function',
              function: { name: 'calculator', arguments: '{"operation":"multiply","a":6,"b":7}' },
            },
            {
              id: 'call_b',
              type: 'function',
              function: { name: 'calculator', arguments: '{"operation":"add","a":40,"b":2}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: '{"result":42}' },
        { role: 'tool', tool_call_id: 'call_b', content: '{"result":42}' },
      ]);
      expect(textsOf(progress)).toEqual([
        'Let me compute.',
        '<reset>',
        'Results: {"result":42} and {"result":42}',
      ]);
      expect(result.outcome).toMatchObject({
        kind: 'completed',
        artifacts: [{ parts: [{ text: 'Results: {"result":42} and {"result":42}' }] }],
      });
      expect(result).toMatchObject({ inputTokens: 31, outputTokens: 12 });
    });

    it('a connection reset mid-answer is an unavailable provider (the executor falls back on it)', async () => {
      const [role, first, second] = openAiStreamText(['Forty', '-two.']);
      openai.script = () => openAiStream([role!, first!, second!], { cut: true });
      const progress: AnswerProgress[] = [];
      const error = await settled(
        new ToolLoopAgent(openAiModel()).run(request({ onAnswer: (p) => void progress.push(p) })),
      );
      expect(error).toBeInstanceOf(ProviderUnavailableError);
      expect(textsOf(progress)).toEqual(['Forty', '-two.']);
    });

    it('a body that ends cleanly before the finish reason, or an error event in the stream, is unavailable', async () => {
      const [role, first] = openAiStreamText(['Forty']);
      for (const pieces of [
        [role!, first!],
        [role!, first!, ...sseEvents([{ error: { message: 'overloaded', type: 'server_error' } }], false)],
      ]) {
        openai.script = () => openAiStream(pieces);
        const error = await settled(new ToolLoopAgent(openAiModel()).run(request({ onAnswer: () => {} })));
        expect(error).toBeInstanceOf(ProviderUnavailableError);
      }
    });

    it('a refused streaming request is classified as a plain one: 429 unavailable, 400 failed, garbage failed', async () => {
      const cases: Array<[() => ReturnType<typeof openAiError>, unknown]> = [
        [() => openAiError(429), ProviderUnavailableError],
        [() => openAiError(400), ProviderFailedError],
        [() => openAiStream(['data: {not json\n\n']), ProviderFailedError],
      ];
      for (const [reply, kind] of cases) {
        openai.script = reply;
        const error = await settled(new ToolLoopAgent(openAiModel()).run(request({ onAnswer: () => {} })));
        expect(error).toBeInstanceOf(kind);
      }
    });

    it('an abort mid-stream rejects with the abort, never a fallback-worthy error', async () => {
      const held = gate();
      const [role, first, ...rest] = openAiStreamText(['Forty', '-two.']);
      openai.script = () => openAiStream([role!, first!, held.opened, ...rest]);
      const controller = new AbortController();
      const sawFirst = gate();
      const outcome = settled(
        new ToolLoopAgent(openAiModel()).run(
          request({ signal: controller.signal, onAnswer: () => sawFirst.open() }),
        ),
      );
      await sawFirst.opened;
      controller.abort(new DOMException('canceled by the test', 'AbortError'));
      const error = await outcome;
      held.open();
      expect(error).not.toBeInstanceOf(ProviderUnavailableError);
      expect((error as Error).name).toBe('AbortError');
    });
  });

  describe('Bedrock ConverseStream (the real SDK client decoding the event-stream encoding)', () => {
    it('reports each text delta while the server still writes; two text blocks join by a line feed', async () => {
      const held = gate();
      bedrock.script = () =>
        bedrockStream([
          bedrockEvent('messageStart', { role: 'assistant' }),
          bedrockEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Forty' } }),
          held.opened,
          bedrockEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: '-two.' } }),
          bedrockEvent('contentBlockStop', { contentBlockIndex: 0 }),
          bedrockEvent('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'Done.' } }),
          bedrockEvent('contentBlockStop', { contentBlockIndex: 1 }),
          bedrockEvent('messageStop', { stopReason: 'end_turn' }),
          bedrockEvent('metadata', { usage: { inputTokens: 13, outputTokens: 6, totalTokens: 19 } }),
        ]);
      const { progress, running } = await runUntilFirstText(new ToolLoopAgent(bedrockModelAdapter()));
      expect(textsOf(progress)).toEqual(['Forty']);
      held.open();
      const result = await running;
      expect(bedrock.requests.at(-1)!.path).toBe(
        `/model/${encodeURIComponent(bedrockModel)}/converse-stream`,
      );
      expect(textsOf(progress)).toEqual(['Forty', '-two.', '\nDone.']);
      // The same answer through Converse: text blocks joined by a line feed, the same tokens.
      bedrock.script = () => ({
        body: {
          output: { message: { role: 'assistant', content: [{ text: 'Forty-two.' }, { text: 'Done.' }] } },
          stopReason: 'end_turn',
          usage: { inputTokens: 13, outputTokens: 6, totalTokens: 19 },
        },
      });
      expect(result).toEqual(await new ToolLoopAgent(bedrockModelAdapter()).run(request()));
    });

    it('assembles a toolUse block from contentBlockStart and input JSON chunks, then answers', async () => {
      bedrock.script = (received) => {
        const messages = received.body.messages as Array<{
          content: Array<{ toolResult?: { content: Array<{ text: string }> } }>;
        }>;
        const result = messages.at(-1)?.content.find((block) => block.toolResult)?.toolResult;
        if (result) return bedrockStream(bedrockStreamTextEvents([`It is ${result.content[0]!.text}.`]));
        return bedrockStream([
          bedrockEvent('messageStart', { role: 'assistant' }),
          bedrockEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Let me compute.' } }),
          bedrockEvent('contentBlockStop', { contentBlockIndex: 0 }),
          bedrockEvent('contentBlockStart', {
            contentBlockIndex: 1,
            start: { toolUse: { toolUseId: 'tooluse_1', name: 'calculator' } },
          }),
          bedrockEvent('contentBlockDelta', {
            contentBlockIndex: 1,
            delta: { toolUse: { input: '{"operation":' } },
          }),
          bedrockEvent('contentBlockDelta', {
            contentBlockIndex: 1,
            delta: { toolUse: { input: '"multiply","a":6,' } },
          }),
          bedrockEvent('contentBlockDelta', {
            contentBlockIndex: 1,
            delta: { toolUse: { input: '"b":7}' } },
          }),
          bedrockEvent('contentBlockStop', { contentBlockIndex: 1 }),
          bedrockEvent('messageStop', { stopReason: 'tool_use' }),
          bedrockEvent('metadata', { usage: { inputTokens: 21, outputTokens: 9, totalTokens: 30 } }),
        ]);
      };
      const progress: AnswerProgress[] = [];
      const result = await new ToolLoopAgent(bedrockModelAdapter()).run(
        request({
          tools: [{ tool: calculatorTool, requiresApproval: false }],
          onAnswer: (p) => void progress.push(p),
        }),
      );
      const sent = bedrock.requests.at(-1)!.body.messages as unknown[];
      expect(sent.slice(-2)).toEqual([
        {
          role: 'assistant',
          content: [
            { text: 'Let me compute.' },
            {
              toolUse: {
                toolUseId: 'tooluse_1',
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
              toolResult: { toolUseId: 'tooluse_1', content: [{ text: '{"result":42}' }], status: 'success' },
            },
          ],
        },
      ]);
      expect(textsOf(progress)).toEqual(['Let me compute.', '<reset>', 'It is {"result":42}.']);
      expect(result).toMatchObject({ inputTokens: 34, outputTokens: 15 });
    });

    it('maps exception events mid-stream as Converse errors: throttling and stream errors unavailable, validation failed', async () => {
      const cases: Array<[string, unknown]> = [
        ['throttlingException', ProviderUnavailableError],
        ['modelStreamErrorException', ProviderUnavailableError],
        ['serviceUnavailableException', ProviderUnavailableError],
        ['validationException', ProviderFailedError],
      ];
      for (const [type, kind] of cases) {
        bedrock.script = () =>
          bedrockStream([
            bedrockEvent('messageStart', { role: 'assistant' }),
            bedrockEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Forty' } }),
            bedrockExceptionEvent(type),
          ]);
        const progress: AnswerProgress[] = [];
        const error = await settled(
          new ToolLoopAgent(bedrockModelAdapter()).run(request({ onAnswer: (p) => void progress.push(p) })),
        );
        expect([type, error]).toEqual([type, expect.any(kind)]);
        expect(textsOf(progress)).toEqual(['Forty']);
      }
    });

    it('a stream reset mid-answer, or one ended before messageStop, is an unavailable provider', async () => {
      const [start, delta] = bedrockStreamTextEvents(['Forty', '-two.']);
      for (const reply of [bedrockStream([start!, delta!], { cut: true }), bedrockStream([start!, delta!])]) {
        bedrock.script = () => reply;
        const error = await settled(
          new ToolLoopAgent(bedrockModelAdapter()).run(request({ onAnswer: () => {} })),
        );
        expect(error).toBeInstanceOf(ProviderUnavailableError);
      }
    });

    it('a throttled streaming request (HTTP 429) is unavailable, as for Converse', async () => {
      bedrock.script = () => ({
        status: 429,
        headers: {
          'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/',
        },
        body: { message: 'slow down' },
      });
      const events: ModelStreamEvent[] = [];
      const error = await settled(
        (async () => {
          for await (const event of bedrockModelAdapter().stream({ system: '', transcript: [], tools: [] }))
            events.push(event);
        })(),
      );
      expect(error).toBeInstanceOf(ProviderUnavailableError);
      expect(events).toEqual([]);
    });
  });
});
