import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpToolSource } from '../../shared/adapters/tools/mcp-tool-source.ts';
import { parseConfig } from '../../shared/config/config.ts';
import type { EnabledTool, RemoteToolGrants } from '../../shared/domain/tools.ts';
import {
  type McpServerProcess,
  startMcpTestServer,
  startServerEverything,
} from '../support/mcp-server-process.ts';

/**
 * MCP servers as tool sources (docs/configuration.md `mcpServers`), over real Streamable HTTP:
 * the test server on the official SDK's server side and `@modelcontextprotocol/server-everything`
 * from the npm registry, each in its own process. Sends are counted on the server's own log.
 */
describe('MCP tool source', () => {
  let tools: McpServerProcess;
  let oauth: McpServerProcess;
  let everything: McpServerProcess;
  const local = { allowHttp: true, allowLoopback: true };
  const credentials = {
    localMode: true,
    env: { TOOLS_KEY: 'key-1', TOOLS_SECRET: 'secret-1', WRONG_SECRET: 'nope' },
    extensionEndpoint: 'http://127.0.0.1:1',
    sessionToken: '',
  };

  beforeAll(async () => {
    [tools, oauth, everything] = await Promise.all([
      startMcpTestServer({ apiKey: 'key-1' }),
      startMcpTestServer({ oauth: { clientId: 'agent', clientSecret: 'secret-1' } }),
      startServerEverything(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([tools?.stop(), oauth?.stop(), everything?.stop()]);
  });

  const sourceFor = (extra: Record<string, unknown> = {}, policy = local) => {
    const config = parseConfig({
      providers: { local: { type: 'scripted' } },
      profiles: {},
      mcpServers: {
        tools: {
          url: tools.url,
          headers: { 'x-api-key': { env: 'TOOLS_KEY' } },
          timeoutMs: 1_500,
          maxResultBytes: 4_096,
        },
        everything: { url: everything.url },
        ...extra,
      },
    });
    return new McpToolSource({ servers: config.mcpServers, policy, credentials });
  };

  const grants: RemoteToolGrants = {
    tools: {
      tools: {
        lookup: {},
        set_flag: {},
        append_note: {},
        delete_record: {},
        big: {},
        picture: {},
      },
    },
  };

  const byName = (enabled: EnabledTool[]) => new Map(enabled.map((entry) => [entry.tool.name, entry]));

  it('offers the allowed tools as <server>__<tool> with their schemas, effects from the annotations, destructive ones gated', async () => {
    const enabled = byName(await sourceFor().toolsFor(grants));
    expect([...enabled.keys()].sort()).toEqual([
      'tools__append_note',
      'tools__big',
      'tools__delete_record',
      'tools__lookup',
      'tools__picture',
      'tools__set_flag',
    ]);
    expect(enabled.get('tools__lookup')).toMatchObject({
      requiresApproval: false,
      tool: {
        effect: 'read-only',
        readOnly: true,
        inputSchema: { type: 'object', properties: { key: { type: 'string' } } },
      },
    });
    expect(enabled.get('tools__set_flag')).toMatchObject({
      requiresApproval: false,
      tool: { effect: 'idempotent' },
    });
    expect(enabled.get('tools__append_note')).toMatchObject({
      requiresApproval: false,
      tool: { effect: 'write', destructive: false },
    });
    expect(enabled.get('tools__delete_record')).toMatchObject({
      requiresApproval: true,
      tool: { effect: 'write', destructive: true },
    });
  });

  it('lets a profile override effects and approvals', async () => {
    const enabled = byName(
      await sourceFor().toolsFor({
        tools: {
          tools: {
            delete_record: { requiresApproval: false },
            lookup: { effect: 'destructive' },
            append_note: { effect: 'idempotent' },
          },
        },
      }),
    );
    expect(enabled.get('tools__delete_record')?.requiresApproval).toBe(false);
    expect(enabled.get('tools__lookup')).toMatchObject({
      requiresApproval: true,
      tool: { effect: 'write', destructive: true },
    });
    expect(enabled.get('tools__append_note')?.tool.effect).toBe('idempotent');
  });

  it('maps text, structured, image and resource results, and refuses one above the size cap', async () => {
    const enabled = byName(await sourceFor().toolsFor(grants));
    const context = { runId: 'run-map' };
    expect(await enabled.get('tools__lookup')!.tool.invoke({ key: 'k1' }, context)).toEqual({
      ok: true,
      content: {
        content: [{ type: 'text', text: 'value of k1' }],
        structured: { key: 'k1', value: 'value of k1' },
      },
    });
    expect(await enabled.get('tools__picture')!.tool.invoke({}, context)).toEqual({
      ok: true,
      content: {
        content: [
          { type: 'image', mimeType: 'image/png', bytes: 16, note: 'binary content is not shown' },
          { type: 'resource', uri: 'memo://one', mimeType: 'text/plain', text: 'memo one' },
        ],
      },
    });
    const big = await enabled.get('tools__big')!.tool.invoke({ bytes: 10_000 }, context);
    expect(big).toMatchObject({ ok: false, error: expect.stringContaining('above the limit of 4096') });
    expect(big).not.toHaveProperty('outcomeUnknown');
  });

  it('a call that outlives its deadline fails with an unknown outcome, sent once (server log)', async () => {
    const enabled = byName(await sourceFor().toolsFor(grants));
    const before = (await tools.calls()).length;
    await tools.faults({ hangMs: 4_000 });
    try {
      const output = await enabled
        .get('tools__append_note')!
        .tool.invoke({ text: 'once' }, { runId: 'run-hang' });
      expect(output).toMatchObject({ ok: false, outcomeUnknown: true });
    } finally {
      await tools.faults({});
    }
    const sent = (await tools.calls()).slice(before);
    expect(sent).toEqual([{ tool: 'append_note', arguments: { text: 'once' }, at: expect.any(String) }]);
  });

  it('a server answer that is an error is a known outcome; a missing credential fails the call, not the listing of others', async () => {
    const enabled = byName(await sourceFor().toolsFor(grants));
    const bad = await enabled.get('tools__lookup')!.tool.invoke({ key: 42 }, { runId: 'run-bad' });
    expect(bad.ok).toBe(false);
    expect(bad).not.toHaveProperty('outcomeUnknown');
    const noKey = sourceFor({ nokey: { url: tools.url, headers: { 'x-api-key': { env: 'UNSET_KEY' } } } });
    const offered = await noKey.toolsFor({ nokey: { tools: { lookup: {} } } });
    expect(offered.map((entry) => entry.tool.name)).toEqual(['nokey__lookup']);
    expect(await offered[0]!.tool.invoke({ key: 'a' }, { runId: 'r' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('UNSET_KEY is not set'),
    });
  });

  it('gets a bearer token by OAuth client credentials, and says why when the secret is wrong', async () => {
    const source = sourceFor({
      good: {
        url: oauth.url,
        oauth: {
          tokenUrl: `${oauth.origin}/token`,
          clientId: 'agent',
          clientSecret: { env: 'TOOLS_SECRET' },
        },
      },
      wrong: {
        url: oauth.url,
        oauth: {
          tokenUrl: `${oauth.origin}/token`,
          clientId: 'agent',
          clientSecret: { env: 'WRONG_SECRET' },
        },
      },
    });
    const [good] = await source.toolsFor({ good: { tools: { lookup: {} } } });
    expect(await good!.tool.invoke({ key: 'z' }, { runId: 'r' })).toMatchObject({ ok: true });
    expect(await source.problemsOf({ wrong: { tools: { lookup: {} } } }, 'p')).toEqual([
      expect.stringMatching(/^profiles\.p\.mcp\.wrong: .*OAuth token endpoint answered 401/),
    ]);
  });

  it('a server that is down fails its tool calls with an error the model reads; saving names the problem', async () => {
    const down = await startMcpTestServer();
    await down.stop();
    const source = sourceFor({ down: { url: down.url, timeoutMs: 1_000 } });
    const offered = await source.toolsFor({ down: { tools: { lookup: {} } } });
    // Its effect unknown (a destructive write by the MCP defaults), but it can send nothing: no
    // operator is asked to approve a call that only returns this error.
    expect(offered[0]).toMatchObject({
      requiresApproval: false,
      tool: { effect: 'write', destructive: true },
    });
    expect(await offered[0]!.tool.invoke({ key: 'a' }, { runId: 'r' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('unavailable: the MCP server could not be listed'),
    });
    expect(
      await source.problemsOf({ down: { tools: { lookup: {} } }, tools: { tools: { nope: {} } } }, 'p'),
    ).toEqual([
      expect.stringMatching(/^profiles\.p\.mcp\.down: the MCP server could not be listed/),
      'profiles.p.mcp.tools.tools.nope: the server offers no tool "nope"',
    ]);
  });

  it('goes through the SSRF guard: loopback is refused under the deployment policy', async () => {
    const source = sourceFor({}, { allowHttp: true, allowLoopback: false });
    expect(await source.problemsOf({ tools: { tools: { lookup: {} } } }, 'p')).toEqual([
      expect.stringMatching(/could not be listed \(refused: loopback\)/),
    ]);
    expect((await tools.calls()).filter((call) => call.tool === 'nothing')).toEqual([]);
  });

  it('reaches the third-party server-everything: its echo is read-only by its annotations', async () => {
    const [echo] = await sourceFor().toolsFor({ everything: { tools: { echo: {} } } });
    expect(echo).toMatchObject({
      requiresApproval: false,
      tool: { name: 'everything__echo', effect: 'read-only' },
    });
    const output = await echo!.tool.invoke({ message: 'hi there' }, { runId: 'r' });
    expect(output).toMatchObject({
      ok: true,
      content: { content: [{ type: 'text', text: expect.stringContaining('hi there') }] },
    });
  });
});
