import type { Artifact, Message, StreamResponse } from '../domain/a2a.ts';
import type { JournalEvent } from '../domain/projection.ts';
import type { TaskContentCodec } from './task-content.ts';

/**
 * One committed revision as v1.0 StreamResponses, the same mapping the SSE streams use
 * (shared/app/stream-task.ts): one artifactUpdate per artifact when the revision changed the
 * artifacts (each the whole committed artifact: `lastChunk`, never `append`), then the
 * statusUpdate. Webhook bodies are these responses, one POST each, in this order.
 */
export const toStreamResponses = (
  event: JournalEvent,
  content: { readonly statusMessage?: Message; readonly artifacts?: readonly Artifact[] },
): StreamResponse[] => [
  ...(content.artifacts ?? []).map(
    (artifact): StreamResponse => ({
      artifactUpdate: { taskId: event.taskId, contextId: event.contextId, artifact, lastChunk: true },
    }),
  ),
  {
    statusUpdate: {
      taskId: event.taskId,
      contextId: event.contextId,
      status: {
        state: event.state,
        timestamp: event.statusTimestamp,
        ...(content.statusMessage ? { message: content.statusMessage } : {}),
      },
      ...(event.metadata !== undefined ? { metadata: event.metadata } : {}),
    },
  },
];

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
