import { type Endpoints, startLocalStack } from '../../infra/local/local-stack.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { disarmFailpoints, failpointCounts } from '../../shared/app/operations/failpoints.ts';
import {
  abandonedRunReason,
  interruptedToolCallReason,
  unstartedRunReason,
} from '../../shared/app/runs/reap-runs.ts';
import { type RunStatus, settledRunStatuses } from '../../shared/domain/task.ts';
import { rpc } from '../conformance/sse.ts';
import {
  answerLate,
  defaultMix,
  delegatedProfiles,
  driveTasks,
  faultProofConfigWithTools,
  finishChannels,
  judgeChannels,
  recordCommits,
  terminalStates,
  webhookCaughtUp,
  webhookSightings,
} from './fault-drive.ts';
import { queueDepths, readClaimMarkers, readTaskRows } from './fault-stack.ts';
import { freePort, startMcpTestServer } from './mcp-server-process.ts';
import { startWebhookReceiver } from './webhook-receiver.ts';

/**
 * The soak with faults (issue #7.2, docs/reliability.md): many tasks on many clients while every
 * failpoint fires at random; then the checks. `npm run soak` runs the full size
 * (test/soak/run.ts), `test/e2e/soak.test.ts` a small one. Three kinds in eleven act: one calls a
 * non-idempotent MCP tool (the MCP test server in its own process), and two delegate to another
 * profile of the same stack, one waiting in place and one parking until the remote task's push
 * notification wakes it. No tool call may reach its server twice, and each delegated step reaches
 * one remote task (I-EFFECT).
 */

export interface SoakOptions {
  readonly tasks: number;
  readonly concurrency: number;
  readonly failpoints: string;
  /** Emulators already running (tests); default: started and stopped here. */
  readonly endpoints?: Endpoints;
  readonly prefix: string;
  /** How long the drain after the drive may take (reaper, retries, webhook catch-up). */
  readonly drainMs?: number;
}

/** Why a task may end FAILED under faults: its script, a lost executor, a lost message, a KMS fault. */
const expectedFailures = new Set([
  'PROVIDER_FAILED',
  abandonedRunReason,
  unstartedRunReason,
  'SEALING_FAILED',
  'ENQUEUE_FAILED',
  // A fault after a write tool call's fence (its outcome unknown): never sent again (I-EFFECT).
  interruptedToolCallReason,
]);

/** Profiles whose model runs under the tool loop: they answer with an artifact and no status message. */
const toolLoopProfiles = new Set(['tools', 'delegating', 'parking']);

/**
 * Profiles whose run may call its model more than once: a run that waited for a delegated task
 * (parked, or its wait in place over) resumes with the transcript it held and asks the model
 * again, once per claim of the run (its start markers, `readClaimMarkers`). The delegated message
 * itself is judged at the remote agent (`delegatedSteps`).
 */
const resumingProfiles = new Set(['delegating', 'parking']);

/**
 * The delegated tasks, read from the helper profiles with ListTasks: each was started by one
 * delegated step, whose messageId is derived from the run and the step (I-EFFECT). Two tasks with
 * one messageId would be a step sent again that started a second remote task.
 */
const delegatedSteps = async (
  baseUrl: string,
): Promise<{ tasks: Record<string, number>; problems: string[] }> => {
  const tasks: Record<string, number> = {};
  const problems: string[] = [];
  for (const profileId of delegatedProfiles) {
    const tasksOf = new Map<string, string[]>();
    let pageToken: string | undefined;
    do {
      const answer = await rpc(`${baseUrl}/agents/${profileId}`, 'ListTasks', {
        pageSize: 100,
        historyLength: 10,
        ...(pageToken ? { pageToken } : {}),
      });
      const result = answer.kind === 'json' ? (answer.body.result as ListTasksPage | undefined) : undefined;
      if (result === undefined) {
        problems.push(`ListTasks of ${profileId} failed`);
        break;
      }
      for (const task of result.tasks) {
        const messageId = task.history?.find((message) => message.role === 'ROLE_USER')?.messageId ?? 'none';
        tasksOf.set(messageId, [...(tasksOf.get(messageId) ?? []), task.id]);
      }
      pageToken = result.nextPageToken || undefined;
    } while (pageToken);
    tasks[profileId] = [...tasksOf.values()].reduce((sum, ids) => sum + ids.length, 0);
    for (const [messageId, ids] of tasksOf) {
      if (!messageId.startsWith('dlg-'))
        problems.push(`${profileId} task ${ids[0]} was not delegated (${messageId})`);
      if (ids.length > 1)
        problems.push(`delegated message ${messageId} started ${ids.length} tasks at ${profileId}`);
    }
  }
  return { tasks, problems };
};

interface ListTasksPage {
  readonly tasks: { id: string; history?: { role: string; messageId: string }[] }[];
  readonly nextPageToken?: string;
}

export interface SoakReport {
  readonly figures: Record<string, unknown>;
  readonly problems: string[];
}

const sleep = (ms: number) => new Promise((wake) => setTimeout(wake, ms));

export const runSoak = async (options: SoakOptions): Promise<SoakReport> => {
  const began = performance.now();
  const recorder = recordCommits();
  const receiver = await startWebhookReceiver();
  const mcp = await startMcpTestServer();
  // A known port: the delegating profiles reach the helper profiles' cards, and the remote tasks'
  // push notifications reach this stack, at it.
  const port = await freePort();
  const stack = await startLocalStack({
    port,
    config: faultProofConfigWithTools(mcp.url, port),
    ...(options.endpoints ? { endpoints: options.endpoints } : {}),
    prefix: options.prefix,
    failpoints: options.failpoints,
    // Short, so the drain does not wait for the deployed 90 s lease and 30 min start deadline.
    runLeaseMs: 4_000,
    // A thousand tasks queue for longer than 20 s on two cores; a deadline that short fails runs
    // that were merely waiting (RUN_NOT_STARTED), which blurs the figures. A small soak's drive
    // waits on it: each run a fault left unqueued is queued again only at its deadline.
    runStartDeadlineMs: Math.max(10_000, options.tasks * 60),
    reaperIntervalMs: 1_000,
    delivererConcurrency: 16,
    log: () => {},
  });
  ScriptedProvider.callsByRun.clear();
  try {
    const startedMs = performance.now() - began;
    const driven = await driveTasks({
      baseUrl: stack.baseUrl,
      webhookUrl: receiver.url,
      tasks: options.tasks,
      concurrency: options.concurrency,
      mix: [...defaultMix, 'toolCall', 'delegate', 'delegateParked'],
    });
    const drivenMs = performance.now() - began - startedMs;
    // The faults stop here; what they broke must now heal by itself (reaper, retries, redelivery).
    const faults = failpointCounts();
    disarmFailpoints();
    const deadline = Date.now() + (options.drainMs ?? 120_000);
    // A create whose answer was an error (a fault after its commit) leaves a task no client knows;
    // the client sent again. Such an orphan of a multi-turn script rightly waits in INPUT_REQUIRED,
    // so the drain does not wait for it (it used to sit out the whole deadline).
    const held = new Set(driven.traces.map((trace) => trace.taskId));
    const isOrphanWaiting = (taskId: string, state: string) =>
      state === 'TASK_STATE_INPUT_REQUIRED' && !held.has(taskId);
    let rows = await readTaskRows(stack.endpoints, options.prefix);
    const allEnded = () =>
      [...rows.tasks].every(
        ([taskId, row]) => terminalStates.has(row.state) || isOrphanWaiting(taskId, row.state),
      );
    // Every client has moved on by now: a task a client held that reached INPUT_REQUIRED only
    // after it gave up is answered once, as the client would when it comes back.
    const answeredLate = new Set<string>();
    const answerHeldInterruptions = async () => {
      for (const trace of driven.traces) {
        const taskId = trace.taskId;
        if (taskId === undefined || answeredLate.has(taskId)) continue;
        if (rows.tasks.get(taskId)?.state !== 'TASK_STATE_INPUT_REQUIRED') continue;
        answeredLate.add(taskId);
        await answerLate(stack.baseUrl, trace);
      }
    };
    while (!allEnded() && Date.now() < deadline) {
      await answerHeldInterruptions();
      await sleep(1_000);
      rows = await readTaskRows(stack.endpoints, options.prefix);
    }
    // The delegated tasks' only push config is the delegating run's wake-up, not the receiver.
    const hasClient = (taskId: string) => !delegatedProfiles.has(rows.tasks.get(taskId)?.profileId ?? '');
    const commitsWithClient = () => new Map([...recorder.commits].filter(([taskId]) => hasClient(taskId)));
    await receiver
      .waitFor((posts) => webhookCaughtUp(commitsWithClient(), posts), Math.max(1_000, deadline - Date.now()))
      .catch(() => {});
    // Settled: a stream or poll the drive left short of a terminal state looks once more.
    await finishChannels({ baseUrl: stack.baseUrl, concurrency: options.concurrency }, driven);
    const drainedMs = performance.now() - began - startedMs - drivenMs;

    const problems: string[] = [];
    const outcomes: Record<string, number> = {};
    const profileOfRun = (runId: string) => rows.tasks.get(rows.runs.get(runId)?.taskId ?? '')?.profileId;
    for (const [taskId, row] of rows.tasks) {
      const orphanWaiting = isOrphanWaiting(taskId, row.state);
      const key = row.state === 'TASK_STATE_FAILED' ? `FAILED ${row.reason}` : row.state;
      const outcome = orphanWaiting ? 'INPUT_REQUIRED (orphan, no client)' : key;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (!terminalStates.has(row.state) && !orphanWaiting)
        problems.push(`task ${taskId} ended ${row.state}`);
      if (row.state === 'TASK_STATE_FAILED' && !expectedFailures.has(row.reason ?? '')) {
        problems.push(`task ${taskId} FAILED for ${row.reason}`);
      }
      if (row.state === 'TASK_STATE_COMPLETED') {
        // A tool loop answers with its artifact and no status message.
        if (!(toolLoopProfiles.has(row.profileId) ? row.hasArtifacts : row.hasResult))
          problems.push(`task ${taskId} COMPLETED without its stored result`);
        if (rows.runs.get(row.currentRunId)?.status !== 'COMPLETED') {
          problems.push(`task ${taskId} COMPLETED, its run ${rows.runs.get(row.currentRunId)?.status}`);
        }
        const calls = ScriptedProvider.callsByRun.get(row.currentRunId) ?? 0;
        if (resumingProfiles.has(row.profileId) ? calls < 1 : calls !== 1) {
          problems.push(`task ${taskId} COMPLETED after ${calls} provider calls`);
        }
      }
    }
    // Decision 0072: a FAILED task whose run never called its provider (the soak's own count of
    // calls) lost the task for nothing; one whose run called it may not be run again (I-ONCE).
    const failedRuns = { neverCalled: {} as Record<string, number>, afterCall: {} as Record<string, number> };
    for (const row of rows.tasks.values()) {
      if (row.state !== 'TASK_STATE_FAILED') continue;
      const side = (ScriptedProvider.callsByRun.get(row.currentRunId) ?? 0) > 0 ? 'afterCall' : 'neverCalled';
      const reason = row.reason ?? 'unknown';
      failedRuns[side][reason] = (failedRuns[side][reason] ?? 0) + 1;
    }
    // Each send's tool call carries its message id: one that reached the server twice was sent again.
    const toolCalls = await mcp.calls();
    const sendsByArguments = new Map<string, number>();
    for (const sent of toolCalls) {
      const key = JSON.stringify(sent.arguments);
      sendsByArguments.set(key, (sendsByArguments.get(key) ?? 0) + 1);
    }
    for (const [key, sends] of sendsByArguments)
      if (sends > 1) problems.push(`tool call ${key} reached the MCP server ${sends}×`);
    const delegated = await delegatedSteps(stack.baseUrl);
    problems.push(...delegated.problems);
    // A delegating run calls its model once per claim at most: each resume claims the run again
    // and writes its start marker before it calls (I-ONCE per claim).
    const claims = await readClaimMarkers(stack.endpoints, options.prefix);
    let runsCalledTwice = 0;
    let delegatingRunsResumed = 0;
    for (const [runId, calls] of ScriptedProvider.callsByRun) {
      const resuming = resumingProfiles.has(profileOfRun(runId) ?? '');
      const allowed = resuming ? (claims.get(runId) ?? 0) : 1;
      if (calls > allowed) {
        runsCalledTwice++;
        problems.push(`run ${runId} called its provider ${calls}× (${allowed} allowed by its claims)`);
      } else if (calls > 1) delegatingRunsResumed++;
    }
    const verdict = judgeChannels({
      commits: recorder.commits,
      traces: driven.traces,
      polls: driven.polls,
      webhook: webhookSightings(receiver.posts),
      requireComplete: hasClient,
    });
    problems.push(...verdict.violations);
    // A drive whose clients mostly never got a task proves little (a cap or a refusal stopped them):
    // under 2 % faults a few may lose their create, not more than 5 % of them.
    const withoutTask = driven.traces.filter((trace) => trace.taskId === undefined).length;
    if (withoutTask > Math.max(3, 0.05 * driven.traces.length))
      problems.push(`${withoutTask} of ${driven.traces.length} clients never got a task`);
    // Retries are bounded far above the injected rates: nothing may be parked in a DLQ.
    const dlqs = await queueDepths(stack, ['RunDlq', 'ProjectorDlq', 'PusherDlq', 'DeliveryDlq']);
    for (const [queue, depth] of Object.entries(dlqs))
      if (depth > 0) problems.push(`${queue} holds ${depth}`);
    // The run queue still holds messages whose executor failed (in flight for the 6-minute
    // visibility timeout) and copies of requeued runs. Every run is settled, so each of them can
    // only find its run settled when it comes back (`duplicate`, I-ONCE): none can start anything.
    const runQueue = await queueDepths(stack, ['RunQueue']);
    for (const [runId, run] of rows.runs)
      if (!settledRunStatuses.includes(run.status as RunStatus))
        problems.push(`run ${runId} ended ${run.status}`);

    return {
      problems,
      figures: {
        tasks: rows.tasks.size,
        requested: options.tasks,
        concurrency: options.concurrency,
        failpoints: options.failpoints,
        outcomes,
        /** Held tasks that reached INPUT_REQUIRED after their client moved on, answered in the drain. */
        answeredLate: answeredLate.size,
        revisions: verdict.revisions,
        faults,
        faultsTotal: Object.values(faults).reduce((sum, count) => sum + count.faults, 0),
        retries: {
          projectorStream: stack.pollers.projector.stats().retries,
          pusherStream: stack.pollers.pusher?.stats().retries,
          executorMessagesLeft: stack.pollers.executor.stats().failed,
          deliveriesRetried: stack.pollers.deliverer?.stats().failed,
        },
        providerCalls: [...ScriptedProvider.callsByRun.values()].reduce((sum, calls) => sum + calls, 0),
        toolCalls: toolCalls.length,
        delegatedTasks: delegated.tasks,
        runsCalledTwice,
        /** Delegating runs that asked their model again after a wait, within their claims (not a retry). */
        delegatingRunsResumed,
        failedRuns,
        // Never started before their deadline (decision 0053), or claimed and never at their
        // provider call when their lease expired (0072): queued again instead of failed; how each
        // such run ended is among `outcomes` (by its task).
        runsRequeued: {
          runs: [...rows.runs.values()].filter((run) => run.requeues > 0).length,
          requeues: [...rows.runs.values()].reduce((sum, run) => sum + run.requeues, 0),
          byRunStatus: [...rows.runs.values()]
            .filter((run) => run.requeues > 0)
            .reduce<Record<string, number>>((counts, run) => {
              counts[run.status] = (counts[run.status] ?? 0) + 1;
              return counts;
            }, {}),
        },
        channels: {
          ...verdict.sightings,
          webhookPosts: receiver.posts.length,
          webhookDuplicateStatusUpdates: verdict.webhookDuplicates,
          clientErrors: driven.traces.reduce((sum, trace) => sum + trace.errors.length, 0),
          clientsWithoutTask: withoutTask,
          pollErrors: driven.pollErrors,
        },
        dlqs,
        runQueueLeft: runQueue.RunQueue,
        durationsMs: {
          start: Math.round(startedMs),
          drive: Math.round(drivenMs),
          drain: Math.round(drainedMs),
          total: Math.round(performance.now() - began),
        },
      },
    };
  } finally {
    disarmFailpoints();
    await stack.stop();
    await Promise.all([receiver.close(), mcp.stop()]);
    recorder.stop();
  }
};
