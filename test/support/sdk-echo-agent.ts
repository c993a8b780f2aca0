import type { AgentCard, Message, Role as RoleValue, TaskState as TaskStateValue } from '@a2a-js/sdk';
import type { AgentEvent as AgentEventValue, AgentExecutor, RequestContext } from '@a2a-js/sdk/server';

/**
 * The echo agent on `@a2a-js/sdk`'s own server, as the scripted `echo` provider plays it: the
 * task is submitted, worked on, given one text artifact `echo` equal to the user's text, and
 * completed with a status message. Shared by the benchmark's anchor (bench/anchor/sdk-server.ts,
 * whose SDK lives in bench/anchor/node_modules) and the third-party agent of the delegation tests
 * (test/support/sdk-a2a-agent.ts): the SDK's values come from whichever install loads them, only
 * its types from here.
 */
export interface EchoAgentSdk {
  readonly AgentEvent: typeof AgentEventValue;
  readonly Role: typeof RoleValue;
  readonly TaskState: typeof TaskStateValue;
}

/** The text parts of an SDK message, joined. */
export const sdkTextOf = (message: Message | undefined): string =>
  (message?.parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');

export const createEchoExecutor = ({ AgentEvent, Role, TaskState }: EchoAgentSdk): AgentExecutor => {
  const now = (): string => new Date().toISOString();
  const agentMessage = (taskId: string, contextId: string, suffix: string, text: string): Message => ({
    messageId: `${taskId}-${suffix}`,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  });
  return {
    execute: async (context: RequestContext, bus): Promise<void> => {
      const { taskId, contextId } = context;
      const user = context.userMessage;
      if (!context.task) {
        bus.publish(
          AgentEvent.task({
            id: taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
            artifacts: [],
            history: [user],
            metadata: undefined,
          }),
        );
      }
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() },
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: `${taskId}-artifact-0`,
            name: 'echo',
            description: '',
            parts: [
              {
                content: { $case: 'text', value: sdkTextOf(user) },
                metadata: undefined,
                filename: '',
                mediaType: '',
              },
            ],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            message: agentMessage(taskId, contextId, 'status', 'Echoed your message.'),
            timestamp: now(),
          },
          metadata: undefined,
        }),
      );
      bus.finished();
    },
    cancelTask: async (): Promise<void> => {},
  };
};

/**
 * The echo agent's card: one JSON-RPC interface at `url` (the handler holds the object, so a
 * server that learns its port after listening sets `supportedInterfaces[0].url` then).
 */
export const echoAgentCard = (url: string, name: string, description: string): AgentCard => ({
  name,
  description,
  version: '1.0.0',
  provider: undefined,
  supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
  capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'echo',
      name: 'Echo',
      description: 'Repeats the text.',
      tags: ['echo'],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    },
  ],
  signatures: [],
});
