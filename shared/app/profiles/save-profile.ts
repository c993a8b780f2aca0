import type { Config } from '../../config/config.ts';
import type { ProfileStore, StoredProfile } from '../../domain/operations.ts';
import type { Clock } from '../../domain/ports.ts';
import type { RemoteAgentCheck, RemoteToolCheck } from '../../domain/tools.ts';
import { checkProfileEntry } from './served-profiles.ts';
import type { ProfileVerdict } from './validate-profiles.ts';

/**
 * `profiles put` (docs/operations.md "Saved profiles"; docs/configuration.md): a profile is saved only if it is valid in the
 * installation's configuration (its shape, its providers exist) and publishable (I-REFUSE).
 * A refused profile is not saved; the verdict names the setting that refuses it. A profile that
 * takes tools from MCP servers (`mcp`) is saved only if each server answers and offers every tool
 * it allows, and one that delegates to A2A agents (`agents`) only if each agent's card can be read
 * and used; otherwise `problems` says why, per setting.
 */

export type SaveProfileResult =
  | { readonly saved: true; readonly stored: StoredProfile; readonly verdict: ProfileVerdict }
  | {
      readonly saved: false;
      readonly verdict: ProfileVerdict;
      /** Why its MCP servers, tools or A2A agents cannot be served, each naming its setting. */
      readonly problems?: readonly string[];
    };

/** Throws ConfigError (with the setting's path) when the entry is not a valid profile of `config`. */
export const saveProfile = async (
  deps: {
    readonly profiles: ProfileStore;
    readonly clock: Clock;
    readonly remoteTools?: RemoteToolCheck;
    readonly remoteAgents?: RemoteAgentCheck;
  },
  config: Config,
  profileId: string,
  entry: unknown,
): Promise<SaveProfileResult> => {
  // Checked as the rpc function checks it each time it reads it (served-profiles.ts).
  const { profile, verdict } = checkProfileEntry(config, profileId, entry);
  if (!verdict.publishable) return { saved: false, verdict };
  const [toolProblems, agentProblems] = await Promise.all([
    deps.remoteTools === undefined || Object.keys(profile.mcp).length === 0
      ? []
      : deps.remoteTools.problemsOf(profile.mcp, profileId),
    deps.remoteAgents === undefined || Object.keys(profile.agents).length === 0
      ? []
      : deps.remoteAgents.problemsOf(profile.agents, profileId),
  ]);
  const problems = [...toolProblems, ...agentProblems];
  if (problems.length > 0) return { saved: false, verdict, problems };
  const stored: StoredProfile = {
    profileId,
    profile: entry as Record<string, unknown>,
    updatedAt: deps.clock.now().toISOString(),
  };
  await deps.profiles.put(stored);
  return { saved: true, stored, verdict };
};
