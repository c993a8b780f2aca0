import { describe, expect, it } from 'vitest';
import { decodePageToken, encodePageToken, listTasks } from '../../shared/app/tasks/list-tasks.ts';
import { InvalidParamsError } from '../../shared/domain/errors.ts';
import { alice, createCore, testConfig } from '../support/core-fixture.ts';

const bob = { tenant: 't1', principal: 'bob', profileId: 'default' } as const;

/** n completed echo tasks of alice, projected; returns their ids in creation order. */
const completedTasks = async (core: ReturnType<typeof createCore>, n: number, extra = {}) => {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { taskId } = await core.send(`task ${i}`, 'default', extra);
    await core.runNext();
    ids.push(taskId);
  }
  await core.projectAll();
  return ids;
};

const list = (core: ReturnType<typeof createCore>, input: Partial<Parameters<typeof listTasks>[1]> = {}) =>
  listTasks(core.deps, { caller: alice, pageSize: 50, includeArtifacts: false, ...input });

describe('listTasks (docs/protocol.md §6)', () => {
  it('pages through every task exactly once, newest status first, with "" on the last page', async () => {
    const core = createCore();
    const ids = await completedTasks(core, 5);
    const seen: string[] = [];
    const timestamps: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await list(core, { pageSize: 2, pageToken: token });
      pages++;
      expect(page.pageSize).toBe(2);
      expect(page.totalSize).toBe(5);
      expect(page.tasks.length).toBeLessThanOrEqual(2);
      seen.push(...page.tasks.map((task) => task.id));
      timestamps.push(...page.tasks.map((task) => task.status.timestamp));
      token = page.nextPageToken === '' ? undefined : page.nextPageToken;
    } while (token !== undefined);
    expect(pages).toBe(3);
    expect([...seen].sort()).toEqual([...ids].sort());
    expect(timestamps).toEqual([...timestamps].sort().reverse());
  });

  it('filters by status, contextId and statusTimestampAfter, and counts what matches', async () => {
    const core = createCore({ config: testConfig() });
    const [first] = await completedTasks(core, 2, { contextId: 'ctx-a' });
    const cutoff = core.tasks.tasks.get(first!)!.statusTimestamp;
    await completedTasks(core, 1, { contextId: 'ctx-b' });
    await core.send('still queued');
    await core.projectAll();

    const completed = await list(core, { status: 'TASK_STATE_COMPLETED' });
    expect(completed.tasks.map((task) => task.status.state)).toEqual(Array(3).fill('TASK_STATE_COMPLETED'));
    expect(completed.totalSize).toBe(3);
    const inContext = await list(core, { contextId: 'ctx-a' });
    expect(inContext.tasks.every((task) => task.contextId === 'ctx-a')).toBe(true);
    expect(inContext.totalSize).toBe(2);
    const recent = await list(core, { statusTimestampAfter: cutoff });
    expect(recent.tasks.every((task) => task.status.timestamp >= cutoff)).toBe(true);
    expect(recent.tasks.map((task) => task.id)).toContain(first);
    expect(recent.totalSize).toBe(4);
  });

  it("shows only the caller's tasks (I-OWNER) and none that expired (I-PURGE)", async () => {
    const core = createCore();
    await completedTasks(core, 2);
    const other = await listTasks(core.deps, { caller: bob, pageSize: 50, includeArtifacts: false });
    expect(other).toEqual({ tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 });

    const later = new Date(Date.now() + 400 * 86_400_000);
    const expired = await listTasks(
      { ...core.deps, clock: { now: () => later } },
      { caller: alice, pageSize: 50, includeArtifacts: false },
    );
    expect(expired.tasks).toEqual([]);
    expect(expired.totalSize).toBe(0);
  });

  it('omits artifacts unless asked, and history unless historyLength asks for it', async () => {
    const core = createCore();
    await completedTasks(core, 1);
    const [plain] = (await list(core)).tasks;
    expect(plain).not.toHaveProperty('artifacts');
    expect(plain).not.toHaveProperty('history');
    const [full] = (await list(core, { includeArtifacts: true, historyLength: 1 })).tasks;
    expect(full?.artifacts?.[0]?.parts).toEqual([{ text: 'task 0' }]);
    expect(full?.history).toHaveLength(1);
    expect(full?.history?.[0]?.role).toBe('ROLE_AGENT');
  });

  it('round-trips page tokens and refuses anything else naming pageToken', () => {
    const position = { statusTimestamp: '2026-11-30T08:00:00.000Z', taskId: 'abc' };
    expect(decodePageToken(encodePageToken(position))).toEqual(position);
    const forged = [
      'not a token!',
      Buffer.from('not json').toString('base64url'),
      Buffer.from(JSON.stringify({ v: 2, t: position.statusTimestamp, id: 'x' })).toString('base64url'),
      Buffer.from(JSON.stringify({ v: 1, t: 'yesterday', id: 'x' })).toString('base64url'),
      Buffer.from(JSON.stringify({ v: 1, t: position.statusTimestamp, id: '' })).toString('base64url'),
      'A'.repeat(600),
    ];
    for (const token of forged) {
      try {
        decodePageToken(token);
        expect.unreachable(`accepted ${token}`);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidParamsError);
        expect((error as InvalidParamsError).violations[0]?.field).toBe('pageToken');
      }
    }
  });
});
