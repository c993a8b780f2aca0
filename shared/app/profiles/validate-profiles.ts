import type { Config } from '../../config/config.ts';
import type { Ceilings } from '../../domain/privacy.ts';
import { resolveProfilePrivacy } from '../../domain/privacy.ts';

/**
 * Whether each profile of a configuration may be published (I-REFUSE): a profile whose answer
 * ceiling on its primary provider is `metadata` or `none` cannot keep a result, so it is refused
 * — by the admin command that saves profiles, by `npm start` (a warning), and by the agent card
 * (404). The verdict names the setting that causes the refusal and every other that alone would.
 */

export interface ProfileVerdict {
  readonly profileId: string;
  readonly publishable: boolean;
  readonly primaryProviderId?: string;
  /** The ceilings a run of this profile starts with. */
  readonly ceilings: Ceilings;
  /** The deciding setting, e.g. `providers.strict.privacyLevel`, with its configured value. */
  readonly setting?: string;
  readonly value?: unknown;
  /** Every setting that alone refuses the profile, strictest first. */
  readonly settings?: readonly string[];
}

/** The configured value of a dotted setting path, or undefined (for messages only). */
const valueAt = (config: Config, setting: string): unknown => {
  let value: unknown = config;
  for (const segment of setting.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
};

export const validateProfiles = (config: Config): ProfileVerdict[] =>
  Object.keys(config.profiles)
    .sort()
    .map((profileId) => {
      const privacy = resolveProfilePrivacy(config, profileId);
      const base = {
        profileId,
        ceilings: privacy.ceilings,
        ...(privacy.primaryProviderId !== undefined ? { primaryProviderId: privacy.primaryProviderId } : {}),
      };
      if (privacy.refusal === undefined) return { ...base, publishable: true };
      return {
        ...base,
        publishable: false,
        setting: privacy.refusal.setting,
        value: valueAt(config, privacy.refusal.setting),
        settings: privacy.refusal.settings,
      };
    });

/** One line for an operator: which profile, why, and which setting to change. */
export const describeRefusal = (verdict: ProfileVerdict): string => {
  const value = verdict.value === undefined ? '' : ` = ${JSON.stringify(verdict.value)}`;
  const others = (verdict.settings ?? []).filter((setting) => setting !== verdict.setting);
  return (
    `profile "${verdict.profileId}" is refused (RESULT_NOT_RETAINABLE): its answer ceiling is ` +
    `"${verdict.ceilings.answer}", so no result could be kept; caused by ${verdict.setting}${value}` +
    (others.length > 0 ? ` (also: ${others.join(', ')})` : '')
  );
};
