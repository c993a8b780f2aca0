import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbJournalWriter } from '../../shared/adapters/dynamodb/dynamodb-journal-writer.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { openStreamResponses } from '../../shared/app/journal/journal-events.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import {
  armFailpoints,
  disarmFailpoints,
  InjectedFaultError,
} from '../../shared/app/operations/failpoints.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { getTask } from '../../shared/app/tasks/read-task.ts';
import type {
  StreamResponse,
  TaskArtifactUpdateEvent,
  TaskStatusUpdateEvent,
} from '../../shared/domain/a2a.ts';
import type { RunMessage } from '../../shared/domain/ports.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { stateRepositories } from '../support/state-repositories.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Committed chunks (docs/architecture.md, "Progressive output") against DynamoDB Local and the KMS
 * endpoint: while the scripted model streams, the run commits its answer so far as revisions; the
 * journal's events (what SSE, SubscribeToTask and webhooks render, one mapping) show the chunks in
 * revision order, appended, and the completion the whole result (I-RESULT); `redacted` commits
 * redacted text only; a fallback after a broken stream replaces the artifact; a crash mid-stream
 * leaves the chunks committed so far and no result.
 */
const artifactUpdateOf = (response: StreamResponse | undefined): TaskArtifactUpdateEvent | undefined =>
  response !== undefined && 'artifactUpdate' in response ? response.artifactUpdate : undefined;
const statusUpdateOf = (response: StreamResponse | undefined): TaskStatusUpdateEvent | undefined =>
  response !== undefined && 'statusUpdate' in response ? response.statusUpdate : undefined;
const textOf = (update: TaskArtifactUpdateEvent): string =>
  update.artifact.parts
    .map((part) => ('text' in part && typeof part.text === 'string' ? part.text : ''))
    .join('');

describe('committed answer chunks', () => {
  let env: TestResources;
  let repositories: ReturnType<typeof stateRepositories>;
  const output = { progressive: true, cadence: { ms: 100, bytes: 256 } };
  const config = testConfig({
    privacy: { level: 'full' },
    providers: {
      streamer: { type: 'scripted', behavior: 'stream', paceMs: 2 },
      broken: { type: 'scripted', behavior: 'stream', paceMs: 2, failAfterWords: 60 },
      careful: { type: 'scripted', behavior: 'stream', paceMs: 2, privacyLevel: 'redacted' },
      strict: { type: 'scripted', behavior: 'stream', paceMs: 2, privacyLevel: 'metadata' },
    },
    profiles: {
      default: { name: 'Streams', description: 'x', providers: ['streamer'], output },
      redacted: {
        name: 'Redacted',
        description: 'x',
        providers: ['careful'],
        privacyLevel: 'redacted',
        output,
      },
      fallback: { name: 'Falls back', description: 'x', providers: ['broken', 'streamer'], output },
      breaks: { name: 'Breaks', description: 'x', providers: ['broken'], output },
      'to-careful': { name: 'Tightens', description: 'x', providers: ['broken', 'careful'], output },
      'to-strict': { name: 'Tightens more', description: 'x', providers: ['broken', 'strict'], output },
    },
  });

  beforeAll(async () => {
    env = await createTestResources('chunks');
    repositories = stateRepositories(env);
  });
  afterAll(() => env?.destroy());
  afterEach(() => disarmFailpoints());

  const deps = (queued: RunMessage[]) => ({
    tasks: repositories.tasks,
    writeThrough: new WriteThrough(
      repositories.tasks,
      new DynamoDbJournalWriter(env.clients.doc, env.resources.tables.Journal.name),
    ),
    journal: repositories.journal,
    codec: repositories.codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    providerFor: (providerId: string) => {
      const provider = config.providers[providerId];
      return new ScriptedProvider(providerId, 'stream', {
        paceMs: 2,
        ...(provider?.type === 'scripted' && provider.failAfterWords !== undefined
          ? { failAfterWords: provider.failAfterWords }
          : {}),
      });
    },
  });
  const readDeps = () => ({
    tasks: repositories.tasks,
    journal: repositories.journal,
    codec: repositories.codec,
    clock: { now: () => new Date() },
  });

  const words = (count: number, extra = '') =>
    Array.from({ length: count }, (_, index) => `word${index}${index % 17 === 5 ? extra : ''}`).join(' ');

  /** Every event of the task as the channels render it, in revision order. */
  const rendered = async (taskId: string): Promise<{ revision: number; responses: StreamResponse[] }[]> => {
    const events = await repositories.journal.listEvents(taskId, 0);
    return Promise.all(
      events.map(async (event) => ({
        revision: event.revision,
        responses: await openStreamResponses(repositories.codec, event),
      })),
    );
  };

  /** What a client that applies the artifact updates in order holds at the end (append or replace). */
  const applied = (revisions: { responses: StreamResponse[] }[]) => {
    const texts = new Map<string, string>();
    let appends = 0;
    for (const { responses } of revisions)
      for (const response of responses) {
        const update = artifactUpdateOf(response);
        if (update === undefined) continue;
        const text = textOf(update);
        if (update.append) appends += 1;
        texts.set(
          update.artifact.artifactId,
          update.append ? `${texts.get(update.artifact.artifactId) ?? ''}${text}` : text,
        );
      }
    return { texts, appends };
  };

  const run = async (profileId: string, text: string) => {
    const queued: RunMessage[] = [];
    const { taskId } = await createTask(deps(queued), {
      caller: alice,
      profileId,
      message: userMessage(text),
    });
    const result = await executeRun(deps(queued), queued.shift() as RunMessage);
    return { taskId, result };
  };

  it('commits the answer so far as chunks, in order, appended; the completion holds the whole', async () => {
    const text = words(300);
    const { taskId, result } = await run('default', text);
    expect(result).toBe('completed');
    const revisions = await rendered(taskId);
    const chunkRevisions = revisions.filter(({ responses }) =>
      responses.some((response) => artifactUpdateOf(response)?.lastChunk === false),
    );
    expect(chunkRevisions.length).toBeGreaterThan(2);
    // Each chunk shows what the one before did not, and the status says WORKING.
    const chunked = applied(chunkRevisions);
    expect(chunked.appends).toBe(chunkRevisions.length - 1);
    const soFar = [...chunked.texts.values()][0] ?? '';
    expect(text.startsWith(soFar)).toBe(true);
    expect(soFar.length).toBeGreaterThan(0);
    for (const { responses } of chunkRevisions)
      expect(statusUpdateOf(responses.at(-1))?.status.state).toBe('TASK_STATE_WORKING');
    // The completing revision replaces the artifact with the whole answer (I-RESULT).
    const last = revisions.at(-1)!;
    expect(artifactUpdateOf(last.responses[0])).toMatchObject({ lastChunk: true });
    expect(artifactUpdateOf(last.responses[0])?.append).toBeUndefined();
    expect(
      applied(revisions).texts.get(`${(await repositories.tasks.getTask(taskId))!.currentRunId}-artifact-0`),
    ).toBe(text);
    const task = await getTask(readDeps(), { ...alice, profileId: 'default' }, taskId);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.[0]?.parts).toEqual([{ text }]);
  });

  it('at `redacted` a chunk holds redacted text only', async () => {
    const text = words(200, ' mail me at someone@example.com now');
    const { taskId, result } = await run('redacted', text);
    expect(result).toBe('completed');
    const revisions = await rendered(taskId);
    expect(
      revisions.filter(({ responses }) => responses.some((r) => artifactUpdateOf(r)?.lastChunk === false))
        .length,
    ).toBeGreaterThan(1);
    const all = JSON.stringify(revisions);
    expect(all).not.toContain('@example.com');
    expect(all).toContain('[REDACTED:EMAIL]');
  });

  it('a fallback after a broken stream replaces the broken answer: nothing shown twice as one text', async () => {
    const text = words(300);
    const { taskId, result } = await run('fallback', text);
    expect(result).toBe('completed');
    const revisions = await rendered(taskId);
    const chunks = revisions.flatMap(({ responses }) =>
      responses.flatMap((response) =>
        artifactUpdateOf(response)?.lastChunk === false ? [artifactUpdateOf(response)!] : [],
      ),
    );
    // The broken attempt's chunks, then the fallback's, whose first replaces (no append).
    const restarts = chunks.filter((chunk) => chunk.append !== true);
    expect(restarts.length).toBe(2);
    expect(applied(revisions).texts.size).toBe(1);
    expect([...applied(revisions).texts.values()][0]).toBe(text);
  });

  it('a run that fails after chunks keeps what every channel showed beside FAILED, never as a result', async () => {
    const { taskId, result } = await run('breaks', words(300));
    expect(result).toBe('failed');
    const revisions = await rendered(taskId);
    const chunkRevisions = revisions.filter(({ responses }) =>
      responses.some((r) => artifactUpdateOf(r)?.lastChunk === false),
    );
    expect(chunkRevisions.length).toBeGreaterThan(0);
    // The FAILED revision is a status update only: it neither completes nor takes back the
    // artifact, and no revision ever said `lastChunk: true` — the text is marked unfinished.
    const last = revisions.at(-1)!;
    expect(last.responses.map(artifactUpdateOf)).toEqual([undefined]);
    expect(statusUpdateOf(last.responses[0])?.status.state).toBe('TASK_STATE_FAILED');
    expect(
      revisions.some(({ responses }) => responses.some((r) => artifactUpdateOf(r)?.lastChunk === true)),
    ).toBe(false);
    // GetTask holds exactly the text the channels assembled (I-ORDER): what was committed and
    // delivered stays as delivered; a re-attach or a late poller sees what the others saw.
    const task = await getTask(readDeps(), { ...alice, profileId: 'breaks' }, taskId);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    const shown = [...applied(revisions).texts.values()];
    expect(shown).toHaveLength(1);
    expect(words(300).startsWith(shown[0] ?? '-')).toBe(true);
    expect(task.artifacts?.[0]?.parts).toEqual([{ text: shown[0] }]);
  });

  it('a crash mid-stream leaves the chunks committed so far, consistent, and no result', async () => {
    armFailpoints('executor.afterChunk=#2');
    const text = words(300);
    const queued: RunMessage[] = [];
    const { taskId } = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage(text),
    });
    await expect(executeRun(deps(queued), queued.shift() as RunMessage)).rejects.toBeInstanceOf(
      InjectedFaultError,
    );
    const revisions = await rendered(taskId);
    const chunkRevisions = revisions.filter(({ responses }) =>
      responses.some((r) => artifactUpdateOf(r)?.lastChunk === false),
    );
    expect(chunkRevisions).toHaveLength(2);
    const task = await getTask(readDeps(), alice, taskId);
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    // GetTask shows the text the last chunk committed: the chunks applied in order.
    expect(task.artifacts?.[0]?.parts).toEqual([{ text: [...applied(revisions).texts.values()][0] }]);
  });

  it('a chain that could tighten to `redacted` commits redacted chunks from the start (I-TIGHTEN)', async () => {
    const text = words(200, ' mail me at someone@example.com now');
    const { taskId, result } = await run('to-careful', text);
    expect(result).toBe('completed');
    const revisions = await rendered(taskId);
    const chunkRevisions = revisions.filter(({ responses }) =>
      responses.some((response) => artifactUpdateOf(response)?.lastChunk === false),
    );
    // The broken primary's chunks (at full, redacted anyway) and the fallback's.
    expect(chunkRevisions.length).toBeGreaterThan(1);
    expect(JSON.stringify(revisions)).not.toContain('@example.com');
  });

  it('a chain that could tighten to `metadata` commits no chunk', async () => {
    const { taskId, result } = await run('to-strict', words(200));
    expect(result).toBe('not-retainable');
    const revisions = await rendered(taskId);
    expect(
      revisions.filter(({ responses }) =>
        responses.some((response) => artifactUpdateOf(response)?.lastChunk === false),
      ),
    ).toEqual([]);
  });
});
