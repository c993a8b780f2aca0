/**
 * What a run reaches beyond this build's own tools, as one module loaded on first use
 * (lazy-tool-sources.ts): the build's own tools, the MCP tool source with the official MCP SDK's
 * client, remote A2A agents with the official A2A SDK's client, and the scripted tool-calling
 * model. A deployed function loads it from its own bundle file beside the function's
 * (`tool-sources.mjs`, infra/bundling.ts), so the function bundles stay within their size limit
 * and a function whose runs call no tool never loads it.
 */

// A run's delegation steps ride along: only a run that may delegate needs them (run-deps.ts).
export { parkRun, runDelegations } from '../../app/runs/run-delegations.ts';
export { ScriptedToolModel } from '../providers/scripted-tool-model.ts';
// So does the run queue's client: a run whose remote task settled before it parked is queued
// again (run-deps.ts).
export { SqsRunQueue } from '../sqs-run-queue.ts';
export { A2aAgentSource } from './a2a-agent-source.ts';
export { McpToolSource } from './mcp-tool-source.ts';
export { createToolRegistry } from './static-tool-registry.ts';
