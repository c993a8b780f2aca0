import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClient } from '../../infra/client/cli.ts';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { startWebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * The client CLI (`npx a2a`, decision 0016) as a user runs it: a separate process, real HTTP to
 * the local stack, the official SDK client inside. Two callers with static tokens show that the
 * token really travels (and that one caller's tasks stay invisible to the other).
 */

const root = resolve(import.meta.dirname, '../..');
const bin = resolve(root, 'bin/a2a.mjs');

const config = parseConfig({
  auth: {
    tokens: {
      'cli-token-alice': { tenant: 't1', principal: 'alice' },
      'cli-token-bob': { tenant: 't1', principal: 'bob' },
    },
  },
  providers: {
    local: { type: 'scripted', behavior: 'echo' },
    tck: { type: 'scripted', behavior: 'tck' },
  },
  profiles: {
    default: { name: 'Echo agent', description: 'Echoes.', providers: ['local'], privacyLevel: 'full' },
    tck: {
      name: 'TCK',
      description: 'TCK scenarios by messageId prefix.',
      providers: ['tck'],
      privacyLevel: 'full',
    },
  },
});

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let stack: LocalStack;

/** Runs `a2a <args>` in its own process, as `npx a2a` does; A2A_URL/A2A_TOKEN come only from `env`. */
const spawned = (args: readonly string[], env: Record<string, string> = {}): Promise<Run> =>
  new Promise((done) => {
    const { A2A_URL: _url, A2A_TOKEN: _token, ...inherited } = process.env;
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: root, env: { ...inherited, ...env }, timeout: 90_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });

/**
 * The same command in this process (the machine is small: a process per call costs seconds);
 * still real HTTP through the SDK client to the local stack.
 */
const a2a = async (args: readonly string[], env: Record<string, string> = {}): Promise<Run> => {
  let stdout = '';
  let stderr = '';
  const code = await runClient(args, {
    out: (text) => {
      stdout += `${text}\n`;
    },
    err: (text) => {
      stderr += `${text}\n`;
    },
    env,
  });
  return { code, stdout, stderr };
};

const aliceArgs = (args: readonly string[]) => [
  '--url',
  stack.baseUrl,
  '--token',
  'cli-token-alice',
  ...args,
];
const alice = (...args: string[]) => a2a(aliceArgs(args));
/** `alice` in a process of its own, for what only a real process shows (exit code, stdout). */
const aliceSpawned = (...args: string[]) => spawned(aliceArgs(args));
const json = (run: Run) => JSON.parse(run.stdout) as Record<string, unknown> & { id: string };

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix: 'client-cli',
    log: () => {},
  });
});
afterAll(async () => {
  await stack?.stop();
});

describe('a2a send', () => {
  it('blocks until COMPLETED and prints the state and the echoed artifact', async () => {
    const run = await aliceSpawned('send', 'hello', 'from', 'the', 'cli');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^state {4}COMPLETED$/m);
    expect(run.stdout).toMatch(/^artifact .*: hello from the cli$/m);
  });

  it('--json prints the v1.0 Task', async () => {
    const run = await alice('send', '--json', 'json please');
    expect(run.code).toBe(0);
    expect(json(run)).toMatchObject({
      status: { state: 'TASK_STATE_COMPLETED' },
      artifacts: [{ parts: [{ text: 'json please' }] }],
    });
  });

  it('--stream prints live progress lines from the SSE stream, in order', async () => {
    const run = await aliceSpawned('send', '--stream', 'streamed words');
    expect(run.code).toBe(0);
    const kinds = run.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/)[1]);
    expect(kinds[0]).toBe('task');
    expect(kinds.at(-1)).toBe('status');
    expect(kinds).toContain('artifact');
    expect(run.stdout).toMatch(/artifact {2}.*: streamed words/);
    expect(run.stdout.trim().split('\n').at(-1)).toMatch(/status {4}COMPLETED/);
  });

  it('--stream --json prints one StreamResponse per line', async () => {
    const run = await alice('send', '--stream', '--json', 'ndjson');
    expect(run.code).toBe(0);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(Object.keys(events[0]!)).toEqual(['task']);
    expect(events.at(-1)).toMatchObject({ statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } });
  });

  it('exits 1 when the task ends FAILED or REJECTED', async () => {
    const run = await a2a([
      '--url',
      `${stack.baseUrl}/agents/tck`,
      '--token',
      'cli-token-alice',
      'send',
      '--message-id',
      `tck-reject-task-${crypto.randomUUID()}`,
      'reject me',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^state {4}(FAILED|REJECTED)$/m);
  });
});

describe('the bearer token', () => {
  it('is required by the server: without one the call fails with exit code 1', async () => {
    const run = await a2a(['--url', stack.baseUrl, 'list']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/401|nauthori/);
  });

  it('comes from A2A_TOKEN too, and names the caller: another caller sees TaskNotFound', async () => {
    const task = json(await alice('send', '--json', 'private to alice'));
    const asAlice = await spawned(['get', task.id], { A2A_URL: stack.baseUrl, A2A_TOKEN: 'cli-token-alice' });
    expect(asAlice.code).toBe(0);
    expect(asAlice.stdout).toContain(`task     ${task.id}`);
    const asBob = await a2a(['get', task.id], { A2A_URL: stack.baseUrl, A2A_TOKEN: 'cli-token-bob' });
    expect(asBob.code).toBe(1);
    expect(asBob.stderr).toContain('TaskNotFoundError (-32001)');
    const bobsList = await a2a(['--url', stack.baseUrl, '--token', 'cli-token-bob', 'list', '--json']);
    expect(JSON.stringify(json(bobsList))).not.toContain(task.id);
  });
});

describe('a2a get, list, cancel, subscribe, push', () => {
  it('list shows the caller’s tasks as a table, newest first, and filters by status', async () => {
    const first = json(await alice('send', '--json', 'one'));
    const second = json(await alice('send', '--json', 'two'));
    const run = await alice('list', '--status', 'completed');
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toMatch(/^TASK\s+STATE\s+UPDATED\s+CONTEXT$/);
    const rows = lines.filter((line) => line.includes(first.id) || line.includes(second.id));
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain(second.id);
    expect(rows[0]).toMatch(/COMPLETED/);
    const none = await alice('list', '--status', 'working', '--json');
    expect(JSON.stringify(json(none))).not.toContain(first.id);
  });

  it('subscribe follows a live task; cancel ends it and the stream ends with CANCELED', async () => {
    const tck = (...args: string[]) =>
      a2a(['--url', `${stack.baseUrl}/agents/tck`, '--token', 'cli-token-alice', ...args]);
    const task = json(
      await tck('send', '--json', '--message-id', `tck-input-required-${crypto.randomUUID()}`, 'wait'),
    );
    expect(task).toMatchObject({ status: { state: 'TASK_STATE_INPUT_REQUIRED' } });

    const subscriber: ChildProcess = spawn(
      process.execPath,
      [bin, '--url', `${stack.baseUrl}/agents/tck`, '--token', 'cli-token-alice', 'subscribe', task.id],
      { cwd: root, env: process.env },
    );
    let output = '';
    subscriber.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((done) => subscriber.once('exit', (code) => done(code)));
    // The first event of SubscribeToTask is the task itself (docs/protocol.md §5): once printed, the stream is live.
    const deadline = Date.now() + 60_000;
    while (!output.includes(task.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(output).toMatch(new RegExp(`task {6}${task.id} {2}INPUT_REQUIRED`));

    const cancel = await tck('cancel', task.id);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(/^state {4}CANCELED$/m);
    expect(await exited).toBe(0);
    expect(output.trim().split('\n').at(-1)).toMatch(/status {4}CANCELED/);

    const again = await tck('subscribe', task.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('has already ended');
  });

  it('push set, get, list and delete a webhook config', async () => {
    const task = json(await alice('send', '--json', 'with a webhook'));
    const set = await alice(
      'push',
      'set',
      task.id,
      'http://127.0.0.1:9/hook',
      '--id',
      'cfg1',
      '--push-token',
      'tok-1',
    );
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('cfg1  http://127.0.0.1:9/hook  (token set)');
    expect(json(await alice('push', 'get', task.id, 'cfg1', '--json'))).toMatchObject({
      id: 'cfg1',
      taskId: task.id,
      url: 'http://127.0.0.1:9/hook',
    });
    const list = await alice('push', 'list', task.id);
    expect(list.stdout).toMatch(/^cfg1\s+http:\/\/127\.0\.0\.1:9\/hook\s+set\s+-$/m);
    expect((await alice('push', 'delete', task.id, 'cfg1')).code).toBe(0);
    expect(json(await alice('push', 'list', task.id, '--json'))).not.toHaveProperty('configs.0');
  });

  it('push deliveries lists every attempt of the task’s webhook deliveries; bob gets TaskNotFound', async () => {
    const receiver = await startWebhookReceiver({ respond: (_post, index) => (index === 0 ? 503 : 200) });
    try {
      const task = json(await alice('send', '--json', '--push-url', `${receiver.url}/cli`, 'deliver me'));
      type Listed = { deliveries: { revision: number; state: string; attempts: { outcome: string }[] }[] };
      const listed = async () =>
        JSON.parse((await alice('push', 'deliveries', task.id, '--json')).stdout) as Listed;
      // Settled once every revision the receiver accepted is DELIVERED (the first POST was a 503).
      await receiver.waitFor(
        (posts) => JSON.stringify(posts.at(-1)?.body ?? '').includes('COMPLETED'),
        60_000,
      );
      const revisions = async () => (await listed()).deliveries;
      const deadline = Date.now() + 60_000;
      while (
        !(await revisions()).every((delivery) => delivery.state === 'DELIVERED') ||
        (await revisions()).length < 3
      ) {
        if (Date.now() > deadline) throw new Error('deliveries did not settle');
        await new Promise((wake) => setTimeout(wake, 250));
      }
      const { deliveries } = await listed();
      expect(deliveries[0]?.attempts.map((attempt) => attempt.outcome)).toEqual(['HTTP_ERROR', 'DELIVERED']);
      const human = await alice('push', 'deliveries', task.id);
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/^CONFIG\s+REV\s+#\s+OUTCOME\s+HTTP\s+TIME\s+NEXT$/m);
      expect(human.stdout).toMatch(/^\S+\s+1\s+1\s+HTTP_ERROR\s+503\s+\S+\s+20\d\d-/m);
      expect(human.stdout).toMatch(/^\S+\s+1\s+2\s+DELIVERED\s+200\s/m);
      expect(human.stdout).toContain(`${deliveries.length} deliveries`);
      const asBob = await a2a([
        '--url',
        stack.baseUrl,
        '--token',
        'cli-token-bob',
        'push',
        'deliveries',
        task.id,
      ]);
      expect(asBob.code).toBe(1);
      expect(asBob.stderr).toContain('(-32001)');
    } finally {
      await receiver.close();
    }
  });

  it('card shows the discovered agent; a profile URL and a card URL both work', async () => {
    const byBase = await alice('card');
    expect(byBase.stdout).toMatch(/^Echo agent/);
    const byProfile = await alice('--url', `${stack.baseUrl}/agents/tck`, 'card');
    expect(byProfile.stdout).toMatch(/^TCK/);
    expect(byProfile.stdout).toContain(`interface JSONRPC 1.0 ${stack.baseUrl}/agents/tck`);
    const byCard = await a2a(['--url', `${stack.baseUrl}/agents/tck/.well-known/agent-card.json`, 'card']);
    expect(byCard.stdout).toMatch(/^TCK/);
  });
});

describe('a server that speaks only A2A v0.3', () => {
  it('is reached through the SDK’s v0.3 transport when its card is v0.3-shaped', async () => {
    // A v0.3-only card (no supportedInterfaces) naming this server's endpoint, which also answers
    // v0.3 method names (decision 0015): the CLI must pick the v0.3 wire format by itself.
    const card = {
      name: 'v0.3 agent',
      description: 'Only v0.3 fields.',
      version: '1.0.0',
      protocolVersion: '0.3.0',
      url: `${stack.baseUrl}/agents/default`,
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [],
    };
    const cardServer = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(card));
    });
    await new Promise<void>((done) => cardServer.listen(0, '127.0.0.1', done));
    const { port } = cardServer.address() as AddressInfo;
    try {
      const run = await a2a([
        '--url',
        `http://127.0.0.1:${port}/card.json`,
        '--token',
        'cli-token-alice',
        'send',
        '--json',
        'over v0.3',
      ]);
      expect(run.code).toBe(0);
      expect(json(run)).toMatchObject({
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [{ parts: [{ text: 'over v0.3' }] }],
      });
    } finally {
      cardServer.close();
    }
  });
});

describe('usage', () => {
  it('exits 2 with the usage on an unknown command or a missing argument', async () => {
    for (const args of [['bogus'], ['get'], ['push', 'get', 'only-task'], ['list', '--page-size', 'x']]) {
      const run = await a2a(['--url', stack.baseUrl, ...args]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('Usage: npx a2a');
    }
    expect((await spawned(['bogus'])).code).toBe(2);
  });

  it('npx a2a resolves to this package’s own bin from the repository', async () => {
    const run = await new Promise<Run>((done) =>
      execFile('npx', ['a2a', '--help'], { cwd: root, timeout: 120_000 }, (error, stdout, stderr) =>
        done({ code: error ? 1 : 0, stdout, stderr }),
      ),
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: npx a2a');
  });
});
