import type { DomainErrorCode, FieldViolation } from '../../domain/errors.ts';
import { InvalidParamsError, isDomainError, LimitExceededError } from '../../domain/errors.ts';
import { assertNever } from '../../domain/task.ts';

/**
 * The one place where errors become JSON-RPC wire codes (docs/protocol.md §8). Domain errors carry a
 * semantic `code`; envelope problems found by the dispatcher carry a `ProtocolErrorCode`.
 * Anything else is an internal error with a generic message: its cause is logged, never sent.
 */

export const a2aErrorDomain = 'a2a-protocol.org';
export const errorInfoType = 'type.googleapis.com/google.rpc.ErrorInfo';
export const badRequestType = 'type.googleapis.com/google.rpc.BadRequest';

/** Envelope-level failures, detected before any use case runs. */
export type ProtocolErrorCode = 'PARSE_ERROR' | 'INVALID_REQUEST' | 'METHOD_NOT_FOUND' | 'INTERNAL_ERROR';

export type WireErrorCode = DomainErrorCode | ProtocolErrorCode;

/** What goes into `error.data`: an ErrorInfo (A2A errors), a BadRequest (validation) or nothing. */
export type ErrorDetailKind =
  | { readonly kind: 'errorInfo'; readonly reason: string; readonly domain: 'a2a' | 'installation' }
  /** This installation's ErrorInfo with the reason the error names (a limit), then its field violations. */
  | { readonly kind: 'limit' }
  | { readonly kind: 'badRequest' }
  | { readonly kind: 'none' };

export interface WireErrorRow {
  readonly code: number;
  readonly message: string;
  readonly detail: ErrorDetailKind;
}

const a2aInfo = (reason: string): ErrorDetailKind => ({ kind: 'errorInfo', reason, domain: 'a2a' });
const none: ErrorDetailKind = { kind: 'none' };
const internal: WireErrorRow = { code: -32603, message: 'Internal error', detail: none };

/** Exhaustive over every code: a new domain error code does not compile until it has a row. */
export const jsonRpcErrorTable: Readonly<Record<WireErrorCode, WireErrorRow>> = {
  TASK_NOT_FOUND: { code: -32001, message: 'Task not found', detail: a2aInfo('TASK_NOT_FOUND') },
  TASK_NOT_CANCELABLE: {
    code: -32002,
    message: 'Task cannot be canceled',
    detail: a2aInfo('TASK_NOT_CANCELABLE'),
  },
  PUSH_NOTIFICATION_NOT_SUPPORTED: {
    code: -32003,
    message: 'Push Notification is not supported',
    detail: a2aInfo('PUSH_NOTIFICATION_NOT_SUPPORTED'),
  },
  UNSUPPORTED_OPERATION: {
    code: -32004,
    message: 'This operation is not supported',
    detail: a2aInfo('UNSUPPORTED_OPERATION'),
  },
  CONTENT_TYPE_NOT_SUPPORTED: {
    code: -32005,
    message: 'Incompatible content types',
    detail: a2aInfo('CONTENT_TYPE_NOT_SUPPORTED'),
  },
  INVALID_AGENT_RESPONSE: {
    code: -32006,
    message: 'Invalid agent response',
    detail: a2aInfo('INVALID_AGENT_RESPONSE'),
  },
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: {
    code: -32007,
    message: 'Extended agent card is not configured',
    detail: a2aInfo('EXTENDED_AGENT_CARD_NOT_CONFIGURED'),
  },
  EXTENSION_SUPPORT_REQUIRED: {
    code: -32008,
    message: 'Extension support required',
    detail: a2aInfo('EXTENSION_SUPPORT_REQUIRED'),
  },
  VERSION_NOT_SUPPORTED: {
    code: -32009,
    message: 'Protocol version not supported',
    detail: a2aInfo('VERSION_NOT_SUPPORTED'),
  },
  // A2A 1.1 (docs/protocol.md §16): served to 1.1 clients only, who alone send `ifGenerationMatch`.
  TASK_GENERATION_MISMATCH: {
    code: -32010,
    message: 'Task generation mismatch',
    detail: a2aInfo('TASK_GENERATION_MISMATCH'),
  },
  // I-REFUSE (docs/invariants.md): an UnsupportedOperationError on the wire, with this installation's own reason.
  RESULT_NOT_RETAINABLE: {
    code: -32004,
    message: 'This operation is not supported: the result could not be kept under the privacy policy',
    detail: { kind: 'errorInfo', reason: 'RESULT_NOT_RETAINABLE', domain: 'installation' },
  },
  // Lost races (a follow-up to a task another follow-up continued, a cancel that kept losing) are
  // UnsupportedOperationErrors on the wire with this installation's reason, never -32603.
  TASK_ALREADY_WORKING: {
    code: -32004,
    message: 'This operation is not supported: the task is already working on a message',
    detail: { kind: 'errorInfo', reason: 'TASK_ALREADY_WORKING', domain: 'installation' },
  },
  TASK_BUSY: {
    code: -32004,
    message: 'This operation is not supported right now: the task changed concurrently; retry',
    detail: { kind: 'errorInfo', reason: 'TASK_BUSY', domain: 'installation' },
  },
  INVALID_PARAMS: { code: -32602, message: 'Invalid parameters', detail: { kind: 'badRequest' } },
  // I-RETRY: one send started as many tasks as one messageId may (docs/protocol.md §4 "Retries").
  MESSAGE_ID_REUSED: {
    code: -32602,
    message: 'Invalid parameters: this messageId has started as many tasks as it may',
    detail: { kind: 'errorInfo', reason: 'MESSAGE_ID_REUSED', domain: 'installation' },
  },
  // A request above a documented limit (docs/configuration.md `limits`): the reason names it.
  LIMIT_EXCEEDED: {
    code: -32602,
    message: 'Invalid parameters: a limit is exceeded',
    detail: { kind: 'limit' },
  },
  STREAM_LIMIT_EXCEEDED: {
    code: -32004,
    message: 'This operation is not supported right now: too many open streams',
    detail: { kind: 'limit' },
  },
  BLOCKING_LIMIT_EXCEEDED: {
    code: -32004,
    message: 'This operation is not supported right now: too many blocking sends waiting',
    detail: { kind: 'limit' },
  },
  // A body above `maxRequestBytes`: an envelope refusal (-32600) whose reason names the limit.
  REQUEST_LIMIT_EXCEEDED: { code: -32600, message: 'Invalid Request', detail: { kind: 'limit' } },
  VERSION_CONFLICT: internal,
  SEALING_FAILED: internal,
  ITEM_TOO_LARGE: internal,
  ENQUEUE_FAILED: internal,
  PARSE_ERROR: { code: -32700, message: 'Invalid JSON payload', detail: none },
  INVALID_REQUEST: { code: -32600, message: 'Invalid Request', detail: { kind: 'badRequest' } },
  METHOD_NOT_FOUND: { code: -32601, message: 'Method not found', detail: none },
  INTERNAL_ERROR: internal,
};

/** An envelope problem (not a domain error: the domain never sees a malformed request). */
export class JsonRpcProtocolError extends Error {
  override readonly name = 'JsonRpcProtocolError';
  readonly code: ProtocolErrorCode;
  readonly violations: readonly FieldViolation[];

  constructor(code: ProtocolErrorCode, violations: readonly FieldViolation[] = []) {
    super(jsonRpcErrorTable[code].message);
    this.code = code;
    this.violations = violations;
  }
}

export interface ErrorInfoDetail {
  readonly '@type': typeof errorInfoType;
  readonly reason: string;
  readonly domain: string;
  readonly metadata: Readonly<Record<string, string>>;
}

export interface BadRequestDetail {
  readonly '@type': typeof badRequestType;
  readonly fieldViolations: readonly FieldViolation[];
}

export type ErrorDetail = ErrorInfoDetail | BadRequestDetail;

/** The JSON-RPC `error` member: nothing but code, message and data (TCK `additionalProperties:false`). */
export interface JsonRpcErrorObject {
  readonly code: number;
  readonly message: string;
  readonly data?: readonly ErrorDetail[];
}

export interface ErrorMappingOptions {
  /** ErrorInfo domain for this installation's own reasons (config `errorDomain`). */
  readonly errorDomain: string;
  readonly now: () => Date;
}

const rowOf = (error: unknown): WireErrorRow => {
  if (isDomainError(error)) return jsonRpcErrorTable[error.code] ?? internal;
  if (error instanceof JsonRpcProtocolError) return jsonRpcErrorTable[error.code];
  return internal;
};

/** True when the error maps to -32603: its cause must be logged, since nothing of it is sent. */
export const isInternalError = (error: unknown): boolean => rowOf(error).code === internal.code;

const violationsOf = (error: unknown): readonly FieldViolation[] => {
  if (error instanceof JsonRpcProtocolError) return error.violations;
  if (error instanceof InvalidParamsError || error instanceof LimitExceededError) return error.violations;
  return [];
};

const errorInfoOf = (
  error: unknown,
  reason: string,
  domain: string,
  options: ErrorMappingOptions,
): ErrorInfoDetail => ({
  '@type': errorInfoType,
  reason,
  domain,
  metadata: { ...(isDomainError(error) ? error.details : {}), timestamp: options.now().toISOString() },
});

/** Maps any thrown value to the JSON-RPC error object that may leave the installation. */
export const toJsonRpcError = (error: unknown, options: ErrorMappingOptions): JsonRpcErrorObject => {
  const row = rowOf(error);
  const { code, message, detail } = row;
  switch (detail.kind) {
    case 'none':
      return { code, message };
    case 'badRequest': {
      const violations = violationsOf(error);
      return violations.length === 0
        ? { code, message }
        : { code, message, data: [{ '@type': badRequestType, fieldViolations: violations }] };
    }
    case 'errorInfo':
      return {
        code,
        message,
        data: [
          errorInfoOf(
            error,
            detail.reason,
            detail.domain === 'a2a' ? a2aErrorDomain : options.errorDomain,
            options,
          ),
        ],
      };
    case 'limit': {
      const violations = violationsOf(error);
      const reason = error instanceof LimitExceededError ? error.reason : 'LIMIT_EXCEEDED';
      return {
        code,
        message,
        data: [
          errorInfoOf(error, reason, options.errorDomain, options),
          ...(violations.length === 0
            ? []
            : [{ '@type': badRequestType, fieldViolations: violations } satisfies BadRequestDetail]),
        ],
      };
    }
    default:
      return assertNever(detail);
  }
};
