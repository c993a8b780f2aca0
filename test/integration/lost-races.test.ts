import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import type { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { toJsonRpcError } from '../../shared/app/rpc/errors-table.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { cancelTask } from '../../shared/app/tasks/cancel-task.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import type { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { TaskAlreadyWorkingError } from '../../shared/domain/errors.ts';
import type { RunMessage, TaskRepository } from '../../shared/domain/ports.ts';
import { alice, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { stateRepositories } from '../support/state-repositories.ts';

/**
 * Lost races against DynamoDB Local's conditional writes (issue #19 item 2): of racing writers to
 * one task exactly one wins, and every loser gets a precise A2A error, never an internal one.
 */
describe('lost races answer precisely', () => {
  let env: TestResources;
  let tasks: DynamoDbTaskRepository;
  let journal: DynamoDbJournalRepository;
  let codec: TaskContentCodec;
  const config = parseConfig({
    providers: { tck: { type: 'scripted', behavior: 'tck' } },
    profiles: { default: { name: 'TCK', description: 'tck', providers: ['tck'], privacyLevel: 'full' } },
  });
  const mapping = { errorDomain: 'errors.example.test', now: () => new Date('2026-12-01T00:00:00Z') };

  beforeAll(async () => {
    env = await createTestResources('races');
    ({ tasks, journal, codec } = stateRepositories(env));
  });
  afterAll(() => env?.destroy());

  const deps = (queued: RunMessage[], using: TaskRepository = tasks) => ({
    tasks: using,
    journal,
    codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    providerFor: (providerId: string) => new ScriptedProvider(providerId, 'tck'),
  });

  const inputRequired = async (queued: RunMessage[]): Promise<string> => {
    const { taskId } = await createTask(deps(queued), {
      caller: alice,
      profileId: 'default',
      message: userMessage('ask me', { messageId: `tck-input-required-${crypto.randomUUID()}` }),
    });
    expect(await executeRun(deps(queued), queued.shift()!)).toBe('input-required');
    return taskId;
  };

  /** The repository, except that the first `parties` task reads wait for each other: all read, then all write. */
  const readTogether = (parties: number): TaskRepository => {
    let arrived = 0;
    let release: () => void = () => {};
    const allRead = new Promise<void>((resolve) => {
      release = resolve;
    });
    return {
      commit: (plan) => tasks.commit(plan),
      getRun: (taskId, runId) => tasks.getRun(taskId, runId),
      getRunWithTask: (taskId, runId) => tasks.getRunWithTask(taskId, runId),
      markPushConfigured: (taskId) => tasks.markPushConfigured(taskId),
      readHistorySegments: (taskId, below, last) => tasks.readHistorySegments(taskId, below, last),
      fenceRun: (run, fence) => tasks.fenceRun(run, fence),
      holdDelegation: (run, hold) => tasks.holdDelegation(run, hold),
      markDelegation: (run, mark) => tasks.markDelegation(run, mark),
      getTask: async (taskId) => {
        const task = await tasks.getTask(taskId);
        if (arrived < parties) {
          arrived += 1;
          if (arrived === parties) release();
          await allRead;
        }
        return task;
      },
    };
  };

  it('four follow-ups to one INPUT_REQUIRED task, all read before any writes: one proceeds, three get TASK_ALREADY_WORKING', async () => {
    const queued: RunMessage[] = [];
    const taskId = await inputRequired(queued);
    const before = (await tasks.getTask(taskId))!;
    const racing = deps(queued, readTogether(4));
    const outcomes = await Promise.allSettled(
      [1, 2, 3, 4].map((n) =>
        createTask(racing, {
          caller: alice,
          profileId: 'default',
          message: userMessage(`answer ${n}`, { taskId, messageId: `tck-artifact-text-${n}` }),
        }),
      ),
    );
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const lost = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(3);
    for (const error of lost) {
      expect(error).toBeInstanceOf(TaskAlreadyWorkingError);
      expect(toJsonRpcError(error, mapping)).toEqual({
        code: -32004,
        message: 'This operation is not supported: the task is already working on a message',
        data: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'TASK_ALREADY_WORKING',
            domain: 'errors.example.test',
            metadata: { taskId, state: 'TASK_STATE_WORKING', timestamp: '2026-12-01T00:00:00.000Z' },
          },
        ],
      });
    }
    // One revision, one run queued, one message appended.
    const after = (await tasks.getTask(taskId))!;
    expect(after.revision).toBe(before.revision + 1);
    expect(queued).toHaveLength(1);
    const history = await codec.openHistory(taskId, after.sealedHistory);
    expect(history.filter((entry) => entry.message.role === 'ROLE_USER')).toHaveLength(2);
  });

  it('two cancels of one INPUT_REQUIRED task, both read before either writes: both answer CANCELED, one revision', async () => {
    const queued: RunMessage[] = [];
    const taskId = await inputRequired(queued);
    const before = (await tasks.getTask(taskId))!;
    const racing = {
      ...deps(queued, readTogether(2)),
      // The projector, played by the readers' wait: the latest committed row goes to the journal.
      sleep: async () => {
        const row = await tasks.getTask(taskId);
        if (row) await projectRecord(journal, undefined, row);
      },
    };
    const answers = await Promise.all([
      cancelTask(racing, { caller: alice, taskId }),
      cancelTask(racing, { caller: alice, taskId }),
    ]);
    expect(answers.map((task) => task.status.state)).toEqual(['TASK_STATE_CANCELED', 'TASK_STATE_CANCELED']);
    expect((await tasks.getTask(taskId))!.revision).toBe(before.revision + 1);
  });
});
