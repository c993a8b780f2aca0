import { AgentStoppedError } from '../../domain/errors.ts';
import type { RunProfile } from '../../domain/task.ts';
import type { AgentToolSource, EnabledTool, RemoteToolSource, ToolRegistry } from '../../domain/tools.ts';

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
 * Every tool a run of the profile is offered: the build's tools it enables, the MCP tools it
 * allows (`profiles.<id>.mcp`), as their servers list them now or as the container cached them,
 * and one tool per remote A2A agent it may delegate to (`profiles.<id>.agents`).
 * Two tools of one name stop the run with TOOL_UNAVAILABLE.
 */
export const runToolsOf = async (
  profile: Pick<RunProfile, 'tools' | 'mcp' | 'agents'>,
  sources: {
    readonly tools?: ToolRegistry | (() => Promise<ToolRegistry>);
    readonly remoteTools?: RemoteToolSource;
    readonly agentTools?: AgentToolSource;
  },
  signal?: AbortSignal,
): Promise<EnabledTool[]> => {
  const registry =
    typeof sources.tools === 'function' && profile.tools.length > 0 ? await sources.tools() : sources.tools;
  const own = enabledToolsOf(profile, typeof registry === 'function' ? undefined : registry);
  const grants = profile.mcp ?? {};
  const agents = profile.agents ?? {};
  const wantsMcp = Object.keys(grants).length > 0;
  const wantsAgents = Object.keys(agents).length > 0;
  if (!wantsMcp && !wantsAgents) return own;
  if ((wantsMcp && sources.remoteTools === undefined) || (wantsAgents && sources.agentTools === undefined)) {
    throw new AgentStoppedError(
      'TOOL_UNAVAILABLE',
      'The agent is configured with a tool this server does not have.',
    );
  }
  const [mcp, delegates] = await Promise.all([
    wantsMcp ? sources.remoteTools?.toolsFor(grants, signal) : undefined,
    wantsAgents ? sources.agentTools?.toolsFor(agents, signal) : undefined,
  ]);
  const all = [...own, ...(mcp ?? []), ...(delegates ?? [])];
  if (new Set(all.map(({ tool }) => tool.name)).size !== all.length) {
    throw new AgentStoppedError('TOOL_UNAVAILABLE', 'The agent is configured with two tools of one name.');
  }
  return all;
};
