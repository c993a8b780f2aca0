import { LazyMcpToolSource } from '../../shared/adapters/tools/lazy-tool-sources.ts';
import { parseConfig } from '../../shared/config/config.ts';

/**
 * A function entry for test/infra/house-bundles.test.ts: bundled by `HouseFunction` with
 * `toolSources`, it loads the tool sources from the `tool-sources.mjs` CDK's afterBundling hook
 * wrote beside it (shared/adapters/tools/lazy-tool-sources.ts), lists a server's tools and calls one.
 */
export const handler = async (event: { readonly url: string; readonly key: string }) => {
  const { mcpServers } = parseConfig({
    providers: { local: { type: 'scripted' } },
    profiles: {},
    mcpServers: { tools: { url: event.url, timeoutMs: 5_000 } },
  });
  const source = new LazyMcpToolSource({
    servers: mcpServers,
    policy: { allowHttp: true, allowLoopback: true },
    credentials: { localMode: true, env: {}, extensionEndpoint: '', sessionToken: '' },
  });
  const tools = await source.toolsFor({ tools: { tools: { lookup: {} } } });
  const [lookup] = tools;
  return {
    names: tools.map(({ tool }) => tool.name),
    effect: lookup?.tool.effect,
    result: await lookup?.tool.invoke({ key: event.key }, { runId: 'probe' }),
  };
};
