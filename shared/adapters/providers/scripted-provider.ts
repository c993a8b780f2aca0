import type { Artifact, Message, Part } from '../../domain/a2a.ts';
import { textOf } from '../../domain/a2a.ts';
import { ProviderUnavailableError } from '../../domain/errors.ts';
import type { AgentOutcome, AgentProvider, AgentRequest, AgentResult } from '../../domain/ports.ts';
import { abortableSleep, defaultStreamPaceMs, type ScriptedSleep, wordsOf } from './scripted-pace.ts';

/** `call-tool` is the scripted model under the tool loop (scripted-tool-model.ts), not this class. */
export type ScriptedBehavior = 'echo' | 'tck' | 'fail' | 'slow' | 'stream' | 'call-tool' | 'ask';

/** How long the TCK's `test-resubscribe-message-id` run works: 2× the TCK's 2 s streaming timeout. */
export const resubscribeScenarioDelayMs = 4_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** How long `slow` thinks before it echoes: long enough to outlast a short blocking cap in tests. */
export const slowDelayMs = 2_000;

export interface ScriptedOptions {
  /** `stream`: the pause before each word. @default defaultStreamPaceMs */
  readonly paceMs?: number;
  /** `stream`: breaks off, unavailable, after this many words (a model cut off mid-answer). */
  readonly failAfterWords?: number;
  /** `stream`: how a pause is waited; tests hand in a timer they advance themselves. */
  readonly sleep?: ScriptedSleep;
}

/**
 * The deterministic, offline provider (docs/configuration.md): the default locally and in tests.
 * It counts its calls per run so tests can prove a run never called its provider twice (I-ONCE).
 */
export class ScriptedProvider implements AgentProvider {
  static readonly callsByRun = new Map<string, number>();

  constructor(
    private readonly providerId: string,
    private readonly behavior: ScriptedBehavior,
    private readonly options: ScriptedOptions = {},
  ) {}

  /** Counts one call of a run's scripted provider (this class, or the `call-tool` model's tool loop). */
  static countCall(runId: string): void {
    ScriptedProvider.callsByRun.set(runId, (ScriptedProvider.callsByRun.get(runId) ?? 0) + 1);
  }

  async run(request: AgentRequest): Promise<AgentResult> {
    ScriptedProvider.countCall(request.runId);
    const last = request.history.at(-1);
    if (last === undefined) throw new Error('A run needs at least one message');
    switch (this.behavior) {
      case 'fail':
        throw new ProviderUnavailableError(this.providerId, 503);
      case 'echo':
        return { outcome: echo(request, last), inputTokens: 0, outputTokens: 0 };
      case 'slow':
        await new Promise((resolve) => setTimeout(resolve, slowDelayMs));
        return { outcome: echo(request, last), inputTokens: 0, outputTokens: 0 };
      case 'tck':
        if (last.messageId.startsWith('test-resubscribe-message-id')) await sleep(resubscribeScenarioDelayMs);
        return { outcome: playTck(request, last), inputTokens: 0, outputTokens: 0 };
      case 'stream':
        return this.streamEcho(request, last);
      case 'ask':
        return { outcome: ask(request, last), inputTokens: 0, outputTokens: 0 };
      case 'call-tool':
        throw new Error('The call-tool behaviour runs as a ScriptedToolModel under the tool loop');
    }
  }

  /**
   * `stream`: the echo written word by word at the configured pace, as a streaming model writes
   * its answer — reported through `onAnswer` when the run asks for progressive output, paced
   * the same without it. The words joined are the echoed text, whitespace included.
   */
  private async streamEcho(request: AgentRequest, last: Message): Promise<AgentResult> {
    const { paceMs = defaultStreamPaceMs, failAfterWords, sleep: pause = abortableSleep } = this.options;
    const words = wordsOf(textOf(last.parts));
    for (const [index, word] of words.entries()) {
      if (index === failAfterWords) throw new ProviderUnavailableError(this.providerId, undefined);
      await pause(paceMs, request.signal);
      request.onAnswer?.({ kind: 'text', text: word });
    }
    return { outcome: echo(request, last), inputTokens: 0, outputTokens: words.length };
  }
}

/** The TCK scenario whose agent answers with a direct Message instead of a task (docs/protocol.md §13.3). */
const messageResponsePrefix = 'tck-message-response';

/**
 * Whether this behaviour answers the message with a direct Message — known before it runs, as an
 * SDK executor knows it before it publishes its first event.
 */
export const answersWithMessage = (
  behavior: ScriptedBehavior,
  message: Pick<Message, 'messageId'>,
): boolean => behavior === 'tck' && message.messageId.startsWith(messageResponsePrefix);

const agentMessage = (request: AgentRequest, suffix: string, parts: Part[]): Message => ({
  messageId: `${request.runId}-${suffix}`,
  role: 'ROLE_AGENT',
  taskId: request.taskId,
  contextId: request.contextId,
  parts,
});

const artifact = (request: AgentRequest, name: string, parts: Part[]): Artifact => ({
  artifactId: `${request.runId}-artifact-0`,
  name,
  parts,
});

const echo = (request: AgentRequest, last: Message): AgentOutcome => {
  const text = textOf(last.parts);
  return {
    kind: 'completed',
    artifacts: [artifact(request, 'echo', [{ text }])],
    message: agentMessage(request, 'status', [{ text: 'Echoed your message.' }]),
  };
};

/** The question `ask` puts on a task's first message. */
export const askQuestion = 'Which answer should I give? Reply to this task.';

/**
 * `ask`: the task's first message is answered INPUT_REQUIRED with a question; a later message of
 * the task completes it with an artifact naming the first message and the answer, so a test reads
 * from the answer alone that both reached the same task (docs/configuration.md `providers`).
 */
const ask = (request: AgentRequest, last: Message): AgentOutcome => {
  const asked = request.history.filter((message) => message.role === 'ROLE_USER');
  const first = asked[0];
  if (first === undefined || asked.length < 2)
    return { kind: 'input-required', message: agentMessage(request, 'input', [{ text: askQuestion }]) };
  return {
    kind: 'completed',
    artifacts: [artifact(request, 'answer', [{ text: `${textOf(first.parts)} → ${textOf(last.parts)}` }])],
    message: agentMessage(request, 'status', [{ text: 'Thanks for the answer.' }]),
  };
};

/** The A2A TCK's system-under-test scenarios, chosen by messageId prefix (docs/protocol.md §13.3). */
const playTck = (request: AgentRequest, last: Message): AgentOutcome => {
  const id = last.messageId;
  const done = (parts: Part[]): AgentOutcome => ({
    kind: 'completed',
    artifacts: [artifact(request, 'result', parts)],
    message: agentMessage(request, 'status', [{ text: 'Hello from TCK' }]),
  });
  if (id.startsWith('tck-input-required')) {
    return {
      kind: 'input-required',
      message: agentMessage(request, 'input', [{ text: 'Please provide more input.' }]),
    };
  }
  if (id.startsWith(messageResponsePrefix)) {
    return {
      kind: 'message',
      message: agentMessage(request, 'message', [{ text: 'Direct message response' }]),
    };
  }
  if (id.startsWith('tck-reject-task')) {
    return { kind: 'rejected', message: agentMessage(request, 'rejected', [{ text: 'rejected' }]) };
  }
  if (id.startsWith('tck-artifact-text')) return done([{ text: 'Generated text content' }]);
  if (id.startsWith('tck-artifact-file-url')) {
    return done([{ url: 'https://example.com/output.txt', filename: 'output.txt', mediaType: 'text/plain' }]);
  }
  if (id.startsWith('tck-artifact-file')) {
    return done([
      {
        raw: Buffer.from('Generated file content').toString('base64'),
        filename: 'output.txt',
        mediaType: 'text/plain',
      },
    ]);
  }
  if (id.startsWith('tck-artifact-data'))
    return done([{ data: { key: 'value', count: 42 }, mediaType: 'application/json' }]);
  if (id.startsWith('tck-complete-task')) {
    return {
      kind: 'completed',
      artifacts: [],
      message: agentMessage(request, 'status', [{ text: 'Hello from TCK' }]),
    };
  }
  const streamed = playTckStream(request, id, done);
  if (streamed !== undefined) return streamed;
  return done([{ text: `Unhandled messageId prefix: ${id}` }]);
};

/**
 * The TCK's streaming scenarios (docs/protocol.md §13.3, `scenarios/streaming.feature`) as durable runs: the
 * stream shows committed revisions only, so "WORKING → artifact → COMPLETED" is the claim revision
 * (WORKING) and then the completing one (the artifact + COMPLETED, one transaction, I-RESULT).
 * The chunked scenario is one artifact whose two parts are the two chunks (docs/protocol.md §5).
 */
const playTckStream = (
  request: AgentRequest,
  id: string,
  done: (parts: Part[]) => AgentOutcome,
): AgentOutcome | undefined => {
  const statusOnly: AgentOutcome = {
    kind: 'completed',
    artifacts: [],
    message: agentMessage(request, 'status', [{ text: 'Hello from TCK' }]),
  };
  if (id.startsWith('tck-stream-001')) return done([{ text: 'Stream hello from TCK' }]);
  if (id.startsWith('tck-stream-002')) return statusOnly;
  if (id.startsWith('tck-stream-003')) return done([{ text: 'Stream task lifecycle' }]);
  if (id.startsWith('tck-stream-ordering-001')) return done([{ text: 'Ordered output' }]);
  if (id.startsWith('tck-stream-artifact-text')) return done([{ text: 'Streamed text content' }]);
  if (id.startsWith('tck-stream-artifact-file')) {
    return done([
      {
        raw: Buffer.from('Streamed file content').toString('base64'),
        filename: 'output.txt',
        mediaType: 'text/plain',
      },
    ]);
  }
  if (id.startsWith('tck-stream-artifact-chunked')) return done([{ text: 'chunk-1 ' }, { text: 'chunk-2' }]);
  if (id.startsWith('tck-stream')) return done([{ text: 'Generated text content' }]);
  // WORKING, then 2× the TCK's streaming timeout, then COMPLETED: long enough to re-attach.
  if (id.startsWith('test-resubscribe-message-id')) return statusOnly;
  return undefined;
};
