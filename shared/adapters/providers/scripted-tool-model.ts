import type { JsonObject } from '../../domain/a2a.ts';
import type { ChatModel, ModelRequest, ModelStreamEvent, ModelTurn } from '../../domain/model.ts';

/**
 * The scripted provider's `call-tool` behaviour (docs/configuration.md, `providers`): a model, run
 * under the real tool loop, that calls one named tool once per user message and then answers
 * with what the tool returned. Its arguments are the configured ones, else the user's message
 * when it is a JSON object, else `{}`. Offline and deterministic, so tests and demos drive every
 * tool path — fences, approvals, MCP servers — without a real model.
 */
export class ScriptedToolModel implements ChatModel {
  constructor(
    readonly providerId: string,
    private readonly tool: string,
    private readonly toolArguments?: JsonObject,
  ) {}

  async complete(request: ModelRequest): Promise<ModelTurn> {
    const transcript = request.transcript;
    const lastUser = transcript.findLastIndex((entry) => entry.role === 'user');
    const results = transcript
      .slice(lastUser + 1)
      .flatMap((entry) => (entry.role === 'tool' ? entry.results : []));
    const answered = results.at(-1);
    if (answered !== undefined) {
      return {
        text: `Tool ${answered.name} ${answered.isError ? 'failed' : 'answered'}: ${answered.content}`,
        toolCalls: [],
        stopReason: 'end',
        inputTokens: 0,
        outputTokens: 0,
      };
    }
    const userEntry = transcript[lastUser];
    const userText = userEntry?.role === 'user' ? userEntry.text : '';
    return {
      text: '',
      toolCalls: [
        { id: `call-${lastUser + 1}`, name: this.tool, arguments: this.toolArguments ?? objectIn(userText) },
      ],
      stopReason: 'tool_use',
      inputTokens: 0,
      outputTokens: 0,
    };
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const turn = await this.complete(request);
    if (turn.text !== '') yield { kind: 'text', text: turn.text };
    yield { kind: 'turn', turn };
  }
}

const objectIn = (text: string): JsonObject => {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
  } catch {
    return {};
  }
};
