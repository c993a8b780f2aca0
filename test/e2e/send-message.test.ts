import { GetTaskRequest, SendMessageRequest, Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory } from '@a2a-js/sdk/client';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { defaultConfig } from '../../shared/config/config.ts';
import { createTestResources, providedEndpoints, type TestResources } from '../support/local-guard.ts';

/**
 * The walking skeleton end to end: the local stack (HTTP harness, pollers, the real handlers)
 * driven by the official @a2a-js/sdk client, then a look into DynamoDB Local for plaintext.
 */
describe('SendMessage → COMPLETED through the local stack with the official client', () => {
  let stack: LocalStack;
  let client: Client;
  let inspect: TestResources;

  beforeAll(async () => {
    stack = await startLocalStack({
      port: 0,
      config: defaultConfig,
      endpoints: providedEndpoints(),
      prefix: 'e2e-send',
      log: () => {},
    });
    client = await new ClientFactory().createFromUrl(stack.baseUrl);
    inspect = await createTestResources('e2e-inspect');
  });
  afterAll(async () => {
    inspect?.destroy();
    await stack?.stop();
  });

  const send = (text: string, configuration?: Record<string, unknown>) =>
    client.sendMessage(
      SendMessageRequest.fromJSON({
        message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
        ...(configuration ? { configuration } : {}),
      }),
    );

  it('completes a task whose artifact echoes the text, and GetTask returns the same', async () => {
    const result = await send('Marker-e2e-8a1f says hello');
    expect('status' in result).toBe(true);
    const task = result as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const json = Task.toJSON(task) as { artifacts: { parts: { text: string }[] }[] };
    expect(json.artifacts[0]?.parts[0]?.text).toBe('Marker-e2e-8a1f says hello');

    const fetched = await client.getTask(GetTaskRequest.fromJSON({ id: task.id }));
    expect(Task.toJSON(fetched)).toEqual(Task.toJSON(task));
  });

  it('returns immediately with an in-progress task when asked, and GetTask sees it at once (I-RYW)', async () => {
    const task = (await send('quick', { returnImmediately: true })) as Task;
    expect([
      TaskState.TASK_STATE_SUBMITTED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_COMPLETED,
    ]).toContain(task.status?.state);
    const fetched = await client.getTask(GetTaskRequest.fromJSON({ id: task.id, historyLength: 0 }));
    expect(fetched.id).toBe(task.id);
    expect(fetched.history).toEqual([]);
  });

  it('keeps only sealed blobs for content in DynamoDB', async () => {
    const marker = 'Plaintext-Canary-77c2';
    const task = (await send(`${marker} in a message`)) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const tables = [stack.resources.tables.State.name, stack.resources.tables.Journal.name];
    let items = 0;
    for (const table of tables) {
      const { Items = [] } = await inspect.clients.doc.send(new ScanCommand({ TableName: table }));
      items += Items.length;
      for (const item of Items) {
        const serialized = JSON.stringify(item, (_key, value) =>
          value instanceof Uint8Array ? Buffer.from(value).toString('latin1') : value,
        );
        expect(serialized).not.toContain(marker);
      }
    }
    expect(items).toBeGreaterThan(0);
  });
});
