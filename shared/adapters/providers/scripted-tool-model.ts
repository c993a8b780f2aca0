import type { JsonObject } from '../../domain/a2a.ts';
import type { ChatModel, ModelRequest, ModelStreamEvent, ModelTurn, ToolResult } from '../../domain/model.ts';
import { abortableSleep, defaultStreamPaceMs, type ScriptedSleep, wordsOf } from './scripted-pace.ts';

/** How a streamed answer is paced: `paceMs` as the `stream` behaviour's; tests hand in their own sleep. */
export interface ScriptedPacing {
  readonly paceMs?: number;
  readonly sleep?: ScriptedSleep;
}

/**
 * The scripted provider's `call-tool` behaviour (docs/configuration.md, `providers`): a model, run
 * under the real tool loop, that calls one named tool once per user message and then answers
 * with what the tool returned. Its arguments are the configured ones, else the user's message
 * when it is a JSON object, else `{}`. Offline and deterministic, so tests and demos drive every
 * tool path — fences, approvals, MCP servers, delegation — without a real model.
 *
 * With `answerInput`, a delegated call whose remote task asks for input (its result's `state` is
 * `input-required`, docs/configuration.md `a2aAgents`) is answered once, in the same user turn:
 * the tool is called again with that `taskId` and `answerInput` as the message.
 *
 * Streamed (a profile with progressive output), its answer comes word by word, one per `paceMs`,
 * as the `stream` behaviour's does, so the run commits it in several chunks after the tool result.
 */
export class ScriptedToolModel implements ChatModel {
  constructor(
    readonly providerId: string,
    private readonly tool: string,
    private readonly toolArguments?: JsonObject,
    private readonly answerInput?: string,
    private readonly pacing: ScriptedPacing = {},
  ) {}

  async complete(request: ModelRequest): Promise<ModelTurn> {
    const transcript = request.transcript;
    const lastUser = transcript.findLastIndex((entry) => entry.role === 'user');
    const results = transcript
      .slice(lastUser + 1)
      .flatMap((entry) => (entry.role === 'tool' ? entry.results : []));
    const answered = results.at(-1);
    const asking =
      this.answerInput !== undefined && results.length === 1 ? askingTaskOf(answered) : undefined;
    if (asking !== undefined && this.answerInput !== undefined) {
      return {
        text: '',
        toolCalls: [
          {
            id: `call-${lastUser + 1}-answer`,
            name: this.tool,
            arguments: { taskId: asking, message: this.answerInput },
          },
        ],
        stopReason: 'tool_use',
        inputTokens: 0,
        outputTokens: 0,
      };
    }
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
    const { paceMs = defaultStreamPaceMs, sleep = abortableSleep } = this.pacing;
    if (turn.text !== '') {
      for (const word of wordsOf(turn.text)) {
        await sleep(paceMs, request.signal);
        yield { kind: 'text', text: word };
      }
    }
    yield { kind: 'turn', turn };
  }
}

/** The remote task that asks for input, when a delegated call's result says so. */
const askingTaskOf = (result: ToolResult | undefined): string | undefined => {
  if (result === undefined || result.isError) return undefined;
  const answer = objectIn(result.content);
  return answer.state === 'input-required' && typeof answer.taskId === 'string' ? answer.taskId : undefined;
};

const objectIn = (text: string): JsonObject => {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
  } catch {
    return {};
  }
};
