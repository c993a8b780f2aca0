import { randomUUID } from 'node:crypto';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { assignedItem, type UpdateRequest } from '../../shared/adapters/dynamodb/write-plan.ts';
import { addSdkClientHook, type SdkClient } from '../../shared/adapters/sdk-clients.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { rpc, type SseFrame } from '../conformance/sse.ts';
import type { ReceivedPost } from './webhook-receiver.ts';

/**
 * The fault proofs' driver and judge (docs/reliability.md): drives a mix of tasks through the local
 * stack while three channels watch — an SSE stream per task, a GetTask poller and a webhook — and
 * checks what they saw against the revisions the writers really committed, recorded at the SDK.
 */

/** Profiles the proofs drive: the TCK's scripted scenarios, and a provider that always fails. */
const faultProofInput = {
  privacy: { level: 'metadata' },
  providers: {
    tck: { type: 'scripted', behavior: 'tck' },
    broken: { type: 'scripted', behavior: 'fail' },
    echo: { type: 'scripted', behavior: 'echo' },
    slow: { type: 'scripted', behavior: 'slow' },
  },
  profiles: {
    default: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'], privacyLevel: 'full' },
    failing: {
      name: 'Failing',
      description: 'Its provider always fails',
      providers: ['broken'],
      privacyLevel: 'full',
    },
    echo: {
      name: 'Echo',
      description: 'Echoes the text it is sent',
      providers: ['echo'],
      privacyLevel: 'full',
    },
    slow: {
      name: 'Slow',
      description: 'Echoes after two seconds',
      providers: ['slow'],
      privacyLevel: 'full',
    },
  },
  webhooks: { retryBaseSeconds: 1 },
  // Every driven task holds an SSE stream (and re-attaches) at once, or a blocking send: one caller, 20+ of each.
  limits: { streamsPerCaller: 200, blockingSendsPerCaller: 200 },
};
export const faultProofConfig = parseConfig(faultProofInput);

export type TaskKind =
  | 'complete'
  | 'artifact'
  | 'multiTurn'
  | 'canceled'
  | 'failed'
  | 'rejected'
  | 'toolCall'
  | 'delegate'
  | 'delegateParked';

/** The mix: every kind, multi-turn and cancel through INPUT_REQUIRED. */
export const defaultMix: readonly TaskKind[] = [
  'artifact',
  'multiTurn',
  'complete',
  'canceled',
  'artifact',
  'failed',
  'multiTurn',
  'rejected',
];

/** The kind of the `index`th task of a mix. */
export const kindFor = (index: number, mix: readonly TaskKind[] = defaultMix): TaskKind =>
  mix[index % mix.length]!;

/**
 * The fault proofs' profiles, and three that act (the soak, test/support/soak.ts):
 * - `tools`: its scripted model calls the non-idempotent `append_note` of an MCP server
 *   (test/support/mcp-test-server.ts) with the message's JSON — the `toolCall` kind, a fenced
 *   write call under the faults (I-EFFECT).
 * - `delegating`: its model sends the message's JSON to `helper` (an echo profile of the same
 *   stack, reached at `port` through its agent card) and waits in place — the `delegate` kind.
 * - `parking`: the same to `sleepy` (a profile that answers after 2 s) with no wait in place, so
 *   the run parks and is woken by the remote task's push notification at `publicUrl` — the
 *   `delegateParked` kind (docs/reliability.md "Delegated calls").
 */
export const faultProofConfigWithTools = (mcpUrl: string, port: number) => {
  const callTool = (tool: string) => ({ type: 'scripted', behavior: 'call-tool', tool }) as const;
  const cardUrl = (profileId: string) =>
    `http://127.0.0.1:${port}/agents/${profileId}/.well-known/agent-card.json`;
  return parseConfig({
    ...faultProofInput,
    publicUrl: `http://127.0.0.1:${port}`,
    providers: {
      ...faultProofInput.providers,
      noter: callTool('tools__append_note'),
      delegator: callTool('a2a__helper'),
      parker: callTool('a2a__sleepy'),
    },
    profiles: {
      ...faultProofInput.profiles,
      tools: {
        name: 'Tools',
        description: 'Adds a note through an MCP tool',
        providers: ['noter'],
        privacyLevel: 'full',
        mcp: { tools: { tools: { append_note: {} } } },
      },
      delegating: {
        name: 'Delegating',
        description: 'Asks the helper and waits for it',
        providers: ['delegator'],
        privacyLevel: 'full',
        agents: { helper: {} },
      },
      parking: {
        name: 'Parking',
        description: 'Asks a slow helper and parks until it answers',
        providers: ['parker'],
        privacyLevel: 'full',
        agents: { sleepy: {} },
      },
      helper: {
        name: 'Helper',
        description: 'Echoes for the delegating profile',
        providers: ['echo'],
        privacyLevel: 'full',
      },
      sleepy: {
        name: 'Sleepy',
        description: 'Echoes after two seconds',
        providers: ['slow'],
        privacyLevel: 'full',
      },
    },
    mcpServers: { tools: { url: mcpUrl, timeoutMs: 5_000 } },
    a2aAgents: {
      helper: { cardUrl: cardUrl('helper'), timeoutMs: 10_000 },
      sleepy: { cardUrl: cardUrl('sleepy'), timeoutMs: 10_000, waitSeconds: 0 },
    },
  });
};

/** The profiles only the delegating ones call: their tasks have no client of the drive. */
export const delegatedProfiles: ReadonlySet<string> = new Set(['helper', 'sleepy']);

/** The profile each kind of task is sent to. */
const profileOf: Record<TaskKind, string> = {
  complete: 'default',
  artifact: 'default',
  multiTurn: 'default',
  canceled: 'default',
  failed: 'failing',
  rejected: 'default',
  toolCall: 'tools',
  delegate: 'delegating',
  delegateParked: 'parking',
};

const firstMessageOf: Record<TaskKind, string> = {
  complete: 'tck-complete-task',
  artifact: 'tck-artifact-text',
  multiTurn: 'tck-input-required',
  canceled: 'tck-input-required',
  failed: 'tck-complete-task',
  rejected: 'tck-reject-task',
  toolCall: 'tool-call',
  delegate: 'delegate',
  delegateParked: 'delegate-parked',
};

export const terminalStates = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
]);

/** One state a channel showed; `revision` when the channel names it (SSE `id:`). */
export interface Sighting {
  readonly state: string;
  readonly timestamp: string;
  readonly revision?: number;
  /** When the driver saw it (its clock, ms), for the stall rule of `judgeChannels`. */
  readonly at?: number;
}

export interface Committed {
  readonly revision: number;
  readonly state: string;
  readonly timestamp: string;
}

/**
 * Every task revision written to the state table, as the SDK acknowledged it: the ground truth the
 * channels are judged by (independent of the stream, the projector and the journal). Register
 * before the handler modules load; returns the record and the step that removes the hook.
 */
export const recordCommits = (): { commits: Map<string, Committed[]>; stop: () => void } => {
  const commits = new Map<string, Committed[]>();
  const keep = (tableName: unknown, raw: unknown): void => {
    if (typeof tableName !== 'string' || !tableName.endsWith('-State') || raw === undefined) return;
    const record = raw as Record<string, unknown>;
    const item = (typeof record.sk === 'object' ? unmarshall(record as never) : record) as Record<
      string,
      unknown
    >;
    if (item.sk !== 'TASK' || typeof item.taskId !== 'string' || item.revision === undefined) return;
    const list = commits.get(item.taskId) ?? [];
    const revision = Number(item.revision);
    // A scrub rewrites a revision in place: the first write of a revision is its commit.
    if (!list.some((entry) => entry.revision === revision)) {
      list.push({ revision, state: String(item.state), timestamp: String(item.statusTimestamp) });
    }
    commits.set(item.taskId, list);
  };
  const stop = addSdkClientHook((client: SdkClient) => {
    if (client.constructor.name !== 'DynamoDBClient') return;
    // biome-ignore lint/suspicious/noExplicitAny: one middleware over the SDK's per-command types.
    (client.middlewareStack as any).add(
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      (next: any) => async (args: any) => {
        const result = await next(args);
        const input = args.input as UpdateRequest & {
          TableName?: string;
          Item?: unknown;
          TransactItems?: {
            Put?: { TableName?: string; Item?: unknown };
            Update?: UpdateRequest & { TableName?: string };
          }[];
        };
        // A task write is an update of the task row that sets the task's revision (decision 0038).
        keep(input.TableName, input.UpdateExpression ? assignedItem(input) : input.Item);
        for (const write of input.TransactItems ?? []) {
          keep(write.Put?.TableName, write.Put?.Item);
          keep(write.Update?.TableName, write.Update && assignedItem(write.Update));
        }
        return result;
      },
      { step: 'initialize', name: 'recordCommits', priority: 'low', override: true },
    );
  });
  return { commits, stop };
};

export interface TaskTrace {
  readonly index: number;
  readonly kind: TaskKind;
  taskId?: string;
  /** Each SSE stream the task had, in order: what it showed. */
  readonly streams: Sighting[][];
  /** Streams the driver dropped because they showed nothing for `streamIdleMs`. */
  readonly idleDrops: IdleDrop[];
  /** Errors the client got (injected faults reach clients too). */
  readonly errors: string[];
}

/** A stream (index into `streams`) open from `openedAt` that showed nothing new until `at`. */
export interface IdleDrop {
  readonly stream: number;
  readonly openedAt: number;
  readonly at: number;
}

export interface DriveOptions {
  readonly baseUrl: string;
  readonly webhookUrl: string;
  readonly tasks: number;
  readonly concurrency: number;
  /** The kinds of task, in turn (default `defaultMix`). */
  readonly mix?: readonly TaskKind[];
  /**
   * Drop a stream that shows nothing for this long (default 60 s); it is re-subscribed with
   * Last-Event-ID. Must exceed `stallMs` of the judge, which checks what such a stream missed.
   */
  readonly streamIdleMs?: number;
}

const defaultIdleMs = 60_000;

/** How long a client keeps re-subscribing to one task after creating it before it moves on. */
const liveBudgetMs = 240_000;

const sightingOf = (frame: SseFrame): Sighting | undefined => {
  const result = frame.data?.result as
    | {
        task?: { status?: { state?: string; timestamp?: string } };
        statusUpdate?: { status?: { state?: string; timestamp?: string } };
      }
    | undefined;
  const status = result?.task?.status ?? result?.statusUpdate?.status;
  if (status?.state === undefined) return undefined;
  return {
    state: status.state,
    timestamp: status.timestamp ?? '',
    ...(frame.id !== undefined ? { revision: Number(frame.id) } : {}),
    at: Date.now(),
  };
};

const taskIdOf = (frame: SseFrame): string | undefined =>
  ((frame.data?.result as { task?: { id?: string } } | undefined)?.task?.id as string | undefined) ??
  undefined;

/**
 * Reads one SSE answer to its end into `sightings` (the trace's last stream); returns the task id
 * its first event named. `openedAt`: a time by which the server had taken the stream's snapshot.
 */
const readStream = async (
  answer: Awaited<ReturnType<typeof rpc>>,
  sightings: Sighting[],
  trace: TaskTrace,
  idleMs: number,
  openedAt = Date.now(),
  onSighting?: (seen: Sighting) => void,
): Promise<string | undefined> => {
  if (answer.kind === 'json') {
    trace.errors.push(`json ${answer.body.error?.code ?? answer.status}`);
    return undefined;
  }
  let taskId: string | undefined;
  // A stream that shows nothing but heartbeats for this long is dropped (and re-subscribed); the
  // judge checks that it was not silent while the journal already held a revision it owed.
  let idle: NodeJS.Timeout | undefined;
  const watch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      trace.errors.push('stream idle');
      trace.idleDrops.push({ stream: trace.streams.indexOf(sightings), openedAt, at: Date.now() });
      answer.close();
    }, idleMs);
  };
  watch();
  try {
    for await (const frame of answer.frames) {
      if (frame.data !== undefined) watch();
      if (frame.data?.error) trace.errors.push(`sse ${frame.data.error.code}`);
      taskId ??= taskIdOf(frame);
      const seen = sightingOf(frame);
      if (seen) {
        sightings.push(seen);
        onSighting?.(seen);
      }
    }
  } catch (error) {
    trace.errors.push(`stream ${(error as Error).name}`);
  } finally {
    clearTimeout(idle);
  }
  return taskId;
};

/** `rpc`, with a connection that failed before any answer (a reset keep-alive socket) tried again. */
const call = async (trace: TaskTrace, ...args: Parameters<typeof rpc>): ReturnType<typeof rpc> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await rpc(...args);
    } catch (error) {
      trace.errors.push(`${args[1]} ${(error as Error).message}`);
      if (attempt >= 5) throw error;
      await new Promise((wake) => setTimeout(wake, 200 * attempt));
    }
  }
};

const lastState = (trace: TaskTrace): string | undefined => trace.streams.flat().at(-1)?.state;

const lastRevisionOf = (trace: TaskTrace): number | undefined =>
  trace.streams.flat().findLast((seen) => seen.revision !== undefined)?.revision;

const urlOf = (baseUrl: string, trace: TaskTrace): string => `${baseUrl}/agents/${profileOf[trace.kind]}`;

/**
 * The text of a task's first message: for a tool-calling kind the tool's arguments, carrying the
 * message id so the MCP server's log, or the delegated task, tells each send's call apart.
 */
const firstTextOf = (trace: TaskTrace, messageId: string): string => {
  if (trace.kind === 'toolCall') return JSON.stringify({ text: messageId });
  if (trace.kind === 'delegate' || trace.kind === 'delegateParked')
    return JSON.stringify({ message: messageId });
  return `task ${trace.index}`;
};

/** Drives one task: create by SendStreamingMessage, then (INPUT_REQUIRED) subscribe and answer or cancel. */
const driveTask = async (
  options: DriveOptions,
  trace: TaskTrace,
  onTaskId: (id: string, url: string) => void,
) => {
  const idleMs = options.streamIdleMs ?? defaultIdleMs;
  const url = urlOf(options.baseUrl, trace);
  let taskId: string | undefined;
  // An internal error before the first event (an injected fault) is answered by sending again;
  // the task it may have left behind is judged by its webhook like any other.
  for (let attempt = 1; taskId === undefined && attempt <= 3; attempt++) {
    const created: Sighting[] = [];
    trace.streams.push(created);
    const messageId = `${firstMessageOf[trace.kind]}-${randomUUID()}`;
    taskId = await readStream(
      await call(trace, url, 'SendStreamingMessage', {
        message: {
          messageId,
          role: 'ROLE_USER',
          parts: [{ text: firstTextOf(trace, messageId) }],
        },
        configuration: { taskPushNotificationConfig: { url: `${options.webhookUrl}/hook/${trace.index}` } },
      }),
      created,
      trace,
      idleMs,
    );
    if (taskId === undefined) trace.streams.pop();
  }
  if (taskId === undefined) return;
  trace.taskId = taskId;
  onTaskId(taskId, url);
  let answering: Promise<void> | undefined;
  // Re-subscribe until the task is terminal: a stream cut by a fault resumes where it was. The
  // client moves on after `liveBudgetMs` or 3 idle drops (a task still not terminal then is
  // finished by `finishChannels`). A bound in time, not in rounds: under injected throttling a
  // fresh stream often dies within seconds, and 20 rounds were gone before a run that waited in the
  // queue reached INPUT_REQUIRED (never answered) or was reaped (decision 0032).
  const giveUpAt = Date.now() + liveBudgetMs;
  while (Date.now() < giveUpAt && trace.idleDrops.length < 3 && !terminalStates.has(lastState(trace) ?? '')) {
    const sightings: Sighting[] = [];
    trace.streams.push(sightings);
    const lastRevision = lastRevisionOf(trace);
    const answer = await call(
      trace,
      url,
      'SubscribeToTask',
      { id: taskId },
      lastRevision !== undefined ? { 'Last-Event-ID': String(lastRevision) } : {},
    );
    if (answer.kind === 'json') {
      trace.errors.push(`subscribe ${answer.body.error?.code}`);
      await new Promise((wake) => setTimeout(wake, 200));
      continue;
    }
    const frames = answer.frames[Symbol.asyncIterator]();
    const first = await frames.next().catch(() => ({ done: true, value: undefined }));
    const openedAt = Date.now();
    const seen = first.done ? undefined : sightingOf(first.value as SseFrame);
    if (seen) sightings.push(seen);
    // Another request ends the interruption; the subscriber must see its result. Sent as soon as
    // the stream shows INPUT_REQUIRED, first event or later (it stays open through it), not after
    // an idle drop.
    const answerAt = (shown: Sighting | undefined) => {
      if (shown?.state === 'TASK_STATE_INPUT_REQUIRED' && answering === undefined) {
        answering = answerInterruption(trace, url, taskId).catch((error: unknown) => {
          trace.errors.push(`follow-up gave up: ${(error as Error).message}`);
        });
      }
    };
    answerAt(seen);
    await readStream(
      { ...answer, frames: iteratorAsGenerator(frames) },
      sightings,
      trace,
      idleMs,
      openedAt,
      answerAt,
    );
    await answering;
    // A stream cut by an error: a short pause, so a persistent failure is no busy loop.
    if (!terminalStates.has(lastState(trace) ?? '')) await new Promise((wake) => setTimeout(wake, 250));
  }
};

/** Ends a task's interruption: the follow-up message, or CancelTask; asked again after an internal error. */
const answerInterruption = async (trace: TaskTrace, url: string, taskId: string): Promise<void> => {
  for (let attempt = 1; attempt <= 5; attempt++) {
    const reply =
      trace.kind === 'canceled'
        ? await call(trace, url, 'CancelTask', { id: taskId })
        : await call(trace, url, 'SendMessage', {
            message: {
              messageId: `tck-artifact-text-${randomUUID()}`,
              role: 'ROLE_USER',
              taskId,
              parts: [{ text: 'more' }],
            },
            configuration: { returnImmediately: true },
          });
    const error = reply.kind === 'json' ? reply.body.error : undefined;
    if (error) trace.errors.push(`follow-up ${error.code}`);
    if (error?.code !== -32603) return;
    await new Promise((wake) => setTimeout(wake, 300 * attempt));
  }
};

async function* iteratorAsGenerator(frames: AsyncIterator<SseFrame>): AsyncGenerator<SseFrame> {
  for (;;) {
    const next = await frames.next();
    if (next.done) return;
    yield next.value;
  }
}

export interface DriveResult {
  readonly traces: TaskTrace[];
  /** GetTask answers per task id, in the order the poller got them. */
  readonly polls: Map<string, Sighting[]>;
  readonly pollErrors: number;
}

/** Runs `tasks` tasks on `concurrency` clients while a GetTask poller watches each known task to its end. */
export const driveTasks = async (options: DriveOptions): Promise<DriveResult> => {
  const traces: TaskTrace[] = Array.from({ length: options.tasks }, (_, index) => ({
    index,
    kind: kindFor(index, options.mix),
    streams: [],
    idleDrops: [],
    errors: [],
  }));
  const polls = new Map<string, Sighting[]>();
  const watching = new Map<string, string>();
  let pollErrors = 0;
  let driving = true;
  const poller = (async () => {
    while (driving || watching.size > 0) {
      for (const [taskId, url] of [...watching]) {
        const answer = await rpc(url, 'GetTask', { id: taskId }).catch(() => undefined);
        const task = answer?.kind === 'json' ? (answer.body.result as Record<string, unknown>) : undefined;
        const status = task?.status as { state?: string; timestamp?: string } | undefined;
        if (status?.state === undefined) {
          pollErrors++;
          continue;
        }
        const list = polls.get(taskId) ?? [];
        list.push({ state: status.state, timestamp: status.timestamp ?? '', at: Date.now() });
        polls.set(taskId, list);
        if (terminalStates.has(status.state)) watching.delete(taskId);
      }
      await new Promise((wake) => setTimeout(wake, 250));
    }
  })();
  let next = 0;
  const client = async (): Promise<void> => {
    while (next < traces.length) {
      const trace = traces[next++]!;
      await driveTask(options, trace, (id, url) => watching.set(id, url)).catch((error: unknown) => {
        trace.errors.push(`gave up: ${(error as Error).message}`);
      });
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));
  driving = false;
  const pollerDeadline = Date.now() + 120_000;
  const stopAt = setInterval(() => {
    if (Date.now() > pollerDeadline) watching.clear();
  }, 1_000);
  await poller;
  clearInterval(stopAt);
  return { traces, polls, pollErrors };
};

/**
 * The interruption of a task its client moved on from before the task showed it (the client's
 * `liveBudgetMs` or 3 idle drops passed while the run still waited in the queue), answered as
 * that client does when it comes back: the follow-up, or CancelTask for a `canceled` script.
 * The run reaching INPUT_REQUIRED late is a slow path under faults (a run requeued by the reaper,
 * its messages failed before their claim), not a lost task; what follows must still hold.
 */
export const answerLate = (baseUrl: string, trace: TaskTrace): Promise<void> =>
  answerInterruption(trace, urlOf(baseUrl, trace), trace.taskId!);

/**
 * After the drain, when every task has ended: each channel of the driver that did not end at a
 * terminal state looks once more. An SSE stream is re-attached with Last-Event-ID at the last
 * revision it showed — the server must send every revision after it, then close (docs/protocol.md §17;
 * test/e2e/reaped-stream.test.ts) — and the poller asks GetTask once more. A client of the live
 * drive has to move on at some point, and a task may end long after (a run reaped at its start
 * deadline, a projection retried): this look is what keeps that from counting as a lost revision,
 * while a revision the journal misses, or a re-attach that skips one, still ends the channel short
 * of the last commit for `judgeChannels` to report.
 */
export const finishChannels = async (
  options: Pick<DriveOptions, 'baseUrl' | 'concurrency' | 'streamIdleMs'>,
  driven: DriveResult,
): Promise<void> => {
  const idleMs = options.streamIdleMs ?? defaultIdleMs;
  const open = driven.traces.filter((trace) => trace.taskId !== undefined);
  const finishStream = async (trace: TaskTrace): Promise<void> => {
    if (terminalStates.has(lastState(trace) ?? '')) return;
    const url = urlOf(options.baseUrl, trace);
    const lastRevision = lastRevisionOf(trace);
    const sightings: Sighting[] = [];
    trace.streams.push(sightings);
    const answer = await call(
      trace,
      url,
      'SubscribeToTask',
      { id: trace.taskId },
      lastRevision !== undefined ? { 'Last-Event-ID': String(lastRevision) } : {},
    );
    if (answer.kind === 'json') trace.errors.push(`final subscribe ${answer.body.error?.code}`);
    else await readStream(answer, sightings, trace, idleMs);
  };
  const finishPoll = async (trace: TaskTrace): Promise<void> => {
    const taskId = trace.taskId!;
    const list = driven.polls.get(taskId) ?? [];
    if (terminalStates.has(list.at(-1)?.state ?? '')) return;
    const answer = await rpc(urlOf(options.baseUrl, trace), 'GetTask', { id: taskId }).catch(() => undefined);
    const status = (answer?.kind === 'json' ? answer.body.result?.status : undefined) as
      | { state?: string; timestamp?: string }
      | undefined;
    if (status?.state === undefined) return;
    list.push({ state: status.state, timestamp: status.timestamp ?? '', at: Date.now() });
    driven.polls.set(taskId, list);
  };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < open.length) {
      const trace = open[next++]!;
      await finishPoll(trace);
      await finishStream(trace).catch((error: unknown) => {
        trace.errors.push(`final stream: ${(error as Error).message}`);
      });
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
};

type StatusBody = { statusUpdate?: { taskId: string; status: { state: string; timestamp: string } } };

/** The webhook's status updates per task, in arrival order (every POST, duplicates included). */
export const webhookSightings = (posts: readonly ReceivedPost[]): Map<string, Sighting[]> => {
  const byTask = new Map<string, Sighting[]>();
  for (const post of posts) {
    const update = (post.body as StatusBody).statusUpdate;
    if (update === undefined) continue;
    const list = byTask.get(update.taskId) ?? [];
    list.push({ state: update.status.state, timestamp: update.status.timestamp, at: post.at });
    byTask.set(update.taskId, list);
  }
  return byTask;
};

export interface Verdict {
  readonly tasks: number;
  readonly revisions: number;
  readonly sightings: { readonly sse: number; readonly poll: number; readonly webhook: number };
  readonly webhookDuplicates: number;
  readonly violations: string[];
}

/**
 * How long an SSE stream may stay silent while the journal already holds a revision it owes (seen
 * there by the poller or the webhook) before the judge calls it stalled. Generous for a loaded
 * machine: an idle stream reads the journal every second and waits 5 s at most for a gap.
 */
export const stallMs = 30_000;

/**
 * Judges every channel against the commits: each sighting is a committed revision (same state and
 * timestamp, and the same revision when the channel names one), each channel's revisions never go
 * back, the webhook got every revision, and every channel ends at the task's last revision. A
 * stream the driver dropped as idle must not have been silent for `stallMs` while the journal held
 * a revision after the last one shown (the re-subscription would otherwise hide a stalled stream).
 */
export const judgeChannels = (input: {
  readonly commits: ReadonlyMap<string, readonly Committed[]>;
  readonly traces: readonly TaskTrace[];
  readonly polls: ReadonlyMap<string, readonly Sighting[]>;
  readonly webhook: ReadonlyMap<string, readonly Sighting[]>;
  /** Tasks whose every channel must end at the last commit (all, unless some were cut off on purpose). */
  readonly requireComplete?: (taskId: string) => boolean;
}): Verdict => {
  const violations: string[] = [];
  const counts = { sse: 0, poll: 0, webhook: 0 };
  let webhookDuplicates = 0;
  let revisions = 0;
  const judge = (
    channel: 'sse' | 'poll' | 'webhook',
    taskId: string,
    sightings: readonly Sighting[],
    committed: readonly Committed[],
    strict: boolean,
  ): number[] => {
    const seen: number[] = [];
    for (const sighting of sightings) {
      counts[channel]++;
      const match = committed.find(
        (commit) =>
          commit.state === sighting.state &&
          commit.timestamp === sighting.timestamp &&
          (sighting.revision === undefined || commit.revision === sighting.revision),
      );
      if (match === undefined) {
        violations.push(`${channel} ${taskId}: ${JSON.stringify(sighting)} was never committed`);
        continue;
      }
      const previous = seen.at(-1);
      if (previous !== undefined && (match.revision < previous || (strict && match.revision === previous))) {
        violations.push(`${channel} ${taskId}: revision ${match.revision} after ${previous}`);
      }
      seen.push(match.revision);
    }
    return seen;
  };
  for (const [taskId, committed] of input.commits) {
    const ordered = [...committed].sort((a, b) => a.revision - b.revision);
    revisions += ordered.length;
    ordered.forEach((commit, index) => {
      if (commit.revision !== index + 1)
        violations.push(`commits ${taskId}: revision ${commit.revision} at ${index + 1}`);
    });
    const last = ordered.at(-1)!;
    const complete = input.requireComplete?.(taskId) ?? true;
    const ends = (channel: string, revisionsSeen: readonly number[]) => {
      if (complete && revisionsSeen.at(-1) !== last.revision) {
        violations.push(
          `${channel} ${taskId}: ended at ${revisionsSeen.at(-1)}, last commit ${last.revision}`,
        );
      }
    };
    const trace = input.traces.find((candidate) => candidate.taskId === taskId);
    if (trace) {
      // When the journal held each revision: the first time the poller or the webhook showed it.
      const sightingsOf = [...(input.polls.get(taskId) ?? []), ...(input.webhook.get(taskId) ?? [])];
      const visibleAt = (commit: Committed): number =>
        Math.min(
          ...sightingsOf
            .filter((seen) => seen.state === commit.state && seen.timestamp === commit.timestamp)
            .map((seen) => seen.at ?? Infinity),
        );
      for (const drop of trace.idleDrops) {
        const shown = Math.max(
          0,
          ...trace.streams
            .slice(0, drop.stream + 1)
            .flat()
            .map((seen) => committedRevisionOf(seen, ordered) ?? 0),
        );
        // Silent while both open and able to read the revision: from the later of the two.
        const owedFor = (commit: Committed) => drop.at - Math.max(visibleAt(commit), drop.openedAt);
        const owed = ordered.find((commit) => commit.revision > shown && owedFor(commit) >= stallMs);
        if (owed) {
          violations.push(
            `sse ${taskId}: a stream stayed silent ${Math.round(owedFor(owed) / 1000)} s while revision ${owed.revision} was in the journal`,
          );
        }
      }
      // Within one stream strictly increasing; a later stream may start at the revision the last ended on.
      const all: number[] = [];
      for (const stream of trace.streams) {
        const seen = judge('sse', taskId, stream, ordered, true);
        if (seen.length > 0 && all.length > 0 && seen[0]! < all.at(-1)!) {
          violations.push(`sse ${taskId}: a stream restarted at ${seen[0]} after ${all.at(-1)}`);
        }
        all.push(...seen);
      }
      ends('sse', all);
      ends('poll', judge('poll', taskId, input.polls.get(taskId) ?? [], ordered, false));
    }
    const hook = judge('webhook', taskId, input.webhook.get(taskId) ?? [], ordered, false);
    webhookDuplicates += hook.length - new Set(hook).size;
    if (complete) {
      const missing = ordered
        .filter((commit) => !hook.includes(commit.revision))
        .map((commit) => commit.revision);
      if (missing.length > 0)
        violations.push(`webhook ${taskId}: revisions ${missing.join(',')} never arrived`);
    }
    ends('webhook', hook);
  }
  return { tasks: input.commits.size, revisions, sightings: counts, webhookDuplicates, violations };
};

const committedRevisionOf = (seen: Sighting, committed: readonly Committed[]): number | undefined =>
  seen.revision ??
  committed.find((commit) => commit.state === seen.state && commit.timestamp === seen.timestamp)?.revision;

/** True once the webhook has each task's last committed revision. */
export const webhookCaughtUp = (
  commits: ReadonlyMap<string, readonly Committed[]>,
  posts: readonly ReceivedPost[],
): boolean => {
  const seen = webhookSightings(posts);
  return [...commits].every(([taskId, committed]) => {
    const last = committed.reduce((a, b) => (b.revision > a.revision ? b : a));
    return (seen.get(taskId) ?? []).some((s) => s.state === last.state && s.timestamp === last.timestamp);
  });
};
