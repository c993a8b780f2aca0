import { type Config, ConfigError, type ProfileConfig, parseConfig } from '../../config/config.ts';
import type { Logger } from '../../domain/logger.ts';
import type { SavedProfiles, StoredProfile } from '../../domain/operations.ts';
import type { Clock } from '../../domain/ports.ts';
import type { RunProfile } from '../../domain/task.ts';
import { type ProfileVerdict, validateProfiles } from './validate-profiles.ts';

/**
 * The profiles the rpc function serves (docs/operations.md, "Saved profiles"): the deployment
 * configuration's, with the profiles saved by `a2a-admin profiles put` overlaid — a saved profile adds an id
 * or replaces the deployment's profile of the same id. Each saved entry is checked again against the
 * configuration of this deployment whenever it is read, as `profiles put` checked it.
 */

/**
 * One `profiles` entry checked in the context of `config` (its providers, the global level):
 * throws ConfigError naming the setting (`profiles.<id>.<setting>`) when it is not a valid
 * profile; otherwise the parsed profile and whether it may be published (I-REFUSE).
 */
export const checkProfileEntry = (
  config: Config,
  profileId: string,
  entry: unknown,
): { readonly profile: ProfileConfig; readonly verdict: ProfileVerdict } => {
  const alone = parseConfig({ ...config, profiles: { [profileId]: entry } });
  const [verdict] = validateProfiles(alone);
  return { profile: alone.profiles[profileId]!, verdict: verdict! };
};

export interface ServedProfiles {
  /** The configuration with the saved profiles overlaid on its own. */
  readonly config: Config;
  /** The ids served from the table: the executor cannot see these, so their runs carry a snapshot. */
  readonly saved: ReadonlySet<string>;
}

/** A saved profile that is not served, for the log: its id, version and why — never its content. */
export interface NotServedProfile {
  readonly profileId: string;
  readonly updatedAt: string;
  readonly reason: 'INVALID' | 'RESULT_NOT_RETAINABLE';
  /** The setting that refuses it (RESULT_NOT_RETAINABLE). */
  readonly setting?: string;
}

/**
 * Overlays the saved profiles. One that no longer validates here (an unknown provider, a shape
 * this version does not accept, or a refusal after the global level tightened) is not served —
 * and neither is the deployment's profile of the same id it replaced: the operator's latest
 * word for that id is not servable, so nothing is served under it until it is fixed or deleted.
 */
export const overlaySavedProfiles = (
  config: Config,
  stored: readonly StoredProfile[],
): { readonly served: ServedProfiles; readonly notServed: readonly NotServedProfile[] } => {
  const profiles = new Map(Object.entries(config.profiles));
  const saved = new Set<string>();
  const notServed: NotServedProfile[] = [];
  for (const { profileId, profile: entry, updatedAt } of stored) {
    profiles.delete(profileId);
    let checked: ReturnType<typeof checkProfileEntry>;
    try {
      checked = checkProfileEntry(config, profileId, entry);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      notServed.push({ profileId, updatedAt, reason: 'INVALID' });
      continue;
    }
    if (!checked.verdict.publishable) {
      notServed.push({
        profileId,
        updatedAt,
        reason: 'RESULT_NOT_RETAINABLE',
        ...(checked.verdict.setting !== undefined ? { setting: checked.verdict.setting } : {}),
      });
      continue;
    }
    profiles.set(profileId, checked.profile);
    saved.add(profileId);
  }
  return { served: { config: { ...config, profiles: Object.fromEntries(profiles) }, saved }, notServed };
};

/** What a run of a saved profile keeps of it. */
export const runProfileOf = (profile: ProfileConfig): RunProfile => ({
  providers: profile.providers,
  instructions: profile.instructions,
  tools: profile.tools,
  ...(Object.keys(profile.mcp).length > 0 && { mcp: profile.mcp }),
  ...(Object.keys(profile.agents).length > 0 && { agents: profile.agents }),
  maxToolRounds: profile.maxToolRounds,
  // Only a progressive profile's: the others commit no chunk, and their runs' rows stay as they were.
  ...(profile.output.progressive && { output: profile.output }),
});

export interface ProfileCatalog {
  /** The profiles as served now: at most `ttlMs` old. */
  current(): Promise<ServedProfiles>;
}

/** How long a function serves the saved profiles it read before it reads them again. */
export const defaultProfileCacheMs = 30_000;

/**
 * The saved profiles, read at most once per `ttlMs` per function instance (one Query of the
 * `PROFILES` partition), one read at a time however many requests wait for it. When a read fails
 * the profiles read last are served and the next request reads again; the first read's failure
 * fails the request.
 */
export const createProfileCatalog = (deps: {
  readonly config: Config;
  readonly saved: SavedProfiles;
  readonly clock: Clock;
  readonly ttlMs?: number;
  readonly logger?: Pick<Logger, 'warn'>;
}): ProfileCatalog => {
  const ttlMs = deps.ttlMs ?? defaultProfileCacheMs;
  let cached: { readonly served: ServedProfiles; readonly readAt: number } | undefined;
  let reading: Promise<ServedProfiles> | undefined;
  /** `<id>@<updatedAt>` of every version already logged as not served: once per version. */
  const logged = new Set<string>();

  const read = async (): Promise<ServedProfiles> => {
    let stored: StoredProfile[];
    try {
      stored = await deps.saved.list();
    } catch (error) {
      if (cached === undefined) throw error;
      deps.logger?.warn('saved profiles could not be read; serving the ones read before', {
        error: error instanceof Error ? error.name : 'unknown',
      });
      return cached.served;
    }
    const { served, notServed } = overlaySavedProfiles(deps.config, stored);
    for (const profile of notServed) {
      const key = `${profile.profileId}@${profile.updatedAt}`;
      if (logged.has(key)) continue;
      logged.add(key);
      deps.logger?.warn('saved profile not served', { ...profile });
    }
    cached = { served, readAt: deps.clock.now().getTime() };
    return served;
  };

  return {
    current: () => {
      if (cached !== undefined && deps.clock.now().getTime() - cached.readAt < ttlMs)
        return Promise.resolve(cached.served);
      reading ??= read().finally(() => {
        reading = undefined;
      });
      return reading;
    },
  };
};
