import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpFetchTool } from '../../shared/adapters/tools/http-fetch.ts';
import { strictWebhookPolicy } from '../../shared/domain/webhook-address.ts';

/**
 * The http_fetch tool over real HTTP through the webhooks' SSRF guard. Loopback is reachable
 * only under the local policy (allowLoopback), exactly as for webhooks.
 */
describe('http_fetch tool', () => {
  let server: Server;
  let base: string;
  let hits = 0;

  beforeAll(async () => {
    server = createServer((request, response) => {
      hits++;
      if (request.url === '/redirect') {
        response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      } else if (request.url === '/big') {
        response.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(5_000));
      } else if (request.url === '/image') {
        response.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(100));
      } else {
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"hello":"world"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const local = createHttpFetchTool({ policy: { allowHttp: true, allowLoopback: true }, maxBytes: 1_000 });
  const context = { runId: 'r' };

  it('declares a read-only tool with a JSON schema for its url argument', () => {
    expect(local).toMatchObject({
      name: 'http_fetch',
      readOnly: true,
      inputSchema: { type: 'object', required: ['url'], additionalProperties: false },
    });
  });

  it('GETs text, cuts it at the byte cap, and does not read binary bodies', async () => {
    expect(await local.invoke({ url: `${base}/data` }, context)).toEqual({
      ok: true,
      content: { status: 200, contentType: 'application/json', body: '{"hello":"world"}', truncated: false },
    });
    const big = await local.invoke({ url: `${base}/big` }, context);
    expect(big).toMatchObject({ ok: true, content: { truncated: true } });
    expect((big as unknown as { content: { body: string } }).content.body.length).toBe(1_000);
    expect(await local.invoke({ url: `${base}/image` }, context)).toMatchObject({
      ok: true,
      content: { status: 200, contentType: 'image/png', note: expect.any(String) },
    });
  });

  it('never follows a redirect (e.g. to the metadata endpoint)', async () => {
    expect(await local.invoke({ url: `${base}/redirect` }, context)).toMatchObject({
      ok: true,
      content: { status: 302 },
    });
  });

  it('refuses loopback, link-local and plain http under the deployment policy without connecting', async () => {
    const deployed = createHttpFetchTool({ policy: strictWebhookPolicy });
    const before = hits;
    for (const url of [`${base}/data`, 'https://127.0.0.1/x', 'https://169.254.169.254/latest/meta-data/']) {
      const output = await deployed.invoke({ url }, context);
      expect(output).toMatchObject({ ok: true, content: { error: expect.stringMatching(/^refused/) } });
    }
    expect(hits).toBe(before);
  });

  it('rejects bad arguments as a tool error the model can read', async () => {
    expect(await local.invoke({ url: 42 } as never, context)).toMatchObject({
      ok: false,
      error: expect.stringContaining('url'),
    });
  });
});
