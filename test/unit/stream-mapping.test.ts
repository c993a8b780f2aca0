import type { ConverseStreamOutput } from '@aws-sdk/client-bedrock-runtime';
import { describe, expect, it } from 'vitest';
import { converseStreamTurn } from '../../shared/adapters/providers/bedrock-provider.ts';
import { ChatStreamAssembler, sseData } from '../../shared/adapters/providers/openai-provider.ts';
import { ProviderFailedError, ProviderUnavailableError } from '../../shared/domain/errors.ts';
import type { ModelStreamEvent } from '../../shared/domain/model.ts';

/**
 * The streamed-turn mappings as pure functions. Bedrock has no emulator: these are ConverseStream
 * events in the shapes the SDK yields them (as recorded from the client decoding a stream, see
 * test/integration/streaming-providers.test.ts for the same mapping over real HTTP/2), including
 * exception members the SDK may hand over instead of throwing. The SSE reader is fed byte splits
 * no network guarantees to produce.
 */

const from = async function* <T>(items: readonly T[]): AsyncGenerator<T> {
  yield* items;
};

const collect = async (events: AsyncIterable<ModelStreamEvent>) => {
  const out: ModelStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
};

const failure = (running: Promise<unknown>) =>
  running.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('converseStreamTurn (ConverseStream events → text deltas and the turn)', () => {
  const recorded: ConverseStreamOutput[] = [
    { messageStart: { role: 'assistant' } },
    { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'Let me ' } } },
    { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'compute.' } } },
    { contentBlockStop: { contentBlockIndex: 0 } },
    {
      contentBlockStart: {
        contentBlockIndex: 1,
        start: { toolUse: { toolUseId: 'tooluse_a', name: 'calculator' } },
      },
    },
    { contentBlockDelta: { contentBlockIndex: 1, delta: { toolUse: { input: '{"operation":"add",' } } } },
    { contentBlockDelta: { contentBlockIndex: 1, delta: { toolUse: { input: '"a":1,"b":2}' } } } },
    { contentBlockStop: { contentBlockIndex: 1 } },
    {
      contentBlockStart: {
        contentBlockIndex: 2,
        start: { toolUse: { toolUseId: 'tooluse_b', name: 'clock' } },
      },
    },
    { contentBlockStop: { contentBlockIndex: 2 } },
    { messageStop: { stopReason: 'tool_use' } },
    {
      metadata: {
        usage: { inputTokens: 21, outputTokens: 9, totalTokens: 30 },
        metrics: { latencyMs: 5 },
      },
    },
  ];

  it('yields text as it comes, then the turn with tool calls assembled from input chunks', async () => {
    expect(await collect(converseStreamTurn('b', from(recorded)))).toEqual([
      { kind: 'text', text: 'Let me ' },
      { kind: 'text', text: 'compute.' },
      {
        kind: 'turn',
        turn: {
          text: 'Let me compute.',
          toolCalls: [
            { id: 'tooluse_a', name: 'calculator', arguments: { operation: 'add', a: 1, b: 2 } },
            // A tool without input sends no delta: no arguments.
            { id: 'tooluse_b', name: 'clock', arguments: {} },
          ],
          stopReason: 'tool_use',
          inputTokens: 21,
          outputTokens: 9,
        },
      },
    ]);
  });

  it('joins text blocks by a line feed, as Converse text blocks are joined', async () => {
    const events = await collect(
      converseStreamTurn(
        'b',
        from<ConverseStreamOutput>([
          { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'One.' } } },
          { contentBlockDelta: { contentBlockIndex: 1, delta: { text: 'Two.' } } },
          { messageStop: { stopReason: 'max_tokens' } },
        ]),
      ),
    );
    expect(events).toEqual([
      { kind: 'text', text: 'One.' },
      { kind: 'text', text: '\nTwo.' },
      { kind: 'turn', turn: { text: 'One.\nTwo.', toolCalls: [], stopReason: 'max_tokens' } },
    ]);
  });

  it('throws an exception member under its SDK name and fault; a stream without messageStop is cut', async () => {
    const thrown = (await failure(
      collect(
        converseStreamTurn(
          'b',
          from<ConverseStreamOutput>([
            { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'x' } } },
            {
              throttlingException: {
                name: 'ThrottlingException',
                message: 'slow',
                $fault: 'client',
              } as never,
            },
          ]),
        ),
      ),
    )) as Error & { $fault?: string };
    expect([thrown.name, thrown.$fault]).toEqual(['ThrottlingException', 'server']);
    const validation = (await failure(
      collect(converseStreamTurn('b', from<ConverseStreamOutput>([{ validationException: {} as never }]))),
    )) as Error & { $fault?: string };
    expect([validation.name, validation.$fault]).toEqual(['ValidationException', 'client']);
    const cut = await failure(
      collect(
        converseStreamTurn(
          'b',
          from<ConverseStreamOutput>([{ contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'x' } } }]),
        ),
      ),
    );
    expect(cut).toBeInstanceOf(ProviderUnavailableError);
  });

  it('an unusable stop reason fails as Converse does (no fallback)', async () => {
    const error = await failure(
      collect(
        converseStreamTurn(
          'b',
          from<ConverseStreamOutput>([{ messageStop: { stopReason: 'malformed_tool_use' } }]),
        ),
      ),
    );
    expect(error).toBeInstanceOf(ProviderFailedError);
  });
});

describe('sseData (server-sent events over arbitrary byte splits)', () => {
  const body = (pieces: readonly Uint8Array[]) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(piece);
        controller.close();
      },
    });

  const text =
    ': a comment\r\nevent: message\r\ndata: {"a":"é€"}\r\n\r\ndata: one\ndata:two\n\nid: 7\ndata: [DONE]\n\ndata: tail';

  it('reads the same events whatever the byte splits, multi-byte characters and CRLF included', async () => {
    const bytes = new TextEncoder().encode(text);
    // The last event has no blank line after it: it is dropped (the body may have been cut in it).
    const expected = ['{"a":"é€"}', 'one\ntwo', '[DONE]'];
    for (const size of [1, 2, 3, 5, 7, bytes.length]) {
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.slice(at, at + size));
      const read: string[] = [];
      for await (const data of sseData(body(pieces))) read.push(data);
      expect([size, read]).toEqual([size, expected]);
    }
  });
});

describe('ChatStreamAssembler (chat-completion chunks → text deltas and the turn)', () => {
  it('keys tool calls by index whatever order their deltas come in; usage from the last chunk', () => {
    const assembler = new ChatStreamAssembler('o');
    const chunks = [
      { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
      {
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 1, id: 'c1', function: { name: 'b', arguments: '{"y"' } }] },
          },
        ],
      },
      {
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, id: 'c0', function: { name: 'a', arguments: '' } }] },
          },
        ],
      },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 1, function: { arguments: ':2}' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: 'not json' } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { choices: [], usage: { prompt_tokens: 4, completion_tokens: 3 } },
    ];
    const texts = chunks.flatMap((chunk) => [...assembler.add(chunk)]);
    expect(texts).toEqual([]);
    expect(assembler.turn()).toEqual({
      text: '',
      toolCalls: [
        // Malformed arguments reach the tool as {}: its schema check tells the model.
        { id: 'c0', name: 'a', arguments: {} },
        { id: 'c1', name: 'b', arguments: { y: 2 } },
      ],
      stopReason: 'tool_use',
      inputTokens: 4,
      outputTokens: 3,
    });
  });

  it('a stream without a finish reason has no turn: unavailable', () => {
    const assembler = new ChatStreamAssembler('o');
    expect([...assembler.add({ choices: [{ index: 0, delta: { content: 'Hal' } }] })]).toEqual([
      { kind: 'text', text: 'Hal' },
    ]);
    expect(() => assembler.turn()).toThrow(ProviderUnavailableError);
  });
});
