import type { PendingToolTurn } from './model.ts';

/**
 * Semantic errors of the domain. Each has a stable `code` (what went wrong, in domain words);
 * the JSON-RPC edge maps codes to wire codes in one table. Wire codes never appear here.
 */

export type DomainErrorCode =
  | 'TASK_NOT_FOUND'
  | 'TASK_NOT_CANCELABLE'
  | 'PUSH_NOTIFICATION_NOT_SUPPORTED'
  | 'UNSUPPORTED_OPERATION'
  | 'CONTENT_TYPE_NOT_SUPPORTED'
  | 'INVALID_AGENT_RESPONSE'
  | 'EXTENDED_AGENT_CARD_NOT_CONFIGURED'
  | 'EXTENSION_SUPPORT_REQUIRED'
  | 'VERSION_NOT_SUPPORTED'
  | 'TASK_GENERATION_MISMATCH'
  | 'RESULT_NOT_RETAINABLE'
  | 'TASK_ALREADY_WORKING'
  | 'TASK_BUSY'
  | 'MESSAGE_ID_REUSED'
  | 'LIMIT_EXCEEDED'
  | 'STREAM_LIMIT_EXCEEDED'
  | 'BLOCKING_LIMIT_EXCEEDED'
  | 'REQUEST_LIMIT_EXCEEDED'
  | 'INVALID_PARAMS'
  | 'VERSION_CONFLICT'
  | 'SEALING_FAILED'
  | 'ITEM_TOO_LARGE'
  | 'ENQUEUE_FAILED';

export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;
  /** Public, content-free facts that may go into ErrorInfo metadata (ids, setting names). */
  readonly details: Readonly<Record<string, string>>;

  constructor(message: string, details: Record<string, string> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.details = details;
  }
}

export class TaskNotFoundError extends DomainError {
  override readonly name = 'TaskNotFoundError';
  readonly code = 'TASK_NOT_FOUND';
  constructor(taskId: string) {
    super('Task not found', { taskId });
  }
}

export class TaskNotCancelableError extends DomainError {
  override readonly name = 'TaskNotCancelableError';
  readonly code = 'TASK_NOT_CANCELABLE';
  constructor(taskId: string, state: string) {
    super('Task cannot be canceled', { taskId, state });
  }
}

export class PushNotificationNotSupportedError extends DomainError {
  override readonly name = 'PushNotificationNotSupportedError';
  readonly code = 'PUSH_NOTIFICATION_NOT_SUPPORTED';
  constructor() {
    super('Push Notification is not supported');
  }
}

export class UnsupportedOperationError extends DomainError {
  override readonly name = 'UnsupportedOperationError';
  readonly code = 'UNSUPPORTED_OPERATION';
}

export class ContentTypeNotSupportedError extends DomainError {
  override readonly name = 'ContentTypeNotSupportedError';
  readonly code = 'CONTENT_TYPE_NOT_SUPPORTED';
  constructor(mediaType: string) {
    super('Incompatible content types', { mediaType });
  }
}

export class ExtendedAgentCardNotConfiguredError extends DomainError {
  override readonly name = 'ExtendedAgentCardNotConfiguredError';
  readonly code = 'EXTENDED_AGENT_CARD_NOT_CONFIGURED';
  constructor() {
    super('Extended agent card is not configured');
  }
}

export class ExtensionSupportRequiredError extends DomainError {
  override readonly name = 'ExtensionSupportRequiredError';
  readonly code = 'EXTENSION_SUPPORT_REQUIRED';
  constructor(uri: string) {
    super('Extension support required', { extension: uri });
  }
}

export class VersionNotSupportedError extends DomainError {
  override readonly name = 'VersionNotSupportedError';
  readonly code = 'VERSION_NOT_SUPPORTED';
  constructor(version: string) {
    super('Protocol version not supported', { version, supported: '1.0' });
  }
}

/**
 * A2A 1.1 (docs/protocol.md §16): a follow-up sent with `ifGenerationMatch` to a task whose generation
 * is another. The client reads the task again and decides whether to send.
 */
export class TaskGenerationMismatchError extends DomainError {
  override readonly name = 'TaskGenerationMismatchError';
  readonly code = 'TASK_GENERATION_MISMATCH';
  constructor(taskId: string, expected: number, current: number) {
    super(`Task generation mismatch: expected ${expected} but current generation is ${current}`, {
      taskId,
      expectedGeneration: String(expected),
      currentGeneration: String(current),
    });
  }
}

/** I-REFUSE (docs/invariants.md): a profile whose answer ceiling is metadata/none cannot keep a result, so it is not run. */
export class ResultNotRetainableError extends DomainError {
  override readonly name = 'ResultNotRetainableError';
  readonly code = 'RESULT_NOT_RETAINABLE';
  constructor(profileId: string, setting: string) {
    super('The result of this task could not be kept under the privacy policy', {
      profile: profileId,
      setting,
    });
  }
}

/**
 * A message to a task that is already working on one: it was not interrupted when read, or
 * another follow-up won the write that continues it (of racing follow-ups exactly one proceeds).
 */
export class TaskAlreadyWorkingError extends DomainError {
  override readonly name = 'TaskAlreadyWorkingError';
  readonly code = 'TASK_ALREADY_WORKING';
  constructor(taskId: string, state: string) {
    super('Task is already working on a message; send follow-ups when it asks for input', {
      taskId,
      state,
    });
  }
}

/** A write kept losing to concurrent writers of the same task, and each re-read allowed it again: retry. */
export class TaskBusyError extends DomainError {
  override readonly name = 'TaskBusyError';
  readonly code = 'TASK_BUSY';
  constructor(taskId: string) {
    super('The task kept changing while this request was applied; retry', { taskId });
  }
}

/**
 * I-RETRY: the messageId was already used by this caller at this agent for
 * a message with other content (or for a task whose retention has passed). A retry must resend the
 * same message; a new message needs a new messageId.
 */
export class MessageIdReusedError extends DomainError {
  override readonly name = 'MessageIdReusedError';
  readonly code = 'MESSAGE_ID_REUSED';
  constructor(messageId: string, taskId?: string) {
    super('This messageId has started as many tasks as it may; send the message with a new messageId', {
      messageId,
      ...(taskId !== undefined && { taskId }),
    });
  }
}

/** The documented limits a request can meet (docs/configuration.md `limits`). */
export type LimitName =
  | 'PUSH_CONFIGS_PER_TASK'
  | 'PARTS_PER_MESSAGE'
  | 'METADATA_BYTES'
  | 'STREAMS_PER_CALLER'
  | 'BLOCKING_SENDS_PER_CALLER'
  | 'HISTORY_BYTES'
  | 'REQUEST_BYTES';

/**
 * A request above one of the installation's limits, refused before anything is stored. Its wire
 * reason names the limit (`<limit>_EXCEEDED`), its metadata the setting and the maximum.
 */
export class LimitExceededError extends DomainError {
  override readonly name = 'LimitExceededError';
  readonly code:
    | 'LIMIT_EXCEEDED'
    | 'STREAM_LIMIT_EXCEEDED'
    | 'BLOCKING_LIMIT_EXCEEDED'
    | 'REQUEST_LIMIT_EXCEEDED';
  readonly reason: `${LimitName}_EXCEEDED`;
  readonly violations: readonly FieldViolation[];
  constructor(
    limit: LimitName,
    limits: {
      readonly setting: string;
      readonly max: number;
      readonly field?: string;
      readonly description: string;
    },
  ) {
    super(limits.description, { limit: limits.setting, max: String(limits.max) });
    this.code =
      limit === 'STREAMS_PER_CALLER'
        ? 'STREAM_LIMIT_EXCEEDED'
        : limit === 'BLOCKING_SENDS_PER_CALLER'
          ? 'BLOCKING_LIMIT_EXCEEDED'
          : limit === 'REQUEST_BYTES'
            ? 'REQUEST_LIMIT_EXCEEDED'
            : 'LIMIT_EXCEEDED';
    this.reason = `${limit}_EXCEEDED`;
    this.violations =
      limits.field === undefined ? [] : [{ field: limits.field, description: limits.description }];
  }
}

export class InvalidParamsError extends DomainError {
  override readonly name = 'InvalidParamsError';
  readonly code = 'INVALID_PARAMS';
  readonly violations: readonly FieldViolation[];
  constructor(violations: readonly FieldViolation[]) {
    super('Invalid parameters');
    this.violations = violations;
  }
}

/** A version-conditioned write lost against a concurrent writer (I-LOCK). */
export class VersionConflictError extends DomainError {
  override readonly name = 'VersionConflictError';
  readonly code = 'VERSION_CONFLICT';
}

export class SealingFailedError extends DomainError {
  override readonly name = 'SealingFailedError';
  readonly code = 'SEALING_FAILED';
}

/** The item a write would store is over the database's item size limit: it cannot be kept. */
export class ItemTooLargeError extends DomainError {
  override readonly name = 'ItemTooLargeError';
  readonly code = 'ITEM_TOO_LARGE';
}

export class EnqueueFailedError extends DomainError {
  override readonly name = 'EnqueueFailedError';
  readonly code = 'ENQUEUE_FAILED';
}

export const isDomainError = (error: unknown): error is DomainError => error instanceof DomainError;

/** A provider failed in a way that warrants the next provider in the chain (connection, timeout, 5xx, 429). */
export class ProviderUnavailableError extends Error {
  override readonly name = 'ProviderUnavailableError';
  constructor(
    readonly providerId: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(`Provider ${providerId} is unavailable${status ? ` (HTTP ${status})` : ''}`, options);
  }
}

/** A provider refused or failed the request in a way another provider would not fix (HTTP 4xx, validation). */
export class ProviderFailedError extends Error {
  override readonly name = 'ProviderFailedError';
  constructor(
    readonly providerId: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(`Provider ${providerId} failed the request${status ? ` (HTTP ${status})` : ''}`, options);
  }
}

export type AgentStopReason = 'TOOL_ROUNDS_EXCEEDED' | 'TOOL_UNAVAILABLE' | 'TOOL_CALL_INTERRUPTED';

/**
 * The tool loop ended the run before an answer, for a reason the task may show: a public,
 * content-free status text and `Task.metadata.reason`. Never a fallback.
 */
export class AgentStoppedError extends Error {
  override readonly name = 'AgentStoppedError';
  constructor(
    readonly reason: AgentStopReason,
    readonly publicText: string,
  ) {
    super(publicText);
  }
}

/**
 * A fenced tool call's record could not be written (I-EFFECT): the run moved under its executor
 * (settled, taken, another version) or a cancel was asked. The call was not sent.
 */
export class ToolFenceLostError extends Error {
  override readonly name = 'ToolFenceLostError';
  constructor(readonly outcome: 'lost' | 'canceled') {
    super(`The run could not fence a tool call (${outcome})`);
  }
}

/**
 * A delegated call's remote task did not settle within the agent's `waitSeconds`
 * (docs/configuration.md `a2aAgents`). Its task and the state to continue at the call are on the
 * run row already: the executor leaves the run waiting, and it is queued again when the remote
 * task's push notification arrives or the reaper finds its lease over. Not a failure.
 */
export class RemoteTaskPendingError extends Error {
  override readonly name = 'RemoteTaskPendingError';
  constructor(readonly remoteTaskId: string) {
    super('A delegated task is still working');
  }
}

/**
 * The tool loop stopped before a turn whose calls need an operator's approval (I-APPROVAL): no
 * call of that turn ran. The session holds the finished steps; the executor seals both and
 * suspends the run. Not a failure and never a fallback.
 */
export class ApprovalRequiredError extends Error {
  override readonly name = 'ApprovalRequiredError';
  constructor(
    readonly pending: PendingToolTurn,
    readonly tokens: { readonly inputTokens: number; readonly outputTokens: number },
  ) {
    super('The agent waits for an approval');
  }
}
