import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../../infra/admin/cli.ts';
import { type LocalStack, localCredentials, startLocalStack } from '../../infra/local/local-stack.ts';
import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbProfileStore } from '../../shared/adapters/dynamodb/dynamodb-profile-store.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { addSdkClientHook } from '../../shared/adapters/sdk-clients.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { expectStackWarnings } from '../support/stack-log.ts';

// Its refused profile stored anyway makes the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Decision 0024 end to end on the local stack (DynamoDB Local, the real rpc and executor handler
 * modules): a profile saved with `a2a-admin profiles put` is served — card, extended card,
 * SendMessage run by the executor with the saved provider — a change is served after the cache
 * TTL (shortened here, not slept through), a refused profile stays refused, a deletion stops it.
 */

const ttlMs = 300;
const config = parseConfig({
  auth: { tokens: { 'token-alice': { tenant: 't1', principal: 'alice' } } },
  providers: {
    local: { type: 'scripted', behavior: 'echo' },
    tck: { type: 'scripted', behavior: 'tck' },
    strict: { type: 'scripted', behavior: 'echo', privacyLevel: 'metadata' },
    streamer: { type: 'scripted', behavior: 'stream', paceMs: 2 },
  },
  profiles: {
    default: { name: 'Echo agent', description: 'Echoes.', providers: ['local'], privacyLevel: 'full' },
  },
});

let stack: LocalStack;
let directory: string;
let table: string[];
let configFile: string;
let store: DynamoDbProfileStore;
let tasks: DynamoDbTaskRepository;
let journal: DynamoDbJournalRepository;
/**
 * The queries of the saved profiles' partition by the functions (SDK clients of
 * shared/adapters/sdk-clients.ts): when each was sent and when its answer came back.
 */
const profileReads: { sentAt: number; answeredAt: number }[] = [];
const removeHook = addSdkClientHook((client) => {
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's handler types differ per client.
  (client.middlewareStack as any).add(
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    (next: any, context: { commandName?: string }) => async (args: any) => {
      const pk = args.input?.ExpressionAttributeValues?.[':pk'];
      if (context.commandName !== 'QueryCommand' || (pk !== 'PROFILES' && pk?.S !== 'PROFILES'))
        return next(args);
      const sentAt = Date.now();
      const answer = await next(args);
      profileReads.push({ sentAt, answeredAt: Date.now() });
      return answer;
    },
    { step: 'build', name: 'countProfileQueries' },
  );
});

const admin = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin([...args, ...table], {
    out: (text) => {
      stdout += `${text}\n`;
    },
    err: (text) => {
      stderr += `${text}\n`;
    },
    env: {},
  });
  return { code, stdout, stderr };
};

const put = async (profileId: string, entry: unknown) => {
  const path = join(directory, `${profileId}-${crypto.randomUUID()}.json`);
  await writeFile(path, JSON.stringify(entry));
  return admin('profiles', 'put', profileId, path, '--config', configFile);
};

const auth = { Authorization: 'Bearer token-alice' };

const card = (profileId: string) => fetch(`${stack.baseUrl}/agents/${profileId}/.well-known/agent-card.json`);

const rpc = async (profileId: string, method: string, params: unknown) => {
  const response = await fetch(`${stack.baseUrl}/agents/${profileId}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...auth },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return {
    status: response.status, // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers, read field by field below.
    body: (await response.json()) as Record<string, any>,
  };
};

const send = (profileId: string, text: string, messageId: string = crypto.randomUUID()) =>
  rpc(profileId, 'SendMessage', { message: { messageId, role: 'ROLE_USER', parts: [{ text }] } });

/** Polls until `check` passes: the cache TTL is short, but the machine may be slow. */
const eventually = async <T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> => {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, ttlMs / 3));
  }
};

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix: 'saved-profiles',
    profileCacheMs: ttlMs,
    log: () => {},
  });
  table = ['--prefix', stack.resources.prefix, '--endpoint', stack.endpoints.dynamodb];
  directory = await mkdtemp(join(tmpdir(), 'saved-profiles-'));
  configFile = join(directory, 'config.json');
  await writeFile(configFile, JSON.stringify(config));
  const documents = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: stack.endpoints.dynamodb,
      region: 'us-east-1',
      credentials: localCredentials,
    }),
  );
  store = new DynamoDbProfileStore(documents, stack.resources.tables.State.name);
  tasks = new DynamoDbTaskRepository(documents, stack.resources.tables.State.name);
  journal = new DynamoDbJournalRepository(documents, stack.resources.tables.Journal.name);
}, 120_000);
afterAll(async () => {
  removeHook();
  await stack?.stop();
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe('a saved profile', () => {
  const support = {
    name: 'Support bot',
    description: 'Answers as the TCK script does.',
    providers: ['tck'],
    instructions: 'Be brief.',
    skills: [{ id: 'help', name: 'Help', description: 'Helps.', tags: ['help'] }],
    extendedCard: { description: 'For signed-in callers', skills: [] },
  };

  it('is served after put: its card, its extended card, and SendMessage run with its provider', async () => {
    expect((await card('support')).status).toBe(404);
    const saved = await put('support', support);
    expect(saved.code).toBe(0);

    const served = await eventually(
      () => card('support'),
      (response) => response.status === 200,
    );
    expect(served.status).toBe(200);
    const body = (await served.json()) as {
      name: string;
      skills: { id: string }[];
      supportedInterfaces: { url: string }[];
    };
    expect(body.name).toBe('Support bot');
    expect(body.skills.map((skill) => skill.id)).toEqual(['help']);
    expect(body.supportedInterfaces[0]?.url).toBe(`${stack.baseUrl}/agents/support`);

    const extended = await rpc('support', 'GetExtendedAgentCard', {});
    expect(extended.body.result).toMatchObject({ name: 'Support bot', description: 'For signed-in callers' });

    // The `tck` script answers "Hello from TCK"; the deployment's `default` (echo) would echo.
    const sent = await send('support', 'hello support');
    expect(sent.body.error).toBeUndefined();
    const task = sent.body.result.task as {
      id: string;
      status: { state: string; message: { parts: { text: string }[] } };
    };
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.status.message.parts[0]?.text).toBe('Hello from TCK');
    // The run took the profile's settings along to the executor (stored on the run row).
    const stored = await tasks.getTask(task.id);
    const run = await tasks.getRun(task.id, stored!.currentRunId);
    expect(run?.profile).toEqual({
      providers: ['tck'],
      instructions: 'Be brief.',
      tools: [],
      maxToolRounds: 8,
    });
  });

  it('with progressive output, its runs commit chunks at its own cadence (docs/architecture.md)', async () => {
    const typer = {
      name: 'Typer',
      description: 'Writes as it thinks.',
      providers: ['streamer'],
      output: { progressive: true, cadence: { ms: 100, bytes: 256 } },
    };
    expect((await put('typer', typer)).code).toBe(0);
    await eventually(
      () => card('typer'),
      (response) => response.status === 200,
    );
    const text = Array.from({ length: 200 }, (_, index) => `word${index}`).join(' ');
    const sent = await send('typer', text);
    expect(sent.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    const taskId = sent.body.result.task.id as string;
    // The run took the profile's output along (the executor reads only the deployment's profiles).
    const stored = await tasks.getTask(taskId);
    const run = await tasks.getRun(taskId, stored!.currentRunId);
    expect(run?.profile?.output).toEqual(typer.output);
    // ~1,400 characters at 256 bytes a chunk: several chunk revisions before the completion.
    const chunks = (await journal.listEvents(taskId, 0)).filter((event) => event.answerChunk !== undefined);
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    expect(chunks.map((event) => event.answerChunk?.from)).toEqual(
      [...chunks.map((event) => event.answerChunk?.from)].sort((a, b) => (a ?? 0) - (b ?? 0)),
    );
  });

  it('is read once per TTL however many requests come (measured on the SDK client)', async () => {
    // What it proves: the rpc function's catalog (the only reader of saved profiles) reads them at
    // most once per TTL, and concurrent requests share one read. How: not a bound on the burst's
    // duration (a slow machine stretches it over more windows) but the order of the reads the SDK
    // client sent: each starts at least a TTL after the previous one was answered (the cache keeps
    // a read from its answer on). It fails if a request reads past the cache — two concurrent reads
    // overlap, or one follows the last within the TTL — whatever the machine's speed.
    await card('support');
    // Positive control: the counter sees the functions' reads (every test above needed some).
    expect(profileReads.length).toBeGreaterThan(0);
    // Past the TTL of the last read (a setup wait, not a race: any wait of a TTL or more expires
    // the cache), so the burst's first request must read.
    await new Promise((resolve) => setTimeout(resolve, 2 * ttlMs));
    const firstRead = profileReads.length;
    const responses = await Promise.all(Array.from({ length: 20 }, () => card('support')));
    expect(responses.every((response) => response.status === 200)).toBe(true);
    const burst = profileReads.length - firstRead;
    console.info(`saved profiles: ${burst} Query for 20 card requests (TTL ${ttlMs} ms)`);
    expect(burst).toBeGreaterThanOrEqual(1);
    const reads = profileReads.slice(firstRead - 1);
    for (let i = 1; i < reads.length; i++) {
      expect((reads[i]?.sentAt ?? 0) - (reads[i - 1]?.answeredAt ?? 0)).toBeGreaterThanOrEqual(ttlMs);
    }
  });

  it('serves a change after the cache TTL: new card and ETag, new provider', async () => {
    const first = await card('support');
    const etag = first.headers.get('etag');
    expect(etag).toBeTruthy();
    expect((await put('support', { ...support, name: 'Support echo', providers: ['local'] })).code).toBe(0);
    const changed = await eventually(
      () => card('support'),
      (response) => response.headers.get('etag') !== etag,
    );
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(((await changed.json()) as { name: string }).name).toBe('Support echo');
    // The old ETag no longer matches: a client revalidating gets the new card, not a 304.
    const revalidated = await fetch(`${stack.baseUrl}/agents/support/.well-known/agent-card.json`, {
      headers: { 'If-None-Match': etag! },
    });
    expect(revalidated.status).toBe(200);
    const sent = await send('support', 'echo me back');
    expect(sent.body.result.task.artifacts[0].parts[0].text).toBe('echo me back');
  });

  it('stays refused when it would keep only metadata: not saved, and not served if stored anyway', async () => {
    const refused = await put('strict', { name: 'Strict', description: 'x', providers: ['strict'] });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('providers.strict.privacyLevel');
    expect((await admin('profiles', 'get', 'strict')).code).toBe(1);

    // Stored behind the command's back (as if the entry had been valid under an older config),
    // with a valid marker profile written after it: once the marker is served, so was the read.
    await store.put({
      profileId: 'strict',
      profile: { name: 'Strict', description: 'x', providers: ['strict'] },
      updatedAt: new Date().toISOString(),
    });
    await store.put({
      profileId: 'marker',
      profile: { name: 'Marker', description: 'x', providers: ['local'] },
      updatedAt: new Date().toISOString(),
    });
    await eventually(
      () => card('marker'),
      (response) => response.status === 200,
    );
    expect((await card('strict')).status).toBe(404);
    const taskCount = async () =>
      ((await rpc('default', 'ListTasks', {})).body.result.tasks as unknown[]).length;
    const before = await taskCount();
    expect((await send('strict', 'never kept')).status).toBe(404);
    expect(await taskCount()).toBe(before);
  });

  it('is no longer served after delete, and a deleted override serves the configuration’s again', async () => {
    const deleted = await admin('profiles', 'delete', 'support');
    expect(deleted.code).toBe(0);
    expect((await admin('profiles', 'delete', 'support')).code).toBe(1);
    const gone = await eventually(
      () => card('support'),
      (response) => response.status === 404,
    );
    expect(gone.status).toBe(404);
    expect((await send('support', 'anyone there?')).status).toBe(404);

    expect(
      (await put('default', { name: 'Saved default', description: 'x', providers: ['tck'] })).stdout,
    ).toContain('replaces the configuration');
    const nameOf = async () => ((await (await card('default')).json()) as { name: string }).name;
    expect(await eventually(nameOf, (name) => name === 'Saved default')).toBe('Saved default');
    expect((await admin('profiles', 'delete', 'default')).code).toBe(0);
    expect(await eventually(nameOf, (name) => name === 'Echo agent')).toBe('Echo agent');
  });
});
