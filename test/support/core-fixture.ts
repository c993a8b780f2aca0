import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { type ExecuteRunDeps, executeRun } from '../../shared/app/runs/execute-run.ts';
import { type CreateTaskDeps, createTask } from '../../shared/app/tasks/create-task.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { type Config, parseConfig } from '../../shared/config/config.ts';
import type { Message } from '../../shared/domain/a2a.ts';
import type { AgentProvider, RunMessage, Sealer } from '../../shared/domain/ports.ts';
import { InMemoryJournalRepository, InMemoryTaskRepository } from './in-memory-repositories.ts';

/** A caller at the root agent (`default`, the profile `createCore` serves there). */
export const alice = { tenant: 't1', principal: 'alice', profileId: 'default' } as const;

export const userMessage = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  role: 'ROLE_USER',
  parts: [{ text }],
  ...extra,
});

export const testConfig = (overrides: Record<string, unknown> = {}): Config =>
  parseConfig({
    privacy: { level: 'metadata' },
    providers: {
      local: { type: 'scripted', behavior: 'echo' },
      failing: { type: 'scripted', behavior: 'fail' },
      strict: { type: 'scripted', behavior: 'echo', privacyLevel: 'metadata' },
      careful: { type: 'scripted', behavior: 'echo', privacyLevel: 'redacted' },
    },
    profiles: {
      default: { name: 'Echo', description: 'Echo agent', providers: ['local'] },
      'to-strict': { name: 'Fallback strict', description: 'x', providers: ['failing', 'strict'] },
      'to-careful': { name: 'Fallback redacted', description: 'x', providers: ['failing', 'careful'] },
    },
    ...overrides,
  });

/** The core use cases wired to in-memory fakes, with a synchronous stand-in for the stream + projector. */
export const createCore = (
  options: { config?: Config; sealer?: Sealer; providers?: Record<string, AgentProvider> } = {},
) => {
  const config = options.config ?? testConfig();
  const tasks = new InMemoryTaskRepository();
  const journal = new InMemoryJournalRepository();
  const codec = new TaskContentCodec(options.sealer ?? new FakeSealer());
  const queued: RunMessage[] = [];
  const calls = new Map<string, number>();
  let ids = 0;
  const clock = { now: () => new Date() };
  const providerFor = (providerId: string): AgentProvider => {
    const configured = config.providers[providerId];
    const behavior = configured?.type === 'scripted' ? configured.behavior : 'echo';
    const provider = options.providers?.[providerId] ?? new ScriptedProvider(providerId, behavior);
    return {
      run: (request) => {
        calls.set(request.runId, (calls.get(request.runId) ?? 0) + 1);
        return provider.run(request);
      },
    };
  };
  const deps = {
    tasks,
    journal,
    codec,
    clock,
    config,
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    ids: { newId: () => `id-${++ids}` },
    providerFor,
    sleep: async () => {
      await projectAll();
    },
  };
  /** Projects the latest state of every task, as the stream would after each commit. */
  const projected = new Map<string, number>();
  const projectAll = async () => {
    for (const task of tasks.tasks.values()) {
      if ((projected.get(task.taskId) ?? 0) < task.revision) {
        await projectRecord(journal, undefined, task);
        projected.set(task.taskId, task.revision);
      }
    }
  };
  /** `using` replaces the deps, e.g. with the profiles an rpc function serves (decision 0024). */
  const send = (
    text: string,
    profileId = 'default',
    extra: Partial<Message> = {},
    using: CreateTaskDeps = deps,
  ) => createTask(using, { caller: alice, profileId, message: userMessage(text, extra) });
  const runNext = (using: ExecuteRunDeps = deps) => {
    const message = queued.shift();
    if (message === undefined) throw new Error('nothing queued');
    return executeRun(using, message);
  };
  return { deps, tasks, journal, codec, queued, calls, send, runNext, projectAll };
};
