import type { Artifact } from '../../domain/a2a.ts';
import { deniedCallText } from '../../domain/approvals.ts';
import {
  AgentStoppedError,
  ApprovalRequiredError,
  ProviderUnavailableError,
  RemoteTaskPendingError,
} from '../../domain/errors.ts';
import {
  type AgentSession,
  type ChatModel,
  consumeTurn,
  type DecidedToolTurn,
  type DelegationCallback,
  type ModelRequest,
  type ModelTurn,
  newAgentSession,
  type PendingToolTurn,
  type ToolCall,
  type ToolResult,
  transcriptOf,
} from '../../domain/model.ts';
import type { AgentOutcome, AgentProvider, AgentRequest, AgentResult } from '../../domain/ports.ts';
import type { EnabledTool } from '../../domain/tools.ts';
import { failpoint } from '../operations/failpoints.ts';

export const defaultMaxToolRounds = 8;

/**
 * An LLM provider as an agent: model → tool calls → results → model, until the model answers
 * or the round cap is hit. The transcript beyond the task history lives in the run's session,
 * so a fallback model continues it and finished tool calls are never made again. Tool arguments
 * and results go to `onStep` (the audit seam) and back to the model, nowhere else.
 */
export class ToolLoopAgent implements AgentProvider {
  constructor(private readonly model: ChatModel) {}

  async run(request: AgentRequest): Promise<AgentResult> {
    const session = request.session ?? newAgentSession();
    const enabled = new Map((request.tools ?? []).map((entry) => [entry.tool.name, entry]));
    const specs = [...enabled.values()].map(({ tool }) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      readOnly: tool.readOnly,
    }));
    const maxRounds = request.maxToolRounds ?? defaultMaxToolRounds;
    const history = transcriptOf(request.history);
    let inputTokens = 0;
    let outputTokens = 0;
    // A resumed run runs its decided turn first: the model is not asked again for it (I-APPROVAL).
    if (session.decided !== undefined) await this.runDecidedTurn(request, enabled, session, session.decided);
    for (;;) {
      request.signal?.throwIfAborted();
      const started = performance.now();
      const turn = await this.turn(request, {
        system: request.instructions,
        transcript: [...history, ...session.steps],
        tools: specs,
        signal: request.signal,
      });
      inputTokens += turn.inputTokens ?? 0;
      outputTokens += turn.outputTokens ?? 0;
      await request.onStep?.({
        kind: 'model-turn',
        providerId: this.model.providerId,
        durationMs: Math.round(performance.now() - started),
        stopReason: turn.stopReason,
        toolCalls: turn.toolCalls.map((call) => call.name),
        inputTokens: turn.inputTokens,
        outputTokens: turn.outputTokens,
      });
      if (turn.toolCalls.length === 0) {
        return { outcome: outcomeOf(request, turn), inputTokens, outputTokens };
      }
      if (session.rounds >= maxRounds) {
        throw new AgentStoppedError(
          'TOOL_ROUNDS_EXCEEDED',
          `The agent needed more than ${maxRounds} tool rounds and was stopped before it answered.`,
        );
      }
      // Checked before any call of the turn runs, so a gated tool never runs half a turn: the
      // executor seals the session and this turn, and the run waits for an operator.
      if (turn.toolCalls.some((call) => enabled.get(call.name)?.requiresApproval)) {
        throw new ApprovalRequiredError(
          { text: turn.text, toolCalls: turn.toolCalls },
          { inputTokens, outputTokens },
        );
      }
      const results: ToolResult[] = [];
      const pending = { text: turn.text, toolCalls: turn.toolCalls };
      for (const call of turn.toolCalls) {
        results.push(
          await this.invoke(request, enabled.get(call.name), call, {
            session,
            turn: pending,
            done: results,
          }),
        );
      }
      // Turn and results enter the session together: a transcript never holds a call without its result.
      session.steps.push(
        { role: 'assistant', text: turn.text, toolCalls: turn.toolCalls },
        { role: 'tool', results },
      );
      session.rounds += 1;
    }
  }

  /**
   * One model turn: streamed when the run reports its answer as it grows (`onAnswer`), asked
   * whole otherwise (the rule of `ChatModel`). A streamed turn that wrote text and then asks for
   * tools is reset: its text was a preamble, and the answer starts again with the next turn.
   */
  private async turn(request: AgentRequest, modelRequest: ModelRequest): Promise<ModelTurn> {
    const { onAnswer } = request;
    if (onAnswer === undefined) return this.model.complete(modelRequest);
    let wrote = false;
    const turn = await consumeTurn(
      this.model.stream(modelRequest),
      (text) => {
        wrote = true;
        onAnswer({ kind: 'text', text });
      },
      () => new ProviderUnavailableError(this.model.providerId, undefined),
    );
    if (wrote && turn.toolCalls.length > 0) onAnswer({ kind: 'reset' });
    return turn;
  }

  /** Approved: every call of the turn runs. Denied: gated calls get the denial, the others run. */
  private async runDecidedTurn(
    request: AgentRequest,
    enabled: ReadonlyMap<string, EnabledTool>,
    session: AgentSession,
    decided: DecidedToolTurn,
  ): Promise<void> {
    const results: ToolResult[] = [];
    for (const call of decided.turn.toolCalls) {
      const entry = enabled.get(call.name);
      const done = decided.done?.find((result) => result.callId === call.id);
      results.push(
        done ??
          (decided.verdict === 'denied' && entry?.requiresApproval
            ? errorResult(
                call,
                decided.reason ? `${deniedCallText} Reason: ${decided.reason}` : deniedCallText,
              )
            : await this.invoke(request, entry, call, {
                session,
                turn: decided.turn,
                done: results,
                decided,
              })),
      );
    }
    session.steps.push(
      { role: 'assistant', text: decided.turn.text, toolCalls: decided.turn.toolCalls },
      { role: 'tool', results },
    );
    session.rounds += 1;
    session.decided = undefined;
  }

  /** Records the remote task a delegated call started, and where the run is, before the call waits. */
  private async hold(
    request: AgentRequest,
    call: ToolCall,
    remoteTaskId: string,
    place: CallPlace,
    holding: { held: boolean; failure?: unknown },
  ): Promise<DelegationCallback | undefined> {
    try {
      const callback = await request.delegations?.hold({
        call,
        remoteTaskId,
        steps: [...place.session.steps],
        rounds: place.session.rounds,
        turn: place.turn,
        done: [...place.done],
        ...(place.decided && { verdict: place.decided.verdict }),
        ...(place.decided?.reason !== undefined && { reason: place.decided.reason }),
      });
      holding.held = true;
      return callback;
    } catch (error) {
      holding.failure = error;
      throw error;
    }
  }

  private async invoke(
    request: AgentRequest,
    enabled: EnabledTool | undefined,
    call: ToolCall,
    place: CallPlace,
  ): Promise<ToolResult> {
    const started = performance.now();
    let result: ToolResult;
    let outcomeUnknown = false;
    const effect = enabled?.tool.effect ?? 'read-only';
    // A delegated call the run waited at before it stopped: its remote task is read, nothing is sent.
    const recorded =
      place.decided?.remoteTask?.callId === call.id ? place.decided.remoteTask.remoteTaskId : undefined;
    const holding: { held: boolean; failure?: unknown } = { held: false };
    if (enabled === undefined) {
      result = errorResult(call, `Tool ${call.name} is not available to this agent.`);
    } else {
      // A call that may change something outside is recorded before it is sent (I-EFFECT).
      if (effect === 'write' && recorded === undefined) await request.fence?.(call);
      try {
        const output = await enabled.tool.invoke(call.arguments, {
          runId: request.runId,
          callId: call.id,
          round: place.session.rounds,
          signal: request.signal,
          ...(request.delegations && {
            remoteTask: {
              ...(recorded !== undefined && { recorded }),
              record: (remoteTaskId: string) => this.hold(request, call, remoteTaskId, place, holding),
            },
          }),
        });
        if (output.ok) {
          result = {
            callId: call.id,
            name: call.name,
            content: JSON.stringify(output.content),
            isError: false,
          };
        } else {
          result = errorResult(call, output.error);
          outcomeUnknown = output.outcomeUnknown === true;
        }
      } catch (error) {
        request.signal?.throwIfAborted();
        // The run could not record the remote task it waits for: the attempt stops here.
        if ('failure' in holding) throw holding.failure;
        // The remote task outlives the wait: the run waits for it outside this attempt.
        if (error instanceof RemoteTaskPendingError && (holding.held || recorded !== undefined)) throw error;
        result = errorResult(call, `Tool ${call.name} failed: ${(error as Error).name}`);
        // A tool that threw may have sent its request: its outcome is unknown.
        outcomeUnknown = true;
      }
      if ('failure' in holding) throw holding.failure;
      if (effect === 'write') failpoint('executor.afterToolCall');
      // The call returned: the run no longer waits at it.
      if (holding.held || recorded !== undefined) await request.delegations?.release(call);
    }
    await request.onStep?.({
      kind: 'tool-call',
      providerId: this.model.providerId,
      call,
      result,
      readOnly: enabled?.tool.readOnly ?? true,
      effect,
      durationMs: Math.round(performance.now() - started),
    });
    // A write whose outcome is unknown is never sent again, and the model is not asked to
    // guess: the run ends (I-EFFECT, docs/architecture.md "Tools").
    if (outcomeUnknown && effect === 'write') {
      throw new AgentStoppedError(
        toolCallInterruptedReason,
        'A tool call that may have changed something was interrupted; it was not sent again.',
      );
    }
    return result;
  }
}

/** Where a call is: the session, its turn, the results of the turn's calls before it, the turn's decision. */
interface CallPlace {
  readonly session: AgentSession;
  readonly turn: PendingToolTurn;
  readonly done: readonly ToolResult[];
  readonly decided?: DecidedToolTurn;
}

/** The reason a run ends with when a fenced tool call's outcome is unknown (I-EFFECT). */
export const toolCallInterruptedReason = 'TOOL_CALL_INTERRUPTED';

const errorResult = (call: ToolCall, message: string): ToolResult => ({
  callId: call.id,
  name: call.name,
  content: JSON.stringify({ error: message }),
  isError: true,
});

const outcomeOf = (request: AgentRequest, turn: ModelTurn): AgentOutcome => {
  if (turn.stopReason === 'refused') {
    return {
      kind: 'rejected',
      message: {
        messageId: `${request.runId}-rejected`,
        role: 'ROLE_AGENT',
        taskId: request.taskId,
        contextId: request.contextId,
        parts: [{ text: 'The model declined to answer.' }],
      },
    };
  }
  const artifacts: Artifact[] =
    turn.text.trim() === ''
      ? []
      : [{ artifactId: `${request.runId}-artifact-0`, name: 'answer', parts: [{ text: turn.text }] }];
  return { kind: 'completed', artifacts };
};
