import type { Artifact, JsonObject, Message, Part } from './a2a.ts';
import type { Ceilings, PrivacyLevel } from './privacy.ts';
import { redactArtifacts, redactJson, redactMessage, redactText } from './redaction.ts';
import type { ToolEffect } from './tools.ts';

/**
 * The audit trail of a run (docs/data-model.md, I-LEAVE): its steps, cut to the run's **audit ceiling**
 * before anything leaves the use case. Pure: the adapter stores what `auditEntryAt` returns and
 * nothing else, so "never above the ceiling" is decided here, once, and tested here.
 *
 * | ceiling    | what an entry keeps                                                        |
 * | ---------- | -------------------------------------------------------------------------- |
 * | `none`     | nothing: no entry at all                                                   |
 * | `metadata` | kind, provider, outcome, duration, token counts, tool names and effect, lengths |
 * | `redacted` | the metadata, plus the step's content redacted (shared/domain/redaction.ts)    |
 * | `full`     | the metadata, plus the step's content as it was                            |
 *
 * Audit rows never reach the journal or a remote caller; the admin command shows metadata only.
 */

/**
 * No `settle` kind: how a run ended is its run record's (status, `endedAt`,
 * attempts) and its task's (`metadata.reason`), kept as long as these rows (I-PURGE).
 */
export const auditStepKinds = [
  /**
   * The run's start marker (docs/data-model.md, "Audit table"): written right before its first provider call.
   */
  'claim',
  /** The reaper took a claim back that never reached its provider call, and queued the run again. */
  'requeue',
  'attempt',
  'tighten',
  'suspend',
  'resume',
  'model-turn',
  'tool-call',
] as const;
export type AuditStepKind = (typeof auditStepKinds)[number];

/** Plaintext content a step may carry above `metadata`: the message it answers or produced, artifacts. */
export interface AuditContent {
  readonly message?: Message;
  readonly artifacts?: readonly Artifact[];
  /** A tool call's arguments and result: here and to the model, never the journal (I-LEAVE). */
  readonly toolCall?: AuditToolCall;
}

export interface AuditToolCall {
  readonly name: string;
  readonly arguments: JsonObject;
  /** The result as the model read it (JSON text). */
  readonly result: string;
  readonly isError: boolean;
}

/** A step as the executor sees it, before the ceiling decides what of it may be kept. */
export interface AuditStep {
  readonly kind: AuditStepKind;
  readonly taskId: string;
  readonly runId: string;
  /** ISO timestamp of the step. */
  readonly at: string;
  readonly providerId?: string;
  /** Attempts: succeeded / failed / refused; model turns: the stop reason; tool calls: ok / error; resumes: the verdict. */
  readonly outcome?: string;
  /** A public reason code (RESULT_NOT_RETAINABLE, PROVIDER_FAILED, …), never text. */
  readonly reason?: string;
  readonly durationMs?: number;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly toolNames?: readonly string[];
  /** A tool call's effect (I-EFFECT): `write` calls were fenced on the run row before they were sent. */
  readonly effect?: ToolEffect;
  /** For tightenings: the ceilings before and after. */
  readonly from?: Ceilings;
  readonly to?: Ceilings;
  readonly content?: AuditContent;
}

/** Sizes of a step's content: metadata, kept at every ceiling but `none`. */
export interface ContentLengths {
  readonly parts: number;
  /** Characters of text parts, plus the JSON length of data parts. File parts count as parts only. */
  readonly characters: number;
}

/** What may be written for a step: its metadata always, content only above `metadata`. */
export interface AuditEntry extends Omit<AuditStep, 'content'> {
  /** The audit ceiling this entry was cut to. */
  readonly level: Exclude<PrivacyLevel, 'none'>;
  readonly messageLength?: ContentLengths;
  readonly artifactsLength?: ContentLengths;
  /** A tool call: 2 parts (arguments as JSON, result), their characters. */
  readonly toolLength?: ContentLengths;
  /** Present only at `redacted` (redacted) and `full`. */
  readonly content?: AuditContent;
  /** Epoch seconds (I-PURGE). */
  readonly expiresAt: number;
}

const lengthOfParts = (parts: readonly Part[]): ContentLengths => {
  let characters = 0;
  for (const part of parts) {
    if ('text' in part) characters += part.text.length;
    else if ('data' in part) characters += JSON.stringify(part.data)?.length ?? 0;
  }
  return { parts: parts.length, characters };
};

const sumLengths = (lengths: readonly ContentLengths[]): ContentLengths => ({
  parts: lengths.reduce((sum, length) => sum + length.parts, 0),
  characters: lengths.reduce((sum, length) => sum + length.characters, 0),
});

/** Content kept at a level above `metadata`; redaction fails closed inside redactMessage/redactArtifacts. */
export const auditContentAt = (level: 'redacted' | 'full', content: AuditContent): AuditContent => {
  if (level === 'full') return content;
  const { toolCall } = content;
  return {
    ...(content.message ? { message: redactMessage(content.message) } : {}),
    ...(content.artifacts ? { artifacts: redactArtifacts([...content.artifacts]) } : {}),
    ...(toolCall
      ? {
          toolCall: {
            ...toolCall,
            arguments: redactJson(toolCall.arguments) as JsonObject,
            result: redactText(toolCall.result),
          },
        }
      : {}),
  };
};

/**
 * The entry that may be written for a step under an audit ceiling, or `undefined` at `none`.
 * Fields are copied one by one (never spread from the step), so nothing unlisted can slip in.
 */
export const auditEntryAt = (
  ceiling: PrivacyLevel,
  step: AuditStep,
  expiresAt: number,
): AuditEntry | undefined => {
  if (ceiling === 'none') return undefined;
  const { content } = step;
  const entry: AuditEntry = {
    kind: step.kind,
    taskId: step.taskId,
    runId: step.runId,
    at: step.at,
    level: ceiling,
    expiresAt,
    ...(step.providerId !== undefined ? { providerId: step.providerId } : {}),
    ...(step.outcome !== undefined ? { outcome: step.outcome } : {}),
    ...(step.reason !== undefined ? { reason: step.reason } : {}),
    ...(step.durationMs !== undefined ? { durationMs: step.durationMs } : {}),
    ...(step.inputTokens !== undefined ? { inputTokens: step.inputTokens } : {}),
    ...(step.outputTokens !== undefined ? { outputTokens: step.outputTokens } : {}),
    ...(step.toolNames !== undefined ? { toolNames: [...step.toolNames] } : {}),
    ...(step.effect !== undefined ? { effect: step.effect } : {}),
    ...(step.from !== undefined ? { from: { audit: step.from.audit, answer: step.from.answer } } : {}),
    ...(step.to !== undefined ? { to: { audit: step.to.audit, answer: step.to.answer } } : {}),
    ...(content?.message ? { messageLength: lengthOfParts(content.message.parts) } : {}),
    ...(content?.artifacts
      ? { artifactsLength: sumLengths(content.artifacts.map((artifact) => lengthOfParts(artifact.parts))) }
      : {}),
    ...(content?.toolCall
      ? {
          toolLength: {
            parts: 2,
            characters: JSON.stringify(content.toolCall.arguments).length + content.toolCall.result.length,
          },
        }
      : {}),
  };
  if (ceiling === 'metadata' || content === undefined) return entry;
  if (content.message === undefined && content.artifacts === undefined && content.toolCall === undefined)
    return entry;
  return { ...entry, content: auditContentAt(ceiling, content) };
};

/** An audit row as operators see it: the metadata, and whether sealed content is stored. Never the content. */
export type AuditRowSummary = Omit<AuditEntry, 'content'> & { readonly hasContent: boolean };

/**
 * A claim's start slot (docs/data-model.md, "Audit table"): one per run and run version. The executor writes
 * its `claim` row there right before the first provider call, with the version of its last write; the reaper
 * computes the same slot from the run row alone. Whoever writes a slot first has it.
 */
export interface StartSlot {
  readonly taskId: string;
  readonly runId: string;
  readonly version: number;
}

/**
 * What writing a start marker found: `recorded` (this claim's marker is there: the provider may
 * be called), `taken` (the reaper took the slot: this claim must not call its provider).
 */
export type StartOutcome = 'recorded' | 'taken';

/** Port: the audit table (docs/data-model.md). Written by the executor; read only by the admin command. */
export interface AuditTrail {
  /** Writes one entry, already cut to the run's audit ceiling by `auditEntryAt`. */
  record(entry: AuditEntry): Promise<void>;
  /**
   * Writes the `claim` entry into the start slot of `version`, only if the slot is free
   * (I-ONCE). A slot that already holds this claim's own marker (an earlier try of the
   * same write) is `recorded`; one the reaper took is `taken`. Any other failure rejects.
   */
  recordStart(entry: AuditEntry, version: number): Promise<StartOutcome>;
  /** The task's audit rows, oldest first, without content. */
  listForTask(taskId: string): Promise<AuditRowSummary[]>;
  /**
   * Cuts the rows a run already wrote down to a tightened audit ceiling (I-TIGHTEN applied to the
   * audit trail): at `redacted` full content is redacted, at `metadata` content is removed, at
   * `none` the run's rows are deleted.
   */
  scrubRun(taskId: string, runId: string, ceiling: PrivacyLevel): Promise<void>;
}

/**
 * Port: the start slots as the reaper sees them, in the audit table. A RUNNING run
 * whose lease expired and whose claims wrote no start marker provably never called its provider.
 */
export interface RunStarts {
  /** Whether any claim of the run wrote its start marker (a strongly consistent read). */
  anyStarted(taskId: string, runId: string): Promise<boolean>;
  /** Takes the slot with the reaper's `requeue` entry; false when a claim's marker holds it. */
  take(entry: AuditEntry, version: number): Promise<boolean>;
  /** Frees a slot the reaper took, when its run moved before it could be queued again. */
  release(slot: StartSlot): Promise<void>;
}
