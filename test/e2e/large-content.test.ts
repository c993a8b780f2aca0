import { randomUUID } from 'node:crypto';
import { GetTaskRequest, SendMessageRequest, StreamResponse, Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory } from '@a2a-js/sdk/client';
import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { DynamoDbExpiredItems } from '../../shared/adapters/dynamodb/dynamodb-expired-items.ts';
import { purgeExpired } from '../../shared/app/operations/purge-expired.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { createTestResources, providedEndpoints, type TestResources } from '../support/local-guard.ts';
import { rpcCalls } from '../support/rpc-calls.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Issue #19 item 1 end to end (decision 0065): content larger than one DynamoDB item (400 KB)
 * is kept, sealed, in chunk items of the task's partition, written in the transaction that
 * commits it — a 900 KB message blocking and streaming, a conversation of more than 2 MiB over
 * follow-ups, a webhook of a large task, the history limit refused before anything is stored,
 * and the purge taking the chunks with the task. Through the local stack and the official client.
 */

const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: {
    local: { type: 'scripted', behavior: 'echo' },
    tck: { type: 'scripted', behavior: 'tck' },
  },
  profiles: {
    default: { name: 'Echo', description: 'Echo agent', providers: ['local'], privacyLevel: 'full' },
    turns: { name: 'Turns', description: 'TCK scenarios', providers: ['tck'], privacyLevel: 'full' },
  },
  webhooks: { retryBaseSeconds: 1 },
});

let stack: LocalStack;
let client: Client;
let inspect: TestResources;
let receiver: WebhookReceiver;

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix: 'e2e-large',
    log: () => {},
  });
  client = await new ClientFactory().createFromUrl(stack.baseUrl);
  inspect = await createTestResources('e2e-large-inspect');
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  inspect?.destroy();
  await receiver?.close();
  await stack?.stop();
});

const stateTable = () => stack.resources.tables.State.name;
const journalTable = () => stack.resources.tables.Journal.name;

/** A text of `bytes` ASCII characters that starts with a marker (to look for plaintext). */
const textOf = (bytes: number, marker = `Large-${randomUUID().slice(0, 8)}`) =>
  `${marker} ${'x'.repeat(bytes - marker.length - 1)}`;

const partition = async (table: string, taskId: string) => {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await inspect.clients.doc.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `TASK#${taskId}` },
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
};

const chunksOf = async (taskId: string) =>
  (await partition(stateTable(), taskId)).filter((item) => String(item.sk).startsWith('CHUNK#'));

const artifactText = (task: Task): string =>
  (Task.toJSON(task) as { artifacts?: { parts: { text?: string }[] }[] }).artifacts?.[0]?.parts[0]?.text ??
  '';

const message = (text: string, extra: Record<string, unknown> = {}) => ({
  messageId: randomUUID(),
  role: 'ROLE_USER',
  parts: [{ text }],
  ...extra,
});

/** A streamed SendMessage of `text`: its events, and the text of its artifact update. */
const streamOf = async (text: string) => {
  const events: Record<string, unknown>[] = [];
  for await (const event of client.sendMessageStream(SendMessageRequest.fromJSON({ message: message(text) })))
    events.push(StreamResponse.toJSON(event) as Record<string, unknown>);
  const artifact = events.find((event) => 'artifactUpdate' in event) as
    | { artifactUpdate: { artifact: { parts: { text: string }[] } } }
    | undefined;
  return { events, artifactText: artifact?.artifactUpdate.artifact.parts[0]?.text };
};

describe('large content (decision 0065)', () => {
  it('a 900 KB message completes blocking: the artifact and history come back whole, the content is in sealed chunks', async () => {
    const text = textOf(900_000);
    const task = (await client.sendMessage(SendMessageRequest.fromJSON({ message: message(text) }))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task)).toBe(text);

    const fetched = await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 1 }));
    expect(artifactText(fetched)).toBe(text);
    const history = (Task.toJSON(fetched) as { history: { parts: { text?: string }[] }[] }).history;
    expect(history).toHaveLength(1);
    const full = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
    const fullHistory = (Task.toJSON(full) as { history: { role: string; parts: { text?: string }[] }[] })
      .history;
    expect(fullHistory[0]?.parts[0]?.text).toBe(text);

    // Every item under 400 KB; the artifacts are chunks, the message a history segment in parts
    // (docs/data-model.md, "History"); nothing in plaintext.
    const state = await partition(stateTable(), task.id);
    const journal = await partition(journalTable(), task.id);
    const chunks = state.filter((item) => String(item.sk).startsWith('CHUNK#'));
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    const segmentParts = state.filter((item) => String(item.sk).startsWith('HIST#'));
    expect(segmentParts.length).toBeGreaterThanOrEqual(3);
    for (const item of [...state, ...journal]) {
      // About its size: binary as that many bytes, the rest as its JSON.
      const size = JSON.stringify(item, (_key, value) =>
        value instanceof Uint8Array ? '.'.repeat(value.length) : value,
      ).length;
      expect(size).toBeLessThan(400_000);
      const serialized = JSON.stringify(item, (_key, value) =>
        value instanceof Uint8Array ? Buffer.from(value).toString('latin1') : value,
      );
      expect(serialized).not.toContain(text.slice(0, 15));
    }
  });

  it('text outside the Basic Multilingual Plane comes back unchanged in answers of any size (decision 0084)', async () => {
    // Each 😀 is a surrogate pair; with and without a leading "x" one of the two puts a pair
    // across every 16,384-unit boundary the answer's text spans.
    for (const lead of ['', 'x']) {
      const text = `${lead}${'😀'.repeat(20_000)} end`;
      const task = (await client.sendMessage(
        SendMessageRequest.fromJSON({ message: message(text) }),
      )) as Task;
      expect(artifactText(task) === text).toBe(true);
      const fetched = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
      expect(artifactText(fetched) === text).toBe(true);
      expect((await streamOf(text)).artifactText === text).toBe(true);
    }
  });

  it('a 900 KB message completes streaming: the artifact update carries the whole text', async () => {
    const text = textOf(900_000);
    const { events, artifactText: streamed } = await streamOf(text);
    expect(streamed).toBe(text);
    expect(events.at(-1)).toMatchObject({ statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } });
  });

  it('a webhook of a large task receives its artifact whole (the deliverer reads the chunks)', async () => {
    const text = textOf(700_000);
    const { call } = rpcCalls(() => `${stack.baseUrl}/agents/default`);
    const result = await call('SendMessage', {
      message: message(text),
      configuration: {
        returnImmediately: true,
        taskPushNotificationConfig: { url: `${receiver.url}/large`, token: 'large-token' },
      },
    });
    const taskId = (result.task as { id: string }).id;
    type Body = { artifactUpdate?: { taskId: string; artifact: { parts: { text: string }[] } } };
    const large = (posts: readonly { body: unknown }[]) =>
      posts.find((post) => (post.body as Body).artifactUpdate?.taskId === taskId);
    await receiver.waitFor((posts) => large(posts) !== undefined, 60_000);
    const body = large(receiver.posts)?.body as Body | undefined;
    expect(body?.artifactUpdate?.artifact.parts[0]?.text).toBe(text);
  });

  it('a conversation grows past 2 MiB of history over follow-ups; GetTask historyLength returns its last turns', async () => {
    const { call } = rpcCalls(() => `${stack.baseUrl}/agents/turns`);
    const turn = 150_000;
    const texts: string[] = [];
    let taskId: string | undefined;
    for (let index = 0; index < 15; index++) {
      const text = textOf(turn, `Turn-${index}-${randomUUID().slice(0, 8)}`);
      texts.push(text);
      const result = await call('SendMessage', {
        message: {
          ...message(text, taskId ? { taskId } : {}),
          messageId: `tck-input-required-${randomUUID()}`,
        },
      });
      const task = result.task as { id: string; status: { state: string } };
      expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
      taskId = task.id;
    }
    const id = taskId as string;
    const last = await call('GetTask', { id, historyLength: 2 });
    const lastHistory = last.history as { role: string; parts: { text: string }[] }[];
    expect(lastHistory.map((entry) => entry.role)).toEqual(['ROLE_USER', 'ROLE_AGENT']);
    expect(lastHistory[0]?.parts[0]?.text).toBe(texts.at(-1));

    const whole = await call('GetTask', { id });
    const history = whole.history as { role: string; parts: { text: string }[] }[];
    expect(history).toHaveLength(30);
    const userTexts = history
      .filter((entry) => entry.role === 'ROLE_USER')
      .map((entry) => entry.parts[0]?.text);
    expect(userTexts).toEqual(texts);
    expect(Buffer.byteLength(JSON.stringify(history))).toBeGreaterThan(2 * 1024 * 1024);
    // The chunks of replaced histories are deleted with the write that replaced them.
    const chunks = await chunksOf(id);
    const historyBytes = chunks.reduce((total, item) => total + (item.data as Uint8Array).length, 0);
    expect(historyBytes).toBeLessThan(2.5 * 1024 * 1024);
  }, 180_000);

  it('refuses a follow-up past limits.historyBytes with -32602 HISTORY_BYTES_EXCEEDED and stores nothing', async () => {
    const { call } = rpcCalls(() => `${stack.baseUrl}/agents/turns`);
    const first = await call('SendMessage', {
      message: { ...message(textOf(900_000)), messageId: `tck-input-required-${randomUUID()}` },
    });
    const taskId = (first.task as { id: string }).id;
    await call('SendMessage', {
      message: { ...message(textOf(900_000), { taskId }), messageId: `tck-input-required-${randomUUID()}` },
    });
    const before = await partition(stateTable(), taskId);
    const response = await fetch(`${stack.baseUrl}/agents/turns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: {
            ...message(textOf(900_000), { taskId }),
            messageId: `tck-input-required-${randomUUID()}`,
          },
        },
      }),
    });
    const body = (await response.json()) as {
      error: { code: number; data: { reason?: string; metadata?: Record<string, string> }[] };
    };
    expect(response.status).toBe(200);
    expect(body.error.code).toBe(-32602);
    expect(body.error.data[0]).toMatchObject({
      reason: 'HISTORY_BYTES_EXCEEDED',
      metadata: { limit: 'limits.historyBytes', max: String(2.5 * 1024 * 1024) },
    });
    // Nothing of the refused message: the same items, the same revision.
    const after = await partition(stateTable(), taskId);
    expect(after.map((item) => item.sk).sort()).toEqual(before.map((item) => item.sk).sort());
    const row = (items: Record<string, unknown>[]) => items.find((item) => item.sk === 'TASK');
    expect(row(after)?.revision).toBe(row(before)?.revision);
  }, 60_000);

  it('the purge takes the chunks with their task', async () => {
    const task = (await client.sendMessage(
      SendMessageRequest.fromJSON({ message: message(textOf(500_000)) }),
    )) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await chunksOf(task.id)).length).toBeGreaterThan(0);
    // The purge follows the backstop: a revision it read from the state stream after the purge
    // would be projected again (the stack's clock is not past the task's expiry, the purge's is).
    await stack.pollers.projector.caughtUp();
    const row = (await partition(stateTable(), task.id)).find((item) => item.sk === 'TASK');
    const stores = [
      new DynamoDbExpiredItems(inspect.clients.doc, stateTable(), 'state'),
      new DynamoDbExpiredItems(inspect.clients.doc, journalTable(), 'journal'),
    ];
    await purgeExpired({ stores }, new Date((Number(row?.expiresAt) + 1) * 1000));
    expect(await partition(stateTable(), task.id)).toEqual([]);
    expect(await partition(journalTable(), task.id)).toEqual([]);
    // Nothing left anywhere in the state table: every chunk had a task.
    const { Items = [] } = await inspect.clients.doc.send(
      new ScanCommand({
        TableName: stateTable(),
        FilterExpression: 'begins_with(sk, :chunk)',
        ExpressionAttributeValues: { ':chunk': 'CHUNK#' },
      }),
    );
    expect(Items).toEqual([]);
  }, 60_000);
});
