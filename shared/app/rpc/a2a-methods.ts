import { hasAuthScheme } from '../../config/auth.ts';
import type { SendMessageConfiguration } from '../../domain/a2a.ts';
import {
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  UnsupportedOperationError,
} from '../../domain/errors.ts';
import type { AgentCaller, Owner } from '../../domain/task.ts';
import {
  buildExtendedAgentCard,
  declaresExtendedCard,
  implementedCapabilities,
} from '../profiles/agent-card.ts';
import type { ProfileCatalog } from '../profiles/served-profiles.ts';
import {
  createPushConfig,
  deletePushConfig,
  getPushConfig,
  listPushConfigs,
  requirePushDeps,
} from '../push/push-configs.ts';
import { listPushDeliveries, type PushDeliveryReadDeps } from '../push/push-deliveries.ts';
import { type CancelTaskDeps, cancelTask } from '../tasks/cancel-task.ts';
import { listTasks } from '../tasks/list-tasks.ts';
import { longPollTask } from '../tasks/long-poll-task.ts';
import { getTask } from '../tasks/read-task.ts';
import { type SendMessageDeps, sendMessage, toSendMessageResponse } from '../tasks/send-message.ts';
import { type StreamMethodDeps, sendStreamingMessage, subscribeToTask } from '../tasks/stream-task.ts';
import {
  type A2aMethodTable,
  defineMethod,
  type MethodTable,
  type RequestContext,
  toStreamResult,
} from './dispatcher.ts';
import { a2aParamsSchemas, extensionParamsSchemas } from './schemas.ts';

/** Who calls when the installation runs without authentication (docs/configuration.md). */
export const anonymousCaller: Owner = { tenant: 'local', principal: 'local' };

/** The caller at the agent whose endpoint was asked: the scope of every task it names (I-OWNER). */
const callerOf = (ctx: RequestContext): AgentCaller => {
  const { tenant, principal } = ctx.caller ?? anonymousCaller;
  return { tenant, principal, profileId: ctx.profileId };
};

/**
 * The configuration as the negotiated version reads it: `ifGenerationMatch` is 1.1's
 * (docs/protocol.md §16); to a 1.0 request it is an unknown field, ignored.
 */
const configurationFor = (
  configuration: SendMessageConfiguration | undefined,
  ctx: RequestContext,
): SendMessageConfiguration | undefined => {
  if (configuration?.ifGenerationMatch === undefined || ctx.a2aVersion === '1.1') return configuration;
  const { ifGenerationMatch: _, ...rest } = configuration;
  return rest;
};

const streamingOff = () => new UnsupportedOperationError('Streaming is not supported by this agent');
const pushOff = () => new PushNotificationNotSupportedError();
/** The push deps, or -32003 when this build (or its wiring) has no push support. */
const pushDeps = (deps: SendMessageDeps) => {
  if (!implementedCapabilities.pushNotifications) throw pushOff();
  return requirePushDeps(deps);
};

export type A2aMethodsDeps = SendMessageDeps &
  Pick<StreamMethodDeps, 'streamSlots' | 'mayAnswerWithMessage'> &
  Pick<CancelTaskDeps, 'remoteTasks'> & {
    /**
     * The profiles served, saved ones included (docs/operations.md, "Saved profiles"); absent =
     * `config.profiles` only.
     */
    readonly profileCatalog?: ProfileCatalog;
  };

/** The deps of a call that resolves its profile: the configuration with the profiles served now. */
const withServedProfiles = async (deps: A2aMethodsDeps): Promise<A2aMethodsDeps> => {
  if (deps.profileCatalog === undefined) return deps;
  const { config, saved } = await deps.profileCatalog.current();
  return { ...deps, config, savedProfiles: saved };
};

/**
 * The A2A v1.0 method table. Every method is routed: a capability this build does not declare
 * on its card answers its specific A2A error (-32003/-32004/-32007), never -32601.
 */
export const createA2aMethods = (deps: A2aMethodsDeps): A2aMethodTable => ({
  SendMessage: defineMethod(a2aParamsSchemas.SendMessage, async (params, ctx) =>
    toSendMessageResponse(
      await sendMessage(await withServedProfiles(deps), {
        caller: callerOf(ctx),
        profileId: ctx.profileId,
        message: params.message,
        configuration: configurationFor(params.configuration, ctx),
        protocolVersion: ctx.a2aVersion,
        binding: ctx.binding,
      }),
    ),
  ),
  GetTask: defineMethod(a2aParamsSchemas.GetTask, (params, ctx) =>
    // A 1.1 long-poll (docs/protocol.md §16); to a 1.0 request `currentGeneration` is an unknown field.
    ctx.a2aVersion === '1.1' && params.currentGeneration !== undefined
      ? longPollTask(deps, callerOf(ctx), params.id, params.currentGeneration, {
          historyLength: params.historyLength,
        })
      : getTask(deps, callerOf(ctx), params.id, { historyLength: params.historyLength }),
  ),
  SendStreamingMessage: defineMethod(a2aParamsSchemas.SendStreamingMessage, async (params, ctx) => {
    if (!implementedCapabilities.streaming) throw streamingOff();
    return toStreamResult(
      await sendStreamingMessage(await withServedProfiles(deps), {
        caller: callerOf(ctx),
        profileId: ctx.profileId,
        message: params.message,
        // The inline push config (and the rest of the configuration) applies to a streaming
        // send exactly as to SendMessage (docs/protocol.md §7).
        configuration: configurationFor(params.configuration, ctx),
        protocolVersion: ctx.a2aVersion,
        binding: ctx.binding,
        historyLength: params.configuration?.historyLength,
        signal: ctx.signal,
      }),
    );
  }),
  SubscribeToTask: defineMethod(a2aParamsSchemas.SubscribeToTask, async (params, ctx) => {
    if (!implementedCapabilities.streaming) throw streamingOff();
    return toStreamResult(
      await subscribeToTask(deps, callerOf(ctx), params.id, {
        lastEventId: ctx.lastEventId,
        signal: ctx.signal,
      }),
    );
  }),
  ListTasks: defineMethod(a2aParamsSchemas.ListTasks, (params, ctx) =>
    listTasks(deps, {
      caller: callerOf(ctx),
      contextId: params.contextId,
      status: params.status,
      pageSize: params.pageSize,
      pageToken: params.pageToken,
      historyLength: params.historyLength,
      statusTimestampAfter: params.statusTimestampAfter,
      includeArtifacts: params.includeArtifacts,
    }),
  ),
  CancelTask: defineMethod(a2aParamsSchemas.CancelTask, (params, ctx) =>
    cancelTask(deps, { caller: callerOf(ctx), taskId: params.id }),
  ),
  CreateTaskPushNotificationConfig: defineMethod(
    a2aParamsSchemas.CreateTaskPushNotificationConfig,
    async (params, ctx) =>
      createPushConfig(pushDeps(deps), callerOf(ctx), params.taskId, {
        ...params,
        protocolVersion: ctx.a2aVersion,
      }),
  ),
  GetTaskPushNotificationConfig: defineMethod(a2aParamsSchemas.GetTaskPushNotificationConfig, (params, ctx) =>
    getPushConfig(pushDeps(deps), callerOf(ctx), params.taskId, params.id),
  ),
  ListTaskPushNotificationConfigs: defineMethod(
    a2aParamsSchemas.ListTaskPushNotificationConfigs,
    (params, ctx) =>
      listPushConfigs(pushDeps(deps), callerOf(ctx), params.taskId, {
        pageSize: params.pageSize,
        pageToken: params.pageToken,
      }),
  ),
  DeleteTaskPushNotificationConfig: defineMethod(
    a2aParamsSchemas.DeleteTaskPushNotificationConfig,
    // Result `null` (docs/protocol.md §17): the dispatcher serializes `undefined` as null.
    (params, ctx) => deletePushConfig(pushDeps(deps), callerOf(ctx), params.taskId, params.id),
  ),
  // docs/protocol.md §9: requires authentication (docs/security.md). Not declared on this profile's card,
  // which includes every unauthenticated installation → -32004; declared → the extended card.
  GetExtendedAgentCard: defineMethod(a2aParamsSchemas.GetExtendedAgentCard, async (_params, ctx) => {
    const { config } = await withServedProfiles(deps);
    if (!declaresExtendedCard(config, ctx.profileId)) {
      throw new UnsupportedOperationError('The extended agent card is not declared by this agent', {
        method: 'GetExtendedAgentCard',
        requires: hasAuthScheme(config.auth)
          ? 'an extendedCard configured on this profile'
          : 'authentication, which this installation does not configure',
      });
    }
    // The edge refuses unauthenticated requests when a scheme is configured; never serve one here.
    if (ctx.caller === null) {
      throw new UnsupportedOperationError('The extended agent card requires authentication', {
        method: 'GetExtendedAgentCard',
        requires: 'authentication',
      });
    }
    // A v0.3 request (agent/getAuthenticatedExtendedCard) gets the v0.3 card (docs/protocol.md §9).
    const card = buildExtendedAgentCard(
      config,
      ctx.profileId,
      ctx.baseUrl,
      ctx.a2aVersion === '0.3' ? '0.3' : '1.0',
    );
    if (card === undefined) throw new ExtendedAgentCardNotConfiguredError();
    return card;
  }),
});

/**
 * Methods of this server's own extensions (docs/protocol.md §7), declared on every card under
 * `capabilities.extensions`. They answer whether or not the client lists the extension in
 * `A2A-Extensions` (calling the method is the opt-in), with the core methods' authentication and
 * owner checks.
 */
export const createExtensionMethods = (
  deps: PushDeliveryReadDeps,
): MethodTable<typeof extensionParamsSchemas> => ({
  ListTaskPushDeliveries: defineMethod(extensionParamsSchemas.ListTaskPushDeliveries, (params, ctx) => {
    if (!implementedCapabilities.pushNotifications) throw pushOff();
    return listPushDeliveries(deps, callerOf(ctx), params.taskId, {
      configId: params.configId,
      pageSize: params.pageSize,
      pageToken: params.pageToken,
    });
  }),
});
