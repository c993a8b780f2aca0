import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { scanAll } from '../support/admin-on.ts';
import {
  type FakeModelServer,
  openAiText,
  openAiToolCall,
  startFakeModelServer,
} from '../support/fake-model-servers.ts';
import { createTestResources, providedEndpoints, type TestResources } from '../support/local-guard.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { waitFor } from '../support/wait-for.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

// Its tampered blobs make the stack log errors on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Where content may and may not go (issue 7 item 5; docs/security.md "Rules": logs and metrics never contain
 * content; I-LEAVE; docs/data-model.md "Sealing"), through the local stack with every handler in this process:
 *
 * - a marker secret planted in every kind of content — message text, file bytes, file URL and
 *   name, data parts, message/part/request metadata, push tokens and credentials (inline and
 *   created), tool arguments (a fake OpenAI-compatible model calls the calculator with it), the
 *   artifacts and status message the agent writes back, cancel metadata, a refused request —
 *   never appears in any line written to stdout/stderr (Powertools logs at DEBUG, EMF metrics
 *   switched on, the harness's own log) nor in plaintext in any DynamoDB item (journal, audit at
 *   the default privacy level `metadata`, state); while the owner still reads it back and the
 *   webhook still receives the token (the positive controls);
 * - a sealed blob moved to another task or another field, in DynamoDB Local, does not open
 *   (the real KMS emulator): the read fails closed, never showing the other task's content;
 * - the admin command has no HTTP route: admin-like paths are 404 with a valid credential.
 */

const marker = 'MRK-7f3a9c-SECRET-d41e';
const rawMarker = Buffer.from(`file bytes ${marker}`).toString('base64');
const token = 'content-leaks-token-61b0';
const caller = { tenant: 'leaks', principal: 'owner' };

let model: FakeModelServer;
let receiver: WebhookReceiver;
let stack: LocalStack;
let inspect: TestResources;
const captured: string[] = [];
const restore: Array<() => void> = [];
const savedEnv = { ...process.env };

/** Every write to stdout/stderr of this process (where Powertools logs and EMF metrics go). */
const captureOutput = (): void => {
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write.bind(stream);
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      captured.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      return (original as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
    restore.push(() => {
      stream.write = original as typeof stream.write;
    });
  }
};

beforeAll(async () => {
  // The model asks the calculator with the marker among its arguments, then answers with it.
  model = await startFakeModelServer((request) => {
    const messages = (request.body.messages ?? []) as { role: string }[];
    if (messages.at(-1)?.role === 'tool') return openAiText(`The tool said no; remember ${marker}.`);
    return openAiToolCall('call_1', 'calculator', { operation: 'multiply', a: 6, b: 7, memo: marker });
  });
  receiver = await startWebhookReceiver();
  captureOutput();
  process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  const config = parseConfig({
    privacy: { level: 'metadata' },
    auth: { tokens: { [token]: caller } },
    providers: {
      local: { type: 'scripted', behavior: 'echo' },
      tck: { type: 'scripted', behavior: 'tck' },
      model: { type: 'openai', baseUrl: `${model.url}/v1`, model: 'gpt-test' },
    },
    profiles: {
      echo: { name: 'Echo', description: 'Echoes', providers: ['local'] },
      waits: { name: 'Waits', description: 'Asks for more input', providers: ['tck'] },
      tools: {
        name: 'Tools',
        description: 'Calls a tool',
        providers: ['model'],
        tools: [{ name: 'calculator' }],
      },
    },
  });
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix: 'e2e-leaks',
    log: (level, message, attributes) =>
      captured.push(`${level} ${message} ${JSON.stringify(attributes ?? {})}\n`),
    reaperIntervalMs: 0,
  });
  inspect = await createTestResources('e2e-leaks-inspect');
});

afterAll(async () => {
  for (const undo of restore.splice(0)) undo();
  process.env.POWERTOOLS_LOG_LEVEL = savedEnv.POWERTOOLS_LOG_LEVEL;
  process.env.POWERTOOLS_METRICS_DISABLED = savedEnv.POWERTOOLS_METRICS_DISABLED;
  if (savedEnv.POWERTOOLS_LOG_LEVEL === undefined) delete process.env.POWERTOOLS_LOG_LEVEL;
  if (savedEnv.POWERTOOLS_METRICS_DISABLED === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
  inspect?.destroy();
  await stack?.stop();
  await Promise.all([model?.stop(), receiver?.close()]);
});

type Json = Record<string, unknown>;
let ids = 0;
const rpc = async (profile: string, method: string, params: unknown): Promise<Json> => {
  const response = await fetch(`${stack.baseUrl}/agents/${profile}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++ids, method, params }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
};
const taskOf = (reply: Json): Json & { id: string } => {
  const task = (reply.result as Json | undefined)?.task as (Json & { id: string }) | undefined;
  if (!task) throw new Error(`expected a task: ${JSON.stringify(reply).slice(0, 300)}`);
  return task;
};
const stateOf = (task: Json) => (task.status as Json).state;

const scan = (table: string) => scanAll(inspect.clients.doc, table);

/** Items as text, binary attributes (sealed blobs) byte for byte, so plaintext inside them shows too. */
const plaintextOf = (value: unknown): string =>
  JSON.stringify(value, (_key, inner) =>
    inner instanceof Uint8Array ? Buffer.from(inner).toString('latin1') : inner,
  );

const leaksIn = (text: string): string[] =>
  [marker, rawMarker, encodeURIComponent(marker)].filter((needle) => text.includes(needle));

const planted: { taskIds: string[] } = { taskIds: [] };

describe('a marker planted in every kind of content', () => {
  it('is kept for its owner and delivered to the webhook (positive controls)', async () => {
    const hook = `${receiver.url}/hook`;
    const sent = await rpc('echo', 'SendMessage', {
      message: {
        messageId: randomUUID(),
        role: 'ROLE_USER',
        parts: [
          { text: `text ${marker}` },
          { raw: rawMarker, filename: `name-${marker}.txt`, mediaType: 'text/plain' },
          { url: `https://files.example/${marker}?k=${marker}`, filename: marker, mediaType: 'text/plain' },
          { data: { note: marker, nested: [{ deeper: marker }] }, metadata: { part: marker } },
        ],
        metadata: { message: marker },
      },
      metadata: { request: marker },
      configuration: {
        taskPushNotificationConfig: {
          url: hook,
          token: `inline-${marker}`,
          authentication: { scheme: 'Bearer', credentials: `cred-${marker}` },
        },
      },
    });
    const echoed = taskOf(sent);
    planted.taskIds.push(echoed.id);
    expect(stateOf(echoed)).toBe('TASK_STATE_COMPLETED');
    expect(JSON.stringify(echoed.artifacts)).toContain(marker);

    const tooled = taskOf(
      await rpc('tools', 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: `compute ${marker}` }] },
      }),
    );
    planted.taskIds.push(tooled.id);
    await waitFor(
      async () =>
        stateOf(taskOf({ result: { task: (await rpc('tools', 'GetTask', { id: tooled.id })).result } })) ===
        'TASK_STATE_COMPLETED',
    );
    const read = (await rpc('tools', 'GetTask', { id: tooled.id })).result as Json;
    expect(JSON.stringify(read)).toContain(marker);
    // The model saw the tool's answer to arguments that carried the marker.
    expect(JSON.stringify(model.requests.map((request) => request.body))).toContain(marker);

    // A task canceled with the marker in its metadata, and a refused request carrying it.
    // A task that waits for input (so it is still open for a push config and a cancel).
    const open = taskOf(
      await rpc('waits', 'SendMessage', {
        message: {
          messageId: `tck-input-required-${randomUUID()}`,
          role: 'ROLE_USER',
          parts: [{ text: marker }],
        },
      }),
    );
    expect(stateOf(open)).toBe('TASK_STATE_INPUT_REQUIRED');
    planted.taskIds.push(open.id);
    const created = await rpc('waits', 'CreateTaskPushNotificationConfig', {
      taskId: open.id,
      url: hook,
      token: `created-${marker}`,
      authentication: { scheme: 'Bearer', credentials: `created-cred-${marker}` },
    });
    expect(created.error).toBeUndefined();
    const canceled = await rpc('waits', 'CancelTask', { id: open.id, metadata: { why: marker } });
    expect(stateOf(canceled.result as Json)).toBe('TASK_STATE_CANCELED');
    const refused = await rpc('echo', 'SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: marker, data: marker }] },
    });
    expect((refused.error as Json | undefined)?.code).toBe(-32602);

    // Webhooks carry the tokens: the secrets were really used, then never written anywhere else.
    await receiver
      .waitFor(
        (posts) =>
          posts.some((post) => post.headers['x-a2a-notification-token'] === `inline-${marker}`) &&
          posts.some((post) => post.headers['x-a2a-notification-token'] === `created-${marker}`),
        60_000,
      )
      .catch((error: unknown) => {
        const seen = receiver.posts.map((post) => [
          post.headers['x-a2a-notification-token'],
          post.headers.authorization,
        ]);
        throw new Error(`${(error as Error).message}: ${JSON.stringify(seen)}`);
      });
    expect(receiver.posts.some((post) => post.headers.authorization === `Bearer cred-${marker}`)).toBe(true);
  });

  it('never appears in plaintext in any DynamoDB item: journal, audit (metadata level) or state', async () => {
    const { State, Journal, Audit } = stack.resources.tables;
    const [state, journal, audit] = await Promise.all([
      scan(State.name),
      scan(Journal.name),
      scan(Audit.name),
    ]);
    for (const taskId of planted.taskIds) {
      expect(journal.some((item) => item.pk === `TASK#${taskId}`)).toBe(true);
    }
    expect(audit.length).toBeGreaterThan(0);
    expect(leaksIn(plaintextOf(journal))).toEqual([]);
    expect(leaksIn(plaintextOf(audit))).toEqual([]);
    expect(leaksIn(plaintextOf(state))).toEqual([]);
  });
});

describe('a sealed blob moved to another task or field (real KMS emulator)', () => {
  it('does not open: the read fails closed and never shows the other task’s content', async () => {
    const send = async (text: string) =>
      taskOf(
        await rpc('echo', 'SendMessage', {
          message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
        }),
      );
    const source = await send(`source ${marker}-moved`);
    const target = await send('target, nothing secret');
    const { State, Journal } = stack.resources.tables;
    const get = async (table: string, pk: string, sk: string) =>
      (await inspect.clients.doc.send(new GetCommand({ TableName: table, Key: { pk, sk } }))).Item as Json;
    const sourceView = await get(Journal.name, `TASK#${source.id}`, 'VIEW');
    const targetView = await get(Journal.name, `TASK#${target.id}`, 'VIEW');
    const targetRow = await get(State.name, `TASK#${target.id}`, 'TASK');
    const sourceRow = await get(State.name, `TASK#${source.id}`, 'TASK');
    expect(sourceView.artifacts).toBeInstanceOf(Uint8Array);

    const attempts: [string, () => Promise<void>][] = [
      [
        'artifacts of another task',
        () =>
          inspect.clients.doc
            .send(
              new PutCommand({
                TableName: Journal.name,
                Item: { ...targetView, artifacts: sourceView.artifacts },
              }),
            )
            .then(() => undefined),
      ],
      [
        'status message of the same task in the artifacts field',
        () =>
          inspect.clients.doc
            .send(
              new PutCommand({
                TableName: Journal.name,
                Item: { ...targetView, artifacts: targetView.statusMessage },
              }),
            )
            .then(() => undefined),
      ],
      [
        'history of another task',
        () =>
          inspect.clients.doc
            .send(
              new PutCommand({ TableName: State.name, Item: { ...targetRow, history: sourceRow.history } }),
            )
            .then(() => undefined),
      ],
    ];
    for (const [name, move] of attempts) {
      await move();
      const reply = await rpc('echo', 'GetTask', { id: target.id });
      expect(JSON.stringify(reply), name).not.toContain(`${marker}-moved`);
      expect(reply.result, name).toBeUndefined();
      expect((reply.error as Json | undefined)?.code, name).toBe(-32603);
      // Put the target back as it was before the next attempt.
      await inspect.clients.doc.send(new PutCommand({ TableName: Journal.name, Item: targetView }));
      await inspect.clients.doc.send(new PutCommand({ TableName: State.name, Item: targetRow }));
    }
    // Restored, the target reads normally again (the positive control), and the source is intact.
    expect(stateOf((await rpc('echo', 'GetTask', { id: target.id })).result as Json)).toBe(
      'TASK_STATE_COMPLETED',
    );
    expect(JSON.stringify((await rpc('echo', 'GetTask', { id: source.id })).result)).toContain(
      `${marker}-moved`,
    );
  });
});

describe('the admin command from the public API', () => {
  it('has no route: admin-like paths are 404 (with a valid credential), for every verb', async () => {
    const paths = [
      '/admin',
      '/admin/purge',
      '/admin/runs/show',
      '/agents/echo/admin',
      '/agents/echo/purge',
      '/runs',
      '/purge',
      '/profiles',
      '/profiles/validate',
      '/approvals',
      '/agents/admin/runs',
      '/%61dmin',
      '/agents/echo/../../admin',
    ];
    for (const path of paths) {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH']) {
        const response = await fetch(`${stack.baseUrl}${path}`, {
          method,
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          ...(method === 'GET' ? {} : { body: '{"command":"purge"}' }),
        });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(await response.json()).toEqual({ error: 'Not found' });
      }
    }
    // And no JSON-RPC method by any admin name on the agent endpoint.
    for (const method of [
      'purge',
      'Purge',
      'PurgeNow',
      'InspectRuns',
      'runs/show',
      'profiles/validate',
      'admin',
    ]) {
      const reply = await rpc('echo', method, {});
      expect((reply.error as Json | undefined)?.code, method).toBe(-32601);
    }
  });
});

// Last, so the failures provoked above (moved blobs, refused requests) are in the capture too.
describe('after everything above', () => {
  it('the marker never appeared in any log line or metric written to stdout/stderr', async () => {
    const output = captured.join('');
    // Positive control: the capture saw the handlers' structured logs (DEBUG) and EMF metrics.
    expect(output).toMatch(/"service":"a2a-(rpc|executor)"/);
    expect(output).toContain('_aws');
    for (const taskId of planted.taskIds) expect(output).toContain(taskId);
    expect(leaksIn(output)).toEqual([]);
  });
});
