import type { Config } from '../../config/config.ts';
import type { Message, Part, ProtocolVersion, SendMessageConfiguration } from '../../domain/a2a.ts';
import { isInterrupted, isTerminal } from '../../domain/a2a.ts';
import {
  ContentTypeNotSupportedError,
  InvalidParamsError,
  MessageIdReusedError,
  PushNotificationNotSupportedError,
  ResultNotRetainableError,
  TaskAlreadyWorkingError,
  TaskBusyError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionConflictError,
} from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import type { Metrics } from '../../domain/metrics.ts';
import type { Clock, IdGenerator, PushConfigRepository, RunQueue, TaskRowWrite } from '../../domain/ports.ts';
import { resolveProfilePrivacy, retentionExpiry } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import {
  type AgentCaller,
  advanceTask,
  appendHistory,
  isExpired,
  isOwnTask,
  newRun,
  newTask,
  type Owner,
  type RunRecord,
} from '../../domain/task.ts';
import type { WebhookPolicy } from '../../domain/webhook-address.ts';
import {
  type CommitDeps,
  commitAndProject,
  type JournalPlace,
  journaledRevisionOf,
  placeAfter,
} from '../journal/write-through.ts';
import { failpoint } from '../operations/failpoints.ts';
import { runProfileOf } from '../profiles/served-profiles.ts';
import { buildPushConfig, type PushConfigCodec, validatePushConfigInput } from '../push/push-configs.ts';
import { defaultLeaseMs } from '../runs/run-lease.ts';
import { endTask } from './end-task.ts';
import { checkHistoryLimit, checkMessageLimits, checkPushConfigLimit, limitsOf } from './limits.ts';
import { runIdOf, taskIdOf } from './message-identity.ts';
import type { TaskContentCodec } from './task-content.ts';
import { historyFieldsFor, loadHistory } from './task-history.ts';

export interface CreateTaskDeps extends CommitDeps {
  readonly queue: RunQueue;
  readonly codec: TaskContentCodec;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly config: Config;
  readonly logger?: Pick<Logger, 'warn'>;
  /** Counts refusals (decision 0020). */
  readonly metrics?: Metrics;
  /** Push support (docs/protocol.md §7): an inline config is stored in the transaction that creates the task. */
  readonly pushCodec?: PushConfigCodec;
  readonly pushConfigs?: PushConfigRepository;
  readonly webhookPolicy?: WebhookPolicy;
  /** How long a queued run may wait for an executor before the reaper settles it FAILED. */
  readonly runStartDeadlineMs?: number;
  /** Ids of `config.profiles` that are saved profiles: their runs carry their settings (decision 0024). */
  readonly savedProfiles?: ReadonlySet<string>;
  /** The executor's run lease (decision 0011): a queued run carries it for its claim to keep. */
  readonly runLeaseMs?: number;
  /**
   * The W3C traceparent the caller sent with this request, if a valid one (the rpc's trace): a
   * new task keeps it on its row for the logs of the hops that start from the stream.
   */
  readonly callerTraceparent?: () => string | undefined;
}

/** A run not claimed within this is taken as never queued (decision 0014); far above any queue wait. */
export const defaultRunStartDeadlineMs = 30 * 60_000;

export interface CreateTaskInput {
  readonly caller: Owner;
  readonly profileId: string;
  readonly message: Message;
  readonly configuration?: SendMessageConfiguration;
  /** The version the request came in; an inline push config keeps it (its webhook body). */
  readonly protocolVersion?: ProtocolVersion;
}

/** The sender at the agent it sent to: the scope in which it reads the task it created (I-OWNER). */
export const senderOf = (input: CreateTaskInput): AgentCaller => ({
  tenant: input.caller.tenant,
  principal: input.caller.principal,
  profileId: input.profileId,
});

/** The committed revision a caller may wait for, and the task it belongs to. */
export interface CreatedTask {
  readonly taskId: string;
  readonly revision: number;
  /**
   * The run this call committed RUNNING and did not queue, with the task as its commit returned
   * it, for the caller to run at once (`handOver`, decisions 0091 and 0096); absent when the run
   * was queued, or when it is no longer the one this call committed.
   */
  readonly handedOver?: HandedOver;
}

/** A run handed to its caller to run at once, with where its create left the journal. */
export interface HandedOver {
  readonly run: RunRecord;
  readonly task: StoredTask;
  /** The first revision's place in the journal (its event only, when its journal write did it). */
  readonly journaled?: JournalPlace;
}

export interface CreateTaskOptions {
  /**
   * The caller runs the run itself (a blocking send in the rpc, decision 0091): the run is
   * committed RUNNING, claimed by the create's own conditional write (decision 0096), with a new
   * task WORKING at its first revision, and handed over with the row as its commit returned it
   * (`CommitResult.committed`), or as read back when the commit returned no image. A retry, or a
   * send with an inline push config (decision 0093), is queued as without the option.
   */
  readonly handOver?: boolean;
}

/** The media type a part declares, or the one its kind implies. */
const mediaTypeOf = (part: Part): string => {
  if (part.mediaType) return part.mediaType;
  if ('text' in part) return 'text/plain';
  if ('data' in part) return 'application/json';
  return 'application/octet-stream';
};

const accepts = (modes: readonly string[], mediaType: string): boolean =>
  modes.some((mode) => {
    if (mode === '*/*' || mode === mediaType) return true;
    if (mode.endsWith('/*')) return mediaType.startsWith(mode.slice(0, -1));
    // Cards written with short modes ("text") accept that whole family.
    return !mode.includes('/') && mediaType.startsWith(`${mode}/`);
  });

/**
 * SendMessage's write side: refuse what cannot be kept (I-REFUSE) before anything is written,
 * then create the task, its first run and its sealed history in one atomic commit, and queue the
 * run. A run that cannot be queued is settled FAILED at once (enqueue fails closed).
 * A retry of a message already accepted (same caller, agent, messageId and content) creates and
 * runs nothing: it answers with the task the first send created or continued (I-RETRY, decision
 * 0051); the same messageId with other content is refused (MESSAGE_ID_REUSED).
 */
export const createTask = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  options: CreateTaskOptions = {},
): Promise<CreatedTask> => {
  const profile = deps.config.profiles[input.profileId];
  if (profile === undefined) throw new TaskNotFoundError(input.profileId);
  const privacy = resolveProfilePrivacy(deps.config, input.profileId);
  if (privacy.refusal) {
    deps.metrics?.add('Refusals');
    throw new ResultNotRetainableError(input.profileId, privacy.refusal.setting);
  }

  const inlinePush = input.configuration?.taskPushNotificationConfig;
  if (inlinePush !== undefined) {
    if (deps.pushCodec === undefined || deps.webhookPolicy === undefined) {
      throw new PushNotificationNotSupportedError();
    }
    validatePushConfigInput(inlinePush, deps.webhookPolicy, 'configuration.taskPushNotificationConfig.');
  }

  checkMessageLimits(input.message, limitsOf(deps.config));
  for (const part of input.message.parts) {
    const mediaType = mediaTypeOf(part);
    if (!accepts(profile.inputModes, mediaType)) throw new ContentTypeNotSupportedError(mediaType);
  }

  const now = deps.clock.now();
  const expiresAt = retentionExpiry(deps.config.privacy.retention, 'agentRun', now);
  // Derived ids (decision 0051): a retry derives the same task and run, another content another run.
  const taskId = input.message.taskId ?? taskIdOf(senderOf(input), input.message);
  const runId = runIdOf(taskId, input.message);
  const startDeadlineMs = deps.runStartDeadlineMs ?? defaultRunStartDeadlineMs;
  // A send with an inline push config is queued (decision 0093): its run's revisions, committed in
  // a burst here, would each wait for the one before to be delivered to the webhook.
  const claimHere = options.handOver === true && inlinePush === undefined;
  const run = newRun({
    runId,
    taskId,
    profileId: input.profileId,
    // Claimed by its create: the conditional create is the one write that claims it (I-ONCE), and
    // the caller runs it at once, so it is never QUEUED and has no start deadline.
    status: claimHere ? 'RUNNING' : 'QUEUED',
    ceilings: privacy.ceilings,
    now,
    expiresAt,
    // The lease its claim will keep: its lease index entry is written once here and removed when
    // the run settles. A crash between the commit and the enqueue leaves a run no message will
    // claim; the reaper settles it FAILED once `startBy` is over, and moves the lease to `startBy`
    // when the queue merely holds the run longer than this lease. A run claimed here whose caller
    // dies is RUNNING with no start marker once its lease is over: the reaper queues it again.
    leaseUntil: now.getTime() + Math.min(deps.runLeaseMs ?? defaultLeaseMs, startDeadlineMs),
    ...(!claimHere && { startBy: now.getTime() + startDeadlineMs }),
    // The executor reads only the deployment configuration: a saved profile's run takes its
    // settings along, so it runs as accepted even if the profile changes or goes meanwhile.
    ...(deps.savedProfiles?.has(input.profileId) && { profile: runProfileOf(profile) }),
  });

  const plan = await commitPlanned(deps, input, run, now, expiresAt, inlinePush);
  if ('earlier' in plan) return answerRetry(deps, plan.earlier, runId);
  failpoint('create.afterCommit');
  if (claimHere) return handOver(deps, plan);
  try {
    // The message says which revision this call projected in full: the claim need not read it.
    await deps.queue.enqueue({ taskId: plan.task.taskId, runId, ...journaledRevisionOf(plan.journaled) });
  } catch (error) {
    deps.logger?.warn('Run could not be queued; settling it FAILED', {
      taskId: plan.task.taskId,
      runId,
      error: error instanceof Error ? error.name : 'unknown',
    });
    return failUnqueued(deps, plan);
  }
  return { taskId: plan.task.taskId, revision: plan.task.revision };
};

/**
 * The run this call committed RUNNING, for its caller to run (decision 0096). Its commit returns
 * the row when it can (`CommitResult.committed`); when it could not (a transaction whose push mark
 * is uncertain, or an update retried by the SDK that found itself applied) the row is read back,
 * and the run is handed over only while it is still the version this call committed.
 */
const handOver = async (deps: CreateTaskDeps, plan: Plan): Promise<CreatedTask> => {
  const { taskId, revision } = plan.task;
  const image =
    plan.committed !== undefined
      ? { run: plan.run, task: plan.committed }
      : await deps.tasks.getRunWithTask(taskId, plan.run.runId);
  const current =
    image.task !== undefined && image.run?.status === 'RUNNING' && image.run.version === plan.run.version;
  return current
    ? {
        taskId,
        revision,
        handedOver: {
          run: image.run,
          task: image.task,
          ...(plan.journaled && { journaled: plan.journaled }),
        },
      }
    : { taskId, revision };
};

/**
 * A retry answers from the task as it is now (I-RYW: at its current revision or later). Its run
 * still QUEUED may be one whose first send crashed between its commit and its enqueue: it is
 * queued again — a duplicate wake-up is harmless, the claim is one conditional write (I-ONCE).
 * A run its create claimed (decision 0096) is RUNNING: its first send may still be running it,
 * so only its lease tells, and the reaper queues it again once that is over (decision 0072).
 */
const answerRetry = async (deps: CreateTaskDeps, task: StoredTask, runId: string): Promise<CreatedTask> => {
  const run = await deps.tasks.getRun(task.taskId, runId);
  if (run?.status === 'QUEUED') await deps.queue.enqueue({ taskId: task.taskId, runId });
  return { taskId: task.taskId, revision: task.revision };
};

/** Whether the run this message derives exists in the task: then the message was accepted before. */
const sentBefore = async (deps: CreateTaskDeps, task: StoredTask, runId: string): Promise<boolean> =>
  task.currentRunId === runId || (await deps.tasks.getRun(task.taskId, runId)) !== undefined;

/** Of racing follow-ups exactly one wins the conditional write; a loser re-reads and answers for the task as it is. */
const maxFollowUpAttempts = 3;

/**
 * Plans the task write and commits it with the run (and an inline push config). A follow-up that
 * loses its conditional write re-reads the task: another follow-up continued it (TaskAlreadyWorking),
 * or it ended or went (the refusals of `planFollowUp`); when the task still waits for input, it
 * tries again, a bounded number of times.
 */
const commitPlanned = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  run: RunRecord,
  now: Date,
  expiresAt: number,
  inlinePush: SendMessageConfiguration['taskPushNotificationConfig'],
): Promise<Plan | Earlier> => {
  for (let attempt = 1; ; attempt++) {
    const plan = input.message.taskId
      ? await planFollowUp(deps, input, run, now, expiresAt)
      : await planNewTask(deps, input, run, now, expiresAt);
    if ('earlier' in plan) return plan;
    // A new task has no configs yet; a continued one may be at its limit (checked once it is the caller's).
    if (inlinePush !== undefined && input.message.taskId !== undefined && deps.pushConfigs !== undefined) {
      await checkPushConfigLimit(
        deps.pushConfigs,
        plan.task.taskId,
        inlinePush.id,
        limitsOf(deps.config),
        'configuration.taskPushNotificationConfig',
        Math.floor(now.getTime() / 1000),
      );
    }

    const pushWrites =
      inlinePush !== undefined && deps.pushCodec !== undefined
        ? [
            {
              entity: 'push' as const,
              // The config's own taskId "should be empty" on send (docs/protocol.md §4): the new task's id wins.
              // Written with the revision this message creates: that revision is the config's first.
              item: await buildPushConfig(
                { ...deps, pushCodec: deps.pushCodec },
                plan.task,
                { ...inlinePush, protocolVersion: input.protocolVersion },
                plan.task.revision - 1,
              ),
              expect: 'any' as const,
            },
          ]
        : [];
    // One commit: the task row holds its current run (decision 0038), so without an inline push
    // config this is one single-item write; with one, one transaction (a push config must not
    // attach itself to a task whose follow-up lost its race). Nothing is queued before it.
    // A new task whose run this call hands over has its first event only projected: the run's
    // next revision brings the view (docs/architecture.md "The journal write").
    try {
      const { task: committed, projected } = await commitAndProject(
        deps,
        { row: plan.row, items: pushWrites },
        { eventOnly: plan.eventOnly },
      );
      const journaled = placeAfter(projected, undefined);
      return { ...plan, ...(committed && { committed }), ...(journaled && { journaled }) };
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      // A new task's derived id is taken: by an earlier send of this message, or of another one
      // with the same messageId (I-RETRY). Concurrent duplicates all end here but one.
      if (input.message.taskId === undefined) return earlierCreate(deps, input, plan.task, run.runId, error);
      if (attempt >= maxFollowUpAttempts) throw new TaskBusyError(input.message.taskId);
    }
  }
};

interface Plan {
  readonly task: StoredTask;
  readonly run: RunRecord;
  readonly row: TaskRowWrite;
  /** A new task whose run this call runs at once: its first revision's event only is projected. */
  readonly eventOnly?: boolean;
  /** The row as its commit returned it (`CommitResult.committed`). */
  readonly committed?: StoredTask;
  /** Where its journal write left the revision this call committed. */
  readonly journaled?: JournalPlace;
}

/** The message was accepted before (I-RETRY): the task it created or continued, as read now. */
interface Earlier {
  readonly earlier: StoredTask;
}

const earlierCreate = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  planned: StoredTask,
  runId: string,
  conflict: VersionConflictError,
): Promise<Earlier> => {
  const current = await deps.tasks.getTask(planned.taskId);
  // The id is derived from the sender and the messageId: a row of someone else's cannot hold it.
  if (current === undefined || !isOwnTask(current, senderOf(input))) throw conflict;
  if (!isExpired(current.expiresAt, deps.clock.now()) && (await sentBefore(deps, current, runId))) {
    return { earlier: current };
  }
  // Other content, or a task of this messageId whose retention has passed (I-PURGE).
  throw new MessageIdReusedError(input.message.messageId);
};

const planNewTask = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  run: RunRecord,
  now: Date,
  expiresAt: number,
): Promise<Plan> => {
  const { taskId } = run;
  const contextId = input.message.contextId ?? deps.ids.newId();
  const message: Message = { ...input.message, taskId, contextId };
  const history = appendHistory([], 1, [message]);
  checkHistoryLimit(history, limitsOf(deps.config));
  const sealed = await deps.codec.seal(taskId, { history });
  const traceparent = deps.callerTraceparent?.();
  const task = newTask({
    taskId,
    contextId,
    owner: input.caller,
    profileId: input.profileId,
    run,
    now,
    expiresAt,
    sealedHistory: sealed.sealedHistory,
    ...(traceparent !== undefined && { traceparent }),
  });
  const taskRun: RunRecord = { ...run, taskId };
  return {
    task,
    run: taskRun,
    row: { taskId, task, run: taskRun, expect: { revision: 'absent' } },
    // Its run runs here at once: its view waits for the run's next revision.
    eventOnly: run.status === 'RUNNING',
  };
};

/**
 * A follow-up message continues an interrupted task as a new run (multi-turn, docs/protocol.md §10). The task moves on
 * to WORKING at once: SUBMITTED is only a new task's first state, and no channel ever shows a task
 * going back to it (decision 0050). The run's claim then leaves the task as it is.
 */
const planFollowUp = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  run: RunRecord,
  now: Date,
  expiresAt: number,
): Promise<Plan | Earlier> => {
  const { taskId } = run;
  const current = await deps.tasks.getTask(taskId);
  if (current === undefined || !isOwnTask(current, senderOf(input)) || isExpired(current.expiresAt, now)) {
    throw new TaskNotFoundError(taskId);
  }
  if (input.message.contextId !== undefined && input.message.contextId !== current.contextId) {
    throw new InvalidParamsError([
      { field: 'message.contextId', description: 'contextId does not match the task identified by taskId' },
    ]);
  }
  // A retry of this follow-up (I-RETRY): the run it derives is there already (decision 0051). Only
  // looked up when the task would refuse a new message, so a first follow-up costs no extra read.
  if (current.currentRunId === run.runId) return { earlier: current };
  if (!isInterrupted(current.state)) {
    if (await sentBefore(deps, current, run.runId)) return { earlier: current };
    if (isTerminal(current.state)) {
      throw new UnsupportedOperationError('Task is in a terminal state and cannot accept messages', {
        taskId,
        state: current.state,
      });
    }
    throw new TaskAlreadyWorkingError(taskId, current.state);
  }
  const message: Message = { ...input.message, taskId, contextId: current.contextId };
  const history = await loadHistory(deps, current);
  if (history.some((entry) => entry.message.messageId === input.message.messageId)) {
    // This messageId is in the task already: a retry whose turn has come back to input, or another message.
    if (await sentBefore(deps, current, run.runId)) return { earlier: current };
    throw new MessageIdReusedError(input.message.messageId, taskId);
  }
  const revision = current.revision + 1;
  const extended = appendHistory(history, revision, [message]);
  checkHistoryLimit(extended, limitsOf(deps.config));
  const task = advanceTask(current, 'TASK_STATE_WORKING', now, {
    currentRunId: run.runId,
    sealedStatusMessage: undefined,
    // The turn writes what it adds: the row lets its older entries go as segments (docs/data-model.md, "History").
    ...(await historyFieldsFor(deps.codec, current, history, extended, { revision })),
    expiresAt: Math.max(current.expiresAt, expiresAt),
  });
  // The new run replaces the row's run, which moves to its own row.
  const replaced = (await deps.tasks.getRunWithTask(taskId, current.currentRunId)).run;
  const taskRun: RunRecord = { ...run, taskId };
  return {
    task,
    run: taskRun,
    row: {
      taskId,
      task,
      run: taskRun,
      expect: { revision: current.revision },
      before: current,
      archive: replaced ?? 'none',
    },
  };
};

/** A run that could not be queued ends its task FAILED at once (enqueue fails closed). */
const failUnqueued = async (deps: CreateTaskDeps, { task, run, journaled }: Plan): Promise<CreatedTask> => {
  try {
    const { task: failed } = await endTask(deps, {
      task,
      end: {
        state: 'TASK_STATE_FAILED',
        messageId: `${run.runId}-unqueued`,
        text: 'The task could not be started; please try again.',
        reason: 'ENQUEUE_FAILED',
      },
      run: { settle: 'FAILED', run, expiresAt: run.expiresAt },
      after: journaled,
      now: deps.clock.now(),
    });
    return { taskId: failed.taskId, revision: failed.revision };
  } catch (error) {
    // A cancel moved the task meanwhile: it answers for itself (its run is settled with it).
    if (!(error instanceof VersionConflictError)) throw error;
    return { taskId: task.taskId, revision: task.revision };
  }
};
