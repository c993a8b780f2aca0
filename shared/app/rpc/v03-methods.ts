import type { Message, StreamEnd, Task, TaskPushNotificationConfig } from '../../domain/a2a.ts';
import {
  ExtendedAgentCardNotConfiguredError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '../../domain/errors.ts';
import * as z from '../../zod.ts';
import {
  type A2aMethodTable,
  defineMethod,
  isStreamResult,
  type MethodTable,
  type StreamItem,
  type StreamResult,
  toStreamResult,
} from './dispatcher.ts';
import {
  a2aParamsSchemas,
  historyLength,
  jsonObject,
  optionalId,
  pushConfigFields,
  requiredId,
} from './schemas.ts';
import {
  fromV03PushNotificationConfig,
  fromV03SendParams,
  toV03Event,
  toV03PushConfig,
  toV03SendResult,
  toV03Task,
} from './v03-shapes.ts';

/**
 * The A2A v0.3 JSON-RPC methods (docs/protocol.md §1), each mapped onto its v1.0 method of the
 * same table — the same use cases, capability gates and errors — with the request and answer
 * translated by rpc/v03-shapes.ts. The dispatcher serves this table to requests negotiated as 0.3
 * (a v0.3 method name without `A2A-Version`, or `A2A-Version: 0.3`), with `a2aVersion` "0.3" in
 * the context, which push configs record to get the v0.3 webhook body. `tasks/list` does not
 * exist in v0.3 JSON-RPC and stays -32601.
 */

// ---------------------------------------------------------------------------------------------
// Params: v0.3 names, v1.0 outputs
// ---------------------------------------------------------------------------------------------

/** TaskIdParams / TaskQueryParams: the v1.0 GetTask/CancelTask/SubscribeToTask names already. */
const taskQuerySchema = z.object({ id: requiredId, historyLength: z.optional(historyLength) });

/** `{taskId, pushNotificationConfig}`; without an id the config is the task's own (id = taskId, as the v0.3 SDKs did). */
const setPushConfigSchema = z.pipe(
  z.object({
    taskId: requiredId,
    pushNotificationConfig: z.pipe(z.transform(fromV03PushNotificationConfig), z.object(pushConfigFields)),
  }),
  z.transform(({ taskId, pushNotificationConfig }) => ({
    ...pushNotificationConfig,
    taskId,
    id: pushNotificationConfig.id ?? taskId,
  })),
);

const pushConfigRefSchema = z.object({ id: requiredId, pushNotificationConfigId: requiredId });

export const v03ParamsSchemas = {
  'message/send': z.pipe(z.transform(fromV03SendParams), a2aParamsSchemas.SendMessage),
  'message/stream': z.pipe(z.transform(fromV03SendParams), a2aParamsSchemas.SendStreamingMessage),
  'tasks/get': taskQuerySchema,
  'tasks/cancel': z.object({ id: requiredId, metadata: z.optional(jsonObject) }),
  'tasks/resubscribe': z.object({ id: requiredId }),
  'tasks/pushNotificationConfig/set': setPushConfigSchema,
  /** `pushNotificationConfigId` is optional in v0.3: without it, the task's (first) config. */
  'tasks/pushNotificationConfig/get': z.object({ id: requiredId, pushNotificationConfigId: optionalId }),
  'tasks/pushNotificationConfig/list': z.object({ id: requiredId }),
  'tasks/pushNotificationConfig/delete': pushConfigRefSchema,
  'agent/getAuthenticatedExtendedCard': z.object({}),
} as const;

export type V03MethodName = keyof typeof v03ParamsSchemas;

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

/**
 * The v1.0 table's `run` returns `unknown` (the dispatcher serializes anything); these are the
 * values its methods return (a2a-methods.ts), named once here.
 */
const asTask = (value: unknown): Task => value as Task;
const asSendResponse = (value: unknown): { task: Task } | { message: Message } =>
  value as { task: Task } | { message: Message };
const asPushConfig = (value: unknown): TaskPushNotificationConfig => value as TaskPushNotificationConfig;
const asPushConfigPage = (
  value: unknown,
): { configs: TaskPushNotificationConfig[]; nextPageToken?: string } =>
  value as { configs: TaskPushNotificationConfig[]; nextPageToken?: string };

/** Every event of a v1.0 stream as its v0.3 event, ids and heartbeats kept. */
async function* v03Events(stream: AsyncIterable<StreamItem>, end: StreamEnd): AsyncGenerator<StreamItem> {
  for await (const item of stream) {
    if ('comment' in item || 'wire' in item) yield item;
    else if ('response' in item) yield { eventId: item.eventId, wire: toV03Event(item.response, end) };
    else yield { wire: toV03Event(item, end) };
  }
}

const toV03Stream = (result: unknown, end: StreamEnd): StreamResult => {
  if (!isStreamResult(result)) throw new Error('A streaming method answered without a stream');
  return toStreamResult(v03Events(result.stream, end));
};

/** The v0.3 method table over a v1.0 one (createA2aMethods). */
export const createV03Methods = (v1: A2aMethodTable): MethodTable<typeof v03ParamsSchemas> => ({
  'message/send': defineMethod(v03ParamsSchemas['message/send'], async (params, ctx) =>
    toV03SendResult(asSendResponse(await v1.SendMessage.run(params, ctx))),
  ),
  // The stream closes at a terminal or interrupted state: that status event is `final`.
  'message/stream': defineMethod(v03ParamsSchemas['message/stream'], async (params, ctx) =>
    toV03Stream(await v1.SendStreamingMessage.run(params, ctx), 'terminal-or-interrupted'),
  ),
  'tasks/get': defineMethod(v03ParamsSchemas['tasks/get'], async (params, ctx) =>
    toV03Task(asTask(await v1.GetTask.run(params, ctx))),
  ),
  'tasks/cancel': defineMethod(v03ParamsSchemas['tasks/cancel'], async (params, ctx) =>
    toV03Task(asTask(await v1.CancelTask.run(params, ctx))),
  ),
  'tasks/resubscribe': defineMethod(v03ParamsSchemas['tasks/resubscribe'], async (params, ctx) =>
    toV03Stream(await v1.SubscribeToTask.run(params, ctx), 'terminal'),
  ),
  'tasks/pushNotificationConfig/set': defineMethod(
    v03ParamsSchemas['tasks/pushNotificationConfig/set'],
    async (params, ctx) =>
      toV03PushConfig(asPushConfig(await v1.CreateTaskPushNotificationConfig.run(params, ctx))),
  ),
  'tasks/pushNotificationConfig/get': defineMethod(
    v03ParamsSchemas['tasks/pushNotificationConfig/get'],
    async (params, ctx) => {
      if (params.pushNotificationConfigId !== undefined) {
        const ref = { taskId: params.id, id: params.pushNotificationConfigId };
        return toV03PushConfig(asPushConfig(await v1.GetTaskPushNotificationConfig.run(ref, ctx)));
      }
      const page = asPushConfigPage(
        await v1.ListTaskPushNotificationConfigs.run({ taskId: params.id, pageSize: 1 }, ctx),
      );
      const first = page.configs[0];
      if (first === undefined) throw new TaskNotFoundError(params.id);
      return toV03PushConfig(first);
    },
  ),
  // v0.3 answers the whole list at once: every page of the v1.0 list.
  'tasks/pushNotificationConfig/list': defineMethod(
    v03ParamsSchemas['tasks/pushNotificationConfig/list'],
    async (params, ctx) => {
      const configs: TaskPushNotificationConfig[] = [];
      let pageToken: string | undefined;
      do {
        const page = asPushConfigPage(
          await v1.ListTaskPushNotificationConfigs.run({ taskId: params.id, pageSize: 100, pageToken }, ctx),
        );
        configs.push(...page.configs);
        pageToken = page.nextPageToken;
      } while (pageToken !== undefined);
      return configs.map(toV03PushConfig);
    },
  ),
  'tasks/pushNotificationConfig/delete': defineMethod(
    v03ParamsSchemas['tasks/pushNotificationConfig/delete'],
    // Result `null`, as in v1.0 (docs/protocol.md §17).
    async (params, ctx) => {
      await v1.DeleteTaskPushNotificationConfig.run(
        { taskId: params.id, id: params.pushNotificationConfigId },
        ctx,
      );
    },
  ),
  // v0.3 has one error for "no extended card here": -32007 AuthenticatedExtendedCardNotConfigured.
  // The card answered is the v0.3 card (agent-card.ts): the v1.0 one with the v0.3 fields alongside.
  'agent/getAuthenticatedExtendedCard': defineMethod(
    v03ParamsSchemas['agent/getAuthenticatedExtendedCard'],
    async (_params, ctx) => {
      try {
        return await v1.GetExtendedAgentCard.run({}, ctx);
      } catch (error) {
        if (error instanceof UnsupportedOperationError) throw new ExtendedAgentCardNotConfiguredError();
        throw error;
      }
    },
  ),
});
