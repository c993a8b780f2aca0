import type { Tool, ToolRegistry } from '../../domain/tools.ts';
import type { WebhookPolicy } from '../../domain/webhook-address.ts';
import { calculatorTool } from './calculator.ts';
import { createHttpFetchTool } from './http-fetch.ts';

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

/**
 * The tools of this build: the deterministic calculator and, given the installation's outbound
 * policy (the webhooks' SSRF policy), `http_fetch`.
 */
export const createToolRegistry = (outbound?: WebhookPolicy): StaticToolRegistry =>
  new StaticToolRegistry([calculatorTool, ...(outbound ? [createHttpFetchTool({ policy: outbound })] : [])]);
