import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { toRunItem } from '../../shared/adapters/dynamodb/entities.ts';
import { toPutInput } from '../../shared/adapters/dynamodb/write-plan.ts';
import { VersionConflictError } from '../../shared/domain/errors.ts';
import type { PlannedWrite } from '../../shared/domain/ports.ts';
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
const failingClient = (stored: RunRecord, attempts: number) =>
  ({
    send: async () => {
      throw new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: { attempts },
        Item: marshall(toRunItem(stored), { removeUndefinedValues: true }),
      });
    },
  }) as unknown as DynamoDBDocumentClient;

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
