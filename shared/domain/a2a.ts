/**
 * The A2A v1.0 data model as the domain uses it: plain values in the ProtoJSON (camelCase)
 * shape of `a2a.proto`, so the edge serializes them without a second model.
 */

export const taskStates = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const;

export type TaskState = (typeof taskStates)[number];

export const terminalStates: readonly TaskState[] = [
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
];

export const interruptedStates: readonly TaskState[] = [
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
];

export const isTerminal = (state: TaskState): boolean => terminalStates.includes(state);
export const isInterrupted = (state: TaskState): boolean => interruptedStates.includes(state);

/**
 * Where a task's event stream ends (docs/protocol.md §17): SendStreamingMessage also at an interrupted
 * state, SubscribeToTask (and webhooks) only at a terminal one.
 */
export type StreamEnd = 'terminal' | 'terminal-or-interrupted';

export const endsStream = (state: TaskState, end: StreamEnd): boolean =>
  isTerminal(state) || (end === 'terminal-or-interrupted' && isInterrupted(state));

export type Role = 'ROLE_USER' | 'ROLE_AGENT';

/**
 * The protocol versions this server speaks: v1.0, v0.3 for older clients (docs/protocol.md §1), and
 * v1.1's task generations for clients that ask for them (docs/protocol.md §16).
 */
export type ProtocolVersion = '1.0' | '0.3' | '1.1';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

interface PartCommon {
  metadata?: JsonObject;
  filename?: string;
  mediaType?: string;
}

/** Exactly one of text, raw (base64), url or data. */
export type Part =
  | (PartCommon & { text: string })
  | (PartCommon & { raw: string })
  | (PartCommon & { url: string })
  | (PartCommon & { data: JsonValue });

export interface Message {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: Role;
  parts: Part[];
  metadata?: JsonObject;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: JsonObject;
  extensions?: string[];
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  timestamp: string;
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: JsonObject;
  /** A2A 1.1: the update events the task has had (docs/protocol.md §16); sent only to 1.1 clients. */
  generation?: number;
}

export interface TaskStatusUpdateEvent {
  taskId: string;
  contextId: string;
  status: TaskStatus;
  metadata?: JsonObject;
  /** A2A 1.1: the task's generation after this event (docs/protocol.md §16). */
  generation?: number;
}

export interface TaskArtifactUpdateEvent {
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: JsonObject;
  /** A2A 1.1: the task's generation after this event (docs/protocol.md §16). */
  generation?: number;
}

export type StreamResponse =
  | { task: Task }
  | { message: Message }
  | { statusUpdate: TaskStatusUpdateEvent }
  | { artifactUpdate: TaskArtifactUpdateEvent };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const withoutGeneration = (value: unknown): unknown => {
  if (!isRecord(value) || !('generation' in value)) return value;
  const { generation: _, ...rest } = value;
  return rest;
};

/**
 * An answer as a client of another version than 1.1 receives it: without the task generations
 * (docs/protocol.md §16), which the 1.0 schema does not allow. Covers every shape that carries one:
 * a Task, a StreamResponse or SendMessage result (`task`, `statusUpdate`, `artifactUpdate`), and a
 * ListTasks page (`tasks`). Anything else is returned as it is.
 */
export const withoutGenerations = <T>(value: T): T => {
  if (!isRecord(value)) return value;
  if ('id' in value && 'status' in value) return withoutGeneration(value) as T;
  if (Array.isArray(value.tasks)) return { ...value, tasks: value.tasks.map(withoutGeneration) };
  for (const key of ['task', 'statusUpdate', 'artifactUpdate']) {
    if (key in value) return { ...value, [key]: withoutGeneration(value[key]) };
  }
  return value;
};

export interface AuthenticationInfo {
  scheme: string;
  credentials?: string;
}

export interface TaskPushNotificationConfig {
  tenant?: string;
  id: string;
  taskId: string;
  url: string;
  token?: string;
  authentication?: AuthenticationInfo;
}

export interface SendMessageConfiguration {
  acceptedOutputModes?: string[];
  taskPushNotificationConfig?: Omit<TaskPushNotificationConfig, 'id' | 'taskId'> & {
    id?: string;
    taskId?: string;
  };
  historyLength?: number;
  returnImmediately?: boolean;
  /** A2A 1.1: a follow-up applies only while its task is at this generation (docs/protocol.md §16). */
  ifGenerationMatch?: number;
}

/** The text of a message's text parts, joined; what the scripted echo answers with. */
export const textOf = (parts: readonly Part[]): string =>
  parts
    .map((part) => ('text' in part ? part.text : ''))
    .filter((text) => text !== '')
    .join('\n');
