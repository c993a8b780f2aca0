import { userInfo } from 'node:os';
import { GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { DynamoDbApprovals } from '../../../shared/adapters/dynamodb/dynamodb-approvals.ts';
import { DynamoDbTaskRepository } from '../../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { SqsRunQueue } from '../../../shared/adapters/sqs-run-queue.ts';
import { decideApproval, listPendingApprovals } from '../../../shared/app/runs/decide-approval.ts';
import { type ApprovalRecord, ApprovalRefusedError } from '../../../shared/domain/approvals.ts';
import type { ApprovalVerdict } from '../../../shared/domain/model.ts';
import { table } from '../../text-table.ts';
import {
  type AdminIo,
  documentClient,
  type Options,
  sqsClientOf,
  tablesOf,
  UsageError,
} from '../admin-context.ts';

/** The `approvals` commands: list pending approvals, approve or deny one (I-APPROVAL). */

const approvalRows = (approvals: readonly ApprovalRecord[]): string[] => {
  const header = ['ID', 'TASK', 'RUN', 'TOOLS', 'REQUESTED', 'DIGEST'];
  const rows = approvals.map((approval) => [
    approval.approvalId,
    approval.taskId,
    approval.runId,
    approval.toolNames.join(','),
    approval.requestedAt,
    approval.digest,
  ]);
  return table(header, rows);
};

export const approvalsListCommand = async (options: Options, io: AdminIo): Promise<number> => {
  const tables = tablesOf(options, io.env);
  const client = documentClient(options, io.env);
  try {
    const pending = await listPendingApprovals({
      tasks: new DynamoDbTaskRepository(client, tables.state),
      approvals: new DynamoDbApprovals(client, tables.state),
      clock: { now: () => new Date() },
    });
    if (options.json) io.out(JSON.stringify({ approvals: pending }, null, 2));
    else if (pending.length === 0) io.out('No approvals pending.');
    else for (const line of approvalRows(pending)) io.out(line);
    return 0;
  } finally {
    client.destroy();
  }
};

/** The run queue: --queue-url, $RUN_QUEUE_URL, or the `<prefix>-RunQueue` of an installation. */
const runQueueOf = async (options: Options, env: NodeJS.ProcessEnv) => {
  const sqs = sqsClientOf(options, env);
  let url = options.queueUrl ?? env.RUN_QUEUE_URL;
  if (url === undefined && options.prefix !== undefined) {
    ({ QueueUrl: url } = await sqs.send(new GetQueueUrlCommand({ QueueName: `${options.prefix}-RunQueue` })));
  }
  if (!url) throw new UsageError('No run queue: pass --queue-url, --prefix or set RUN_QUEUE_URL');
  return { queue: new SqsRunQueue(sqs, url), sqs };
};

export const decideCommand = async (
  verdict: ApprovalVerdict,
  approvalId: string | undefined,
  options: Options,
  io: AdminIo,
): Promise<number> => {
  if (approvalId === undefined)
    throw new UsageError(`approvals ${verdict === 'approved' ? 'approve' : 'deny'} needs an approval id`);
  if (options.reason !== undefined && verdict === 'approved') throw new UsageError('--reason goes with deny');
  if (options.digest !== undefined && !/^[0-9a-f]{64}$/.test(options.digest))
    throw new UsageError('--digest must be the 64 hex digits `approvals list` shows');
  const tables = tablesOf(options, io.env);
  const client = documentClient(options, io.env);
  const { queue, sqs } = await runQueueOf(options, io.env);
  try {
    const decided = await decideApproval(
      {
        tasks: new DynamoDbTaskRepository(client, tables.state),
        approvals: new DynamoDbApprovals(client, tables.state),
        queue,
        clock: { now: () => new Date() },
      },
      {
        approvalId,
        verdict,
        decidedBy: options.by ?? userInfo().username,
        ...(options.digest !== undefined && { digest: options.digest }),
        ...(options.reason !== undefined && { reason: options.reason }),
      },
    );
    if (options.json) io.out(JSON.stringify({ approval: decided }, null, 2));
    else
      io.out(
        `${decided.decision} ${decided.approvalId} by ${decided.decidedBy} at ${decided.decidedAt}; run ${decided.runId} queued to resume.`,
      );
    return 0;
  } catch (error) {
    if (!(error instanceof ApprovalRefusedError)) throw error;
    if (options.json)
      io.out(
        JSON.stringify(
          { error: error.refusal, approvalId: error.approvalId, message: error.message },
          null,
          2,
        ),
      );
    else io.err(`Refused (${error.refusal}): ${error.message}`);
    return 1;
  } finally {
    client.destroy();
    sqs.destroy();
  }
};
