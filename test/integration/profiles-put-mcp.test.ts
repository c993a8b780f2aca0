import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbProfileStore } from '../../shared/adapters/dynamodb/dynamodb-profile-store.ts';
import { adminOn } from '../support/admin-on.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { type McpServerProcess, startMcpTestServer } from '../support/mcp-server-process.ts';

/**
 * `a2a-admin profiles put` with a profile that takes tools from MCP servers (docs/configuration.md
 * "Saved profiles"): the command lists each server from this machine before it saves, and refuses,
 * naming the setting, a server that does not answer, one that refuses its credentials, and a tool
 * the server does not offer. The test server runs in its own process; the state table is DynamoDB
 * Local's.
 */
describe('profiles put checks its MCP servers', () => {
  let env: TestResources;
  let tools: McpServerProcess;
  let keyed: McpServerProcess;
  let directory: string;
  let configFile: string;
  let store: DynamoDbProfileStore;

  beforeAll(async () => {
    [env, tools, keyed] = await Promise.all([
      createTestResources('profiles-mcp'),
      startMcpTestServer(),
      startMcpTestServer({ apiKey: 'the-right-key' }),
    ]);
    store = new DynamoDbProfileStore(env.clients.doc, env.resources.tables.State.name);
    directory = await mkdtemp(join(tmpdir(), 'profiles-mcp-'));
    configFile = join(directory, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        providers: { local: { type: 'scripted', behavior: 'echo' } },
        profiles: {},
        mcpServers: {
          tools: { url: tools.url, timeoutMs: 2_000 },
          // Nothing listens on port 9 of the loopback address.
          down: { url: 'http://127.0.0.1:9/mcp', timeoutMs: 2_000 },
          keyed: { url: keyed.url, headers: { 'x-api-key': 'a-wrong-key' }, timeoutMs: 2_000 },
          vaulted: {
            url: 'https://tools.example.com/mcp',
            headers: { 'x-api-key': { secret: { secretId: 'a2a/tools' } } },
          },
        },
      }),
    );
  });
  afterAll(async () => {
    env?.destroy();
    await Promise.all([tools?.stop(), keyed?.stop(), directory && rm(directory, { recursive: true })]);
  });

  const put = async (profileId: string, mcp: Record<string, unknown>) => {
    const path = join(directory, `${profileId}.json`);
    await writeFile(path, JSON.stringify({ name: profileId, description: 'x', providers: ['local'], mcp }));
    return adminOn(env, 'profiles', 'put', profileId, path, '--config', configFile);
  };

  it('saves a profile whose server answers and offers every tool it allows', async () => {
    const result = await put('good', { tools: { tools: { lookup: {}, append_note: {} } } });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^saved {4}good:/);
    expect((await store.get('good'))?.profile).toMatchObject({ mcp: { tools: { tools: { lookup: {} } } } });
  });

  it('refuses a tool the server does not offer, a server that does not answer, and one that refuses its credentials', async () => {
    const missing = await put('missing', { tools: { tools: { lookup: {}, launch_rocket: {} } } });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(
      'REFUSED  profiles.missing.mcp.tools.tools.launch_rocket: the server offers no tool "launch_rocket"',
    );
    expect(missing.stdout).toContain('Not saved');
    expect(await store.get('missing')).toBeUndefined();

    const down = await put('down', { down: { tools: { lookup: {} } } });
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(/REFUSED {2}profiles\.down\.mcp\.down: the MCP server could not be listed/);
    expect(await store.get('down')).toBeUndefined();

    const keyedOut = await put('keyed', { keyed: { tools: { lookup: {} } } });
    expect(keyedOut.code).toBe(1);
    expect(keyedOut.stdout).toMatch(
      /REFUSED {2}profiles\.keyed\.mcp\.keyed: the MCP server could not be listed/,
    );
    // The header's value is never echoed.
    expect(keyedOut.stdout + keyedOut.stderr).not.toContain('a-wrong-key');
    expect(await store.get('keyed')).toBeUndefined();
  });

  it("says so, and saves, when a server's credentials are only in Secrets Manager", async () => {
    const result = await put('vaulted', { vaulted: { tools: { search: {} } } });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      'not checked  mcpServers.vaulted: its credentials are read from Secrets Manager where deployed',
    );
    expect(await store.get('vaulted')).toBeDefined();
  });

  it('answers --json with the problems', async () => {
    const path = join(directory, 'json.json');
    await writeFile(
      path,
      JSON.stringify({
        name: 'j',
        description: 'x',
        providers: ['local'],
        mcp: { tools: { tools: { nope: {} } } },
      }),
    );
    const result = await adminOn(env, 'profiles', 'put', 'json', path, '--config', configFile, '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({
      saved: false,
      problems: ['profiles.json.mcp.tools.tools.nope: the server offers no tool "nope"'],
    });
  });
});
