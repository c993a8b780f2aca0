import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  isJournalEventInsert,
  processStreamByTask,
  processStreamTaskGroups,
} from '../../shared/adapters/dynamodb/journal-stream.ts';

/** Per-task stream processing of the projector (per record) and the pusher (per task, decision 0028). */
const record = (task: string, sequence: number): DynamoDBRecord => ({
  dynamodb: { Keys: { pk: { S: `TASK#${task}` } }, SequenceNumber: String(sequence) },
});
const taskOf = (entry: DynamoDBRecord): string => entry.dynamodb?.Keys?.pk?.S?.slice(5) ?? '';
const sequenceOf = (entry: DynamoDBRecord): string => entry.dynamodb?.SequenceNumber ?? '';
// a1 b2 a3 c4 b5 a6
const batch = [
  record('a', 1),
  record('b', 2),
  record('a', 3),
  record('c', 4),
  record('b', 5),
  record('a', 6),
];
const failuresFrom = (...sequences: number[]) => ({
  batchItemFailures: sequences.map((sequence) => ({ itemIdentifier: String(sequence) })),
});

describe("isJournalEventInsert (the pusher's event-source filter)", () => {
  const journalRecord = (
    eventName: DynamoDBRecord['eventName'],
    sk: string,
    newImage: Record<string, unknown> = { pushConfigured: { BOOL: true } },
  ): DynamoDBRecord =>
    ({
      eventName,
      dynamodb: { Keys: { pk: { S: 'TASK#t' }, sk: { S: sk } }, NewImage: newImage },
    }) as DynamoDBRecord;

  it('passes inserted events with the push mark only', () => {
    expect(isJournalEventInsert(journalRecord('INSERT', 'EVT#0000000003'))).toBe(true);
    // No config was ever stored for the task: no config wants the event, the pusher is not invoked.
    expect(isJournalEventInsert(journalRecord('INSERT', 'EVT#0000000003', {}))).toBe(false);
    expect(
      isJournalEventInsert(journalRecord('INSERT', 'EVT#0000000003', { pushConfigured: { BOOL: false } })),
    ).toBe(false);
    expect(isJournalEventInsert(journalRecord('MODIFY', 'VIEW'))).toBe(false);
    expect(isJournalEventInsert(journalRecord('INSERT', 'VIEW'))).toBe(false);
    expect(isJournalEventInsert(journalRecord('REMOVE', 'EVT#0000000003'))).toBe(false);
  });
});

describe('processStreamTaskGroups (the pusher)', () => {
  it("hands each task's records over once, in stream order", async () => {
    const groups: string[][] = [];
    const response = await processStreamTaskGroups(batch, async (taskRecords) => {
      groups.push(taskRecords.map((entry) => `${taskOf(entry)}${sequenceOf(entry)}`));
    });
    expect(response).toEqual({ batchItemFailures: [] });
    expect(groups.sort()).toEqual([['a1', 'a3', 'a6'], ['b2', 'b5'], ['c4']]);
  });

  it("reports every record from the failed task's first record on, so the retry resends it in order", async () => {
    const response = await processStreamTaskGroups(batch, async (taskRecords) => {
      if (taskOf(taskRecords[0]!) === 'b') throw new Error('queue unavailable');
    });
    expect(response).toEqual(failuresFrom(2, 3, 4, 5, 6));
  });
});

describe('processStreamByTask (the projector)', () => {
  it('stops a task at its failed record and reports from the earliest failure on', async () => {
    const handled: string[] = [];
    const response = await processStreamByTask(batch, () => async (entry) => {
      if (sequenceOf(entry) === '3') throw new Error('conflict');
      handled.push(sequenceOf(entry));
    });
    // a3 failed: a6 is not tried; b and c went on.
    expect(handled.sort()).toEqual(['1', '2', '4', '5']);
    expect(response).toEqual(failuresFrom(3, 4, 5, 6));
  });

  it('gives each task its own handler, made once per task and batch', async () => {
    const handlers: string[][] = [];
    await processStreamByTask(batch, () => {
      const seen: string[] = [];
      handlers.push(seen);
      return async (entry) => {
        seen.push(entry.dynamodb?.Keys?.pk?.S ?? '');
      };
    });
    // Three tasks in the batch: three handlers, each seeing only its task's records.
    expect(handlers).toHaveLength(3);
    for (const seen of handlers) expect(new Set(seen).size).toBe(1);
  });
});
