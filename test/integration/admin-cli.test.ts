import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../../infra/admin/cli.ts';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { defaultConfig } from '../../shared/config/config.ts';
import { providedEndpoints } from '../support/local-guard.ts';

/**
 * The admin command's profiles put/get/list and tasks list (decision 0016) against the local
 * stack's tables in DynamoDB Local: a refused profile is not saved and the answer names the
 * setting; task listing shows metadata and never content.
 */

const root = resolve(import.meta.dirname, '../..');
let stack: LocalStack;
let directory: string;
let table: string[];

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const admin = async (...args: string[]): Promise<Run> => {
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

const file = async (name: string, value: unknown): Promise<string> => {
  const path = join(directory, name);
  await writeFile(path, JSON.stringify(value));
  return path;
};

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    config: defaultConfig,
    endpoints: providedEndpoints(),
    prefix: 'admin-cli',
    log: () => {},
  });
  table = ['--prefix', stack.resources.prefix, '--endpoint', stack.endpoints.dynamodb];
  directory = await mkdtemp(join(tmpdir(), 'admin-cli-'));
});
afterAll(async () => {
  await stack?.stop();
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe('profiles put, get, list', () => {
  it('saves a publishable profile; get returns the entry as saved; list shows it as a table', async () => {
    const entry = {
      name: 'Support bot',
      description: 'Answers questions.',
      providers: ['local'],
      privacyLevel: 'full',
    };
    const put = await admin('profiles', 'put', 'support', await file('support.json', entry));
    expect(put.code).toBe(0);
    expect(put.stdout).toMatch(/^saved {4}support: primary provider local, answer ceiling full/);
    const get = await admin('profiles', 'get', 'support');
    expect(JSON.parse(get.stdout)).toEqual(entry);
    const list = await admin('profiles', 'list');
    expect(list.stdout).toMatch(/^PROFILE\s+NAME\s+PROVIDERS\s+PRIVACY\s+UPDATED$/m);
    expect(list.stdout).toMatch(/^support\s+Support bot\s+local\s+full\s+\d{4}-/m);
    const json = JSON.parse((await admin('profiles', 'list', '--json')).stdout) as {
      profiles: { profileId: string }[];
    };
    expect(json.profiles.map((profile) => profile.profileId)).toContain('support');
  });

  it('refuses an unpublishable profile, names the exact setting, and does not save it', async () => {
    const config = await file('config.json', {
      providers: { strict: { type: 'scripted', behavior: 'echo', privacyLevel: 'metadata' } },
      profiles: {},
    });
    const entry = { name: 'Strict', description: 'On a metadata-only provider.', providers: ['strict'] };
    const put = await admin(
      'profiles',
      'put',
      'strict',
      await file('strict.json', entry),
      '--config',
      config,
    );
    expect(put.code).toBe(1);
    expect(put.stdout).toContain('RESULT_NOT_RETAINABLE');
    expect(put.stdout).toContain('providers.strict.privacyLevel = "metadata"');
    expect(put.stdout).toContain('Not saved');
    const verdict = JSON.parse(
      (await admin('profiles', 'put', 'strict', join(directory, 'strict.json'), '--config', config, '--json'))
        .stdout,
    ) as { saved: boolean; verdict: { setting: string } };
    expect(verdict).toMatchObject({ saved: false, verdict: { setting: 'providers.strict.privacyLevel' } });
    expect((await admin('profiles', 'get', 'strict')).code).toBe(1);
  });

  it('refuses an invalid entry with the path of the setting', async () => {
    const put = await admin(
      'profiles',
      'put',
      'broken',
      await file('broken.json', { name: 'B', description: 'd', providers: ['nowhere'] }),
    );
    expect(put.code).toBe(1);
    expect(put.stderr).toContain('profiles.broken.providers: unknown provider "nowhere"');
    const badId = await admin('profiles', 'put', 'Not An Id', join(directory, 'support.json'));
    expect(badId.code).toBe(1);
    expect(badId.stderr).toContain('profiles.Not An Id');
  });
});

describe('tasks list', () => {
  it('lists a caller’s tasks as a table of metadata, never their content', async () => {
    const marker = 'Admin-Canary-5d1e';
    const response = await fetch(`${stack.baseUrl}/agents/default`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: marker }] } },
      }),
    });
    const { result } = (await response.json()) as { result: { task: { id: string } } };
    const list = await admin('tasks', 'list', '--owner', 'local/local');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^TASK\s+STATE\s+REV\s+UPDATED\s+CREATED\s+EXPIRES$/m);
    expect(list.stdout).toMatch(new RegExp(`^${result.task.id}\\s+COMPLETED\\s+\\d+\\s`, 'm'));
    const json = await admin('tasks', 'list', '--owner', 'local/local', '--state', 'completed', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({
      tasks: [{ taskId: result.task.id, state: 'TASK_STATE_COMPLETED' }],
    });
    for (const output of [list.stdout, json.stdout]) expect(output).not.toContain(marker);
    const other = await admin('tasks', 'list', '--owner', 't9/nobody');
    expect(other.stdout).not.toContain(result.task.id);
    expect((await admin('tasks', 'list')).code).toBe(2);
  });
});

describe('npx a2a-admin', () => {
  it('runs the same command as a process through the package bin', async () => {
    const run = await new Promise<Run>((done) =>
      execFile(
        process.execPath,
        [resolve(root, 'bin/a2a-admin.mjs'), 'profiles', 'list', ...table],
        { cwd: root, timeout: 90_000 },
        (error, stdout, stderr) => done({ code: error ? 1 : 0, stdout, stderr }),
      ),
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^support\s+Support bot/m);
  });
});
