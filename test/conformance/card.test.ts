import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConformanceStack, startConformanceStack } from './support.ts';

/** The agent card requirements of the A2A v1.0 TCK (docs/protocol.md §9, §13.4). */

let sut: ConformanceStack;

beforeAll(async () => {
  sut = await startConformanceStack('conf-card');
});
afterAll(async () => {
  await sut?.stop();
});

type Card = Record<string, unknown> & {
  supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[];
  capabilities: Record<string, unknown>;
  skills: Record<string, unknown>[];
};

/**
 * The members the v1.0 schema allows (the specification's `a2a.json`: AgentCard, AgentCapabilities and
 * AgentInterface declare `additionalProperties: false`).
 */
const v1CardFields = [
  'capabilities',
  'defaultInputModes',
  'defaultOutputModes',
  'description',
  'documentationUrl',
  'iconUrl',
  'name',
  'provider',
  'securityRequirements',
  'securitySchemes',
  'signatures',
  'skills',
  'supportedInterfaces',
  'version',
];
const v1CapabilityFields = ['extendedAgentCard', 'extensions', 'pushNotifications', 'streaming'];
const v1InterfaceFields = ['protocolBinding', 'protocolVersion', 'tenant', 'url'];
const extraKeys = (value: object, allowed: readonly string[]): string[] =>
  Object.keys(value).filter((key) => !allowed.includes(key));

const cardPaths = ['/.well-known/agent-card.json', '/agents/tck/.well-known/agent-card.json'];

/** Fetched the way the TCK does: no A2A-Version header. */
const fetchCard = async (path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${sut.baseUrl}${path}`, { headers });
  return { response, card: response.status === 200 ? ((await response.json()) as Card) : undefined };
};

describe('agent card', () => {
  it('CARD-DISC-001: the card is published at /.well-known/agent-card.json, per profile too', async () => {
    for (const path of cardPaths) {
      const { response, card } = await fetchCard(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(card?.name).toEqual(expect.any(String));
    }
    expect((await fetchCard('/agents/tck/.well-known/agent-card.json')).card?.name).toBe(
      'TCK system under test',
    );
    expect((await fetchCard('/agents/nobody/.well-known/agent-card.json')).response.status).toBe(404);
  });

  it('CARD-STRUCT-001: every required field is present with its type; skills are complete', async () => {
    for (const path of cardPaths) {
      const { card } = await fetchCard(path);
      expect(card).toMatchObject({
        name: expect.any(String),
        description: expect.any(String),
        version: expect.any(String),
        capabilities: expect.any(Object),
      });
      for (const modes of [card!.defaultInputModes, card!.defaultOutputModes]) {
        expect(Array.isArray(modes) && modes.length > 0).toBe(true);
        expect((modes as string[]).every((mode) => /^[\w.+-]+\/[\w.+*-]+$/.test(mode))).toBe(true);
      }
      expect(card!.skills.length).toBeGreaterThan(0);
      for (const skill of card!.skills) {
        expect(skill).toMatchObject({
          id: expect.any(String),
          name: expect.any(String),
          description: expect.any(String),
        });
        expect((skill.tags as string[]).length).toBeGreaterThan(0);
      }
      for (const flag of ['streaming', 'pushNotifications', 'extendedAgentCard']) {
        const value = card!.capabilities[flag];
        expect(value === undefined || typeof value === 'boolean').toBe(true);
      }
      // Only v1.0 fields: the v1.0 schema forbids any other (v0.3's are on the v0.3 card, below).
      expect(extraKeys(card!, v1CardFields)).toEqual([]);
      expect(extraKeys(card!.capabilities, v1CapabilityFields)).toEqual([]);
      for (const entry of card!.supportedInterfaces) expect(extraKeys(entry, v1InterfaceFields)).toEqual([]);
      expect(card!.capabilities).not.toHaveProperty('stateTransitionHistory');
      // AgentExtension {uri, description?, required?, params?} (docs/protocol.md §9): this server declares
      // its push-deliveries extension (decision 0025), optional, so no client must activate it.
      const extensions = (card!.capabilities.extensions ?? []) as Record<string, unknown>[];
      expect(extensions.map((extension) => extension.uri)).toContain(
        'urn:a2a-serverless:ext:push-deliveries:v1',
      );
      for (const extension of extensions) {
        expect(typeof extension.uri).toBe('string');
        expect(extension.required === undefined || extension.required === false).toBe(true);
      }
    }
  });

  it('CARD-PROTO-001: supportedInterfaces is non-empty', async () => {
    const { card } = await fetchCard('/.well-known/agent-card.json');
    expect(card!.supportedInterfaces.length).toBeGreaterThan(0);
  });

  it('CARD-PROTO-002: each interface is valid — absolute URL, JSONRPC or HTTP+JSON, 1.0 then 1.1 — and answers there', async () => {
    for (const path of cardPaths) {
      const { card } = await fetchCard(path);
      // Every protocol combination, in preference order: 1.0 first (docs/protocol.md §9, §16).
      expect(
        card!.supportedInterfaces.map((entry) => `${entry.protocolBinding} ${entry.protocolVersion}`),
      ).toEqual(['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 1.1', 'HTTP+JSON 1.1']);
      for (const entry of card!.supportedInterfaces) {
        const url = new URL(entry.url);
        expect(['http:', 'https:']).toContain(url.protocol);
        if (entry.protocolBinding === 'HTTP+JSON') {
          const missing = await fetch(`${entry.url}/tasks/missing`, {
            headers: { 'A2A-Version': entry.protocolVersion },
          });
          expect(missing.status).toBe(404);
          expect(((await missing.json()) as { error: { status: string } }).error.status).toBe('NOT_FOUND');
          continue;
        }
        const reply = await fetch(entry.url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'A2A-Version': entry.protocolVersion },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'missing' } }),
        });
        expect(((await reply.json()) as { error: { code: number } }).error.code).toBe(-32001);
      }
    }
    // The official client resolves the card and finds the same agent.
    const client = await new ClientFactory().createFromUrl(sut.baseUrl);
    expect((await client.getAgentCard()).name).toBe('Echo agent');
  });

  it('CARD-CACHE-001: Cache-Control with max-age', async () => {
    const { response } = await fetchCard('/.well-known/agent-card.json');
    expect(response.headers.get('cache-control')).toMatch(/max-age=\d+/);
  });

  it('CARD-CACHE-002: an ETag, and If-None-Match with it gets 304', async () => {
    for (const path of cardPaths) {
      const { response } = await fetchCard(path);
      const etag = response.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/);
      const again = await fetch(`${sut.baseUrl}${path}`, { headers: { 'If-None-Match': etag! } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
      const stale = await fetch(`${sut.baseUrl}${path}`, { headers: { 'If-None-Match': '"other"' } });
      expect(stale.status).toBe(200);
    }
    // Each profile is its own agent, so its own ETag.
    const [root, tck] = await Promise.all(cardPaths.map((path) => fetchCard(path)));
    expect(root!.response.headers.get('etag')).not.toBe(tck!.response.headers.get('etag'));
  });

  it('CARD-CACHE-003: a Last-Modified date beside the ETag, and Vary: A2A-Version', async () => {
    for (const path of cardPaths) {
      const { response } = await fetchCard(path);
      const lastModified = response.headers.get('last-modified');
      expect(lastModified).toMatch(/GMT$/);
      expect(Number.isNaN(Date.parse(lastModified!))).toBe(false);
      expect(Date.parse(lastModified!)).toBeLessThanOrEqual(Date.now());
      expect(response.headers.get('vary')).toBe('A2A-Version');
      // The same body keeps its date.
      expect((await fetchCard(path)).response.headers.get('last-modified')).toBe(lastModified);
    }
  });

  it('serves the v0.3 card to A2A-Version 0.3 (header or query), with its own ETag', async () => {
    const path = '/agents/tck/.well-known/agent-card.json';
    const { response: v1Response, card: v1 } = await fetchCard(path);
    for (const { response, card } of [
      await fetchCard(path, { 'A2A-Version': '0.3' }),
      await fetchCard(`${path}?A2A-Version=0.3`),
    ]) {
      expect(card).toMatchObject({
        url: v1!.supportedInterfaces[0]?.url,
        preferredTransport: 'JSONRPC',
        protocolVersion: '0.3.0',
        supportedInterfaces: v1!.supportedInterfaces,
      });
      expect(response.headers.get('etag')).not.toBe(v1Response.headers.get('etag'));
    }
    // Any other version gets the v1.0 card.
    expect((await fetchCard(path, { 'A2A-Version': '1.0' })).card).toEqual(v1);
  });
});
