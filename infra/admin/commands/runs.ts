import { DynamoDbAuditTrail } from '../../../shared/adapters/dynamodb/dynamodb-audit-trail.ts';
import { DynamoDbRunCatalog } from '../../../shared/adapters/dynamodb/dynamodb-run-catalog.ts';
import { DynamoDbTaskRepository } from '../../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { inspectRuns, type RunInspection } from '../../../shared/app/operations/inspect-runs.ts';
import { TaskNotFoundError } from '../../../shared/domain/errors.ts';
import {
  type AdminIo,
  documentClient,
  noSealer,
  type Options,
  tablesOf,
  UsageError,
} from '../admin-context.ts';

/** The `runs show` command: a task's runs and audit steps, metadata only. */

const formatInspection = (inspection: RunInspection): string[] => {
  const { task } = inspection;
  const lines = [
    `task ${task.taskId}  ${task.state}  revision ${task.revision}  profile ${task.profileId}`,
    `  owner ${task.tenant}/${task.principal}  context ${task.contextId}  created ${task.createdAt}`,
    `  expires ${new Date(task.expiresAt * 1000).toISOString()}${inspection.expired ? '  (EXPIRED: reads answer TaskNotFound)' : ''}`,
  ];
  if (task.metadata !== undefined) lines.push(`  metadata ${JSON.stringify(task.metadata)}`);
  for (const run of inspection.runs) {
    lines.push(
      `run ${run.runId}  ${run.status}  version ${run.version}  answer ${run.answerCeiling}  audit ${run.auditCeiling}${run.runId === task.currentRunId ? '  (current)' : ''}`,
      // How the run ended is the run record's (the audit trail has no row for it).
      `  created ${run.createdAt}${run.endedAt ? `  ended ${run.endedAt} ${run.status}` : ''}${run.reason ? `  reason ${run.reason}` : ''}${run.cancelRequested ? '  cancel requested' : ''}`,
    );
    for (const attempt of run.attempts) {
      const tokens =
        attempt.inputTokens !== undefined || attempt.outputTokens !== undefined
          ? `  tokens ${attempt.inputTokens ?? '-'}/${attempt.outputTokens ?? '-'}`
          : '';
      lines.push(`  attempt ${attempt.providerId}  ${attempt.outcome}  ${attempt.durationMs} ms${tokens}`);
    }
    for (const row of inspection.audit.filter((entry) => entry.runId === run.runId)) {
      const parts = [
        `  audit ${row.at}  ${row.kind.padEnd(7)}  level ${row.level}`,
        row.providerId ? `provider ${row.providerId}` : '',
        row.outcome ? `outcome ${row.outcome}` : '',
        row.reason ? `reason ${row.reason}` : '',
        row.durationMs !== undefined ? `${row.durationMs} ms` : '',
        row.from && row.to
          ? `ceilings ${row.from.answer}/${row.from.audit} → ${row.to.answer}/${row.to.audit}`
          : '',
        row.messageLength ? `message ${row.messageLength.characters} chars` : '',
        row.artifactsLength ? `artifacts ${row.artifactsLength.characters} chars` : '',
        row.toolLength ? `tool call ${row.toolLength.characters} chars` : '',
        row.toolNames?.length ? `tools ${row.toolNames.join(',')}` : '',
        row.effect ? `effect ${row.effect}` : '',
        row.hasContent ? 'content sealed' : '',
      ];
      lines.push(parts.filter((part) => part !== '').join('  '));
    }
  }
  return lines;
};

export const runsShowCommand = async (
  taskId: string | undefined,
  options: Options,
  io: AdminIo,
): Promise<number> => {
  if (taskId === undefined) throw new UsageError('runs show needs a task id');
  const tables = tablesOf(options, io.env);
  const client = documentClient(options, io.env);
  try {
    const inspection = await inspectRuns(
      {
        tasks: new DynamoDbTaskRepository(client, tables.state),
        runs: new DynamoDbRunCatalog(client, tables.state),
        audit: new DynamoDbAuditTrail(client, tables.audit, noSealer),
      },
      taskId,
      new Date(),
    );
    if (options.json) io.out(JSON.stringify(inspection, null, 2));
    else for (const line of formatInspection(inspection)) io.out(line);
    return 0;
  } catch (error) {
    if (!(error instanceof TaskNotFoundError)) throw error;
    if (options.json) io.out(JSON.stringify({ error: 'TASK_NOT_FOUND', taskId }, null, 2));
    else io.err(`Task ${taskId} not found (never existed, or purged).`);
    return 1;
  } finally {
    client.destroy();
  }
};
