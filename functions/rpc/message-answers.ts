import { answersWithMessage } from '../../shared/adapters/providers/scripted-provider.ts';
import type { MessageAnswerForecast } from '../../shared/app/tasks/stream-task.ts';

/**
 * Which sends an agent may answer with a direct Message (docs/protocol.md §4): those a provider of the
 * profile's chain answers so — of the providers here only the scripted `tck` behaviour, for its
 * `tck-message-response` scenario. A model provider always answers with a task.
 */
export const mayAnswerWithMessage: MessageAnswerForecast = (config, profileId, message) =>
  (config.profiles[profileId]?.providers ?? []).some((providerId) => {
    const provider = config.providers[providerId];
    return provider?.type === 'scripted' && answersWithMessage(provider.behavior, message);
  });
