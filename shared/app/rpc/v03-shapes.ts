import type {
  Artifact,
  JsonObject,
  JsonValue,
  Message,
  Part,
  StreamEnd,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
  TaskStatus,
} from '../../domain/a2a.ts';
import { endsStream } from '../../domain/a2a.ts';

/**
 * The A2A v0.3 wire shapes (docs/protocol.md §1) and their pure mapping to and from the v1.0 model — the
 * one place that knows them; rpc/v03-methods.ts routes v0.3 method names through it onto the
 * v1.0 use cases, and the deliverer uses it for webhooks of configs created through v0.3.
 * Outgoing: `kind` discriminators, lowercase states and roles, file parts, `final` on status
 * events. Incoming: plain JSON rewritten into the v1.0 request shape, which the v1.0 schemas then
 * validate (rpc/schemas.ts), so both versions accept exactly the same content.
 * Shapes follow a2a-js `src/compat/v0_3/translate/*` (@a2a-js/sdk 1.3.0).
 */

// ---------------------------------------------------------------------------------------------
// v0.3 types (`types/src/types.ts`@v0.3.0)
// ---------------------------------------------------------------------------------------------

export type V03TaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'completed'
  | 'canceled'
  | 'failed'
  | 'rejected'
  | 'auth-required'
  | 'unknown';

export type V03Role = 'user' | 'agent';

export type V03Part =
  | { kind: 'text'; text: string; metadata?: JsonObject }
  | { kind: 'file'; file: V03File; metadata?: JsonObject }
  | { kind: 'data'; data: JsonObject; metadata?: JsonObject };

export type V03File = { name?: string; mimeType?: string } & ({ bytes: string } | { uri: string });

export interface V03Message {
  kind: 'message';
  messageId: string;
  role: V03Role;
  parts: V03Part[];
  contextId?: string;
  taskId?: string;
  metadata?: JsonObject;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface V03TaskStatus {
  state: V03TaskState;
  message?: V03Message;
  timestamp?: string;
}

export interface V03Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: V03Part[];
  metadata?: JsonObject;
  extensions?: string[];
}

export interface V03Task {
  kind: 'task';
  id: string;
  contextId: string;
  status: V03TaskStatus;
  artifacts?: V03Artifact[];
  history?: V03Message[];
  metadata?: JsonObject;
}

export interface V03TaskStatusUpdateEvent {
  kind: 'status-update';
  taskId: string;
  contextId: string;
  status: V03TaskStatus;
  /** The stream's last event (removed in v1.0, where the stream just closes). */
  final: boolean;
  metadata?: JsonObject;
}

export interface V03TaskArtifactUpdateEvent {
  kind: 'artifact-update';
  taskId: string;
  contextId: string;
  artifact: V03Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: JsonObject;
}

export type V03Event = V03Task | V03Message | V03TaskStatusUpdateEvent | V03TaskArtifactUpdateEvent;

export interface V03PushNotificationConfig {
  id?: string;
  url: string;
  token?: string;
  authentication?: { schemes: string[]; credentials?: string };
}

export interface V03TaskPushNotificationConfig {
  taskId: string;
  pushNotificationConfig: V03PushNotificationConfig;
}

// ---------------------------------------------------------------------------------------------
// v1.0 → v0.3 (answers, stream events, webhook bodies)
// ---------------------------------------------------------------------------------------------

const stateNames: Readonly<Record<TaskState, V03TaskState>> = {
  TASK_STATE_SUBMITTED: 'submitted',
  TASK_STATE_WORKING: 'working',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_INPUT_REQUIRED: 'input-required',
  TASK_STATE_REJECTED: 'rejected',
  TASK_STATE_AUTH_REQUIRED: 'auth-required',
};

export const toV03State = (state: TaskState): V03TaskState => stateNames[state];

/**
 * v0.3 data parts hold an object; any other v1.0 value travels as `{value}` with this metadata
 * flag, which the way back unwraps (a2a-js `DATA_PART_COMPAT_FLAG`).
 */
export const dataPartCompatFlag = 'data_part_compat';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const toV03Part = (part: Part): V03Part => {
  const { metadata } = part;
  if ('text' in part) return { kind: 'text', text: part.text, metadata };
  const fileInfo = { name: part.filename, mimeType: part.mediaType };
  if ('raw' in part) return { kind: 'file', file: { bytes: part.raw, ...fileInfo }, metadata };
  if ('url' in part) return { kind: 'file', file: { uri: part.url, ...fileInfo }, metadata };
  if (isObject(part.data)) return { kind: 'data', data: part.data, metadata };
  return { kind: 'data', data: { value: part.data }, metadata: { ...metadata, [dataPartCompatFlag]: true } };
};

export const toV03Message = (message: Message): V03Message => ({
  kind: 'message',
  messageId: message.messageId,
  role: message.role === 'ROLE_USER' ? 'user' : 'agent',
  parts: message.parts.map(toV03Part),
  contextId: message.contextId,
  taskId: message.taskId,
  metadata: message.metadata,
  extensions: message.extensions,
  referenceTaskIds: message.referenceTaskIds,
});

const toV03Status = (status: TaskStatus): V03TaskStatus => ({
  state: toV03State(status.state),
  message: status.message === undefined ? undefined : toV03Message(status.message),
  timestamp: status.timestamp,
});

export const toV03Artifact = (artifact: Artifact): V03Artifact => ({
  artifactId: artifact.artifactId,
  name: artifact.name,
  description: artifact.description,
  parts: artifact.parts.map(toV03Part),
  metadata: artifact.metadata,
  extensions: artifact.extensions,
});

export const toV03Task = (task: Task): V03Task => ({
  kind: 'task',
  id: task.id,
  contextId: task.contextId,
  status: toV03Status(task.status),
  artifacts: task.artifacts?.map(toV03Artifact),
  history: task.history?.map(toV03Message),
  metadata: task.metadata,
});

/** message/send's result: the Task or the Message itself, no wrapper. */
export const toV03SendResult = (
  response: { readonly task: Task } | { readonly message: Message },
): V03Task | V03Message => ('task' in response ? toV03Task(response.task) : toV03Message(response.message));

/**
 * One v1.0 StreamResponse as the v0.3 event. A status update is `final` when its state ends the
 * stream it travels in (`end`): SendStreamingMessage's at a terminal or interrupted state,
 * SubscribeToTask's and a webhook's at a terminal one — so the last status event of a stream,
 * and only it, says `final: true`.
 */
export const toV03Event = (response: StreamResponse, end: StreamEnd): V03Event => {
  if ('task' in response) return toV03Task(response.task);
  if ('message' in response) return toV03Message(response.message);
  if ('statusUpdate' in response) {
    const event = response.statusUpdate;
    return {
      kind: 'status-update',
      taskId: event.taskId,
      contextId: event.contextId,
      status: toV03Status(event.status),
      final: endsStream(event.status.state, end),
      metadata: event.metadata,
    };
  }
  const event = response.artifactUpdate;
  return {
    kind: 'artifact-update',
    taskId: event.taskId,
    contextId: event.contextId,
    artifact: toV03Artifact(event.artifact),
    append: event.append,
    lastChunk: event.lastChunk,
    metadata: event.metadata,
  };
};

/** The nested v0.3 TaskPushNotificationConfig (auth `schemes` is a list in v0.3). */
export const toV03PushConfig = (config: TaskPushNotificationConfig): V03TaskPushNotificationConfig => ({
  taskId: config.taskId,
  pushNotificationConfig: {
    id: config.id,
    url: config.url,
    token: config.token,
    authentication:
      config.authentication === undefined
        ? undefined
        : { schemes: [config.authentication.scheme], credentials: config.authentication.credentials },
  },
});

// ---------------------------------------------------------------------------------------------
// v0.3 → v1.0 request JSON (validated afterwards by the v1.0 schemas)
// ---------------------------------------------------------------------------------------------

const withoutKind = (value: Record<string, unknown>): Record<string, unknown> => {
  const { kind: _kind, ...rest } = value;
  return rest;
};

/**
 * `{kind:"text",text}` → `{text}`; `{kind:"file",file:{bytes|uri,name,mimeType}}` →
 * `{raw|url, filename, mediaType}`; `{kind:"data",data}` → `{data}` (a wrapped `{value}` is
 * unwrapped). Anything else is passed on for the v1.0 schema to judge.
 */
export const fromV03Part = (part: unknown): unknown => {
  if (!isObject(part)) return part;
  const rest = withoutKind(part);
  if (part.kind === 'file' && isObject(part.file)) {
    const { file, ...others } = rest;
    const { bytes, uri, name, mimeType } = part.file;
    return { ...others, raw: bytes, url: uri, filename: name, mediaType: mimeType };
  }
  if (part.kind === 'data' && isObject(part.metadata) && part.metadata[dataPartCompatFlag] === true) {
    const { [dataPartCompatFlag]: _flag, ...metadata } = part.metadata;
    return {
      ...rest,
      data: isObject(part.data) && 'value' in part.data ? (part.data.value as JsonValue) : part.data,
      metadata: Object.keys(metadata).length > 0 ? metadata : undefined,
    };
  }
  return rest;
};

/** A v0.3 Message: `kind` dropped, parts rewritten; lowercase roles are accepted as they are. */
export const fromV03Message = (message: unknown): unknown => {
  if (!isObject(message)) return message;
  const rest = withoutKind(message);
  return Array.isArray(message.parts) ? { ...rest, parts: message.parts.map(fromV03Part) } : rest;
};

/** `authentication.schemes[]` → `authentication.scheme` (the first; v1.0 has one). */
export const fromV03PushNotificationConfig = (config: unknown): unknown => {
  if (!isObject(config) || !isObject(config.authentication)) return config;
  const { schemes, ...authentication } = config.authentication;
  return {
    ...config,
    authentication: { ...authentication, scheme: Array.isArray(schemes) ? schemes[0] : undefined },
  };
};

/**
 * MessageSendParams → SendMessageRequest. `blocking` (v0.3) is the inverse of
 * `returnImmediately`; absent, the call blocks, as both v0.3 SDKs did (docs/protocol.md §1).
 */
export const fromV03SendParams = (params: unknown): unknown => {
  if (!isObject(params)) return params;
  const { configuration } = params;
  if (!isObject(configuration)) return { ...params, message: fromV03Message(params.message) };
  const { blocking, pushNotificationConfig, ...rest } = configuration;
  return {
    ...params,
    message: fromV03Message(params.message),
    configuration: {
      ...rest,
      returnImmediately: typeof blocking === 'boolean' ? !blocking : blocking,
      taskPushNotificationConfig: fromV03PushNotificationConfig(pushNotificationConfig),
    },
  };
};
