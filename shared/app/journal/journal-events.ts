import type { Artifact, Message, StreamResponse, Task, TaskStatus } from '../../domain/a2a.ts';
import type { JournalEvent } from '../../domain/projection.ts';
import type { TaskContentCodec } from '../tasks/task-content.ts';

/**
 * One committed revision as v1.0 StreamResponses, the same mapping the SSE streams use
 * (shared/app/tasks/stream-task.ts): one artifactUpdate per artifact when the revision changed the
 * artifacts (the whole committed artifact with `lastChunk`, or for a chunk of the answer the text the chunks
 * before it did not show, appended: docs/architecture.md "Progressive output"), then the
 * statusUpdate. Webhook bodies are these responses, one POST each, in this order.
 */
export const toStreamResponses = (
  event: JournalEvent,
  content: { readonly statusMessage?: Message; readonly artifacts?: readonly Artifact[] },
): StreamResponse[] =>
  withGenerations(event.generation, [
    ...(content.artifacts ?? []).map((artifact): StreamResponse => {
      const chunk = event.answerChunk;
      if (chunk === undefined || chunk.artifactId !== artifact.artifactId)
        return {
          artifactUpdate: { taskId: event.taskId, contextId: event.contextId, artifact, lastChunk: true },
        };
      // A chunk of the answer while the model works: the text earlier chunks did not show yet.
      return {
        artifactUpdate: {
          taskId: event.taskId,
          contextId: event.contextId,
          artifact: { ...artifact, parts: [{ text: textOfParts(artifact).slice(chunk.from) }] },
          append: chunk.from > 0,
          lastChunk: false,
        },
      };
    }),
    {
      statusUpdate: {
        taskId: event.taskId,
        contextId: event.contextId,
        status: statusOf(event, content.statusMessage),
        ...(event.metadata !== undefined ? { metadata: event.metadata } : {}),
      },
    },
  ]);

/**
 * The generation of each update event of one revision (docs/protocol.md §16): the revision's
 * generation is the task's after its last event, its status, and each event before it one less.
 * A task without generations (created before they were kept) shows none.
 */
const withGenerations = (generation: number | undefined, responses: StreamResponse[]): StreamResponse[] => {
  if (generation === undefined) return responses;
  const first = generation - responses.length + 1;
  return responses.map((response, index) =>
    'statusUpdate' in response
      ? { statusUpdate: { ...response.statusUpdate, generation: first + index } }
      : 'artifactUpdate' in response
        ? { artifactUpdate: { ...response.artifactUpdate, generation: first + index } }
        : response,
  );
};

const textOfParts = (artifact: Artifact): string =>
  artifact.parts.map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).join('');

const statusOf = (event: JournalEvent, statusMessage: Message | undefined): TaskStatus => ({
  state: event.state,
  timestamp: event.statusTimestamp,
  ...(statusMessage ? { message: statusMessage } : {}),
});

/** Opens the event's sealed content and maps it (needs kms:Decrypt through the codec). */
export const openStreamResponses = async (
  codec: TaskContentCodec,
  event: JournalEvent,
): Promise<StreamResponse[]> => {
  const [artifacts, statusMessage] = await Promise.all([
    event.sealedArtifacts === undefined ? [] : codec.openArtifacts(event.taskId, event.sealedArtifacts),
    codec.openStatusMessage(event.taskId, event.sealedStatusMessage),
  ]);
  return toStreamResponses(event, { artifacts, ...(statusMessage ? { statusMessage } : {}) });
};

/**
 * The task as of one revision, for webhooks of configs created through A2A v0.3 (docs/protocol.md, v0.3:
 * v0.3 servers POST the Task): the revision's status and the artifacts committed up to it — from
 * the latest event at or before it that changed them (`events` must include that one). No
 * history: v0.3 makes it optional, and the receiver asked for updates, not the conversation.
 */
export const openTaskAt = async (
  codec: TaskContentCodec,
  events: readonly JournalEvent[],
  event: JournalEvent,
): Promise<Task> => {
  const withArtifacts = events.findLast(
    (candidate) => candidate.revision <= event.revision && candidate.sealedArtifacts !== undefined,
  );
  const [artifacts, statusMessage] = await Promise.all([
    withArtifacts?.sealedArtifacts === undefined
      ? []
      : codec.openArtifacts(event.taskId, withArtifacts.sealedArtifacts),
    codec.openStatusMessage(event.taskId, event.sealedStatusMessage),
  ]);
  return {
    id: event.taskId,
    contextId: event.contextId,
    status: statusOf(event, statusMessage),
    ...(artifacts.length > 0 ? { artifacts: [...artifacts] } : {}),
    ...(event.metadata !== undefined ? { metadata: event.metadata } : {}),
  };
};
