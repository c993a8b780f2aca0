import { describe, expect, it } from 'vitest';
import { ScriptedToolModel } from '../../shared/adapters/providers/scripted-tool-model.ts';
import type { ModelRequest, ModelStreamEvent, TranscriptEntry } from '../../shared/domain/model.ts';

/** The scripted `call-tool` model (docs/configuration.md `providers`) answering a delegated task's question. */

const asking = JSON.stringify({ taskId: 'remote-1', state: 'input-required', message: [{ text: 'Which?' }] });
const done = JSON.stringify({ taskId: 'remote-1', state: 'completed' });

const turnAfter = (model: ScriptedToolModel, results: string[]) => {
  const transcript: TranscriptEntry[] = [{ role: 'user', text: 'go' }];
  for (const [index, content] of results.entries()) {
    transcript.push({
      role: 'assistant',
      text: '',
      toolCalls: [{ id: `c${index}`, name: 'a2a__quiz', arguments: {} }],
    });
    transcript.push({
      role: 'tool',
      results: [{ callId: `c${index}`, name: 'a2a__quiz', content, isError: false }],
    });
  }
  const request: ModelRequest = { system: '', transcript, tools: [] };
  return model.complete(request);
};

describe('call-tool with answerInput', () => {
  const model = new ScriptedToolModel('s', 'a2a__quiz', { message: 'start' }, 'blue');

  it('calls the tool with its arguments first', async () => {
    const turn = await turnAfter(model, []);
    expect(turn.toolCalls).toEqual([{ id: 'call-1', name: 'a2a__quiz', arguments: { message: 'start' } }]);
  });

  it('answers a task that asks for input on that task, once', async () => {
    const turn = await turnAfter(model, [asking]);
    expect(turn.stopReason).toBe('tool_use');
    expect(turn.toolCalls).toEqual([
      { id: 'call-1-answer', name: 'a2a__quiz', arguments: { taskId: 'remote-1', message: 'blue' } },
    ]);
    // Asked again after its answer: it ends with what the tool said, it does not answer twice.
    const last = await turnAfter(model, [asking, asking]);
    expect(last.stopReason).toBe('end');
    expect(last.text).toBe(`Tool a2a__quiz answered: ${asking}`);
  });

  it('ends with the answer to its answer', async () => {
    const turn = await turnAfter(model, [asking, done]);
    expect(turn).toMatchObject({ stopReason: 'end', text: `Tool a2a__quiz answered: ${done}` });
  });

  it('without answerInput, the question is its answer', async () => {
    const plain = new ScriptedToolModel('s', 'a2a__quiz', { message: 'start' });
    expect(await turnAfter(plain, [asking])).toMatchObject({
      stopReason: 'end',
      text: `Tool a2a__quiz answered: ${asking}`,
    });
  });
});

describe('call-tool streamed (progressive output)', () => {
  const streamed = async (model: ScriptedToolModel, transcript: TranscriptEntry[]) => {
    const events: ModelStreamEvent[] = [];
    for await (const event of model.stream({ system: '', transcript, tools: [] })) events.push(event);
    return events;
  };
  const pauses: number[] = [];
  const model = new ScriptedToolModel('s', 'tools__append_note', undefined, undefined, {
    paceMs: 200,
    sleep: async (ms) => void pauses.push(ms),
  });

  it('asks for the tool without text, then writes its answer word by word, a pause of paceMs before each', async () => {
    const call = await streamed(model, [{ role: 'user', text: '{"text":"hi"}' }]);
    expect(call).toEqual([{ kind: 'turn', turn: expect.objectContaining({ stopReason: 'tool_use' }) }]);
    expect(pauses).toEqual([]);

    const answer = await streamed(model, [
      { role: 'user', text: '{"text":"hi"}' },
      {
        role: 'assistant',
        text: '',
        toolCalls: [{ id: 'call-1', name: 'tools__append_note', arguments: {} }],
      },
      {
        role: 'tool',
        results: [{ callId: 'call-1', name: 'tools__append_note', content: 'note 1 added', isError: false }],
      },
    ]);
    const texts = answer.flatMap((event) => (event.kind === 'text' ? [event.text] : []));
    expect(texts).toEqual(['Tool ', 'tools__append_note ', 'answered: ', 'note ', '1 ', 'added']);
    expect(answer.at(-1)).toEqual({
      kind: 'turn',
      turn: expect.objectContaining({ stopReason: 'end', text: texts.join('') }),
    });
    expect(pauses).toEqual(texts.map(() => 200));
  });
});
