import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENDPOINT_VARIABLES } from '../../infra/local/local-stack.ts';
import { agentCall, settledTask, type TaskJson, toolAnswerOf } from '../support/agent-calls.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { freePort } from '../support/mcp-server-process.ts';

/**
 * `npm start` sets `publicUrl` (docs/configuration.md, "Other top-level settings"): the local
 * stack started as `npm start` does (infra/local/start.ts, in a process of its own, on the test's
 * emulators) with a configuration that names no `publicUrl`. Profile `c` delegates to `slow` (2 s)
 * of the same stack without waiting in place; leases last two minutes and the reaper runs every
 * ten, so only the remote task's push notification to c's callback URL can wake the run in time.
 */

let child: ChildProcess | undefined;
let baseUrl = '';
let directory = '';

beforeAll(async () => {
  const port = await freePort();
  directory = await mkdtemp(join(tmpdir(), 'npm-start-push-'));
  const configFile = join(directory, 'config.json');
  await writeFile(
    configFile,
    JSON.stringify({
      privacy: { level: 'metadata' },
      providers: {
        park: {
          type: 'scripted',
          behavior: 'call-tool',
          tool: 'a2a__slowpoke',
          arguments: { message: 'wake me' },
        },
        slow: { type: 'scripted', behavior: 'slow' },
      },
      profiles: {
        c: {
          name: 'C',
          description: 'Delegates',
          providers: ['park'],
          privacyLevel: 'full',
          agents: { slowpoke: {} },
        },
        slow: { name: 'Slow', description: 'Echoes after 2 s', providers: ['slow'], privacyLevel: 'full' },
      },
      a2aAgents: {
        slowpoke: {
          cardUrl: `http://127.0.0.1:${port}/agents/slow/.well-known/agent-card.json`,
          timeoutMs: 10_000,
          waitSeconds: 0,
        },
      },
    }),
  );
  const endpoints = providedEndpoints();
  const started = spawn(
    process.execPath,
    ['--import', 'tsx', 'infra/local/start.ts', '--port', String(port), '--config', configFile],
    {
      env: {
        ...process.env,
        [ENDPOINT_VARIABLES.dynamodb]: endpoints.dynamodb,
        [ENDPOINT_VARIABLES.dynamodbStreams]: endpoints.dynamodbStreams,
        [ENDPOINT_VARIABLES.sqs]: endpoints.sqs,
        [ENDPOINT_VARIABLES.kms]: endpoints.kms,
        RUN_LEASE_MS: '120000',
        A2A_REAPER_INTERVAL_MS: '600000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  child = started;
  let output = '';
  await new Promise<void>((resolve, reject) => {
    started.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const listening = /listening on (\S+)/.exec(output);
      if (listening?.[1] && output.includes('Delegation push wake-ups')) {
        baseUrl = listening[1];
        resolve();
      }
    });
    started.once('exit', (code) => reject(new Error(`npm start exited (${code}) before it listened`)));
  });
  expect(output).toContain(`Delegation push wake-ups: http://127.0.0.1:${port}/callbacks/delegations/`);
}, 120_000);

afterAll(async () => {
  if (child?.exitCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  if (directory) await rm(directory, { recursive: true });
});

const call = agentCall(() => baseUrl);

describe('npm start without publicUrl', () => {
  it('a run waiting for a delegated task is woken by the push notification, not the reaper', async () => {
    const started = Date.now();
    const accepted = (
      await call('c', 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] },
        configuration: { returnImmediately: true },
      })
    )?.task as { id: string };
    const task = await settledTask(call, 'c', accepted.id, 60_000);
    expect(task?.status.state).toBe('TASK_STATE_COMPLETED');
    // Leases of 120 s, the reaper every 10 minutes: only the push could have queued the run again.
    expect(Date.now() - started).toBeLessThan(60_000);
    const answer = toolAnswerOf(task);
    expect(answer.state).toBe('completed');
    expect(answer.artifacts).toEqual([{ name: 'echo', parts: [{ text: 'wake me' }] }]);
    const tasks = ((await call('slow', 'ListTasks', { pageSize: 100 }))?.tasks as TaskJson[]) ?? [];
    expect(tasks.map((one) => one.id)).toContain(answer.taskId);
  }, 90_000);
});
