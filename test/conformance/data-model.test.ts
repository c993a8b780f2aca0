import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConformanceStack, type JsonObject, startConformanceStack, taskOf } from './support.ts';

/** The data model requirements of the A2A v1.0 TCK (docs/protocol.md §3, §13.4). */

let sut: ConformanceStack;
/** A variety of real answers: tasks of every artifact kind, an interrupted one, a list, a message. */
const answers: { name: string; value: unknown }[] = [];

beforeAll(async () => {
  sut = await startConformanceStack('conf-dm');
  for (const prefix of [
    'tck-complete-task',
    'tck-artifact-text',
    'tck-artifact-file',
    'tck-artifact-file-url',
    'tck-artifact-data',
    'tck-input-required',
  ]) {
    answers.push({ name: prefix, value: taskOf(await sut.send(prefix)) });
  }
  const waiting = answers.at(-1)!.value as { id: string };
  answers.push({ name: 'GetTask', value: (await sut.rpc('GetTask', { id: waiting.id })).result });
  answers.push({ name: 'CancelTask', value: (await sut.rpc('CancelTask', { id: waiting.id })).result });
  answers.push({
    name: 'ListTasks',
    value: (await sut.rpc('ListTasks', { includeArtifacts: true, historyLength: 5 })).result,
  });
  answers.push({ name: 'message', value: (await sut.send('tck-message-response')).result });
  answers.push({ name: 'error', value: (await sut.rpc('GetTask', { id: 'missing' })).body });
});
afterAll(async () => {
  await sut?.stop();
});

const tasksIn = (): JsonObject[] =>
  answers.flatMap(({ value }) => {
    const object = value as JsonObject;
    if (Array.isArray(object.tasks)) return object.tasks as JsonObject[];
    return 'status' in object && 'id' in object ? [object] : [];
  });

const messagesIn = (task: JsonObject): JsonObject[] => [
  ...((task.history as JsonObject[] | undefined) ?? []),
  ...((task.status as JsonObject).message ? [(task.status as JsonObject).message as JsonObject] : []),
];

const partsIn = (task: JsonObject): JsonObject[] => [
  ...messagesIn(task).flatMap((message) => message.parts as JsonObject[]),
  ...((task.artifacts as JsonObject[] | undefined) ?? []).flatMap(
    (artifact) => artifact.parts as JsonObject[],
  ),
];

/** Every object key of a JSON value, except inside free-form `metadata` and Part `data` values. */
const keysOf = (value: unknown, into: string[] = []): string[] => {
  if (Array.isArray(value)) for (const item of value) keysOf(item, into);
  else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      into.push(key);
      if (key !== 'metadata' && key !== 'data') keysOf(item, into);
    }
  }
  return into;
};

describe('data model', () => {
  it('DM required fields: Task id/contextId/status.state, Message messageId/role/parts, Artifact artifactId/parts', () => {
    const tasks = tasksIn();
    expect(tasks.length).toBeGreaterThanOrEqual(8);
    for (const task of tasks) {
      expect(task.id).toEqual(expect.any(String));
      expect(task.contextId).toEqual(expect.any(String));
      expect((task.status as JsonObject).state).toEqual(expect.any(String));
      for (const message of messagesIn(task)) {
        expect(message.messageId).toEqual(expect.any(String));
        expect(message.role).toEqual(expect.any(String));
        expect((message.parts as unknown[]).length).toBeGreaterThan(0);
      }
      for (const artifact of (task.artifacts as JsonObject[] | undefined) ?? []) {
        expect(artifact.artifactId).toEqual(expect.any(String));
        expect((artifact.parts as unknown[]).length).toBeGreaterThan(0);
      }
    }
    const message = (answers.find((answer) => answer.name === 'message')!.value as JsonObject)
      .message as JsonObject;
    expect(message).toMatchObject({
      messageId: expect.any(String),
      role: 'ROLE_AGENT',
      parts: expect.any(Array),
    });
  });

  it('DM-SERIAL-002: enums are names (strings), never numbers', () => {
    for (const task of tasksIn()) {
      expect((task.status as JsonObject).state).toMatch(/^TASK_STATE_[A-Z_]+$/);
      for (const message of messagesIn(task)) expect(message.role).toMatch(/^ROLE_(USER|AGENT)$/);
    }
  });

  it('DM camelCase: no snake_case key in any response', () => {
    const keys = answers.flatMap(({ value }) => keysOf(value));
    expect(keys).toContain('contextId');
    expect(keys.filter((key) => /_/.test(key) && key !== '@type')).toEqual([]);
  });

  it('DM timestamps: ISO-8601 UTC with Z', () => {
    const timestamps = tasksIn().map((task) => (task.status as JsonObject).timestamp);
    expect(timestamps.length).toBeGreaterThan(0);
    for (const timestamp of timestamps) {
      expect(timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/);
      expect(Number.isNaN(Date.parse(timestamp as string))).toBe(false);
    }
  });

  it('DM-PART-001: every Part has exactly one of text, raw, url, data; two are refused', async () => {
    const parts = tasksIn().flatMap(partsIn);
    expect(parts.length).toBeGreaterThan(10);
    for (const part of parts) {
      expect(['text', 'raw', 'url', 'data'].filter((field) => field in part)).toHaveLength(1);
    }
    const raw = parts.find((part) => 'raw' in part);
    expect(raw?.raw).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const reply = await sut.send('tck-complete-task', {
      message: { parts: [{ text: 'a', data: { b: 1 } }] },
    });
    expect(reply.error?.code).toBe(-32602);
  });

  it('DM-SERIAL-005: extra fields in a request are ignored', async () => {
    const reply = await sut.rpc('SendMessage', {
      message: {
        messageId: 'tck-artifact-text-extra',
        role: 'ROLE_USER',
        parts: [{ text: 'hi', futurePartField: true }],
        futureMessageField: { nested: 1 },
      },
      configuration: { historyLength: 2, futureConfigField: 'x' },
      futureParamsField: [1, 2, 3],
    });
    expect(reply.error).toBeUndefined();
    const task = taskOf(reply);
    expect((task.artifacts as JsonObject[])[0]?.parts).toEqual([{ text: 'Generated text content' }]);
    expect(JSON.stringify(task)).not.toMatch(/future/);
  });
});
