import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PutCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  auditContentField,
  DynamoDbAuditTrail,
} from '../../shared/adapters/dynamodb/dynamodb-audit-trail.ts';
import { DynamoDbExpiredItems } from '../../shared/adapters/dynamodb/dynamodb-expired-items.ts';
import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { purgeExpired } from '../../shared/app/operations/purge-expired.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import type { Config } from '../../shared/config/config.ts';
import type { AuditContent } from '../../shared/domain/audit.ts';
import type { RunMessage } from '../../shared/domain/ports.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';

/**
 * The audit table and the purge against DynamoDB Local and the KMS endpoint, and the admin
 * command spawned as an operator runs it. Markers planted in the messages must never appear in
 * plaintext in any table, nor in the admin command's output.
 */

const marker = 'Audit-Int-Marker-91b4';
const email = 'dora.private@example.net';
const day = 86_400;

const fullConfig = (retentionDays: number): Config =>
  testConfig({
    privacy: { level: 'full', retention: { agentRun: retentionDays } },
    providers: {
      local: { type: 'scripted', behavior: 'echo' },
      failing: { type: 'scripted', behavior: 'fail' },
      careful: { type: 'scripted', behavior: 'echo', privacyLevel: 'redacted' },
      strict: { type: 'scripted', behavior: 'echo', privacyLevel: 'metadata' },
    },
    profiles: {
      default: { name: 'Echo', description: 'x', providers: ['local'] },
      'to-careful': { name: 'Fallback redacted', description: 'x', providers: ['failing', 'careful'] },
      'to-strict': { name: 'Fallback metadata', description: 'x', providers: ['failing', 'strict'] },
    },
  });

const serialize = (value: unknown): string =>
  JSON.stringify(value, (_key, inner) =>
    inner instanceof Uint8Array ? Buffer.from(inner).toString('latin1') : inner,
  );

describe('audit trail, purge and admin command against the emulators', () => {
  let env: TestResources;
  let tasks: DynamoDbTaskRepository;
  let journal: DynamoDbJournalRepository;
  let sealer: KmsSealer;
  let audit: DynamoDbAuditTrail;
  let tables: { state: string; journal: string; audit: string };

  beforeAll(async () => {
    env = await createTestResources('audit');
    tables = {
      state: env.resources.tables.State.name,
      journal: env.resources.tables.Journal.name,
      audit: env.resources.tables.Audit.name,
    };
    tasks = new DynamoDbTaskRepository(env.clients.doc, tables.state);
    journal = new DynamoDbJournalRepository(env.clients.doc, tables.journal);
    sealer = new KmsSealer({ kms: env.clients.kms, keyId: env.resources.key.keyId, installation: 'test' });
    audit = new DynamoDbAuditTrail(env.clients.doc, tables.audit, sealer);
  });
  afterAll(() => env?.destroy());

  /** Creates a task, runs it with the audit trail, and projects its first and last revision. */
  const runTask = async (config: Config, profileId: string, text: string, now = new Date()) => {
    const queued: RunMessage[] = [];
    const deps = {
      tasks,
      journal,
      codec: new TaskContentCodec(sealer),
      config,
      audit,
      clock: { now: () => now },
      ids: { newId: () => crypto.randomUUID() },
      queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
      providerFor: (providerId: string) => {
        const provider = config.providers[providerId];
        return new ScriptedProvider(providerId, provider?.type === 'scripted' ? provider.behavior : 'echo');
      },
    };
    const { taskId } = await createTask(deps, { caller: alice, profileId, message: userMessage(text) });
    await projectRecord(journal, undefined, await tasks.getTask(taskId));
    const result = await executeRun(deps, queued[0]!);
    await projectRecord(journal, undefined, await tasks.getTask(taskId));
    return { taskId, result };
  };

  const auditItems = async (taskId: string) => {
    const { Items = [] } = await env.clients.doc.send(
      new QueryCommand({
        TableName: tables.audit,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `TASK#${taskId}` },
      }),
    );
    return Items;
  };

  const openContent = async (taskId: string, item: Record<string, unknown>): Promise<AuditContent> =>
    JSON.parse(
      new TextDecoder().decode(
        await sealer.open(item.content as Uint8Array, { taskId, field: auditContentField(String(item.sk)) }),
      ),
    );

  it('at metadata: rows with kind, provider, lengths and expiry, and not a byte of content', async () => {
    const config = testConfig();
    const { taskId, result } = await runTask(config, 'default', `${marker} ${email}`);
    expect(result).toBe('completed');
    const items = await auditItems(taskId);
    // Exactly claim and attempt for a single-turn task: no settle row (decision 0040) — how the
    // run ended is on its run record, read back here from the table.
    expect(items.map((item) => [item.kind, item.level])).toEqual([
      ['claim', 'metadata'],
      ['attempt', 'metadata'],
    ]);
    const task = (await tasks.getTask(taskId))!;
    expect(await tasks.getRun(taskId, task.currentRunId)).toMatchObject({
      status: 'COMPLETED',
      endedAt: expect.any(String),
      attempts: [{ providerId: 'local', outcome: 'succeeded' }],
    });
    for (const item of items) {
      expect(item.sk).toMatch(/^AUDIT#/);
      expect(item.content).toBeUndefined();
      expect(typeof item.expiresAt).toBe('number');
    }
    expect(items[0]?.messageLength).toEqual({ parts: 1, characters: `${marker} ${email}`.length });
    expect(serialize(items)).not.toContain(marker);
  });

  it('at full: content is kept sealed (no plaintext in the table) and opens to the original', async () => {
    const { taskId } = await runTask(fullConfig(30), 'default', `${marker} ${email}`);
    const items = await auditItems(taskId);
    expect(items.map((item) => item.level)).toEqual(['full', 'full']);
    expect(serialize(items)).not.toContain(marker);
    const claim = await openContent(taskId, items[0]!);
    expect(claim.message?.parts).toEqual([{ text: `${marker} ${email}` }]);
  });

  it('after a tightening to redacted: rows written before it are redacted in place, later ones redacted', async () => {
    const { taskId, result } = await runTask(fullConfig(30), 'to-careful', `${marker} ${email}`);
    expect(result).toBe('completed');
    const items = await auditItems(taskId);
    expect(items.map((item) => [item.kind, item.level])).toEqual([
      ['claim', 'redacted'],
      ['attempt', 'redacted'],
      ['tighten', 'redacted'],
      ['attempt', 'redacted'],
    ]);
    const opened = [];
    for (const item of items) if (item.content) opened.push(await openContent(taskId, item));
    expect(opened.length).toBe(2);
    expect(serialize(opened)).toContain(marker);
    expect(serialize(opened)).not.toContain(email);
  });

  it('after a tightening to metadata: the content written before it is removed from the table', async () => {
    const { taskId, result } = await runTask(fullConfig(30), 'to-strict', `${marker} ${email}`);
    expect(result).toBe('not-retainable');
    const items = await auditItems(taskId);
    expect(items.map((item) => [item.kind, item.level])).toEqual([
      ['claim', 'metadata'],
      ['attempt', 'metadata'],
      ['tighten', 'metadata'],
    ]);
    expect(items.every((item) => item.content === undefined)).toBe(true);
    expect((await tasks.getTask(taskId))?.metadata).toEqual({ reason: 'RESULT_NOT_RETAINABLE' });
  });

  it('purges expired tasks with all their items in every table, and keeps the others', async () => {
    const createdAt = new Date();
    const expiring = await runTask(fullConfig(1), 'default', 'short-lived', createdAt);
    const kept = await runTask(fullConfig(10), 'default', 'long-lived', createdAt);
    // A push config written without an expiry still goes with its task.
    await env.clients.doc.send(
      new PutCommand({
        TableName: tables.state,
        Item: { pk: `TASK#${expiring.taskId}`, sk: 'PUSH#cfg-1', url: 'https://example.com/hook' },
      }),
    );
    const stores = [
      new DynamoDbExpiredItems(env.clients.doc, tables.state, 'state'),
      new DynamoDbExpiredItems(env.clients.doc, tables.journal, 'journal'),
      new DynamoDbExpiredItems(env.clients.doc, tables.audit, 'audit'),
    ];
    const partition = async (table: string, taskId: string) =>
      (
        await env.clients.doc.send(
          new QueryCommand({
            TableName: table,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': `TASK#${taskId}` },
          }),
        )
      ).Items ?? [];

    // Before expiry nothing of either task is touched.
    const early = await purgeExpired({ stores }, new Date(createdAt.getTime() + 0.5 * day * 1000));
    expect(early.tasks).toBe(0);

    const later = new Date(createdAt.getTime() + 2 * day * 1000);
    const report = await purgeExpired({ stores }, later);
    expect(report.tasks).toBe(1);
    // state: the task row (holding its run, decision 0038) by expiry; the push config with its task.
    expect(report.tables.state).toEqual({ expired: 1, deleted: 2, skipped: 0, withTask: 1 });
    // journal: one view and two events; audit: claim, attempt — all with their task.
    expect(report.tables.journal).toEqual({ expired: 0, deleted: 3, skipped: 0, withTask: 3 });
    expect(report.tables.audit).toEqual({ expired: 0, deleted: 2, skipped: 0, withTask: 2 });
    for (const table of Object.values(tables)) {
      expect(await partition(table, expiring.taskId)).toEqual([]);
    }
    expect((await partition(tables.state, kept.taskId)).length).toBe(1);
    expect((await partition(tables.journal, kept.taskId)).length).toBe(3);
    expect((await partition(tables.audit, kept.taskId)).length).toBe(2);
  });

  it('never deletes an item that is no longer expired (a follow-up extended it)', async () => {
    const store = new DynamoDbExpiredItems(env.clients.doc, tables.state, 'state');
    const taskId = crypto.randomUUID();
    const expiresAt = Math.floor(Date.now() / 1000) + day;
    await env.clients.doc.send(
      new PutCommand({ TableName: tables.state, Item: { pk: `TASK#${taskId}`, sk: 'TASK', expiresAt } }),
    );
    const key = { partition: `TASK#${taskId}`, sort: 'TASK', taskId, isTaskRow: true };
    expect(await store.deleteIfExpired(key, new Date())).toBe(false);
    expect(await store.deleteIfExpired(key, new Date((expiresAt + 1) * 1000))).toBe(true);
    expect(await store.deleteIfExpired(key, new Date((expiresAt + 1) * 1000))).toBe(false);
  });

  describe('the admin command, spawned', { timeout: 180_000 }, () => {
    const cli = fileURLToPath(new URL('../../infra/admin/cli.ts', import.meta.url));
    const admin = async (...args: string[]) => {
      const common = [
        '--endpoint',
        env.endpoints.dynamodb,
        '--state-table',
        tables.state,
        '--journal-table',
        tables.journal,
        '--audit-table',
        tables.audit,
      ];
      const withTables = args[0] === 'profiles' ? args : [...args, ...common];
      try {
        const { stdout, stderr } = await promisify(execFile)(
          process.execPath,
          ['--import', 'tsx', cli, ...withTables],
          {
            env: {
              PATH: process.env.PATH,
              AWS_ACCESS_KEY_ID: 'local',
              AWS_SECRET_ACCESS_KEY: 'local',
              AWS_REGION: 'us-east-1',
              AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
            },
          },
        );
        return { code: 0, stdout, stderr };
      } catch (error) {
        const failed = error as { code: number; stdout: string; stderr: string };
        return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
      }
    };

    it('runs show: runs, ceilings and audit steps as metadata, never content (even at full)', async () => {
      const { taskId } = await runTask(fullConfig(30), 'to-careful', `${marker} ${email}`);
      const json = await admin('runs', 'show', taskId, '--json');
      expect(json.code).toBe(0);
      const shown = JSON.parse(json.stdout);
      expect(shown.task).toMatchObject({ taskId, state: 'TASK_STATE_COMPLETED', profileId: 'to-careful' });
      expect(shown.runs[0]).toMatchObject({ status: 'COMPLETED', answerCeiling: 'redacted' });
      expect(shown.runs[0].attempts.map((attempt: { outcome: string }) => attempt.outcome)).toEqual([
        'failed',
        'succeeded',
      ]);
      expect(shown.audit.map((row: { kind: string }) => row.kind)).toEqual([
        'claim',
        'attempt',
        'tighten',
        'attempt',
      ]);
      expect(shown.audit[0].hasContent).toBe(true);

      const human = await admin('runs', 'show', taskId);
      expect(human.code).toBe(0);
      expect(human.stdout).toContain(`task ${taskId}  TASK_STATE_COMPLETED`);
      expect(human.stdout).toContain(`ended ${shown.runs[0].endedAt} COMPLETED`);
      expect(human.stdout).toContain('content sealed');
      for (const output of [json.stdout, human.stdout]) {
        expect(output).not.toContain(marker);
        expect(output).not.toContain(email);
      }
    });

    it('runs show: how a run ended, from its run record and task, next to its audit steps (decision 0040)', async () => {
      const { taskId, result } = await runTask(fullConfig(30), 'to-strict', `${marker} ${email}`);
      expect(result).toBe('not-retainable');
      const json = await admin('runs', 'show', taskId, '--json');
      expect(json.code).toBe(0);
      const shown = JSON.parse(json.stdout);
      expect(shown.runs).toHaveLength(1);
      expect(shown.runs[0]).toMatchObject({
        status: 'FAILED',
        endedAt: expect.any(String),
        reason: 'RESULT_NOT_RETAINABLE',
      });
      expect(shown.audit.map((row: { kind: string }) => row.kind)).toEqual(['claim', 'attempt', 'tighten']);

      const human = await admin('runs', 'show', taskId);
      expect(human.code).toBe(0);
      const lines = human.stdout.split('\n');
      const ended = lines.findIndex((line) => line.includes(`ended ${shown.runs[0].endedAt} FAILED`));
      expect(ended).toBeGreaterThan(0);
      expect(lines[ended]).toContain('reason RESULT_NOT_RETAINABLE');
      // Next to its audit steps: the run's lines, then its rows.
      expect(lines[ended - 1]).toContain(`run ${shown.runs[0].runId}  FAILED`);
      expect(lines.slice(ended + 1).filter((line) => line.startsWith('  audit ')).length).toBe(3);
    });

    it('profiles validate: refuses unpublishable profiles naming the setting, exit code 1', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'a2a-admin-'));
      const path = join(dir, 'config.json');
      await writeFile(
        path,
        JSON.stringify({
          providers: {
            local: { type: 'scripted' },
            strict: { type: 'scripted', privacyLevel: 'metadata' },
          },
          profiles: {
            good: { name: 'g', description: 'g', providers: ['local'] },
            'on-strict': { name: 's', description: 's', providers: ['strict', 'local'] },
            'task-none': { name: 'n', description: 'n', providers: ['local'], privacyLevel: 'none' },
          },
        }),
      );
      const human = await admin('profiles', 'validate', path);
      expect(human.code).toBe(1);
      expect(human.stdout).toMatch(/^ok {7}good:/m);
      expect(human.stdout).toContain('"on-strict" is refused (RESULT_NOT_RETAINABLE)');
      expect(human.stdout).toContain('caused by providers.strict.privacyLevel = "metadata"');
      expect(human.stdout).toContain('caused by profiles.task-none.privacyLevel = "none"');
      const json = JSON.parse((await admin('profiles', 'validate', path, '--json')).stdout);
      expect(json.valid).toBe(false);
      expect(
        json.profiles.map((profile: { profileId: string; setting?: string }) => [
          profile.profileId,
          profile.setting,
        ]),
      ).toEqual([
        ['good', undefined],
        ['on-strict', 'providers.strict.privacyLevel'],
        ['task-none', 'profiles.task-none.privacyLevel'],
      ]);
      await writeFile(
        path,
        JSON.stringify({
          providers: { local: { type: 'scripted' } },
          profiles: { good: { name: 'g', description: 'g', providers: ['local'] } },
        }),
      );
      expect((await admin('profiles', 'validate', path)).code).toBe(0);
      await rm(dir, { recursive: true, force: true });
    });

    it('runs show: an unknown task is reported, exit code 1', async () => {
      const result = await admin('runs', 'show', 'no-such-task');
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('not found');
    });

    it('purge --now: counts per table as JSON', async () => {
      const { taskId } = await runTask(fullConfig(1), 'default', 'purge me');
      const now = new Date(Date.now() + 100 * day * 1000).toISOString();
      const result = await admin('purge', '--now', now, '--json');
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout);
      expect(report.now).toBe(now);
      expect(report.tasks).toBeGreaterThanOrEqual(1);
      expect(report.tables.state.deleted).toBeGreaterThanOrEqual(2);
      expect(Object.keys(report.tables)).toEqual(['state', 'journal', 'audit']);
      expect((await admin('runs', 'show', taskId)).code).toBe(1);
      const { Items = [] } = await env.clients.doc.send(new ScanCommand({ TableName: tables.audit }));
      expect(Items.filter((item) => item.pk === `TASK#${taskId}`)).toEqual([]);
    });

    it('purge: bad --now is a usage error, exit code 2', async () => {
      const result = await admin('purge', '--now', 'yesterday');
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--now must be an ISO timestamp');
    });
  });
});
