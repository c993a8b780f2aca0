/**
 * The floor (issue 8): the fewest DynamoDB units, KMS calls, queue hops and invocations the
 * invariants allow for one blocking single-turn task, from the sizes of a real task's items. Pure;
 * the reasoning is in docs/decisions/0012-benchmark-method.md (the run claimed by its create and
 * no queue hop: 0096) and repeated in the report.
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
   * DynamoDB requests of the floor's lines: one write each for create, complete and the audit
   * row, an event per projected revision and one view; the backstop's reads are batched (none per task).
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
      what: 'create: task WORKING with its run claimed, one conditional put',
      units: kb(withRun(sizes.taskFirst)),
      why: 'I-ONCE: a run is claimed by one conditional write before the model is called; the caller that waits for a blocking send runs the run itself, so the write that creates the run claims it (decision 0096) and no queue message exists for another claim; the current run lives in the task item, so one single-item put (atomic, no transaction) creates both',
    },
    {
      what: 'complete: run COMPLETED + task COMPLETED + sealed result, one conditional put',
      units: kb(withRun(sizes.taskFinal)),
      why: 'I-RESULT/I-LOCK: the result is written in the write that completes task and run, conditional on the run version; with the run in the task item that is one item, so no transaction',
    },
    {
      what: 'journal rev 1 (WORKING): event',
      units: kb(sizes.eventFirst),
      why: 'I-COMMITTED/I-ORDER: every committed revision is projected once, its event for SSE and webhooks; its view waits for the next revision (decision 0097): no one can ask for it before the run settles (the task id is in no answer yet); idempotent puts need no transaction',
    },
    {
      what: 'journal rev 2 (COMPLETED): event + view + index entry',
      units: kb(sizes.eventFinal) + kb(sizes.viewFinal) + kb(sizes.viewFinal),
      why: 'the view serves GetTask, the ListTasks index entry (projection ALL) is one index write; the view is created here, so no index entry is moved',
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
  const projectorShare = 2 / deployment.projectorBatchSize;
  const reads: FloorLine[] = [
    {
      what: 'the backstop finds each revision projected',
      // One eventually consistent read of a view of at most 4 KB per revision, in batches.
      units: 2 * 0.5 * readUnits(sizes.viewFinal),
      why: "the stream projector backs every revision up and writes nothing for one already projected (I-COMMITTED): it must read that it was, at best one eventually consistent item read per revision, batched (no request per task); the answer is the settle's own image (I-RYW, I-HISTORY), so the rpc reads nothing",
    },
  ];
  return {
    writeUnits,
    readUnits: reads.reduce((total, line) => total + line.units, 0),
    kmsRequests: 0,
    sqsRequests: 0,
    // create, complete, two events, one view, the audit row.
    dynamodbWriteRequests: 2 + 2 + 1 + (sizes.auditRows > 0 ? 1 : 0),
    // The backstop's reads are batched: a request per many tasks.
    dynamodbReadRequests: 0,
    queueHops: 0,
    projectedRevisions: 2,
    invocations: { rpc: 1, executor: 0, projector: projectorShare },
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
        what: 'SQS: none',
        units: 0,
        why: 'no queue hop: the run is durable in its row and its lease; a caller that dies leaves a RUNNING run with no start marker, which the reaper queues again (decisions 0072, 0091, 0096)',
      },
    ],
  };
};
