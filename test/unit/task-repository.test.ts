import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { leaseAttributes, toEmbeddedRun, toTaskItem } from '../../shared/adapters/dynamodb/entities.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { toTaskRowUpdate } from '../../shared/adapters/dynamodb/write-plan.ts';
import { VersionConflictError } from '../../shared/domain/errors.ts';
import type { WritePlan } from '../../shared/domain/ports.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
import { runAloneWrite } from '../../shared/domain/row-writes.ts';
import type { RunRecord } from '../../shared/domain/task.ts';

const run: RunRecord = {
  runId: 'r1',
  taskId: 't1',
  profileId: 'default',
  status: 'RUNNING',
  version: 2,
  answerCeiling: 'full',
  auditCeiling: 'metadata',
  attempts: [],
  leaseUntil: 1_000,
  cancelRequested: false,
  createdAt: '2026-11-30T00:00:00.000Z',
  expiresAt: 2_000_000_000,
};
const claimWrite: WritePlan = { row: { taskId: 't1', run, expect: { runVersion: 1 } } };

/** A task row (task attributes left out: the run write sets none) holding `stored` as its run. */
const rowHolding = (stored: RunRecord) =>
  marshall(
    { ...keys.task('t1'), run: toEmbeddedRun(stored), ...leaseAttributes(stored) },
    { removeUndefinedValues: true },
  );

/**
 * A client whose conditional update fails the way DynamoDB answers an SDK retry of a write whose
 * first answer was lost: condition failed, `ALL_OLD` = what is stored, `$metadata.attempts` > 1.
 * The emulator cannot lose an answer, hence the fake. Puts succeed; every command is recorded.
 */
const failingClient = (stored: RunRecord | StoredTask, attempts: number) => {
  const sent: unknown[] = [];
  const client = {
    send: async (command: unknown) => {
      sent.push(command);
      if (command instanceof PutCommand) return {};
      throw new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: { attempts },
        Item:
          'runId' in stored
            ? rowHolding(stored)
            : marshall(toTaskItem(stored), { removeUndefinedValues: true }),
      });
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, sent };
};

/** A blob in the sealer's version 1 layout: a header (key id "k", 3-byte encrypted key), then 28 + n bytes. */
const sealedLike = (encryptedKey: number, body: number): Uint8Array =>
  Uint8Array.from([1, 0, 0, 1, 107, 0, 3, encryptedKey, 2, 3, ...new Array(28 + body).fill(body)]);

describe('DynamoDbTaskRepository: a write to the task row is one conditional update (decisions 0027, 0038)', () => {
  it('sends a run write as an update of its task row, conditioned on the run and its version (I-LOCK)', async () => {
    const { client, sent } = failingClient(run, 2);
    await new DynamoDbTaskRepository(client, 'state').commit(claimWrite);
    const [update] = sent;
    expect(update).toBeInstanceOf(UpdateCommand);
    expect((update as UpdateCommand).input).toMatchObject({
      TableName: 'state',
      Key: { pk: 'TASK#t1', sk: 'TASK' },
      ConditionExpression: '#run.#runId = :runId AND #run.#version = :expectedVersion',
      ExpressionAttributeValues: { ':expectedVersion': 1, ':leaseShard': expect.any(String) },
    });
  });

  it('takes a retried update that finds the row as it writes it', async () => {
    const { client, sent } = failingClient(run, 2);
    await expect(new DynamoDbTaskRepository(client, 'state').commit(claimWrite)).resolves.toEqual({});
    expect(sent).toHaveLength(1);
  });

  it('takes a retried write of a task whose blobs share a header: packed the same way each time (0039)', async () => {
    const task: StoredTask = {
      taskId: 't1',
      contextId: 'c1',
      owner: { tenant: 'acme', principal: 'alice' },
      profileId: 'default',
      state: 'TASK_STATE_COMPLETED',
      revision: 3,
      currentRunId: 'r1',
      statusTimestamp: '2026-11-30T00:00:01.000Z',
      createdAt: '2026-11-30T00:00:00.000Z',
      expiresAt: 2_000_000_000,
      sealedStatusMessage: sealedLike(9, 1),
      sealedArtifacts: sealedLike(9, 2),
      sealedHistory: sealedLike(9, 3),
    };
    const write: WritePlan = { row: { taskId: 't1', task, expect: { revision: 2 } } };
    expect(toTaskRowUpdate(write.row!, 'state').sets).toHaveProperty('sealHeaders');
    await expect(
      new DynamoDbTaskRepository(failingClient(task, 2).client, 'state').commit(write),
    ).resolves.toEqual({});
    // The same task with another data key's blob stored: not the put's own item.
    const other = { ...task, sealedHistory: sealedLike(8, 3) };
    await expect(
      new DynamoDbTaskRepository(failingClient(other, 2).client, 'state').commit(write),
    ).rejects.toBeInstanceOf(VersionConflictError);
  });

  it("takes a retried answer chunk's write that finds the row as it writes it: the run's version is read at its path", async () => {
    const task = {
      taskId: 't1',
      contextId: 'c1',
      owner: { tenant: 'acme', principal: 'alice' },
      profileId: 'default',
      state: 'TASK_STATE_WORKING',
      revision: 4,
      currentRunId: 'r1',
      statusTimestamp: '2026-11-30T00:00:01.000Z',
      createdAt: '2026-11-30T00:00:00.000Z',
      expiresAt: 2_000_000_000,
    } satisfies StoredTask;
    const chunked = { ...run, version: 3, leaseUntil: 7 };
    const write: WritePlan = {
      row: {
        taskId: 't1',
        task,
        run: chunked,
        runChanges: 'version-and-lease',
        expect: { revision: 3, runVersion: 2 },
      },
    };
    const answering = (stored: RunRecord) =>
      ({
        send: async () => {
          throw new ConditionalCheckFailedException({
            message: 'The conditional request failed',
            $metadata: { attempts: 2 },
            Item: marshall(
              { ...toTaskItem(task), run: toEmbeddedRun(stored), ...leaseAttributes(stored) },
              { removeUndefinedValues: true },
            ),
          });
        },
      }) as unknown as DynamoDBDocumentClient;
    await expect(new DynamoDbTaskRepository(answering(chunked), 'state').commit(write)).resolves.toEqual({});
    // Another writer's version at the same revision: not this write.
    await expect(
      new DynamoDbTaskRepository(answering({ ...chunked, version: 4 }), 'state').commit(write),
    ).rejects.toBeInstanceOf(VersionConflictError);
  });

  it('reports a conflict when another writer changed the row, even if it looks alike (I-ONCE)', async () => {
    // First attempt: whatever is stored, someone else wrote it.
    await expect(
      new DynamoDbTaskRepository(failingClient(run, 1).client, 'state').commit(claimWrite),
    ).rejects.toBeInstanceOf(VersionConflictError);
    // A retried update that finds a different run state (another claim's lease) lost too.
    await expect(
      new DynamoDbTaskRepository(failingClient({ ...run, leaseUntil: 2_000 }, 3).client, 'state').commit(
        claimWrite,
      ),
    ).rejects.toBeInstanceOf(VersionConflictError);
  });

  it("a run its task row no longer holds is the plan's own row (decision 0042); a row write for it is a conflict", async () => {
    // The use case says where the run lives: a task whose current run is another one.
    const task = { currentRunId: 'r2' } as StoredTask;
    const { client, sent } = failingClient({ ...run, runId: 'r2' }, 1);
    await new DynamoDbTaskRepository(client, 'state').commit(
      runAloneWrite(task, { ...run, version: 1 }, run),
    );
    expect(sent).toHaveLength(1);
    expect((sent[0] as PutCommand).input).toMatchObject({
      ConditionExpression: '#version = :expectedVersion',
      Item: { pk: 'TASK#t1', sk: 'RUN#r1', version: 2 },
    });
    // No fallback: a row write whose row holds another run changed nothing.
    await expect(
      new DynamoDbTaskRepository(failingClient({ ...run, runId: 'r2' }, 1).client, 'state').commit(
        claimWrite,
      ),
    ).rejects.toBeInstanceOf(VersionConflictError);
  });
});
