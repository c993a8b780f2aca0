import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbJournalWriter } from '../../shared/adapters/dynamodb/dynamodb-journal-writer.ts';
import type { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { WriteThrough } from '../../shared/app/journal/write-through.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { claimRun } from '../../shared/app/runs/run-claim.ts';
import { withRunJournal } from '../../shared/app/runs/run-context.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import type { AgentProvider, AgentRequest, RunMessage, TaskRepository } from '../../shared/domain/ports.ts';
import { runAloneWrite } from '../../shared/domain/row-writes.ts';
import { type RunFence, type RunRecord, reviseRun, settleRun } from '../../shared/domain/task.ts';
import { alice, testConfig, userMessage } from '../support/core-fixture.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';
import { stateRepositories } from '../support/state-repositories.ts';

/**
 * The fence of a `write` tool call (I-EFFECT, docs/architecture.md "Tools") against DynamoDB
 * Local: `fenceRun` writes `run.fence` only on the run that is RUNNING at the version the attempt
 * holds and not being canceled, and never moves the version (I-LOCK: it changes no status,
 * ceiling or answer). With progressive output the fence goes between chunk writes, at the version
 * the last chunk left, and the chunks after it keep it.
 */
describe('the run fence in DynamoDB', () => {
  let env: TestResources;
  let repositories: ReturnType<typeof stateRepositories>;
  let tasks: DynamoDbTaskRepository;
  const output = { progressive: true, cadence: { ms: 60_000, bytes: 256 } };
  const config = testConfig({
    privacy: { level: 'full' },
    providers: { writer: { type: 'scripted', behavior: 'echo' } },
    profiles: {
      default: { name: 'Fenced', description: 'x', providers: ['writer'] },
      chunked: { name: 'Fenced and chunked', description: 'x', providers: ['writer'], output },
    },
  });

  beforeAll(async () => {
    env = await createTestResources('fence');
    repositories = stateRepositories(env);
    tasks = repositories.tasks;
  });
  afterAll(() => env?.destroy());

  const deps = (queued: RunMessage[], provider?: AgentProvider, using: TaskRepository = tasks) => ({
    tasks: using,
    writeThrough: new WriteThrough(
      using,
      new DynamoDbJournalWriter(env.clients.doc, env.resources.tables.Journal.name),
    ),
    journal: repositories.journal,
    codec: repositories.codec,
    config,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    providerFor: () => provider ?? failingProvider,
  });
  const failingProvider: AgentProvider = {
    run: async () => {
      throw new Error('no provider in this test');
    },
  };

  const fence = (callId: string): RunFence => ({
    callId,
    tool: 'tools__append_note',
    at: new Date().toISOString(),
  });

  /** A task whose run this test claimed: RUNNING, lease taken, at the claim's version. */
  const claimed = async (): Promise<RunRecord> => {
    const queued: RunMessage[] = [];
    await createTask(deps(queued), { caller: alice, profileId: 'default', message: userMessage('x') });
    const message = queued.shift() as RunMessage;
    const { run, task } = await tasks.getRunWithTask(message.taskId, message.runId);
    const outcome = await claimRun(withRunJournal(deps([]), undefined), run!, task!);
    if (!('run' in outcome)) throw new Error(`not claimed: ${JSON.stringify(outcome)}`);
    return outcome.run;
  };
  const stored = async (run: RunRecord) => (await tasks.getRunWithTask(run.taskId, run.runId)).run!;

  it('fences the RUNNING run at the version it holds, without moving the version', async () => {
    const run = await claimed();
    expect(run.status).toBe('RUNNING');
    const revision = (await tasks.getTask(run.taskId))?.revision;
    expect(await tasks.fenceRun(run, fence('call-1'))).toBe('fenced');
    const first = await stored(run);
    expect(first.fence).toMatchObject({ callId: 'call-1', tool: 'tools__append_note' });
    expect(first.version).toBe(run.version);
    expect(first.status).toBe('RUNNING');
    // The version did not move: the next call of the same attempt fences at the same version.
    expect(await tasks.fenceRun(run, fence('call-2'))).toBe('fenced');
    const second = await stored(run);
    expect(second.fence?.callId).toBe('call-2');
    expect(second.version).toBe(run.version);
    // No new revision of the task: nothing a channel shows changed.
    expect((await tasks.getTask(run.taskId))?.revision).toBe(revision);
  });

  it('loses on a stale version, another run id, a run not RUNNING; says canceled for a cancel requested', async () => {
    const run = await claimed();
    // Another write moved the version (a chunk, a tightening): the attempt's fence loses.
    const moved = reviseRun(run, { leaseUntil: run.leaseUntil });
    await tasks.commit(runAloneWrite(await tasks.getTask(run.taskId), run, moved));
    expect(await tasks.fenceRun(run, fence('stale'))).toBe('lost');
    expect(await tasks.fenceRun({ ...moved, runId: `${run.runId}-other` }, fence('other'))).toBe('lost');
    expect((await stored(run)).fence).toBeUndefined();
    // A cancel requested on the RUNNING run: at its version the fence answers canceled, writes nothing.
    const canceling = reviseRun(moved, { cancelRequested: true });
    await tasks.commit(runAloneWrite(await tasks.getTask(run.taskId), moved, canceling));
    expect(await tasks.fenceRun(canceling, fence('canceled'))).toBe('canceled');
    expect((await stored(run)).fence).toBeUndefined();
    // A settled run (here by the reaper) is never fenced.
    const settled = settleRun(canceling, 'FAILED', new Date(), canceling.expiresAt);
    await tasks.commit(runAloneWrite(await tasks.getTask(run.taskId), canceling, settled));
    expect(await tasks.fenceRun({ ...settled, cancelRequested: false }, fence('settled'))).toBe('lost');
    expect((await stored(run)).fence).toBeUndefined();
  });

  it('with progressive output: the fence at the version the last chunk left, and the chunk after it keeps the fence', async () => {
    const answer = 'Done: the note was added to your list. '.repeat(8);
    const seen: { fencedAt?: number; rowAfterNextChunk?: RunRecord } = {};
    const fencedVersions: number[] = [];
    const watching: TaskRepository = Object.assign(Object.create(tasks) as DynamoDbTaskRepository, {
      fenceRun: async (run: RunRecord, written: RunFence) => {
        fencedVersions.push(run.version);
        return tasks.fenceRun(run, written);
      },
    });
    const provider: AgentProvider = {
      run: async (request: AgentRequest) => {
        const onAnswer = request.onAnswer;
        if (onAnswer === undefined || request.fence === undefined) throw new Error('no chunks or no fence');
        // A preamble above the cadence's bytes: a chunk is committed (the run's version moves).
        onAnswer({ kind: 'text', text: 'Let me note that down for you. '.repeat(10) });
        const call = { id: 'call-1', name: 'tools__append_note', arguments: { text: 'x' } };
        await request.fence(call);
        const row = await stored({ taskId: request.taskId, runId: request.runId } as RunRecord);
        seen.fencedAt = row.version;
        // The answer after the call: another chunk, after the fence.
        onAnswer({ kind: 'text', text: answer });
        for (let tries = 0; tries < 200; tries++) {
          const next = await stored(row);
          if (next.version > row.version) {
            seen.rowAfterNextChunk = next;
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        return {
          outcome: {
            kind: 'completed',
            artifacts: [
              {
                artifactId: `${request.runId}-artifact-0`,
                name: 'answer',
                parts: [{ text: answer }],
              },
            ],
          },
        };
      },
    };
    const queued: RunMessage[] = [];
    const { taskId } = await createTask(deps(queued, provider, watching), {
      caller: alice,
      profileId: 'chunked',
      message: userMessage('note x'),
    });
    const message = queued.shift() as RunMessage;
    const claimVersion = (await tasks.getRunWithTask(taskId, message.runId)).run!.version + 1;
    expect(await executeRun(deps([], provider, watching), message)).toBe('completed');
    // Fenced once, at the version the first chunk left (the claim's + 1), and it held.
    expect(fencedVersions).toEqual([claimVersion + 1]);
    expect(seen.fencedAt).toBe(claimVersion + 1);
    // The chunk after the fence moved the version and kept the fence on the row.
    expect(seen.rowAfterNextChunk?.version).toBe(claimVersion + 2);
    expect(seen.rowAfterNextChunk?.fence).toMatchObject({ callId: 'call-1', tool: 'tools__append_note' });
    // So does the completion.
    const end = await tasks.getRunWithTask(taskId, message.runId);
    expect(end.run?.status).toBe('COMPLETED');
    expect(end.run?.fence).toMatchObject({ callId: 'call-1' });
  });
});
