import type { Tool, ToolRegistry } from '../../domain/tools.ts';
import { calculatorTool } from './calculator.ts';

/** The tools this build offers, by name. A profile enables some of them in its config. */
export class StaticToolRegistry implements ToolRegistry {
  private readonly tools: ReadonlyMap<string, Tool>;

  constructor(tools: readonly Tool[]) {
    this.tools = new Map(tools.map((tool) => [tool.name, tool]));
    if (this.tools.size !== tools.length) throw new Error('Two tools share a name');
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  names(): readonly string[] {
    return [...this.tools.keys()];
  }
}

// TODO(http_fetch): add the fetch tool once shared/adapters/ssrf-guard.ts exists (same guard as webhooks).
export const builtInTools: readonly Tool[] = [calculatorTool];

export const createToolRegistry = (): StaticToolRegistry => new StaticToolRegistry(builtInTools);
