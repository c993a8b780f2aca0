import type { Config } from '../../config/config.ts';
import type { Message, ProtocolVersion, SendMessageConfiguration } from '../../domain/a2a.ts';
import { MessageIdReusedError, TaskBusyError, VersionConflictError } from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import type { Metrics } from '../../domain/metrics.ts';
import type { Clock, IdGenerator, PushConfigRepository, RunQueue } from '../../domain/ports.ts';
import { retentionExpiry } from '../../domain/privacy.ts';
import type { StoredTask } from '../../domain/projection.ts';
import { newRun, type Owner, type RunRecord, settleRun } from '../../domain/task.ts';
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
import { buildPushConfig, type PushConfigCodec } from '../push/push-configs.ts';
import { defaultLeaseMs } from '../runs/run-lease.ts';
import { type Plan, planFollowUp, planNewTask } from './create-planning.ts';
import { checkSend } from './create-validation.ts';
import { endTask } from './end-task.ts';
import { checkPushConfigLimit, limitsOf } from './limits.ts';
import { maxSendLevels, runIdOf, type SendIdentity, senderOf, taskIdOf } from './message-identity.ts';
import { answerRetry, type Earlier, earlierCreate } from './retry-detection.ts';
import type { TaskContentCodec } from './task-content.ts';

export interface CreateTaskDeps extends CommitDeps {
  readonly queue: RunQueue;
  readonly codec: TaskContentCodec;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly config: Config;
  readonly logger?: Pick<Logger, 'warn'>;
  /** Counts refusals (docs/operations.md, metrics). */
  readonly metrics?: Metrics;
  /** Push support (docs/protocol.md §7): an inline config is stored in the transaction that creates the task. */
  readonly pushCodec?: PushConfigCodec;
  readonly pushConfigs?: PushConfigRepository;
  readonly webhookPolicy?: WebhookPolicy;
  /** How long a queued run may wait for an executor before the reaper settles it FAILED. */
  readonly runStartDeadlineMs?: number;
  /** Ids of `config.profiles` that are saved profiles: their runs carry their settings. */
  readonly savedProfiles?: ReadonlySet<string>;
  /** The executor's run lease: a queued run carries it for its claim to keep. */
  readonly runLeaseMs?: number;
  /**
   * The W3C traceparent the caller sent with this request, if a valid one (the rpc's trace): a
   * new task keeps it on its row for the logs of the hops that start from the stream.
   */
  readonly callerTraceparent?: () => string | undefined;
}

/** A run not claimed within this is taken as never queued; far above any queue wait. */
export const defaultRunStartDeadlineMs = 30 * 60_000;

export interface CreateTaskInput {
  readonly caller: Owner;
  readonly profileId: string;
  readonly message: Message;
  readonly configuration?: SendMessageConfiguration;
  /** The version the request came in; an inline push config keeps it (its webhook body). */
  readonly protocolVersion?: ProtocolVersion;
  /** The protocol binding the request came over (`JSONRPC` when absent): part of a retry's identity. */
  readonly binding?: string;
  /** SendStreamingMessage (not SendMessage): part of a retry's identity. */
  readonly streaming?: boolean;
}

/** What a retry of this send repeats (I-RETRY): who sent what where, and how. */
const sendIdentityOf = (input: CreateTaskInput): SendIdentity => ({
  sender: senderOf(input),
  message: input.message,
  configuration: input.configuration,
  binding: input.binding,
  protocolVersion: input.protocolVersion,
  streaming: input.streaming,
});

export { senderOf } from './message-identity.ts';

/** The committed revision a caller may wait for, and the task it belongs to. */
export interface CreatedTask {
  readonly taskId: string;
  readonly revision: number;
  /**
   * The run this call committed RUNNING and did not queue, with the task as its commit returned
   * it, for the caller to run at once (`handOver`, docs/how-a-task-flows.md §1); absent when the run
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
   * The caller runs the run itself (a blocking send in the rpc): the run is
   * committed RUNNING, claimed by the create's own conditional write (I-ONCE), with a new
   * task WORKING at its first revision, and handed over with the row as its commit returned it
   * (`CommitResult.committed`), or as read back when the commit returned no image. A retry, or a
   * send with an inline push config, is queued as without the option.
   */
  readonly handOver?: boolean;
}

/**
 * SendMessage's write side: refuse what cannot be kept (I-REFUSE) before anything is written,
 * then create the task, its first run and its sealed history in one atomic commit, and queue the
 * run. A run that cannot be queued is settled FAILED at once (enqueue fails closed).
 * A retry of a message already accepted (the same send: caller, agent, binding, message and
 * configuration) creates and runs nothing: it answers with the task the first send created or
 * continued, until the caller acted on that task (I-RETRY, docs/protocol.md §4 "Retries").
 */
export const createTask = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  options: CreateTaskOptions = {},
): Promise<CreatedTask> => {
  const { profile, ceilings, inlinePush } = checkSend(deps, input);
  const now = deps.clock.now();
  const expiresAt = retentionExpiry(deps.config.privacy.retention, 'agentRun', now);
  // Derived ids (I-RETRY): a retry derives the same task and run, another send another task.
  const taskId = input.message.taskId ?? taskIdOf(sendIdentityOf(input));
  const runId = runIdOf(taskId, input.message);
  const startDeadlineMs = deps.runStartDeadlineMs ?? defaultRunStartDeadlineMs;
  // A send with an inline push config is queued: its run's revisions, committed in
  // a burst here, would each wait for the one before to be delivered to the webhook.
  const claimHere = options.handOver === true && inlinePush === undefined;
  const run = newRun({
    runId,
    taskId,
    profileId: input.profileId,
    // Claimed by its create: the conditional create is the one write that claims it (I-ONCE), and
    // the caller runs it at once, so it is never QUEUED and has no start deadline.
    status: claimHere ? 'RUNNING' : 'QUEUED',
    ceilings,
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
  if ('earlier' in plan) return answerRetry(deps, plan.earlier, plan.runId);
  failpoint('create.afterCommit');
  if (claimHere) return handOver(deps, plan);
  try {
    // The message says which revision this call projected in full: the claim need not read it.
    await deps.queue.enqueue({
      taskId: plan.task.taskId,
      runId: plan.run.runId,
      ...journaledRevisionOf(plan.journaled),
    });
  } catch (error) {
    deps.logger?.warn('Run could not be queued; settling it FAILED', {
      taskId: plan.task.taskId,
      runId: plan.run.runId,
      error: error instanceof Error ? error.name : 'unknown',
    });
    return failUnqueued(deps, plan);
  }
  return { taskId: plan.task.taskId, revision: plan.task.revision };
};

/**
 * The run this call committed RUNNING, for its caller to run. Its commit returns
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

/** Of racing follow-ups exactly one wins the conditional write; a loser re-reads and answers for the task as it is. */
const maxFollowUpAttempts = 3;

/**
 * Plans the task write and commits it with the run (and an inline push config). A follow-up that
 * loses its conditional write re-reads the task: another follow-up continued it (TaskAlreadyWorking),
 * or it ended or went (the refusals of `planFollowUp`); when the task still waits for input, it
 * tries again, a bounded number of times. A new task whose id is taken by a task its send created
 * and the caller acted on since tries the send's next level (I-RETRY).
 */
const commitPlanned = async (
  deps: CreateTaskDeps,
  input: CreateTaskInput,
  firstRun: RunRecord,
  now: Date,
  expiresAt: number,
  inlinePush: SendMessageConfiguration['taskPushNotificationConfig'],
): Promise<Plan | Earlier> => {
  let run = firstRun;
  for (let attempt = 1, level = 0; ; attempt++) {
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
    // One commit: the task row holds its current run (docs/data-model.md), so without an inline push
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
      // A new task's derived id is taken by an earlier send of this message (I-RETRY): a retry
      // answers from it, unless the caller acted on it since. Concurrent duplicates all end here but one.
      if (input.message.taskId === undefined) {
        const earlier = await earlierCreate(deps, input, plan.task, run.runId, error);
        if (earlier !== undefined) return earlier;
        level += 1;
        if (level >= maxSendLevels) throw new MessageIdReusedError(input.message.messageId);
        run = runAtLevel(input, run, level);
        continue;
      }
      if (attempt >= maxFollowUpAttempts) throw new TaskBusyError(input.message.taskId);
    }
  }
};

/** The run of a send at the next level of its identity: another task id, the run derived in it. */
const runAtLevel = (input: CreateTaskInput, run: RunRecord, level: number): RunRecord => {
  const taskId = taskIdOf(sendIdentityOf(input), level);
  return { ...run, taskId, runId: runIdOf(taskId, input.message) };
};

/** A run that could not be queued ends its task FAILED at once (enqueue fails closed). */
const failUnqueued = async (deps: CreateTaskDeps, { task, run, journaled }: Plan): Promise<CreatedTask> => {
  const now = deps.clock.now();
  try {
    const { task: failed } = await endTask(deps, {
      task,
      end: {
        state: 'TASK_STATE_FAILED',
        messageId: `${run.runId}-unqueued`,
        text: 'The task could not be started; please try again.',
        reason: 'ENQUEUE_FAILED',
      },
      run: { read: run, next: () => settleRun(run, 'FAILED', now, run.expiresAt) },
      after: journaled,
      now,
    });
    return { taskId: failed.taskId, revision: failed.revision };
  } catch (error) {
    // A cancel moved the task meanwhile: it answers for itself (its run is settled with it).
    if (!(error instanceof VersionConflictError)) throw error;
    return { taskId: task.taskId, revision: task.revision };
  }
};
