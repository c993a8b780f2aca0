import { parseArgs } from 'node:util';
import {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { table } from '../text-table.ts';

/**
 * `npx a2a …` — a command-line A2A v1.0 client over the official `@a2a-js/sdk` client
 * (decision 0016). It discovers any server from its agent card, so it works against this server
 * (the local stack or a deployment) and against others. Human-readable output by default,
 * `--json` (the v1.0 ProtoJSON the server sends; one object per line for streams) for scripts.
 */

export const usage = `Usage: npx a2a <command> [options]

Commands:
  card                                 the agent card (discovery)
  send <text…>                         send a message and wait for the answer (blocking)
       --stream                        print live progress from the SSE stream instead
       --return-immediately            answer at once with the task as it is (non-blocking)
       --context <id>  --task <id>     continue a conversation / a task (multi-turn)
       --message-id <id>               the message's id (default a random UUID)
       --push-url <url> [--push-token <t>]   register a webhook with the message
  get <taskId> [--history <n>]         a task: state, status message, artifacts
  list [--context <id>] [--status <state>] [--page-size <n>] [--page-token <t>] [--history <n>]
                                       your tasks, most recent first
  cancel <taskId>                      request cancellation
  subscribe <taskId>                   follow a task's updates live until it ends (SSE)
  push set <taskId> <url> [--id <configId>] [--push-token <t>] [--auth-scheme <s> --auth-credentials <c>]
  push get <taskId> <configId>
  push list <taskId>
  push delete <taskId> <configId>
  push deliveries <taskId> [--id <configId>] [--page-size <n>] [--page-token <t>]
                                       webhook deliveries and their attempts (servers that
                                       declare the push-deliveries extension, as this one does)

Options:
  --url <url>        the server: a base URL whose /.well-known/agent-card.json is the card
                     (e.g. http://127.0.0.1:8787 or …/agents/<profile>), or the card's own URL
                     (ends in .json). Default $A2A_URL, else http://127.0.0.1:8787
                     A server whose card is only v0.3-shaped is spoken to in A2A v0.3.
  --token <token>    bearer token sent as Authorization: Bearer (default $A2A_TOKEN)
  --json             machine-readable output: v1.0 JSON; streams print one JSON object per line
  -h, --help         this help

Text "-" as the message reads it from standard input.
Exit codes: 0 done; 1 an A2A error, a failure, or a send whose task ended FAILED or REJECTED; 2 bad usage.`;

export interface ClientIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  /** Standard input, for `send -`. */
  readonly stdin?: () => Promise<string>;
}

class UsageError extends Error {
  override readonly name = 'UsageError';
}

const defaultUrl = 'http://127.0.0.1:8787';

const optionSpec = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean', default: false },
  stream: { type: 'boolean', default: false },
  'return-immediately': { type: 'boolean', default: false },
  'message-id': { type: 'string' },
  context: { type: 'string' },
  task: { type: 'string' },
  history: { type: 'string' },
  status: { type: 'string' },
  'page-size': { type: 'string' },
  'page-token': { type: 'string' },
  id: { type: 'string' },
  'push-url': { type: 'string' },
  'push-token': { type: 'string' },
  'auth-scheme': { type: 'string' },
  'auth-credentials': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof optionSpec; allowPositionals: true }>>['values'];

const parseCommandLine = (argv: readonly string[]): { positionals: string[]; values: Values } => {
  try {
    return parseArgs({ args: [...argv], options: optionSpec, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
};

const integer = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new UsageError(`--${name} must be a whole number`);
  return number;
};

// ---- connecting

/** Where the agent card is: a `.json` URL is the card itself, anything else a base URL. */
export const cardUrlOf = (url: string): string => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url must be an absolute http(s) URL, not "${url}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`--url must be an http(s) URL, not "${url}"`);
  }
  if (parsed.pathname.endsWith('.json')) return parsed.href;
  parsed.pathname = `${parsed.pathname.replace(/\/+$/, '')}/.well-known/agent-card.json`;
  return parsed.href;
};

/** `fetch` that adds the bearer token unless the request already names an Authorization. */
const withBearer =
  (token: string | undefined): typeof fetch =>
  (input, init) => {
    if (!token) return fetch(input, init);
    const headers = new Headers(init?.headers);
    if (!headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };

const legacyCompat = { enabled: true };

const connect = async (values: Values, env: NodeJS.ProcessEnv): Promise<Client> => {
  const fetchImpl = withBearer(values.token ?? env.A2A_TOKEN);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      // legacyCompat: a card that is only v0.3-shaped selects the SDK's v0.3 transport; a card with
      // v1.0 `supportedInterfaces` (this server's, which also carries the v0.3 fields) stays on v1.0.
      transports: [
        new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
        new RestTransportFactory({ fetchImpl, legacyCompat }),
      ],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat }),
    }),
  );
  return factory.createFromUrl(cardUrlOf(values.url ?? env.A2A_URL ?? defaultUrl), '');
};

// ---- human-readable output

type Json = Record<string, unknown>;
type PartJson = {
  text?: string;
  data?: unknown;
  url?: string;
  raw?: string;
  filename?: string;
  mediaType?: string;
};
type MessageJson = { role?: string; parts?: PartJson[] };
type ArtifactJson = { artifactId?: string; name?: string; parts?: PartJson[] };
type StatusJson = { state?: string; message?: MessageJson; timestamp?: string };
type TaskJson = {
  id: string;
  contextId?: string;
  status?: StatusJson;
  artifacts?: ArtifactJson[];
  history?: MessageJson[];
};

/** `TASK_STATE_COMPLETED` → `COMPLETED`. */
export const stateName = (state: string | undefined): string =>
  (state ?? 'UNSPECIFIED').replace(/^TASK_STATE_/, '');

const partText = (part: PartJson): string => {
  if (typeof part.text === 'string') return part.text;
  if (part.data !== undefined) return JSON.stringify(part.data);
  const label = [part.filename, part.mediaType].filter(Boolean).join(', ');
  return `[file${label ? ` ${label}` : ''}${part.url ? ` ${part.url}` : ''}]`;
};

const partsText = (parts: readonly PartJson[] | undefined): string => (parts ?? []).map(partText).join(' ');

const roleName = (role: string | undefined): string => (role ?? '').replace(/^ROLE_/, '').toLowerCase();

const formatTask = (task: TaskJson): string[] => {
  const lines = [`task     ${task.id}`, `state    ${stateName(task.status?.state)}`];
  if (task.contextId) lines.push(`context  ${task.contextId}`);
  if (task.status?.timestamp) lines.push(`updated  ${task.status.timestamp}`);
  if (task.status?.message) {
    lines.push(`message  ${roleName(task.status.message.role)}: ${partsText(task.status.message.parts)}`);
  }
  for (const artifact of task.artifacts ?? []) {
    lines.push(`artifact ${artifact.name ?? artifact.artifactId ?? ''}: ${partsText(artifact.parts)}`);
  }
  for (const message of task.history ?? []) {
    lines.push(`history  ${roleName(message.role)}: ${partsText(message.parts)}`);
  }
  return lines;
};

const clock = (): string => new Date().toISOString().slice(11, 19);

/** One progress line per stream event. */
export const formatEvent = (event: Json): string => {
  if ('task' in event) {
    const task = event.task as TaskJson;
    return `${clock()}  task      ${task.id}  ${stateName(task.status?.state)}  (context ${task.contextId ?? '-'})`;
  }
  if ('statusUpdate' in event) {
    const update = event.statusUpdate as { status?: StatusJson };
    const message = update.status?.message;
    return `${clock()}  status    ${stateName(update.status?.state)}${message ? `  ${roleName(message.role)}: ${partsText(message.parts)}` : ''}`;
  }
  if ('artifactUpdate' in event) {
    const update = event.artifactUpdate as { artifact?: ArtifactJson; append?: boolean; lastChunk?: boolean };
    const name = update.artifact?.name ?? update.artifact?.artifactId ?? '';
    const marks = [update.append ? 'append' : '', update.lastChunk ? 'last chunk' : ''].filter(Boolean);
    return `${clock()}  artifact  ${name}: ${partsText(update.artifact?.parts)}${marks.length ? `  (${marks.join(', ')})` : ''}`;
  }
  if ('message' in event) {
    const message = event.message as MessageJson;
    return `${clock()}  message   ${roleName(message.role)}: ${partsText(message.parts)}`;
  }
  return `${clock()}  ${JSON.stringify(event)}`;
};

type PushJson = {
  taskId?: string;
  id?: string;
  url?: string;
  token?: string;
  authentication?: { scheme?: string };
};

/** This server's push-deliveries extension (decision 0025); other servers may declare it too. */
export const pushDeliveriesUri = 'urn:a2a-serverless:ext:push-deliveries:v1';

type AttemptJson = {
  attempt?: number;
  timestamp?: string;
  outcome?: string;
  httpStatus?: number;
  error?: string;
  nextAttemptTimestamp?: string;
};
type DeliveryJson = { configId?: string; revision?: number; state?: string; attempts?: AttemptJson[] };
type CardJson = {
  supportedInterfaces?: { url?: string; protocolBinding?: string; protocolVersion?: string }[];
  capabilities?: { extensions?: { uri?: string }[] };
};

/**
 * An extension method is outside the SDK client's method set, so it is one JSON-RPC POST to the
 * card's JSON-RPC interface, with the bearer token and the extension activated by header.
 */
const callExtension = async (context: Context, method: string, params: Json): Promise<Json> => {
  const card = AgentCard.toJSON(await (await context.client()).getAgentCard()) as CardJson;
  if (!(card.capabilities?.extensions ?? []).some((extension) => extension.uri === pushDeliveriesUri)) {
    throw new Error(`the agent does not declare the push-deliveries extension (${pushDeliveriesUri})`);
  }
  const endpoint = (card.supportedInterfaces ?? []).find(
    (entry) => entry.protocolBinding === 'JSONRPC' && entry.protocolVersion?.startsWith('1.'),
  )?.url;
  if (!endpoint) throw new Error('the agent card declares no A2A v1.0 JSON-RPC interface');
  const response = await withBearer(context.values.token ?? context.io.env.A2A_TOKEN)(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'a2a-version': '1.0',
      'a2a-extensions': pushDeliveriesUri,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  if (!response.ok) throw new Error(`${method}: HTTP ${response.status}`);
  const answer = (await response.json()) as { result?: Json; error?: { code?: number; message?: string } };
  if (answer.error) {
    throw Object.assign(new Error(answer.error.message ?? 'error'), {
      name: 'A2AError',
      envelopeCode: answer.error.code,
    });
  }
  return answer.result ?? {};
};

const formatPush = (config: PushJson): string =>
  `${config.id ?? '-'}  ${config.url ?? '-'}${config.token ? '  (token set)' : ''}${config.authentication?.scheme ? `  auth ${config.authentication.scheme}` : ''}`;

// ---- commands

interface Context {
  readonly values: Values;
  readonly io: ClientIo;
  readonly client: () => Promise<Client>;
}

const print = (context: Context, json: unknown, human: () => string[]): void => {
  if (context.values.json) context.io.out(JSON.stringify(json, null, 2));
  else for (const line of human()) context.io.out(line);
};

const follow = async (
  context: Context,
  events: AsyncIterable<StreamResponse>,
): Promise<TaskJson | undefined> => {
  let last: TaskJson | undefined;
  for await (const event of events) {
    const json = StreamResponse.toJSON(event) as Json;
    context.io.out(context.values.json ? JSON.stringify(json) : formatEvent(json));
    if ('task' in json) last = json.task as TaskJson;
    if ('statusUpdate' in json && last) {
      last = { ...last, status: (json.statusUpdate as { status?: StatusJson }).status ?? {} };
    }
  }
  return last;
};

const endedBadly = (task: TaskJson | undefined): boolean =>
  ['TASK_STATE_FAILED', 'TASK_STATE_REJECTED'].includes(task?.status?.state ?? '');

const sendCommand = async (words: readonly string[], context: Context): Promise<number> => {
  const { values, io } = context;
  if (words.length === 0) throw new UsageError('send needs the message text');
  let text = words.join(' ');
  if (text === '-') {
    if (!io.stdin) throw new UsageError('no standard input to read');
    text = (await io.stdin()).replace(/\n$/, '');
  }
  if (values['auth-scheme'] || values['auth-credentials']) {
    throw new UsageError('--auth-scheme/--auth-credentials belong to push set');
  }
  if (values['push-token'] && !values['push-url']) throw new UsageError('--push-token needs --push-url');
  const request = SendMessageRequest.fromJSON({
    message: {
      messageId: values['message-id'] ?? crypto.randomUUID(),
      role: 'ROLE_USER',
      parts: [{ text }],
      ...(values.context ? { contextId: values.context } : {}),
      ...(values.task ? { taskId: values.task } : {}),
    },
    configuration: {
      ...(values['return-immediately'] ? { returnImmediately: true } : {}),
      ...(values['push-url']
        ? {
            taskPushNotificationConfig: {
              url: values['push-url'],
              ...(values['push-token'] ? { token: values['push-token'] } : {}),
            },
          }
        : {}),
    },
  });
  const client = await context.client();
  if (values.stream) {
    if (values['return-immediately'])
      throw new UsageError('--stream and --return-immediately exclude each other');
    return endedBadly(await follow(context, client.sendMessageStream(request))) ? 1 : 0;
  }
  const result = await client.sendMessage(request);
  if ('status' in result) {
    const task = Task.toJSON(result as Task) as TaskJson;
    print(context, task, () => formatTask(task));
    return endedBadly(task) ? 1 : 0;
  }
  const message = Message.toJSON(result as Message) as MessageJson;
  print(context, { message }, () => [`message  ${roleName(message.role)}: ${partsText(message.parts)}`]);
  return 0;
};

const needTask = (taskId: string | undefined, command: string): string => {
  if (!taskId) throw new UsageError(`${command} needs a task id`);
  return taskId;
};

const getCommand = async (taskId: string | undefined, context: Context): Promise<number> => {
  const historyLength = integer('history', context.values.history);
  const task = await (await context.client()).getTask(
    GetTaskRequest.fromJSON({
      id: needTask(taskId, 'get'),
      ...(historyLength !== undefined ? { historyLength } : {}),
    }),
  );
  const json = Task.toJSON(task) as TaskJson;
  print(context, json, () => formatTask(json));
  return 0;
};

const statusFilter = (status: string | undefined): string | undefined => {
  if (status === undefined) return undefined;
  const name = status.toUpperCase().replace(/-/g, '_');
  return name.startsWith('TASK_STATE_') ? name : `TASK_STATE_${name}`;
};

const listCommand = async (context: Context): Promise<number> => {
  const { values } = context;
  const pageSize = integer('page-size', values['page-size']);
  const historyLength = integer('history', values.history);
  const status = statusFilter(values.status);
  const response = await (await context.client()).listTasks(
    ListTasksRequest.fromJSON({
      ...(values.context ? { contextId: values.context } : {}),
      ...(status ? { status } : {}),
      ...(pageSize !== undefined ? { pageSize } : {}),
      ...(historyLength !== undefined ? { historyLength } : {}),
      ...(values['page-token'] ? { pageToken: values['page-token'] } : {}),
    }),
  );
  const json = ListTasksResponse.toJSON(response) as {
    tasks?: TaskJson[];
    nextPageToken?: string;
    totalSize?: number;
  };
  print(context, json, () => {
    const tasks = json.tasks ?? [];
    const lines = table(
      ['TASK', 'STATE', 'UPDATED', 'CONTEXT'],
      tasks.map((task) => [
        task.id,
        stateName(task.status?.state),
        task.status?.timestamp ?? '-',
        task.contextId ?? '-',
      ]),
    );
    lines.push(`${tasks.length} task(s)${json.totalSize !== undefined ? ` of ${json.totalSize}` : ''}`);
    if (json.nextPageToken) lines.push(`more: --page-token ${json.nextPageToken}`);
    return lines;
  });
  return 0;
};

const cancelCommand = async (taskId: string | undefined, context: Context): Promise<number> => {
  const task = await (await context.client()).cancelTask(
    CancelTaskRequest.fromJSON({ id: needTask(taskId, 'cancel') }),
  );
  const json = Task.toJSON(task) as TaskJson;
  print(context, json, () => formatTask(json));
  return 0;
};

const subscribeCommand = async (taskId: string | undefined, context: Context): Promise<number> => {
  const id = needTask(taskId, 'subscribe');
  const client = await context.client();
  try {
    await follow(context, client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id })));
  } catch (error) {
    // A2A answers UnsupportedOperation for a task that has already ended.
    if (error instanceof UnsupportedOperationError && !context.values.json) {
      context.io.err(`Task ${id} has already ended: there is nothing left to follow (see: a2a get ${id}).`);
    }
    throw error;
  }
  return 0;
};

const pushCommand = async (
  action: string | undefined,
  [taskId, second, ...rest]: readonly string[],
  context: Context,
): Promise<number> => {
  const { values } = context;
  if (rest.length > 0) throw new UsageError(`Unexpected argument for push ${action}`);
  const needConfig = (configId: string | undefined): string => {
    if (!configId) throw new UsageError(`push ${action} needs a task id and a config id`);
    return configId;
  };
  switch (action) {
    case 'set': {
      if (!second) throw new UsageError('push set needs a task id and a webhook URL');
      if (Boolean(values['auth-scheme']) !== Boolean(values['auth-credentials'])) {
        throw new UsageError('--auth-scheme and --auth-credentials go together');
      }
      const config = await (await context.client()).createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({
          taskId: needTask(taskId, 'push set'),
          url: second,
          ...(values.id ? { id: values.id } : {}),
          ...(values['push-token'] ? { token: values['push-token'] } : {}),
          ...(values['auth-scheme']
            ? { authentication: { scheme: values['auth-scheme'], credentials: values['auth-credentials'] } }
            : {}),
        }),
      );
      const json = TaskPushNotificationConfig.toJSON(config) as PushJson;
      print(context, json, () => [`push config set for task ${json.taskId}`, formatPush(json)]);
      return 0;
    }
    case 'get': {
      const config = await (await context.client()).getTaskPushNotificationConfig(
        GetTaskPushNotificationConfigRequest.fromJSON({
          taskId: needTask(taskId, 'push get'),
          id: needConfig(second),
        }),
      );
      const json = TaskPushNotificationConfig.toJSON(config) as PushJson;
      print(context, json, () => [formatPush(json)]);
      return 0;
    }
    case 'list': {
      if (second !== undefined) throw new UsageError('push list takes only a task id');
      const response = await (await context.client()).listTaskPushNotificationConfig(
        ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: needTask(taskId, 'push list') }),
      );
      const json = ListTaskPushNotificationConfigsResponse.toJSON(response) as { configs?: PushJson[] };
      print(context, json, () => {
        const configs = json.configs ?? [];
        return [
          ...table(
            ['ID', 'URL', 'TOKEN', 'AUTH'],
            configs.map((config) => [
              config.id ?? '-',
              config.url ?? '-',
              config.token ? 'set' : '-',
              config.authentication?.scheme ?? '-',
            ]),
          ),
          `${configs.length} push config(s)`,
        ];
      });
      return 0;
    }
    case 'delete': {
      const configId = needConfig(second);
      await (await context.client()).deleteTaskPushNotificationConfig(
        DeleteTaskPushNotificationConfigRequest.fromJSON({
          taskId: needTask(taskId, 'push delete'),
          id: configId,
        }),
      );
      print(context, { deleted: true, taskId, id: configId }, () => [
        `deleted push config ${configId} of task ${taskId}`,
      ]);
      return 0;
    }
    case 'deliveries': {
      if (second !== undefined)
        throw new UsageError('push deliveries takes only a task id (--id for one config)');
      const json = await callExtension(context, 'ListTaskPushDeliveries', {
        taskId: needTask(taskId, 'push deliveries'),
        ...(values.id ? { configId: values.id } : {}),
        ...(values['page-size'] ? { pageSize: integer('page-size', values['page-size']) } : {}),
        ...(values['page-token'] ? { pageToken: values['page-token'] } : {}),
      });
      print(context, json, () => {
        const deliveries = (json.deliveries ?? []) as DeliveryJson[];
        return [
          ...table(
            ['CONFIG', 'REV', '#', 'OUTCOME', 'HTTP', 'TIME', 'NEXT'],
            deliveries.flatMap((delivery) =>
              (delivery.attempts ?? []).map((attempt, index, attempts) => [
                delivery.configId ?? '-',
                String(delivery.revision ?? '-'),
                String(attempt.attempt ?? '-'),
                attempt.outcome ?? '-',
                attempt.httpStatus !== undefined ? String(attempt.httpStatus) : (attempt.error ?? '-'),
                attempt.timestamp ?? '-',
                attempt.nextAttemptTimestamp ??
                  (delivery.state === 'GAVE_UP' && index === attempts.length - 1 ? 'gave up' : '-'),
              ]),
            ),
          ),
          `${deliveries.length} deliveries`,
          ...(json.nextPageToken ? [`more: --page-token ${json.nextPageToken}`] : []),
        ];
      });
      return 0;
    }
    default:
      throw new UsageError(
        `Unknown push command: ${action ?? '(none)'}; use set, get, list, delete or deliveries`,
      );
  }
};

const cardCommand = async (context: Context): Promise<number> => {
  const card = AgentCard.toJSON(await (await context.client()).getAgentCard()) as {
    name?: string;
    description?: string;
    version?: string;
    supportedInterfaces?: { url?: string; protocolBinding?: string; protocolVersion?: string }[];
    capabilities?: Json;
    skills?: { id?: string; name?: string }[];
  };
  print(context, card, () => [
    `${card.name ?? '(unnamed)'}${card.version ? ` ${card.version}` : ''}: ${card.description ?? ''}`,
    ...(card.supportedInterfaces ?? []).map(
      (entry) =>
        `interface ${entry.protocolBinding ?? '?'} ${entry.protocolVersion ?? ''} ${entry.url ?? ''}`,
    ),
    `capabilities ${JSON.stringify(card.capabilities ?? {})}`,
    ...(card.skills ?? []).map((skill) => `skill ${skill.id ?? '-'}: ${skill.name ?? ''}`),
  ]);
  return 0;
};

/** The SDK's errors carry the JSON-RPC code and the server's message; nothing else is shown. */
const describeError = (error: unknown): { name: string; code?: number; message: string } => {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const code = (error as { envelopeCode?: unknown }).envelopeCode;
  const cause = (error as { cause?: { code?: string } }).cause;
  const message = cause?.code ? `${error.message} (${cause.code})` : error.message;
  return { name: error.name, ...(typeof code === 'number' ? { code } : {}), message };
};

/** Runs one client command; returns the exit code. Never throws. */
export const runClient = async (argv: readonly string[], io: ClientIo): Promise<number> => {
  let json = false;
  try {
    const { positionals, values } = parseCommandLine(argv);
    json = values.json ?? false;
    if (values.help || positionals.length === 0) {
      (values.help ? io.out : io.err)(usage);
      return values.help ? 0 : 2;
    }
    let client: Promise<Client> | undefined;
    const context: Context = {
      values,
      io,
      client: () => {
        client ??= connect(values, io.env);
        return client;
      },
    };
    const [command, ...rest] = positionals;
    const single = (): string | undefined => {
      if (rest.length > 1) throw new UsageError(`Unexpected argument for ${command}`);
      return rest[0];
    };
    switch (command) {
      case 'card':
        single();
        return await cardCommand(context);
      case 'send':
        return await sendCommand(rest, context);
      case 'get':
        return await getCommand(single(), context);
      case 'list':
        if (rest.length > 0) throw new UsageError('list takes no arguments');
        return await listCommand(context);
      case 'cancel':
        return await cancelCommand(single(), context);
      case 'subscribe':
        return await subscribeCommand(single(), context);
      case 'push':
        return await pushCommand(rest[0], rest.slice(1), context);
      default:
        throw new UsageError(`Unknown command: ${command}`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n\n${usage}`);
      return 2;
    }
    const described = describeError(error);
    if (json) io.out(JSON.stringify({ error: described }, null, 2));
    else
      io.err(
        `a2a: ${described.name}${described.code !== undefined ? ` (${described.code})` : ''}: ${described.message}`,
      );
    return 1;
  }
};

/** The `bin/a2a.mjs` entry point. */
export const main = (argv: readonly string[]): Promise<number> =>
  runClient(argv, {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    env: process.env,
    stdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  });
