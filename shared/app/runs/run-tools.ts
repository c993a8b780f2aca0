import { AgentStoppedError } from '../../domain/errors.ts';
import type { RunProfile } from '../../domain/task.ts';
import type { EnabledTool, ToolRegistry } from '../../domain/tools.ts';

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
