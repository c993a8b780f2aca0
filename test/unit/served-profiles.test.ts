import { describe, expect, it } from 'vitest';
import {
  createProfileCatalog,
  overlaySavedProfiles,
  type ServedProfiles,
} from '../../shared/app/profiles/served-profiles.ts';
import type { StoredProfile } from '../../shared/domain/operations.ts';
import { createCore, testConfig } from '../support/core-fixture.ts';

/**
 * Decision 0024: saved profiles overlay the deployment's, are checked again whenever they are
 * read, are read at most once per TTL (one read at a time), and a run of a saved profile runs
 * with the settings it was accepted with.
 */

const config = testConfig();
const saved = (profileId: string, profile: Record<string, unknown>, updatedAt = '2026-11-30T10:00:00Z') =>
  ({ profileId, profile, updatedAt }) satisfies StoredProfile;

describe('overlaySavedProfiles', () => {
  it('adds new ids and replaces a deployment profile of the same id', () => {
    const { served, notServed } = overlaySavedProfiles(config, [
      saved('support', { name: 'Support', description: 'Helps', providers: ['local'] }),
      saved('default', {
        name: 'Replaced',
        description: 'Saved over the deployment one',
        providers: ['local'],
      }),
    ]);
    expect(notServed).toEqual([]);
    expect(served.config.profiles.support).toMatchObject({ name: 'Support', maxToolRounds: 8 });
    expect(served.config.profiles.default?.name).toBe('Replaced');
    expect(served.config.profiles['to-strict']).toBe(config.profiles['to-strict']);
    expect([...served.saved].sort()).toEqual(['default', 'support']);
    // The deployment configuration itself is untouched.
    expect(config.profiles.default?.name).toBe('Echo');
    expect(config.profiles.support).toBeUndefined();
  });

  it('serves nothing under an id whose saved entry no longer validates, and names only id and setting', () => {
    const { served, notServed } = overlaySavedProfiles(config, [
      // Refused (I-REFUSE): its primary provider keeps metadata only — as after a tightening.
      saved('default', { name: 'Secret instructions', description: 'x', providers: ['strict'] }),
      // Invalid here: a provider this deployment does not have.
      saved('gone', { name: 'Gone', description: 'x', providers: ['nowhere'], instructions: 'private' }),
    ]);
    expect(served.config.profiles.default).toBeUndefined();
    expect(served.config.profiles.gone).toBeUndefined();
    expect(served.saved.size).toBe(0);
    expect(notServed).toEqual([
      {
        profileId: 'default',
        updatedAt: '2026-11-30T10:00:00Z',
        reason: 'RESULT_NOT_RETAINABLE',
        setting: 'providers.strict.privacyLevel',
      },
      { profileId: 'gone', updatedAt: '2026-11-30T10:00:00Z', reason: 'INVALID' },
    ]);
    expect(JSON.stringify(notServed)).not.toMatch(/Secret|private/);
  });

  it('checks a saved profile against the global level of this deployment', () => {
    const entry = saved('support', { name: 'Support', description: 'x', providers: ['local'] });
    expect(overlaySavedProfiles(config, [entry]).served.saved.has('support')).toBe(true);
    const tightened = testConfig({ privacy: { level: 'none' } });
    const { served, notServed } = overlaySavedProfiles(tightened, [entry]);
    expect(served.config.profiles.support).toBeUndefined();
    expect(notServed[0]).toMatchObject({ profileId: 'support', setting: 'privacy.level' });
  });
});

describe('createProfileCatalog', () => {
  const setup = (ttlMs = 30_000) => {
    let now = Date.parse('2026-11-30T10:00:00Z');
    let stored: StoredProfile[] = [saved('support', { name: 'One', description: 'x', providers: ['local'] })];
    let reads = 0;
    let failNext = false;
    const warnings: [string, Record<string, unknown>][] = [];
    const catalog = createProfileCatalog({
      config,
      ttlMs,
      clock: { now: () => new Date(now) },
      logger: { warn: (message, fields) => warnings.push([message, fields ?? {}]) },
      saved: {
        list: async () => {
          reads += 1;
          await new Promise<void>((resolve) => setTimeout(resolve, 5));
          if (failNext) {
            failNext = false;
            throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
          }
          return stored;
        },
      },
    });
    return {
      catalog,
      warnings,
      reads: () => reads,
      advance: (ms: number) => {
        now += ms;
      },
      store: (next: StoredProfile[]) => {
        stored = next;
      },
      failNextRead: () => {
        failNext = true;
      },
    };
  };
  const nameOf = (served: ServedProfiles) => served.config.profiles.support?.name;

  it('reads once for many concurrent requests, then not again within the TTL', async () => {
    const { catalog, reads, advance } = setup();
    const all = await Promise.all(Array.from({ length: 50 }, () => catalog.current()));
    expect(reads()).toBe(1);
    expect(new Set(all).size).toBe(1);
    advance(29_999);
    for (let i = 0; i < 100; i += 1) await catalog.current();
    expect(reads()).toBe(1);
  });

  it('sees a changed and a deleted profile after the TTL', async () => {
    const { catalog, reads, advance, store } = setup(1_000);
    expect(nameOf(await catalog.current())).toBe('One');
    store([
      saved('support', { name: 'Two', description: 'x', providers: ['local'] }, '2026-11-30T10:00:01Z'),
    ]);
    expect(nameOf(await catalog.current())).toBe('One');
    advance(1_000);
    expect(nameOf(await catalog.current())).toBe('Two');
    store([]);
    advance(1_000);
    const served = await catalog.current();
    expect(served.config.profiles.support).toBeUndefined();
    expect(served.saved.size).toBe(0);
    expect(reads()).toBe(3);
  });

  it('serves the profiles read before when a read fails, and reads again on the next request', async () => {
    const { catalog, reads, advance, failNextRead, warnings } = setup(1_000);
    expect(nameOf(await catalog.current())).toBe('One');
    advance(1_000);
    failNextRead();
    expect(nameOf(await catalog.current())).toBe('One');
    expect(warnings.map(([message]) => message)).toEqual([
      'saved profiles could not be read; serving the ones read before',
    ]);
    expect(warnings[0]?.[1]).toEqual({ error: 'ProvisionedThroughputExceededException' });
    await catalog.current();
    expect(reads()).toBe(3);
  });

  it('fails the request when the first read fails, and reads again on the next', async () => {
    const { catalog, reads, failNextRead } = setup();
    failNextRead();
    await expect(catalog.current()).rejects.toThrow('throttled');
    expect(nameOf(await catalog.current())).toBe('One');
    expect(reads()).toBe(2);
  });

  it('logs a profile that is not served once per saved version, by id', async () => {
    const { catalog, advance, store, warnings } = setup(1_000);
    store([saved('support', { name: 'Hidden', description: 'x', providers: ['strict'] })]);
    await catalog.current();
    advance(1_000);
    await catalog.current();
    expect(warnings).toEqual([
      [
        'saved profile not served',
        {
          profileId: 'support',
          updatedAt: '2026-11-30T10:00:00Z',
          reason: 'RESULT_NOT_RETAINABLE',
          setting: 'providers.strict.privacyLevel',
        },
      ],
    ]);
  });
});

describe('a run of a saved profile', () => {
  const servedWith = (profile: Record<string, unknown>) =>
    overlaySavedProfiles(config, [saved('support', profile)]).served;

  it('runs with the settings it was accepted with, though the executor never sees the profile', async () => {
    const core = createCore({ config });
    const served = servedWith({
      name: 'Support',
      description: 'x',
      providers: ['local'],
      instructions: 'Be kind.',
    });
    const deps = { ...core.deps, config: served.config, savedProfiles: served.saved };
    const { taskId } = await core.send('hi', 'support', {}, deps);
    const run = core.tasks.runs.get(core.tasks.tasks.get(taskId)!.currentRunId)!;
    expect(run.profile).toEqual({
      providers: ['local'],
      instructions: 'Be kind.',
      tools: [],
      maxToolRounds: 8,
    });
    // The executor's configuration is the deployment's, without `support` (or since deleted):
    // without the run's own copy this would end FAILED with PROFILE_MISSING.
    expect(core.deps.config.profiles.support).toBeUndefined();
    expect(await core.runNext()).toBe('completed');
    expect(core.tasks.tasks.get(taskId)!.state).toBe('TASK_STATE_COMPLETED');
  });

  it('keeps running as accepted when the saved profile changes before the run starts', async () => {
    const core = createCore({ config });
    const before = servedWith({ name: 'Support', description: 'x', providers: ['local'] });
    const { taskId } = await core.send(
      'hi',
      'support',
      {},
      { ...core.deps, config: before.config, savedProfiles: before.saved },
    );
    // Changed to a failing provider after the task was accepted: the run still uses `local`.
    const after = servedWith({ name: 'Support', description: 'x', providers: ['failing'] });
    expect(await core.runNext({ ...core.deps, config: after.config })).toBe('completed');
    expect(core.tasks.tasks.get(taskId)!.state).toBe('TASK_STATE_COMPLETED');
  });

  it('carries nothing for a deployment profile, which the executor reads itself', async () => {
    const core = createCore({ config });
    const { taskId } = await core.send('hi');
    expect(core.tasks.runs.get(core.tasks.tasks.get(taskId)!.currentRunId)!.profile).toBeUndefined();
  });
});
