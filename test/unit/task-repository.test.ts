import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { toRunItem, toTaskItem } from '../../shared/adapters/dynamodb/entities.ts';
import { toPutInput } from '../../shared/adapters/dynamodb/write-plan.ts';
import { VersionConflictError } from '../../shared/domain/errors.ts';
import type { PlannedWrite } from '../../shared/domain/ports.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
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
const claimWrite: PlannedWrite = { entity: 'run', item: run, expect: { version: 1 } };

/**
 * A client whose conditional put fails the way DynamoDB answers an SDK retry of a put whose first
 * answer was lost: condition failed, `ALL_OLD` = what is stored, `$metadata.attempts` > 1. The
 * emulator cannot lose an answer, hence the fake.
 */
const failingClient = (stored: RunRecord | StoredTask, attempts: number) =>
  ({
    send: async () => {
      throw new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: { attempts },
        Item: marshall('runId' in stored ? toRunItem(stored) : toTaskItem(stored), {
          removeUndefinedValues: true,
        }),
      });
    },
  }) as unknown as DynamoDBDocumentClient;

/** A blob in the sealer's version 1 layout: a header (key id "k", 3-byte encrypted key), then 28 + n bytes. */
const sealedLike = (encryptedKey: number, body: number): Uint8Array =>
  Uint8Array.from([1, 0, 0, 1, 107, 0, 3, encryptedKey, 2, 3, ...new Array(28 + body).fill(body)]);

describe('DynamoDbTaskRepository: a plan of one write is one conditional put (decision 0027)', () => {
  it('builds the same condition a transaction item carries (I-LOCK)', () => {
    expect(toPutInput(claimWrite, 'state')).toMatchObject({
      TableName: 'state',
      ConditionExpression: '#version = :expectedVersion',
      ExpressionAttributeValues: { ':expectedVersion': 1 },
      Item: { pk: 'TASK#t1', sk: 'RUN#r1', status: 'RUNNING', version: 2, leaseShard: expect.any(String) },
    });
  });

  it('takes a retried put that finds its own item stored as written', async () => {
    const repository = new DynamoDbTaskRepository(failingClient(run, 2), 'state');
    await expect(repository.commit({ writes: [claimWrite] })).resolves.toBeUndefined();
  });

  it('takes a retried put of a task item whose blobs share a header: packed the same way each time (0039)', async () => {
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
    const write: PlannedWrite = { entity: 'task', item: task, expect: { revision: 2 } };
    expect(toPutInput(write, 'state').Item).toHaveProperty('sealHeaders');
    await expect(
      new DynamoDbTaskRepository(failingClient(task, 2), 'state').commit({ writes: [write] }),
    ).resolves.toBeUndefined();
    // The same task with another data key's blob stored: not the put's own item.
    const other = { ...task, sealedHistory: sealedLike(8, 3) };
    await expect(
      new DynamoDbTaskRepository(failingClient(other, 2), 'state').commit({ writes: [write] }),
    ).rejects.toBeInstanceOf(VersionConflictError);
  });

  it('reports a conflict when another writer stored the item, even if it looks alike (I-ONCE)', async () => {
    // First attempt: whatever is stored, someone else wrote it.
    await expect(
      new DynamoDbTaskRepository(failingClient(run, 1), 'state').commit({ writes: [claimWrite] }),
    ).rejects.toBeInstanceOf(VersionConflictError);
    // A retried put that finds a different item (another claim's lease) lost too.
    await expect(
      new DynamoDbTaskRepository(failingClient({ ...run, leaseUntil: 2_000 }, 3), 'state').commit({
        writes: [claimWrite],
      }),
    ).rejects.toBeInstanceOf(VersionConflictError);
  });
});
