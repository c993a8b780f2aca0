import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SendMessageRequest, StreamResponse, Task, TaskState } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/house-function.ts';
import { localCredentials } from '../../infra/local/local-stack.ts';

/**
 * `npm start` on emulators it did not start (decision 0056): DynamoDB Local, the SQS emulator and
 * the KMS endpoint each run as a process of their own (`infra/local/emulator.ts`), and `npm start`
 * is given their endpoints the way the AWS SDK reads them (`AWS_ENDPOINT_URL_DYNAMODB`, `_SQS`,
 * `_KMS`; streams default to the DynamoDB one). The core path and a stream work through it, its
 * resources are in those emulators, and no process below it is an emulator.
 */

interface Started {
  readonly child: ChildProcess;
  readonly lines: string[];
  /** Resolves with the first line matching `pattern`; rejects when the process exits first. */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>;
}

const started: Started[] = [];

const start = (
  args: string[],
  env: NodeJS.ProcessEnv,
  command = join(REPO_ROOT, 'node_modules/.bin/tsx'),
) => {
  // Its own process group, so the stop reaches every process below it.
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (match: RegExpExecArray) => void }> = [];
  let exited = false;
  const failures: Array<(error: Error) => void> = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      for (const waiter of waiters.splice(0)) {
        const match = waiter.pattern.exec(line);
        if (match) waiter.resolve(match);
        else waiters.push(waiter);
      }
    });
  }
  child.on('exit', (code) => {
    exited = true;
    for (const fail of failures.splice(0))
      fail(new Error(`${args.join(' ')} exited (${code}):\n${lines.join('\n')}`));
  });
  const handle: Started = {
    child,
    lines,
    waitFor: (pattern) =>
      new Promise((resolve, reject) => {
        const seen = lines.map((line) => pattern.exec(line)).find((match) => match !== null);
        if (seen) return resolve(seen);
        if (exited) return reject(new Error(`${args.join(' ')} exited:\n${lines.join('\n')}`));
        waiters.push({ pattern, resolve });
        failures.push(reject);
      }),
  };
  started.push(handle);
  return handle;
};

const stop = async (handle: Started): Promise<void> => {
  if (handle.child.exitCode !== null || handle.child.pid === undefined) return;
  const exited = new Promise((resolve) => handle.child.once('exit', resolve));
  process.kill(-handle.child.pid, 'SIGTERM');
  await exited;
};

/** Every process below `pid`, with its command name, read from /proc. */
const descendantsOf = (pid: number): Array<{ pid: number; command: string }> => {
  const parents = new Map<number, number[]>();
  const commands = new Map<number, string>();
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces and parentheses.
      const close = stat.lastIndexOf(')');
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      commands.set(Number(entry), stat.slice(stat.indexOf('(') + 1, close));
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // A process that ended while being read.
    }
  }
  const found: Array<{ pid: number; command: string }> = [];
  const visit = (parent: number) => {
    for (const child of parents.get(parent) ?? []) {
      found.push({ pid: child, command: commands.get(child) ?? '' });
      visit(child);
    }
  };
  visit(pid);
  return found;
};

let endpoints: Record<string, string>;
let server: Started;
let baseUrl: string;

beforeAll(async () => {
  const variables = /^(AWS_ENDPOINT_URL_[A-Z_]+)=(\S+)$/;
  const emulatorEnv = { ...process.env };
  endpoints = {};
  const emulators = ['dynamodb', 'sqs', 'kms'].map((service) =>
    start(['infra/local/emulator.ts', service, '--port', '0'], emulatorEnv),
  );
  for (const emulator of emulators) await emulator.waitFor(variables);
  for (const emulator of emulators) {
    for (const line of emulator.lines) {
      const match = variables.exec(line);
      if (match?.[1] && match[2]) endpoints[match[1]] = match[2];
    }
  }
  // Streams are left to default to the DynamoDB endpoint, as a user of DynamoDB Local would.
  delete endpoints.AWS_ENDPOINT_URL_DYNAMODB_STREAMS;
  expect(Object.keys(endpoints).sort()).toEqual([
    'AWS_ENDPOINT_URL_DYNAMODB',
    'AWS_ENDPOINT_URL_KMS',
    'AWS_ENDPOINT_URL_SQS',
  ]);
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('AWS_ENDPOINT_URL')),
  );
  server = start(['start', '--', '--port', '0'], { ...env, ...endpoints }, 'npm');
  baseUrl = (await server.waitFor(/a2a-serverless listening on (\S+)/))[1] as string;
}, 120_000);

afterAll(async () => {
  for (const handle of started.reverse()) await stop(handle);
});

describe('npm start on external endpoints (AWS_ENDPOINT_URL_*)', () => {
  it('says it starts no emulator, and nothing below it is one', () => {
    expect(server.lines).toContain(
      `Using external endpoints (no emulator started): DynamoDB ${endpoints.AWS_ENDPOINT_URL_DYNAMODB}, ` +
        `DynamoDB Streams ${endpoints.AWS_ENDPOINT_URL_DYNAMODB}, SQS ${endpoints.AWS_ENDPOINT_URL_SQS}, ` +
        `KMS ${endpoints.AWS_ENDPOINT_URL_KMS}`,
    );
    const below = descendantsOf(server.child.pid as number);
    // npm's shell and tsx's node: the server itself.
    expect(below.length).toBeGreaterThan(0);
    expect(below.map(({ command }) => command)).not.toContain('java');
    // The control: the DynamoDB Local started for this test is a java process.
    const dynamodb = started[0]?.child.pid as number;
    expect(descendantsOf(dynamodb).map(({ command }) => command)).toContain('java');
  });

  it('completes a blocking SendMessage and streams a second task to COMPLETED', async () => {
    const client = await new ClientFactory().createFromUrl(baseUrl);
    const request = (text: string) =>
      SendMessageRequest.fromJSON({
        message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
      });
    const task = (await client.sendMessage(request('external hello'))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifacts = (Task.toJSON(task) as { artifacts: Array<{ parts: Array<{ text: string }> }> })
      .artifacts;
    expect(artifacts[0]?.parts[0]?.text).toBe('external hello');

    const states: string[] = [];
    for await (const event of client.sendMessageStream(request('external stream'))) {
      const json = StreamResponse.toJSON(event) as {
        task?: { status?: { state?: string } };
        statusUpdate?: { status?: { state?: string } };
      };
      const state = json.statusUpdate?.status?.state ?? json.task?.status?.state;
      if (state) states.push(state);
    }
    expect(states.at(-1)).toBe('TASK_STATE_COMPLETED');
    expect(states.length).toBeGreaterThan(1);
  });

  it('keeps its tables and queues in the external emulators', async () => {
    const common = { region: 'us-east-1', credentials: localCredentials };
    const dynamodb = new DynamoDBClient({ ...common, endpoint: endpoints.AWS_ENDPOINT_URL_DYNAMODB });
    const sqs = new SQSClient({ ...common, endpoint: endpoints.AWS_ENDPOINT_URL_SQS });
    try {
      const { TableNames = [] } = await dynamodb.send(new ListTablesCommand({}));
      expect(TableNames).toEqual(expect.arrayContaining(['a2a-local-State', 'a2a-local-Journal']));
      const { QueueUrls = [] } = await sqs.send(new ListQueuesCommand({}));
      expect(QueueUrls.some((url) => url.endsWith('a2a-local-RunQueue'))).toBe(true);
    } finally {
      dynamodb.destroy();
      sqs.destroy();
    }
  });
});
