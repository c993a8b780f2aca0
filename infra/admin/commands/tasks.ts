import { DynamoDbJournalRepository } from '../../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { type TaskState, taskStates } from '../../../shared/domain/a2a.ts';
import { rootAgent } from '../../../shared/domain/task.ts';
import { table } from '../../text-table.ts';
import { type AdminIo, documentClient, type Options, tablesOf, UsageError } from '../admin-context.ts';

/** The `tasks list` command: an owner's tasks from the journal's index. */

const ownerOf = (owner: string | undefined): { tenant: string; principal: string } => {
  const match = owner === undefined ? null : /^([^/]+)\/(.+)$/.exec(owner);
  if (!match) throw new UsageError('tasks list needs --owner <tenant>/<principal> (e.g. local/local)');
  return { tenant: match[1]!, principal: match[2]! };
};

export const tasksListCommand = async (extra: string | undefined, options: Options, io: AdminIo) => {
  if (extra !== undefined) throw new UsageError('tasks list takes no arguments');
  const owner = ownerOf(options.owner);
  const agent = options.agent ?? rootAgent;
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be 1…1000');
  const state =
    options.state === undefined
      ? undefined
      : (`TASK_STATE_${options.state
          .toUpperCase()
          .replace(/^TASK_STATE_/, '')
          .replace(/-/g, '_')}` as TaskState);
  if (state !== undefined && !(taskStates as readonly string[]).includes(state)) {
    throw new UsageError(
      `--state must be one of ${taskStates.map((name) => name.replace('TASK_STATE_', '')).join(', ')}`,
    );
  }
  const tables = tablesOf(options, io.env);
  const client = documentClient(options, io.env);
  try {
    // The journal's owner index: one query, never a scan. Only metadata leaves it: sealed blobs stay sealed.
    const page = await new DynamoDbJournalRepository(client, tables.journal).listViews({
      owner: { ...owner, profileId: agent },
      ...(state !== undefined ? { state } : {}),
      now: new Date(),
      limit,
    });
    const tasks = page.views.map((view) => ({
      taskId: view.taskId,
      state: view.state,
      revision: view.revision,
      statusTimestamp: view.statusTimestamp,
      createdAt: view.createdAt,
      contextId: view.contextId,
      expiresAt: new Date(view.expiresAt * 1000).toISOString(),
      ...(view.metadata !== undefined ? { metadata: view.metadata } : {}),
    }));
    if (options.json) {
      io.out(JSON.stringify({ owner, agent, tasks, more: page.more }, null, 2));
      return 0;
    }
    for (const line of table(
      ['TASK', 'STATE', 'REV', 'UPDATED', 'CREATED', 'EXPIRES'],
      tasks.map((task) => [
        task.taskId,
        task.state.replace('TASK_STATE_', ''),
        String(task.revision),
        task.statusTimestamp,
        task.createdAt,
        task.expiresAt,
      ]),
    )) {
      io.out(line);
    }
    io.out(
      `${tasks.length} task(s) of ${owner.tenant}/${owner.principal} at ${agent}${page.more ? ' (more: raise --limit)' : ''}.`,
    );
    return 0;
  } finally {
    client.destroy();
  }
};

/** Runs one admin command; returns the exit code. Never throws for bad input. */
