import type {
  AuthenticationInfo,
  JsonObject,
  JsonValue,
  Message,
  Part,
  Role,
  SendMessageConfiguration,
  TaskState,
} from '../../domain/a2a.ts';
import { taskStates } from '../../domain/a2a.ts';
import type { FieldViolation } from '../../domain/errors.ts';
import { InvalidParamsError } from '../../domain/errors.ts';
import * as z from '../../zod.ts';

/**
 * One schema per A2A v1.0 JSON-RPC method (docs/protocol.md §2.1), over camelCase keys. Requests are
 * key-normalized first (`normalizeParamKeys`), so snake_case senders (the TCK) pass too.
 * Unknown fields are ignored (zod objects strip them; DM-SERIAL-005). Outputs are domain types.
 */

// ---------------------------------------------------------------------------------------------
// Key normalization (ProtoJSON parsers accept both the JSON name and the proto field name)
// ---------------------------------------------------------------------------------------------

/**
 * Fields whose values are user-controlled free-form JSON (`google.protobuf.Struct` / `Value`):
 * `metadata` everywhere and Part `data`. Their contents are data, not field names.
 */
const freeFormFields = new Set(['metadata', 'data']);

/** The deepest structured field of any request is ~6 levels down; below this nothing is read. */
const maxNormalizeDepth = 32;

const snakeCaseKey = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/;

const toCamelCase = (key: string): string =>
  snakeCaseKey.test(key) ? key.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase()) : key;

/**
 * Renames snake_case keys to camelCase, recursively, except inside free-form values. When both
 * spellings are sent, the camelCase one wins (as a2a-js `fromJSON` does). `null` means "unset"
 * for every structured field in ProtoJSON, so such keys are dropped; nulls inside free-form
 * values are kept as they are.
 */
export const normalizeParamKeys = (value: unknown): unknown => normalize(value, 0);

const normalize = (value: unknown, depth: number): unknown => {
  if (depth > maxNormalizeDepth || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => normalize(item, depth + 1));
  const source = value as Record<string, unknown>;
  const entries: [string, unknown][] = [];
  for (const [key, item] of Object.entries(source)) {
    if (item === null) continue;
    const name = toCamelCase(key);
    if (name !== key && Object.hasOwn(source, name)) continue;
    entries.push([name, freeFormFields.has(name) ? item : normalize(item, depth + 1)]);
  }
  // fromEntries defines own properties, so a `__proto__` key stays an inert data key.
  return Object.fromEntries(entries);
};

// ---------------------------------------------------------------------------------------------
// Scalars
// ---------------------------------------------------------------------------------------------

const unsetWhenEmpty = z.transform((value: string | undefined) => (value === '' ? undefined : value));

/** An optional string where `""` is the proto3 default, i.e. unset. */
export const optionalString = z.pipe(z.optional(z.string()), unsetWhenEmpty);

/**
 * Ids become DynamoDB key parts (`TASK#<taskId>` partition keys, at most 2,048 bytes;
 * `PUSH#<configId>` sort keys, at most 1,024), so an id longer than any this server issues is
 * refused here as -32602 rather than by DynamoDB as an internal error. 256 UTF-16 code units
 * are at most 768 UTF-8 bytes.
 */
export const maxIdLength = 256;
// UTF-16 code units, not zod's `max` (which counts code points: 256 of them may be 1,024 bytes).
const boundedId = z
  .string()
  .check(z.refine((value) => value.length <= maxIdLength, `Must be at most ${maxIdLength} characters`));

export const requiredId = boundedId.check(z.refine((value) => value !== '', 'Must be a non-empty string'));

/** An optional id (`""` is unset, as for every proto3 string). */
export const optionalId = z.pipe(z.optional(boundedId), unsetWhenEmpty);

const decimalInteger = /^-?\d+$/;

/** ProtoJSON int32: a JSON number or a decimal string. */
const int32 = z.pipe(
  z.transform((value: unknown) =>
    typeof value === 'string' && decimalInteger.test(value) ? Number(value) : value,
  ),
  z.number().check(z.int(), z.gte(-2_147_483_648), z.lte(2_147_483_647)),
);

export const historyLength = z.pipe(int32, z.number().check(z.gte(0, 'Must be 0 or more')));

/** ProtoJSON int64 (a JSON number or a decimal string) that counts: a task generation (docs/protocol.md §16). */
const generation = z.pipe(
  z.transform((value: unknown) =>
    typeof value === 'string' && decimalInteger.test(value) ? Number(value) : value,
  ),
  z.number().check(z.int(), z.gte(0, 'Must be 0 or more'), z.lte(Number.MAX_SAFE_INTEGER)),
);
const pageSize = z.pipe(
  int32,
  z.number().check(z.gte(1, 'Must be between 1 and 100'), z.lte(100, 'Must be between 1 and 100')),
);

const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Free-form JSON (metadata, Part data) may nest this many arrays/objects deep. Nothing sensible
 * nests deeper, and content is sealed through a recursive JSON.stringify that overflows the
 * stack some thousands of levels down: refused here as -32602, not later as -32603.
 */
export const maxJsonDepth = 64;
const tooDeep = `Must not nest more than ${maxJsonDepth} levels deep`;

/** Walks at most `levels` containers down, so its own recursion is bounded too. */
const nestsWithin = (value: unknown, levels: number): boolean => {
  if (typeof value !== 'object' || value === null) return true;
  if (levels === 0) return false;
  const items = Array.isArray(value) ? value : Object.values(value);
  return items.every((item) => nestsWithin(item, levels - 1));
};

const nestsWithinMaxDepth = z.refine((value: unknown) => nestsWithin(value, maxJsonDepth), tooDeep);

export const jsonObject = z
  .custom<JsonObject>(isJsonObject, 'Must be a JSON object')
  .check(nestsWithinMaxDepth);

/** The request body came from JSON.parse, so any value present is JSON; only its depth is checked. */
const jsonValue = z.custom<JsonValue>().check(nestsWithinMaxDepth);

/** Standard or URL-safe base64, with or without padding (ProtoJSON `bytes`). */
const base64Pattern = /^[A-Za-z0-9+/_-]*={0,2}$/;
const isBase64 = (value: string): boolean =>
  base64Pattern.test(value) && (value.includes('=') ? value.length % 4 === 0 : value.length % 4 !== 1);

const base64Bytes = z.pipe(
  z.string().check(z.refine(isBase64, 'Must be base64 (standard or URL-safe)')),
  z.transform((value: string) => Buffer.from(value, 'base64').toString('base64')),
);

const httpUrl = z.url({ protocol: /^https?$/, error: 'Must be an absolute http(s) URL' });

const roleNames: Readonly<Record<string, Role>> = {
  ROLE_USER: 'ROLE_USER',
  ROLE_AGENT: 'ROLE_AGENT',
  user: 'ROLE_USER',
  agent: 'ROLE_AGENT',
  1: 'ROLE_USER',
  2: 'ROLE_AGENT',
};

const roleSchema = z.pipe(
  z.custom<string | number>(
    (value) => (typeof value === 'string' || typeof value === 'number') && Object.hasOwn(roleNames, value),
    'Must be ROLE_USER or ROLE_AGENT',
  ),
  z.transform((value: string | number): Role => roleNames[value] as Role),
);

/** TaskState by name or by its enum number (ProtoJSON accepts both); UNSPECIFIED (0) means "no filter". */
// taskStates is in proto enum order: SUBMITTED(1) … AUTH_REQUIRED(8).
const taskStateByNumber: readonly (TaskState | undefined)[] = [undefined, ...taskStates];

const isTaskStateInput = (value: unknown): boolean =>
  value === 'TASK_STATE_UNSPECIFIED' ||
  (typeof value === 'string' && (taskStates as readonly string[]).includes(value)) ||
  (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < taskStateByNumber.length);

const taskStateFilter = z.pipe(
  z.custom<string | number>(isTaskStateInput, 'Must be a TaskState name such as TASK_STATE_WORKING'),
  z.transform((value: string | number): TaskState | undefined =>
    typeof value === 'number'
      ? taskStateByNumber[value]
      : value === 'TASK_STATE_UNSPECIFIED'
        ? undefined
        : (value as TaskState),
  ),
);

/**
 * ProtoJSON Timestamp: RFC 3339 with `Z` or an offset, any fraction. Also a non-negative integer
 * of epoch milliseconds, the unit of v0.3 `lastUpdatedAfter`. Normalized to `…sss Z` so the use
 * case compares it with stored status timestamps as strings.
 */
const rfc3339 = z.iso.datetime({ offset: true });
const maxEpochMillis = 8.64e15;

const timestamp = z.pipe(
  z.custom<string | number>(
    (value) =>
      z.safeParse(rfc3339, value).success ||
      (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= maxEpochMillis),
    'Must be an RFC 3339 timestamp such as 2026-01-01T00:00:00Z',
  ),
  z.transform((value: string | number) => new Date(value).toISOString()),
);

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

const partContentFields = ['text', 'raw', 'url', 'data'] as const;

const partSchema: z.core.$ZodType<Part> = z.pipe(
  z
    .object({
      text: z.optional(z.string()),
      raw: z.optional(base64Bytes),
      url: z.optional(httpUrl),
      data: z.optional(jsonValue),
      metadata: z.optional(jsonObject),
      filename: optionalString,
      mediaType: optionalString,
    })
    .check(
      z.superRefine((part, context) => {
        const present = partContentFields.filter((field) => part[field] !== undefined);
        if (present.length !== 1) {
          context.addIssue({
            code: 'custom',
            message:
              present.length === 0
                ? 'A part needs exactly one of text, raw, url or data; none was given'
                : `A part needs exactly one of text, raw, url or data; got ${present.join(' and ')}`,
          });
        }
      }),
    ),
  z.transform((part): Part => {
    const common = {
      ...(part.metadata !== undefined && { metadata: part.metadata }),
      ...(part.filename !== undefined && { filename: part.filename }),
      ...(part.mediaType !== undefined && { mediaType: part.mediaType }),
    };
    if (part.text !== undefined) return { text: part.text, ...common };
    if (part.raw !== undefined) return { raw: part.raw, ...common };
    if (part.url !== undefined) return { url: part.url, ...common };
    return { data: part.data as JsonValue, ...common };
  }),
);

export const messageSchema: z.core.$ZodType<Message> = z.object({
  messageId: requiredId,
  role: roleSchema,
  parts: z.array(partSchema).check(z.minLength(1, 'At least one part is required')),
  contextId: optionalId,
  taskId: optionalId,
  metadata: z.optional(jsonObject),
  extensions: z.optional(z.array(z.string())),
  referenceTaskIds: z.optional(z.array(z.string())),
});

const authenticationSchema: z.core.$ZodType<AuthenticationInfo> = z.object({
  scheme: z.string().check(z.minLength(1, 'Must be an HTTP authentication scheme such as Bearer')),
  credentials: optionalString,
});

/** The push config fields shared by CreateTaskPushNotificationConfig and the inline SendMessage one. */
export const pushConfigFields = {
  tenant: optionalString,
  id: optionalId,
  url: httpUrl,
  token: optionalString,
  authentication: z.optional(authenticationSchema),
};

const sendMessageConfigurationSchema: z.core.$ZodType<SendMessageConfiguration> = z.object({
  acceptedOutputModes: z.optional(z.array(z.string())),
  taskPushNotificationConfig: z.optional(z.object({ ...pushConfigFields, taskId: optionalId })),
  historyLength: z.optional(historyLength),
  returnImmediately: z.optional(z.boolean()),
  // A2A 1.1; the 1.0 methods ignore it as an unknown field (docs/protocol.md §16).
  ifGenerationMatch: z.optional(generation),
});

// ---------------------------------------------------------------------------------------------
// Method params
// ---------------------------------------------------------------------------------------------

export interface SendMessageParams {
  tenant?: string;
  message: Message;
  configuration?: SendMessageConfiguration;
  metadata?: JsonObject;
}

export const sendMessageParamsSchema: z.core.$ZodType<SendMessageParams> = z.object({
  tenant: optionalString,
  message: messageSchema,
  configuration: z.optional(sendMessageConfigurationSchema),
  metadata: z.optional(jsonObject),
});

export interface GetTaskParams {
  tenant?: string;
  id: string;
  historyLength?: number;
  /** A2A 1.1: hold the answer until the task's generation is past this one (docs/protocol.md §16). */
  currentGeneration?: number;
}

export const getTaskParamsSchema: z.core.$ZodType<GetTaskParams> = z.object({
  tenant: optionalString,
  id: requiredId,
  historyLength: z.optional(historyLength),
  currentGeneration: z.optional(generation),
});

export interface ListTasksParams {
  tenant?: string;
  contextId?: string;
  status?: TaskState;
  /** 1..100, default 50. */
  pageSize: number;
  /** Opaque cursor; the use case validates it. */
  pageToken?: string;
  historyLength?: number;
  /** Normalized to `YYYY-MM-DDTHH:mm:ss.sssZ`. */
  statusTimestampAfter?: string;
  includeArtifacts: boolean;
}

export const listTasksParamsSchema: z.core.$ZodType<ListTasksParams> = z.object({
  tenant: optionalString,
  contextId: optionalString,
  status: z.optional(taskStateFilter),
  pageSize: z._default(pageSize, 50),
  pageToken: optionalString,
  historyLength: z.optional(historyLength),
  statusTimestampAfter: z.optional(timestamp),
  includeArtifacts: z._default(z.boolean(), false),
});

export interface CancelTaskParams {
  tenant?: string;
  id: string;
  metadata?: JsonObject;
}

export const cancelTaskParamsSchema: z.core.$ZodType<CancelTaskParams> = z.object({
  tenant: optionalString,
  id: requiredId,
  metadata: z.optional(jsonObject),
});

export interface SubscribeToTaskParams {
  tenant?: string;
  id: string;
}

export const subscribeToTaskParamsSchema: z.core.$ZodType<SubscribeToTaskParams> = z.object({
  tenant: optionalString,
  id: requiredId,
});

/** v1.0 flat TaskPushNotificationConfig (#1500); `id` is assigned by the server when absent. */
export interface CreateTaskPushNotificationConfigParams {
  tenant?: string;
  id?: string;
  taskId: string;
  url: string;
  token?: string;
  authentication?: AuthenticationInfo;
}

export const createTaskPushNotificationConfigParamsSchema: z.core.$ZodType<CreateTaskPushNotificationConfigParams> =
  z.object({ ...pushConfigFields, taskId: requiredId });

export interface TaskPushNotificationConfigRef {
  tenant?: string;
  taskId: string;
  id: string;
}

const pushConfigRefSchema: z.core.$ZodType<TaskPushNotificationConfigRef> = z.object({
  tenant: optionalString,
  taskId: requiredId,
  id: requiredId,
});

export const getTaskPushNotificationConfigParamsSchema = pushConfigRefSchema;
export const deleteTaskPushNotificationConfigParamsSchema = pushConfigRefSchema;

export interface ListTaskPushNotificationConfigsParams {
  tenant?: string;
  taskId: string;
  pageSize?: number;
  pageToken?: string;
}

export const listTaskPushNotificationConfigsParamsSchema: z.core.$ZodType<ListTaskPushNotificationConfigsParams> =
  z.object({
    tenant: optionalString,
    taskId: requiredId,
    pageSize: z.optional(pageSize),
    pageToken: optionalString,
  });

export interface GetExtendedAgentCardParams {
  tenant?: string;
}

export const getExtendedAgentCardParamsSchema: z.core.$ZodType<GetExtendedAgentCardParams> = z.object({
  tenant: optionalString,
});

/** Every A2A v1.0 JSON-RPC method and its params schema. */
export const a2aParamsSchemas = {
  SendMessage: sendMessageParamsSchema,
  SendStreamingMessage: sendMessageParamsSchema,
  GetTask: getTaskParamsSchema,
  ListTasks: listTasksParamsSchema,
  CancelTask: cancelTaskParamsSchema,
  SubscribeToTask: subscribeToTaskParamsSchema,
  CreateTaskPushNotificationConfig: createTaskPushNotificationConfigParamsSchema,
  GetTaskPushNotificationConfig: getTaskPushNotificationConfigParamsSchema,
  ListTaskPushNotificationConfigs: listTaskPushNotificationConfigsParamsSchema,
  DeleteTaskPushNotificationConfig: deleteTaskPushNotificationConfigParamsSchema,
  GetExtendedAgentCard: getExtendedAgentCardParamsSchema,
} as const;

export type A2aMethodName = keyof typeof a2aParamsSchemas;

/**
 * The push-deliveries extension's method (docs/protocol.md §7): the caller's record of webhook
 * deliveries of one task, optionally of one config, paged like ListTaskPushNotificationConfigs.
 */
export interface ListTaskPushDeliveriesParams {
  tenant?: string;
  taskId: string;
  configId?: string;
  pageSize?: number;
  pageToken?: string;
}

export const listTaskPushDeliveriesParamsSchema: z.core.$ZodType<ListTaskPushDeliveriesParams> = z.object({
  tenant: optionalString,
  taskId: requiredId,
  configId: optionalId,
  pageSize: z.optional(pageSize),
  pageToken: optionalString,
});

/** Methods of this server's own A2A extensions, served next to the v1.0 table. */
export const extensionParamsSchemas = {
  ListTaskPushDeliveries: listTaskPushDeliveriesParamsSchema,
} as const;

// ---------------------------------------------------------------------------------------------
// Violations
// ---------------------------------------------------------------------------------------------

/** Enough to fix a request; a flood of bad parts must not turn into a huge error body. */
const maxViolations = 20;

/** `['message', 'parts', 0, 'text']` → `message.parts[0].text`; the params object itself is `params`. */
export const formatFieldPath = (path: readonly PropertyKey[]): string => {
  let field = '';
  for (const segment of path) {
    if (typeof segment === 'number') field += `[${segment}]`;
    else field += field === '' ? String(segment) : `.${String(segment)}`;
  }
  return field === '' ? 'params' : field;
};

/** An issue on an absent value says "Required" rather than the validator's wording. */
const describeIssue = (issue: z.core.$ZodIssue): string =>
  'input' in issue && issue.input === undefined ? 'Required' : issue.message;

export const toFieldViolations = (issues: readonly z.core.$ZodIssue[]): FieldViolation[] =>
  issues
    .slice(0, maxViolations)
    .map((issue) => ({ field: formatFieldPath(issue.path), description: describeIssue(issue) }));

/**
 * Normalizes keys and parses request params with a method's schema; absent params are `{}`.
 * Throws InvalidParamsError naming every violated field (camelCase paths).
 */
export const parseParams = <T>(schema: z.core.$ZodType<T>, params: unknown): T => {
  const result = z.safeParse(schema, normalizeParamKeys(params ?? {}), { reportInput: true });
  if (!result.success) throw new InvalidParamsError(toFieldViolations(result.error.issues));
  return result.data;
};
