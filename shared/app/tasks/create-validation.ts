import type { ProfileConfig } from '../../config/config.ts';
import type { Part, SendMessageConfiguration } from '../../domain/a2a.ts';
import {
  ContentTypeNotSupportedError,
  PushNotificationNotSupportedError,
  ResultNotRetainableError,
  TaskNotFoundError,
} from '../../domain/errors.ts';
import { type Ceilings, resolveProfilePrivacy } from '../../domain/privacy.ts';
import { validatePushConfigInput } from '../push/push-configs.ts';
import type { CreateTaskDeps, CreateTaskInput } from './create-task.ts';
import { checkMessageLimits, limitsOf } from './limits.ts';

/** What a send that may be written carries on: its profile, the ceilings its run starts with, its inline push config. */
export interface CheckedSend {
  readonly profile: ProfileConfig;
  readonly ceilings: Ceilings;
  readonly inlinePush: SendMessageConfiguration['taskPushNotificationConfig'];
}

/**
 * Refuses what cannot be kept or served before anything is written (I-REFUSE): an unknown agent,
 * a profile whose answers may not be kept, an inline push config this deployment cannot serve or
 * that is invalid, a message over the limits, a part of a media type the agent does not accept.
 */
export const checkSend = (deps: CreateTaskDeps, input: CreateTaskInput): CheckedSend => {
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
  return { profile, ceilings: privacy.ceilings, inlinePush };
};

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
