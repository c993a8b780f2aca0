import { AgentStoppedError } from '../../domain/errors.ts';
import type { RunProfile } from '../../domain/task.ts';
import type { EnabledTool, RemoteToolSource, ToolRegistry } from '../../domain/tools.ts';

/**
 * The tools a profile enables, from the registry of this build. A configured tool this build
 * does not have stops the run with TOOL_UNAVAILABLE rather than running without it.
 */
export const enabledToolsOf = (
  profile: Pick<RunProfile, 'tools'>,
  registry: ToolRegistry | undefined,
): EnabledTool[] =>
  profile.tools.map(({ name, requiresApproval }) => {
    const tool = registry?.get(name);
    if (tool === undefined) {
      throw new AgentStoppedError(
        'TOOL_UNAVAILABLE',
        `The agent is configured with a tool this server does not have.`,
      );
    }
    return { tool, requiresApproval };
  });

/**
 * Every tool a run of the profile is offered: the build's tools it enables, then the MCP tools it
 * allows (`profiles.<id>.mcp`), as their servers list them now or as the container cached them.
 * Two tools of one name stop the run with TOOL_UNAVAILABLE.
 */
export const runToolsOf = async (
  profile: Pick<RunProfile, 'tools' | 'mcp'>,
  sources: {
    readonly tools?: ToolRegistry | (() => Promise<ToolRegistry>);
    readonly remoteTools?: RemoteToolSource;
  },
  signal?: AbortSignal,
): Promise<EnabledTool[]> => {
  const registry =
    typeof sources.tools === 'function' && profile.tools.length > 0 ? await sources.tools() : sources.tools;
  const own = enabledToolsOf(profile, typeof registry === 'function' ? undefined : registry);
  const grants = profile.mcp ?? {};
  if (Object.keys(grants).length === 0) return own;
  if (sources.remoteTools === undefined) {
    throw new AgentStoppedError(
      'TOOL_UNAVAILABLE',
      'The agent is configured with a tool this server does not have.',
    );
  }
  const all = [...own, ...(await sources.remoteTools.toolsFor(grants, signal))];
  if (new Set(all.map(({ tool }) => tool.name)).size !== all.length) {
    throw new AgentStoppedError('TOOL_UNAVAILABLE', 'The agent is configured with two tools of one name.');
  }
  return all;
};
