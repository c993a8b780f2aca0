import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import type { Artifact, Message } from '../../shared/domain/a2a.ts';
import { type AuditStep, auditEntryAt } from '../../shared/domain/audit.ts';
import { type PrivacyLevel, privacyLevels } from '../../shared/domain/privacy.ts';
import { createCore, testConfig } from '../support/core-fixture.ts';
import { InMemoryAuditTrail } from '../support/in-memory-audit-trail.ts';

const marker = 'Audit-Marker-5f3e';
const email = 'carol.secret@example.org';
const apiKey = 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789';

const message = (text: string): Message => ({ messageId: 'm1', role: 'ROLE_USER', parts: [{ text }] });
const artifact = (text: string): Artifact => ({
  artifactId: 'a1',
  parts: [{ text }, { data: { note: text, n: 3 } }],
});

const stepWith = (text: string, extra: Partial<AuditStep> = {}): AuditStep => ({
  kind: 'attempt',
  taskId: 't1',
  runId: 'r1',
  at: '2026-12-01T00:00:00.000Z',
  providerId: 'local',
  outcome: 'succeeded',
  durationMs: 12,
  inputTokens: 7,
  outputTokens: 9,
  toolNames: ['calculator'],
  content: { message: message(text), artifacts: [artifact(text)] },
  ...extra,
});

describe('auditEntryAt: what an audit row may keep at each ceiling (I-LEAVE, docs/data-model.md)', () => {
  it('a tool call: names and lengths at metadata, redacted arguments and result at redacted, as called at full', () => {
    const toolCall = {
      name: 'http_fetch',
      arguments: { url: `https://example.org/?to=${email}`, note: marker },
      result: JSON.stringify({ status: 200, body: `${marker} ${apiKey}` }),
      isError: false,
    };
    const step = stepWith('', {
      kind: 'tool-call',
      toolNames: ['http_fetch'],
      effect: 'read-only',
      content: { toolCall },
    });
    const metadata = auditEntryAt('metadata', step, 100)!;
    expect(metadata).toMatchObject({
      kind: 'tool-call',
      toolNames: ['http_fetch'],
      effect: 'read-only',
      toolLength: {
        parts: 2,
        characters: JSON.stringify(toolCall.arguments).length + toolCall.result.length,
      },
    });
    expect(metadata.content).toBeUndefined();
    expect(JSON.stringify(metadata)).not.toMatch(new RegExp(`${marker}|example\\.org|sk-proj`));
    const redacted = auditEntryAt('redacted', step, 100)!;
    expect(redacted.content?.toolCall?.arguments.note).toBe(marker);
    expect(JSON.stringify(redacted.content)).not.toContain(email);
    expect(JSON.stringify(redacted.content)).not.toContain(apiKey);
    expect(auditEntryAt('full', step, 100)!.content?.toolCall).toEqual(toolCall);
  });

  it('keeps nothing at none, metadata only at metadata, redacted content at redacted, content at full', () => {
    const text = `${marker} mail ${email} key ${apiKey}`;
    const step = stepWith(text);
    expect(auditEntryAt('none', step, 100)).toBeUndefined();

    const metadata = auditEntryAt('metadata', step, 100)!;
    expect(metadata).toEqual({
      kind: 'attempt',
      taskId: 't1',
      runId: 'r1',
      at: '2026-12-01T00:00:00.000Z',
      level: 'metadata',
      providerId: 'local',
      outcome: 'succeeded',
      durationMs: 12,
      inputTokens: 7,
      outputTokens: 9,
      toolNames: ['calculator'],
      messageLength: { parts: 1, characters: text.length },
      artifactsLength: { parts: 2, characters: text.length + JSON.stringify({ note: text, n: 3 }).length },
      expiresAt: 100,
    });
    expect(JSON.stringify(metadata)).not.toContain(marker);

    const redacted = JSON.stringify(auditEntryAt('redacted', step, 100));
    expect(redacted).toContain(marker);
    expect(redacted).not.toContain(email);
    expect(redacted).not.toContain(apiKey);

    const full = auditEntryAt('full', step, 100)!;
    expect(full.content).toEqual(step.content);
  });

  it('never carries the marker at metadata, nor a planted secret at redacted, whatever the text (property)', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.constantFrom(...privacyLevels), (before, after, level) => {
        const text = `${before} ${marker} ${email} ${after}`;
        const entry = auditEntryAt(level, stepWith(text, { reason: 'PROVIDER_FAILED' }), 1);
        const written = JSON.stringify(entry ?? null);
        if (level === 'none') expect(entry).toBeUndefined();
        if (level === 'none' || level === 'metadata') expect(written).not.toContain(marker);
        if (level !== 'full') expect(written).not.toContain(email);
        if (level === 'full') expect(written).toContain(email);
      }),
    );
  });

  it('copies only the listed fields: nothing unknown on a step reaches the row', () => {
    const step = { ...stepWith('x'), prompt: marker, rawOutput: marker } as AuditStep;
    for (const level of ['metadata', 'redacted', 'full'] as PrivacyLevel[]) {
      expect(JSON.stringify(auditEntryAt(level, step, 1))).not.toContain(marker);
    }
  });
});

const fullConfig = (overrides: Record<string, unknown> = {}) =>
  testConfig({
    privacy: { level: 'full' },
    providers: {
      local: { type: 'scripted', behavior: 'echo' },
      failing: { type: 'scripted', behavior: 'fail' },
      strict: { type: 'scripted', behavior: 'echo', privacyLevel: 'metadata' },
      careful: { type: 'scripted', behavior: 'echo', privacyLevel: 'redacted' },
      nothing: { type: 'scripted', behavior: 'echo', privacyLevel: 'none' },
    },
    profiles: {
      default: { name: 'Echo', description: 'Echo agent', providers: ['local'] },
      'to-strict': { name: 'Fallback strict', description: 'x', providers: ['failing', 'strict'] },
      'to-careful': { name: 'Fallback redacted', description: 'x', providers: ['failing', 'careful'] },
      'to-nothing': { name: 'Fallback none', description: 'x', providers: ['failing', 'nothing'] },
    },
    ...overrides,
  });

const runWithAudit = async (
  core: ReturnType<typeof createCore>,
  audit: InMemoryAuditTrail,
  clock = core.deps.clock,
): Promise<string> => {
  const queued = core.queued.shift();
  if (queued === undefined) throw new Error('nothing queued');
  return executeRun({ ...core.deps, audit, clock }, queued);
};

describe('executeRun records its steps at the run audit ceiling', () => {
  it('at the default global metadata: every step, metadata only, no content anywhere', async () => {
    const core = createCore();
    const audit = new InMemoryAuditTrail();
    const { taskId } = await core.send(`${marker} hello`);
    expect(await runWithAudit(core, audit)).toBe('completed');
    // No settle row (decision 0040): how the run ended is on the run record.
    expect(audit.entries.map((entry) => [entry.kind, entry.level])).toEqual([
      ['claim', 'metadata'],
      ['attempt', 'metadata'],
    ]);
    expect(audit.entries[1]).toMatchObject({ providerId: 'local', outcome: 'succeeded', inputTokens: 0 });
    const task = core.tasks.tasks.get(taskId)!;
    expect(core.tasks.runs.get(task.currentRunId)).toMatchObject({
      status: 'COMPLETED',
      endedAt: expect.any(String),
      attempts: [{ providerId: 'local', outcome: 'succeeded', inputTokens: 0 }],
    });
    expect(JSON.stringify(audit.entries)).not.toContain(marker);
    expect(audit.entries.every((entry) => entry.taskId === taskId && entry.content === undefined)).toBe(true);
  });

  it('at full: the message and the provider output are kept', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    await core.send(`${marker} hello`);
    expect(await runWithAudit(core, audit)).toBe('completed');
    const [claim, attempt] = audit.entries;
    expect(claim?.content?.message?.parts).toEqual([{ text: `${marker} hello` }]);
    expect(attempt?.content?.artifacts?.[0]?.parts).toEqual([{ text: `${marker} hello` }]);
  });

  it('follows a tightening to redacted: what the run wrote before is redacted too, the tightening is recorded', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    await core.send(`${marker} mail ${email}`, 'to-careful');
    expect(await runWithAudit(core, audit)).toBe('completed');
    expect(audit.entries.map((entry) => [entry.kind, entry.level, entry.outcome])).toEqual([
      ['claim', 'redacted', undefined],
      ['attempt', 'redacted', 'failed'],
      ['tighten', 'redacted', undefined],
      ['attempt', 'redacted', 'succeeded'],
    ]);
    expect(audit.entries[1]).toMatchObject({ providerId: 'failing', reason: 'PROVIDER_UNAVAILABLE' });
    expect(audit.entries[2]).toMatchObject({
      providerId: 'careful',
      from: { audit: 'full', answer: 'full' },
      to: { audit: 'redacted', answer: 'redacted' },
    });
    expect(audit.entries[0]?.content?.message?.parts).toEqual([{ text: `${marker} mail [REDACTED:EMAIL]` }]);
    const trail = JSON.stringify(audit.entries);
    expect(trail).toContain(marker);
    expect(trail).not.toContain(email);
  });

  it('follows a tightening to metadata: content written before it is removed, the failure is recorded with its reason', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    const { taskId } = await core.send(`${marker} words`, 'to-strict');
    expect(await runWithAudit(core, audit)).toBe('not-retainable');
    expect(audit.entries.map((entry) => [entry.kind, entry.level])).toEqual([
      ['claim', 'metadata'],
      ['attempt', 'metadata'],
      ['tighten', 'metadata'],
    ]);
    expect(audit.entries[0]?.messageLength).toEqual({ parts: 1, characters: `${marker} words`.length });
    // The failure and its reason: on the run and its task, not in an audit row.
    const task = core.tasks.tasks.get(taskId)!;
    expect(task.metadata).toEqual({ reason: 'RESULT_NOT_RETAINABLE' });
    expect(core.tasks.runs.get(task.currentRunId)).toMatchObject({
      status: 'FAILED',
      endedAt: expect.any(String),
    });
    expect(JSON.stringify(audit.entries)).not.toContain(marker);
  });

  it('keeps nothing of the run once the audit ceiling tightens to none', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    const { taskId } = await core.send(`${marker} words`, 'to-nothing');
    expect(await runWithAudit(core, audit)).toBe('not-retainable');
    expect(audit.entries).toEqual([]);
    expect(core.tasks.tasks.get(taskId)?.metadata).toEqual({ reason: 'RESULT_NOT_RETAINABLE' });
  });

  it('writes no settle row on any way a run ends; the run record and its task say how (decision 0040)', async () => {
    const core = createCore({
      config: testConfig({
        providers: { failing: { type: 'scripted', behavior: 'fail' } },
        profiles: {
          default: { name: 'Echo', description: 'x', providers: ['failing'] },
          other: { name: 'Echo', description: 'x', providers: ['failing'] },
        },
      }),
    });
    // Failed without content: every provider failed.
    const audit = new InMemoryAuditTrail();
    const failed = await core.send('fails');
    expect(await runWithAudit(core, audit)).toBe('failed');
    expect(audit.entries.map((entry) => entry.kind)).toEqual(['claim', 'attempt']);
    const failedTask = core.tasks.tasks.get(failed.taskId)!;
    expect(failedTask.metadata).toEqual({ reason: 'PROVIDER_FAILED' });
    expect(core.tasks.runs.get(failedTask.currentRunId)).toMatchObject({
      status: 'FAILED',
      endedAt: expect.any(String),
      attempts: [{ providerId: 'failing', outcome: 'failed' }],
    });
    // Settled run-only: the task ended before its run was claimed (stands for a cancel that won).
    const ended = await core.send('never runs', 'other');
    const stored = core.tasks.tasks.get(ended.taskId)!;
    core.tasks.tasks.set(ended.taskId, { ...stored, state: 'TASK_STATE_CANCELED' });
    const before = audit.entries.length;
    expect(await runWithAudit(core, audit)).toBe('canceled');
    expect(audit.entries.length).toBe(before);
    expect(core.tasks.runs.get(stored.currentRunId)).toMatchObject({
      status: 'CANCELED',
      endedAt: expect.any(String),
    });
  });

  it('a scrub that fails is logged and does not fail the run', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    audit.scrubRun = async () => {
      throw new Error('audit table unavailable');
    };
    const logged: string[] = [];
    const logger = { info: (message: string) => void logged.push(message) };
    const queued = core.queued;
    const { taskId } = await core.send('x', 'to-careful');
    expect(await executeRun({ ...core.deps, audit, logger }, queued.shift()!)).toBe('completed');
    expect(core.tasks.tasks.get(taskId)?.state).toBe('TASK_STATE_COMPLETED');
    expect(logged).toContain('audit scrub failed');
  });

  it('an audit write that fails never fails the run (the start marker aside, decision 0072)', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    audit.failWhen = (entry) => entry.kind !== 'claim';
    const { taskId } = await core.send('still completes');
    expect(await runWithAudit(core, audit)).toBe('completed');
    expect(core.tasks.tasks.get(taskId)?.state).toBe('TASK_STATE_COMPLETED');
    expect(audit.entries.map((entry) => entry.kind)).toEqual(['claim']);
  });

  it('a start marker that cannot be written gives the run back before any provider call (decision 0072)', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    audit.failWhen = () => true;
    const { taskId } = await core.send('given back');
    const message = core.queued[0]!;
    await expect(runWithAudit(core, audit)).rejects.toThrow('audit table unavailable');
    const task = core.tasks.tasks.get(taskId)!;
    expect(core.tasks.runs.get(task.currentRunId)).toMatchObject({ status: 'QUEUED', attempts: [] });
    expect(audit.entries).toEqual([]);
    // The message comes back: the next claim writes its marker and completes.
    audit.failWhen = undefined;
    expect(await executeRun({ ...core.deps, audit }, message)).toBe('completed');
    expect(audit.entries.map((entry) => entry.kind)).toEqual(['claim', 'attempt']);
  });

  it('falls back to the metadata-only row when content cannot be written, never to more', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    audit.failWhen = (entry) => entry.content !== undefined;
    await core.send(`${marker} text`);
    expect(await runWithAudit(core, audit)).toBe('completed');
    expect(audit.entries.map((entry) => [entry.kind, entry.level])).toEqual([
      ['claim', 'metadata'],
      ['attempt', 'metadata'],
    ]);
    expect(JSON.stringify(audit.entries)).not.toContain(marker);
  });

  it('audit rows expire no later than their run, and a failed run is kept for the retention after it ends (I-PURGE)', async () => {
    const core = createCore({ config: fullConfig() });
    const audit = new InMemoryAuditTrail();
    const { taskId } = await core.send('x', 'to-strict');
    // The run ends a day after the task was created: retention (30 days) counts from then.
    const endedAt = new Date(Date.now() + 86_400_000);
    expect(await runWithAudit(core, audit, { now: () => endedAt })).toBe('not-retainable');
    const task = core.tasks.tasks.get(taskId)!;
    const run = core.tasks.runs.get(task.currentRunId)!;
    expect(task.expiresAt).toBe(Math.floor(endedAt.getTime() / 1000) + 30 * 86_400);
    expect(run.expiresAt).toBe(task.expiresAt);
    for (const entry of audit.entries) expect(entry.expiresAt).toBeLessThanOrEqual(run.expiresAt);
  });
});
