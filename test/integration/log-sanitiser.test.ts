import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { VersionConflictError } from '../../shared/domain/errors.ts';
import type { RunMessage } from '../../shared/domain/ports.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { stateRepositories } from '../support/state-repositories.ts';

/**
 * Issue #19 item 4: a failed conditional write's exception carries the stored item (ALL_OLD) —
 * a sealed task row with its owner and context ids. The functions' logger logs the error by name
 * and ids only. DynamoDB Local produces the real exceptions.
 */
describe('nothing of a stored item in logs', () => {
  let env: TestResources;
  let repositories: ReturnType<typeof stateRepositories>;
  const contextId = 'ctx-secret-context-4711';

  beforeAll(async () => {
    env = await createTestResources('logs');
    repositories = stateRepositories(env);
  });
  afterAll(() => env?.destroy());

  /** Everything a logger writes while `log` runs. */
  const captured = (log: () => void): string => {
    const lines: string[] = [];
    const capture = (chunk: unknown) => {
      lines.push(String(chunk));
      return true;
    };
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
    try {
      log();
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
    return lines.join('');
  };

  /** A stale write of a stored task, in one item or in a transaction: the conflict DynamoDB returns. */
  const conflict = async (inTransaction: boolean): Promise<VersionConflictError> => {
    const { tasks, codec } = repositories;
    const queued: RunMessage[] = [];
    const { taskId } = await createTask(
      {
        tasks,
        codec,
        config: testConfig(),
        clock: { now: () => new Date() },
        ids: { newId: () => crypto.randomUUID() },
        queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
      },
      { caller: alice, profileId: 'default', message: userMessage('private words', { contextId }) },
    );
    const task = (await tasks.getTask(taskId))!;
    const run = (await tasks.getRun(taskId, task.currentRunId))!;
    const stale = { taskId, task: { ...task, revision: 9 }, expect: { revision: 7 } };
    const other = {
      entity: 'run' as const,
      item: { ...run, runId: crypto.randomUUID() },
      expect: 'absent' as const,
    };
    const error = await tasks.commit({ row: stale, items: inTransaction ? [other] : [] }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(VersionConflictError);
    return error as VersionConflictError;
  };

  it.each([
    ['a single-item write', false, 'ConditionalCheckFailedException'],
    ['a transaction', true, 'TransactionCanceledException'],
  ])(
    'logs a conflict of %s with error names and codes, and no attribute of the item',
    async (_, inTransaction, causeName) => {
      const error = await conflict(inTransaction);
      // The exception does carry the item: unsanitised, Powertools logs it.
      const raw = captured(() =>
        new Logger({ serviceName: 'raw' }).error('JSON-RPC request failed', { error }),
      );
      expect(raw).toContain(contextId);
      expect(raw).toContain('"Item"');

      const line = captured(() =>
        createLogger('a2a-rpc').error('JSON-RPC request failed', { method: 'SendMessage', error }),
      );
      const logged = JSON.parse(line) as { error: Record<string, unknown> };
      expect(logged.error).toMatchObject({ name: 'VersionConflictError', cause: { name: causeName } });
      if (inTransaction) {
        expect((logged.error.cause as { cancellationReasons: string[] }).cancellationReasons).toContain(
          'ConditionalCheckFailed',
        );
      }
      for (const stored of [contextId, alice.principal, '"Item"', 'sealedHistory', '"pk"']) {
        expect(line).not.toContain(stored);
      }
    },
  );
});
