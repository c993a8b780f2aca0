import { describe, expect, it } from 'vitest';
import {
  a2aErrorDomain,
  badRequestType,
  errorInfoType,
  isInternalError,
  JsonRpcProtocolError,
  jsonRpcErrorTable,
  type ProtocolErrorCode,
  toJsonRpcError,
} from '../../shared/app/rpc/errors-table.ts';
import {
  ContentTypeNotSupportedError,
  DomainError,
  type DomainErrorCode,
  EnqueueFailedError,
  ExtendedAgentCardNotConfiguredError,
  ExtensionSupportRequiredError,
  InvalidParamsError,
  MessageIdReusedError,
  PushNotificationNotSupportedError,
  ResultNotRetainableError,
  SealingFailedError,
  TaskAlreadyWorkingError,
  TaskBusyError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionConflictError,
  VersionNotSupportedError,
} from '../../shared/domain/errors.ts';

const NOW = new Date('2026-03-01T12:00:00.000Z');
const options = { errorDomain: 'errors.example.test', now: () => NOW };

/** The domain has no class for INVALID_AGENT_RESPONSE yet; its row is still on the wire table. */
class InvalidAgentResponseTestError extends DomainError {
  readonly code = 'INVALID_AGENT_RESPONSE' as const;
}

interface A2aRow {
  readonly error: DomainError;
  readonly code: number;
  readonly message: string;
  readonly reason: string;
  readonly domain: string;
  readonly metadata: Record<string, string>;
}

/** docs/protocol.md §8, row by row: code, standard message, ErrorInfo reason and domain, metadata. */
const a2aRows: readonly A2aRow[] = [
  {
    error: new TaskNotFoundError('t-1'),
    code: -32001,
    message: 'Task not found',
    reason: 'TASK_NOT_FOUND',
    domain: a2aErrorDomain,
    metadata: { taskId: 't-1' },
  },
  {
    error: new TaskNotCancelableError('t-2', 'TASK_STATE_COMPLETED'),
    code: -32002,
    message: 'Task cannot be canceled',
    reason: 'TASK_NOT_CANCELABLE',
    domain: a2aErrorDomain,
    metadata: { taskId: 't-2', state: 'TASK_STATE_COMPLETED' },
  },
  {
    error: new PushNotificationNotSupportedError(),
    code: -32003,
    message: 'Push Notification is not supported',
    reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED',
    domain: a2aErrorDomain,
    metadata: {},
  },
  {
    error: new UnsupportedOperationError('Task is terminal', { taskId: 't-3' }),
    code: -32004,
    message: 'This operation is not supported',
    reason: 'UNSUPPORTED_OPERATION',
    domain: a2aErrorDomain,
    metadata: { taskId: 't-3' },
  },
  {
    error: new ContentTypeNotSupportedError('application/x-tck'),
    code: -32005,
    message: 'Incompatible content types',
    reason: 'CONTENT_TYPE_NOT_SUPPORTED',
    domain: a2aErrorDomain,
    metadata: { mediaType: 'application/x-tck' },
  },
  {
    error: new InvalidAgentResponseTestError('bad'),
    code: -32006,
    message: 'Invalid agent response',
    reason: 'INVALID_AGENT_RESPONSE',
    domain: a2aErrorDomain,
    metadata: {},
  },
  {
    error: new ExtendedAgentCardNotConfiguredError(),
    code: -32007,
    message: 'Extended agent card is not configured',
    reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
    domain: a2aErrorDomain,
    metadata: {},
  },
  {
    error: new ExtensionSupportRequiredError('urn:x:required'),
    code: -32008,
    message: 'Extension support required',
    reason: 'EXTENSION_SUPPORT_REQUIRED',
    domain: a2aErrorDomain,
    metadata: { extension: 'urn:x:required' },
  },
  {
    error: new VersionNotSupportedError('99.0'),
    code: -32009,
    message: 'Protocol version not supported',
    reason: 'VERSION_NOT_SUPPORTED',
    domain: a2aErrorDomain,
    metadata: { version: '99.0', supported: '1.0' },
  },
  {
    error: new ResultNotRetainableError('default', 'providers.strict.privacyLevel'),
    code: -32004,
    message: 'This operation is not supported: the result could not be kept under the privacy policy',
    reason: 'RESULT_NOT_RETAINABLE',
    domain: 'errors.example.test',
    metadata: { profile: 'default', setting: 'providers.strict.privacyLevel' },
  },
  {
    error: new TaskAlreadyWorkingError('t-4', 'TASK_STATE_WORKING'),
    code: -32004,
    message: 'This operation is not supported: the task is already working on a message',
    reason: 'TASK_ALREADY_WORKING',
    domain: 'errors.example.test',
    metadata: { taskId: 't-4', state: 'TASK_STATE_WORKING' },
  },
  {
    error: new TaskBusyError('t-5'),
    code: -32004,
    message: 'This operation is not supported right now: the task changed concurrently; retry',
    reason: 'TASK_BUSY',
    domain: 'errors.example.test',
    metadata: { taskId: 't-5' },
  },
  {
    error: new MessageIdReusedError('m-1', 't-6'),
    code: -32602,
    message: 'Invalid parameters: this messageId has started as many tasks as it may',
    reason: 'MESSAGE_ID_REUSED',
    domain: 'errors.example.test',
    metadata: { messageId: 'm-1', taskId: 't-6' },
  },
];

describe('toJsonRpcError: A2A errors', () => {
  it.each(a2aRows)('$reason → $code with an ErrorInfo', (row) => {
    expect(row.error.code).toBe(row.reason);
    expect(toJsonRpcError(row.error, options)).toEqual({
      code: row.code,
      message: row.message,
      data: [
        {
          '@type': errorInfoType,
          reason: row.reason,
          domain: row.domain,
          metadata: { ...row.metadata, timestamp: '2026-03-01T12:00:00.000Z' },
        },
      ],
    });
    expect(isInternalError(row.error)).toBe(false);
  });
});

describe('toJsonRpcError: validation and internal errors', () => {
  it('INVALID_PARAMS → -32602 with a google.rpc.BadRequest listing the field violations', () => {
    const error = new InvalidParamsError([
      { field: 'message.parts', description: 'At least one part is required' },
    ]);
    expect(toJsonRpcError(error, options)).toEqual({
      code: -32602,
      message: 'Invalid parameters',
      data: [
        {
          '@type': badRequestType,
          fieldViolations: [{ field: 'message.parts', description: 'At least one part is required' }],
        },
      ],
    });
  });

  it.each([
    new VersionConflictError('conflict on RUN#r1 version 3'),
    new SealingFailedError('KMS said no for key arn:aws:kms:secret'),
    new EnqueueFailedError('queue https://sqs/secret unavailable'),
    new Error('boom at /var/task/index.js:12'),
    'a thrown string',
    undefined,
    { code: 'TASK_NOT_FOUND' },
  ])('%s → -32603 "Internal error" and nothing of the cause', (error) => {
    const wire = toJsonRpcError(error, options);
    expect(wire).toEqual({ code: -32603, message: 'Internal error' });
    expect(isInternalError(error)).toBe(true);
  });
});

describe('toJsonRpcError: envelope errors', () => {
  const rows: readonly [ProtocolErrorCode, number, string][] = [
    ['PARSE_ERROR', -32700, 'Invalid JSON payload'],
    ['INVALID_REQUEST', -32600, 'Invalid Request'],
    ['METHOD_NOT_FOUND', -32601, 'Method not found'],
    ['INTERNAL_ERROR', -32603, 'Internal error'],
  ];

  it.each(rows)('%s → %i "%s"', (code, wireCode, message) => {
    expect(toJsonRpcError(new JsonRpcProtocolError(code), options)).toEqual({ code: wireCode, message });
  });

  it('INVALID_REQUEST with violations carries a BadRequest', () => {
    const error = new JsonRpcProtocolError('INVALID_REQUEST', [
      { field: 'jsonrpc', description: 'Must be "2.0"' },
    ]);
    expect(toJsonRpcError(error, options).data).toEqual([
      { '@type': badRequestType, fieldViolations: [{ field: 'jsonrpc', description: 'Must be "2.0"' }] },
    ]);
  });
});

describe('jsonRpcErrorTable', () => {
  const domainCodes: readonly DomainErrorCode[] = [
    'TASK_NOT_FOUND',
    'TASK_NOT_CANCELABLE',
    'PUSH_NOTIFICATION_NOT_SUPPORTED',
    'UNSUPPORTED_OPERATION',
    'CONTENT_TYPE_NOT_SUPPORTED',
    'INVALID_AGENT_RESPONSE',
    'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
    'EXTENSION_SUPPORT_REQUIRED',
    'VERSION_NOT_SUPPORTED',
    'RESULT_NOT_RETAINABLE',
    'TASK_ALREADY_WORKING',
    'TASK_BUSY',
    'LIMIT_EXCEEDED',
    'STREAM_LIMIT_EXCEEDED',
    'INVALID_PARAMS',
    'VERSION_CONFLICT',
    'SEALING_FAILED',
    'ITEM_TOO_LARGE',
    'ENQUEUE_FAILED',
  ];

  it('has a row for every domain code, each in an allowed JSON-RPC range', () => {
    for (const code of domainCodes) {
      const row = jsonRpcErrorTable[code];
      expect(row, code).toBeDefined();
      const inA2aRange = row.code <= -32001 && row.code >= -32099;
      const inJsonRpcRange = row.code <= -32600 && row.code >= -32700;
      expect(inA2aRange || inJsonRpcRange, code).toBe(true);
    }
  });

  it('uses the A2A domain for every A2A reason and the installation domain only for its own', () => {
    const installationReasons = Object.values(jsonRpcErrorTable)
      .map((row) => row.detail)
      .filter((detail) => detail.kind === 'errorInfo' && detail.domain === 'installation')
      .map((detail) => (detail.kind === 'errorInfo' ? detail.reason : ''));
    expect(installationReasons).toEqual([
      'RESULT_NOT_RETAINABLE',
      'TASK_ALREADY_WORKING',
      'TASK_BUSY',
      'MESSAGE_ID_REUSED',
    ]);
  });
});
