import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbProfileStore } from '../../shared/adapters/dynamodb/dynamodb-profile-store.ts';
import { adminOn } from '../support/admin-on.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { type SdkA2aAgent, startSdkA2aAgent } from '../support/sdk-a2a-agent.ts';

/**
 * `a2a-admin profiles put` with a profile that delegates to A2A agents (docs/configuration.md
 * "Saved profiles"): the command reads each agent's card from this machine before it saves, and
 * refuses, naming the setting, a card that cannot be read (nothing listening, HTTP 404, no answer
 * within the agent's `timeoutMs`), one that is not JSON or not an A2A card, a v0.3 card, and one
 * with no interface the client speaks. The good agent is the echo agent on the official A2A SDK's
 * server; the bad cards come from a plain HTTP server of this test. The state table is DynamoDB
 * Local's.
 */
describe('profiles put checks its A2A agents', () => {
  let env: TestResources;
  let agent: SdkA2aAgent;
  let cards: Server;
  let directory: string;
  let configFile: string;
  let store: DynamoDbProfileStore;
  let base: string;

  const bodies: Record<string, string> = {
    '/not-json': '<html>hello</html>',
    '/not-card': JSON.stringify({ hello: 'world' }),
    '/grpc-only': JSON.stringify({
      name: 'G',
      supportedInterfaces: [
        { url: 'http://127.0.0.1:1/grpc', protocolBinding: 'GRPC', protocolVersion: '1.0' },
      ],
    }),
    '/v03': JSON.stringify({ name: 'Old', url: 'http://127.0.0.1:1/', preferredTransport: 'JSONRPC' }),
  };

  beforeAll(async () => {
    [env, agent] = await Promise.all([createTestResources('profiles-agents'), startSdkA2aAgent()]);
    cards = createServer((request, response) => {
      // `/hang` never answers: the agent's deadline ends the read.
      if (request.url === '/hang') return;
      const body = bodies[request.url ?? ''];
      if (body === undefined) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => cards.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(cards.address() as AddressInfo).port}`;
    store = new DynamoDbProfileStore(env.clients.doc, env.resources.tables.State.name);
    directory = await mkdtemp(join(tmpdir(), 'profiles-agents-'));
    configFile = join(directory, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        providers: { local: { type: 'scripted', behavior: 'echo' } },
        profiles: {},
        a2aAgents: {
          sdk: { cardUrl: agent.cardUrl, timeoutMs: 2_000 },
          // Nothing listens on port 9 of the loopback address.
          down: { cardUrl: 'http://127.0.0.1:9/.well-known/agent-card.json', timeoutMs: 2_000 },
          missing: { cardUrl: `${base}/missing`, timeoutMs: 2_000 },
          hang: { cardUrl: `${base}/hang`, timeoutMs: 300 },
          'not-json': { cardUrl: `${base}/not-json`, timeoutMs: 2_000 },
          'not-card': { cardUrl: `${base}/not-card`, timeoutMs: 2_000 },
          'grpc-only': { cardUrl: `${base}/grpc-only`, timeoutMs: 2_000 },
          v03: { cardUrl: `${base}/v03`, timeoutMs: 2_000 },
          vaulted: {
            cardUrl: 'https://agents.example.com/.well-known/agent-card.json',
            headers: { authorization: { secret: { secretId: 'a2a/agents' } } },
          },
        },
      }),
    );
  });
  afterAll(async () => {
    env?.destroy();
    cards?.closeAllConnections();
    await Promise.all([
      agent?.stop(),
      cards && new Promise((resolve) => cards.close(resolve)),
      directory && rm(directory, { recursive: true }),
    ]);
  });

  const put = async (profileId: string, agents: Record<string, unknown>, ...more: string[]) => {
    const path = join(directory, `${profileId}.json`);
    await writeFile(
      path,
      JSON.stringify({ name: profileId, description: 'x', providers: ['local'], agents }),
    );
    return adminOn(env, 'profiles', 'put', profileId, path, '--config', configFile, ...more);
  };

  it('saves a profile whose agent serves a v1.0 card with a JSON-RPC interface', async () => {
    const result = await put('good', { sdk: {} });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^saved {4}good:/);
    expect((await store.get('good'))?.profile).toMatchObject({ agents: { sdk: {} } });
  });

  it('refuses, each with its reason, cards that cannot be read, are not A2A cards, or offer no interface the client speaks', async () => {
    const result = await put('bad', {
      sdk: {},
      down: {},
      missing: {},
      hang: {},
      'not-json': {},
      'not-card': {},
      'grpc-only': {},
      v03: {},
    });
    expect(result.code).toBe(1);
    const refused = result.stdout.split('\n').filter((line) => line.startsWith('REFUSED'));
    const url = (path: string) => `the agent card at ${base}${path}`;
    expect(refused).toHaveLength(7);
    expect(refused).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^REFUSED {2}profiles\.bad\.agents\.down: the agent card at http:\/\/127\.0\.0\.1:9\/\.well-known\/agent-card\.json could not be read \(/,
        ),
        `REFUSED  profiles.bad.agents.missing: ${url('/missing')} could not be read (HTTP 404)`,
        `REFUSED  profiles.bad.agents.hang: ${url('/hang')} could not be read (deadline passed)`,
        `REFUSED  profiles.bad.agents.not-json: ${url('/not-json')} is not JSON`,
        `REFUSED  profiles.bad.agents.not-card: ${url('/not-card')} is not a valid A2A agent card (no name)`,
        `REFUSED  profiles.bad.agents.grpc-only: ${url('/grpc-only')} offers no JSON-RPC or HTTP+JSON interface (it lists: GRPC)`,
        `REFUSED  profiles.bad.agents.v03: ${url('/v03')} is an A2A v0.3 card (a url, no supportedInterfaces); a v1.0 card is needed`,
      ]),
    );
    expect(result.stdout).toContain('Not saved');
    expect(await store.get('bad')).toBeUndefined();
  });

  it("says so, and saves, when an agent's credentials are only in Secrets Manager", async () => {
    const result = await put('vaulted', { vaulted: {} });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      'not checked  a2aAgents.vaulted: its credentials are read from Secrets Manager where deployed',
    );
    expect(await store.get('vaulted')).toBeDefined();
  });

  it('answers --json with the problems', async () => {
    const result = await put('json', { 'grpc-only': {} }, '--json');
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({
      saved: false,
      problems: [expect.stringMatching(/^profiles\.json\.agents\.grpc-only: .* offers no JSON-RPC/)],
    });
  });
});
