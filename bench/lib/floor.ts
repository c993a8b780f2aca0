/**
 * The floor (issue 8): the fewest DynamoDB units, KMS calls, queue hops and invocations the
 * invariants allow for one single-turn task, from the sizes of a real task's items. Pure; the
 * reasoning is in docs/decisions/0012-benchmark-method.md (the WORKING revision: 0027) and
 * repeated in the report.
 */

export interface ItemSizes {
  /** Task row as created (rev 1: history only) and as completed (history, status message, artifacts). */
  readonly taskFirst: number;
  readonly taskFinal: number;
  readonly run: number;
  readonly viewFirst: number;
  readonly viewFinal: number;
  readonly eventFirst: number;
  readonly eventFinal: number;
  /** Audit rows the run wrote (0 when none). */
  readonly auditRows: number;
  readonly auditRowBytes: number;
}

export interface FloorDeployment {
  /** Executor event-source batch size (SqsEventSource batchSize). */
  readonly executorBatchSize: number;
  /** Projector event-source batch size (DynamoEventSource batchSize). */
  readonly projectorBatchSize: number;
}

export interface FloorLine {
  readonly what: string;
  readonly units: number;
  readonly why: string;
}

export interface Floor {
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly kmsRequests: number;
  readonly sqsRequests: number;
  /**
   * DynamoDB requests of the floor's lines: one write each for create, claim, complete and the
   * audit row, two per projected revision (event, view); one read per read line.
   */
  readonly dynamodbWriteRequests: number;
  readonly dynamodbReadRequests: number;
  readonly queueHops: number;
  readonly projectedRevisions: number;
  readonly invocations: Readonly<Record<string, number>>;
  readonly apiRequests: number;
  readonly lines: readonly FloorLine[];
}

const kb = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));
const readUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 4096));

export const computeFloor = (sizes: ItemSizes, deployment: FloorDeployment): Floor => {
  const withRun = (task: number): number => task + sizes.run;
  const lines: FloorLine[] = [
    {
      what: 'create: task with its run, one conditional put',
      units: kb(withRun(sizes.taskFirst)),
      why: 'the task must exist before it is queued (enqueue fails closed); the current run can live in the task item, so one single-item put (atomic, no transaction) creates both',
    },
    {
      what: 'claim: one conditional write on the run version, with the WORKING revision',
      units: kb(withRun(sizes.taskFirst)),
      why: 'I-ONCE: a run is claimed by one conditional write before the model is called; with the run in the task item the same write commits WORKING, which streams must show (the A2A TCK streams expect WORKING → artifact → COMPLETED) and may show only once committed (I-COMMITTED)',
    },
    {
      what: 'complete: run COMPLETED + task COMPLETED + sealed result, one conditional put',
      units: kb(withRun(sizes.taskFinal)),
      why: 'I-RESULT/I-LOCK: the result is written in the write that completes task and run, conditional on the run version; with the run in the task item that is one item, so no transaction',
    },
    {
      what: 'journal rev 1 (SUBMITTED): event + view + index entry',
      units: kb(sizes.eventFirst) + kb(sizes.viewFirst) + kb(sizes.viewFirst),
      why: 'I-COMMITTED/I-ORDER: every committed revision is projected once; the view serves GetTask, the event SSE and webhooks, the ListTasks index entry (projection ALL) is one index write; idempotent puts need no transaction',
    },
    {
      what: 'journal rev 2 (WORKING): event + view + index entry moved',
      units: kb(sizes.eventFirst) + kb(sizes.viewFirst) + kb(sizes.viewFirst) + kb(sizes.viewFirst),
      why: 'every committed revision is projected once (I-ORDER); the status timestamp changes, so the index deletes the old entry and puts the new one',
    },
    {
      what: 'journal rev 3 (COMPLETED): event + view + index entry moved',
      units: kb(sizes.eventFinal) + kb(sizes.viewFinal) + kb(sizes.viewFirst) + kb(sizes.viewFinal),
      why: 'the index sort key (status timestamp) changes, so the index deletes the old entry and puts the new one',
    },
  ];
  if (sizes.auditRows > 0) {
    lines.push({
      what: 'audit: one row per run',
      units: kb(sizes.auditRowBytes),
      why: 'the audit trail keeps the run at the audit ceiling; one row per run can hold its steps',
    });
  }
  const writeUnits = lines.reduce((total, line) => total + line.units, 0);
  const reads: FloorLine[] = [
    {
      what: 'executor reads the task (with its run)',
      units: readUnits(withRun(sizes.taskFirst)),
      why: 'the queue message only wakes the executor; the run row is the state (strongly consistent read)',
    },
    {
      what: 'rpc reads the completed view once',
      units: readUnits(sizes.viewFinal),
      why: 'I-RYW/I-COMMITTED: the answer is built from the journal; at best one read finds it',
    },
    {
      what: 'rpc reads the task row for history',
      units: readUnits(sizes.taskFinal),
      why: 'I-HISTORY: history lives only on the task row',
    },
  ];
  const executorShare = 1 / deployment.executorBatchSize;
  const projectorShare = 3 / deployment.projectorBatchSize;
  return {
    writeUnits,
    readUnits: reads.reduce((total, line) => total + line.units, 0),
    kmsRequests: 0,
    // SendMessage, plus one ReceiveMessage and one DeleteMessageBatch per full batch.
    sqsRequests: 1 + 2 * executorShare,
    dynamodbWriteRequests: 3 + 2 * 3 + (sizes.auditRows > 0 ? 1 : 0),
    dynamodbReadRequests: reads.length,
    queueHops: 1,
    projectedRevisions: 3,
    invocations: { rpc: 1, executor: executorShare, projector: projectorShare },
    apiRequests: 1,
    lines: [
      ...lines,
      ...reads.map((line) => ({ ...line, what: `read: ${line.what}` })),
      {
        what: 'KMS: 0 per task (amortised)',
        units: 0,
        why: 'data keys are reused within bounds (docs/data-model.md "Sealing") and decrypted keys cached, so KMS calls per task tend to 0 at scale',
      },
      {
        what: `SQS: 1 + 2/${deployment.executorBatchSize} requests`,
        units: 1 + 2 * executorShare,
        why: 'one hop (rpc → executor) is the floor: the run must be durable and retried; the event source receives and deletes per batch',
      },
    ],
  };
};
