/**
 * A real MCP server on the official SDK's server side (Streamable HTTP, stateless), run by the
 * tests as a child process (`startMcpTestServer`, test/support/mcp-server-process.ts). Its tools
 * cover the effects: `lookup` (read-only), `set_flag` (idempotent), `append_note` (a
 * non-idempotent write, not destructive), `delete_record` (destructive), `big` (a result of a
 * chosen size), `picture` (an image). Every `tools/call` it receives is logged before it is
 * handled (`GET /calls`): the tests count sends on the server's own log. Faults (`POST /faults`):
 * `hangMs` holds each call's answer, `exitOnCall` ends the process after logging a call.
 * Options (argv[2], JSON): `apiKey` requires header `x-api-key`; `oauth: { clientId,
 * clientSecret }` serves `POST /token` (client credentials) and requires its bearer token.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

interface Options {
  readonly apiKey?: string;
  readonly oauth?: { readonly clientId: string; readonly clientSecret: string };
}

const options = JSON.parse(process.argv[2] ?? '{}') as Options;
const calls: { tool: string; arguments: unknown; at: string }[] = [];
const tokens = new Set<string>();
let faults: { hangMs?: number; exitOnCall?: boolean } = {};
const notes: string[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const buildServer = (): McpServer => {
  const server = new McpServer({ name: 'a2a-serverless-test-tools', version: '1.0.0' });
  const hold = async () => {
    if (faults.exitOnCall) setImmediate(() => process.exit(0));
    if (faults.hangMs) await sleep(faults.hangMs);
  };
  server.registerTool(
    'lookup',
    {
      description: 'Looks a key up.',
      inputSchema: { key: z.string() },
      outputSchema: { key: z.string(), value: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ key }) => {
      await hold();
      return {
        content: [{ type: 'text', text: `value of ${key}` }],
        structuredContent: { key, value: `value of ${key}` },
      };
    },
  );
  server.registerTool(
    'set_flag',
    {
      description: 'Sets a flag on or off.',
      inputSchema: { name: z.string(), on: z.boolean() },
      annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: false },
    },
    async ({ name, on }) => {
      await hold();
      return { content: [{ type: 'text', text: `${name} is ${on ? 'on' : 'off'}` }] };
    },
  );
  server.registerTool(
    'append_note',
    {
      description: 'Appends a note (each call adds one).',
      inputSchema: { text: z.string() },
      annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    },
    async ({ text }) => {
      await hold();
      notes.push(text);
      return { content: [{ type: 'text', text: `note ${notes.length} added` }] };
    },
  );
  server.registerTool(
    'delete_record',
    {
      description: 'Deletes a record for good.',
      inputSchema: { id: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: true },
    },
    async ({ id }) => {
      await hold();
      return { content: [{ type: 'text', text: `record ${id} deleted` }] };
    },
  );
  server.registerTool(
    'big',
    {
      description: 'Returns a text of the given size.',
      inputSchema: { bytes: z.number() },
      annotations: { readOnlyHint: true },
    },
    async ({ bytes }) => {
      await hold();
      return { content: [{ type: 'text', text: 'x'.repeat(bytes) }] };
    },
  );
  server.registerTool(
    'picture',
    { description: 'Returns a small image.', annotations: { readOnlyHint: true } },
    async () => ({
      content: [
        { type: 'image', data: Buffer.from('not really a png').toString('base64'), mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'memo://one', mimeType: 'text/plain', text: 'memo one' } },
      ],
    }),
  );
  return server;
};

const readBody = async (request: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

const json = (response: ServerResponse, status: number, body: unknown): void => {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
};

const authorized = (request: IncomingMessage): boolean => {
  if (options.apiKey !== undefined && request.headers['x-api-key'] !== options.apiKey) return false;
  if (options.oauth !== undefined) {
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (bearer === undefined || !tokens.has(bearer)) return false;
  }
  return true;
};

const http = createServer(async (request, response) => {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  if (path === '/calls' && request.method === 'GET') return json(response, 200, calls);
  if (path === '/faults' && request.method === 'POST') {
    faults = JSON.parse(await readBody(request)) as typeof faults;
    return json(response, 200, faults);
  }
  if (path === '/token' && request.method === 'POST' && options.oauth !== undefined) {
    const [id, secret] = Buffer.from((request.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
      .toString('utf8')
      .split(':')
      .map(decodeURIComponent);
    const form = new URLSearchParams(await readBody(request));
    if (
      form.get('grant_type') !== 'client_credentials' ||
      id !== options.oauth.clientId ||
      secret !== options.oauth.clientSecret
    )
      return json(response, 401, { error: 'invalid_client' });
    const token = randomUUID();
    tokens.add(token);
    return json(response, 200, { access_token: token, token_type: 'Bearer', expires_in: 600 });
  }
  if (path !== '/mcp') return json(response, 404, { error: 'not found' });
  if (!authorized(request)) return json(response, 401, { error: 'unauthorized' });
  if (request.method !== 'POST') return json(response, 405, { error: 'stateless server: POST only' });
  const body = JSON.parse(await readBody(request)) as {
    method?: string;
    params?: { name?: string; arguments?: unknown };
  };
  if (body.method === 'tools/call') {
    calls.push({
      tool: String(body.params?.name),
      arguments: body.params?.arguments ?? {},
      at: new Date().toISOString(),
    });
  }
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  response.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(request, response, body);
});

http.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = http.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`);
});
