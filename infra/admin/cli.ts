import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { DynamoDbApprovals } from '../../shared/adapters/dynamodb/dynamodb-approvals.ts';
import { DynamoDbAuditTrail } from '../../shared/adapters/dynamodb/dynamodb-audit-trail.ts';
import { DynamoDbBackstopJournal } from '../../shared/adapters/dynamodb/dynamodb-backstop-journal.ts';
import { DynamoDbExpiredItems } from '../../shared/adapters/dynamodb/dynamodb-expired-items.ts';
import { DynamoDbJournalRepository } from '../../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { DynamoDbProfileStore } from '../../shared/adapters/dynamodb/dynamodb-profile-store.ts';
import { DynamoDbPushConfigRepository } from '../../shared/adapters/dynamodb/dynamodb-push-config-repository.ts';
import { DynamoDbRunCatalog } from '../../shared/adapters/dynamodb/dynamodb-run-catalog.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import {
  isJournalEventInsert,
  isTaskItemRecord,
  parseEventRecord,
  processStreamByTask,
  processStreamTaskGroups,
} from '../../shared/adapters/dynamodb/journal-stream.ts';
import { batchImagesOf } from '../../shared/adapters/dynamodb/stream-images.ts';
import { DynamoDbStreamRangeReader } from '../../shared/adapters/dynamodb/stream-records.ts';
import { SqsDeadLetters } from '../../shared/adapters/sqs-dead-letters.ts';
import { SqsDeliveryQueue } from '../../shared/adapters/sqs-delivery-queue.ts';
import { SqsRunQueue } from '../../shared/adapters/sqs-run-queue.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import { batchJournalState, projectRecord } from '../../shared/app/journal/project-record.ts';
import { inspectRuns, type RunInspection } from '../../shared/app/operations/inspect-runs.ts';
import { type PurgeReport, purgeExpired } from '../../shared/app/operations/purge-expired.ts';
import {
  type ConsumedRange,
  type ReplayReport,
  replayDeadLetters,
} from '../../shared/app/operations/replay-dead-letters.ts';
import { saveProfile } from '../../shared/app/profiles/save-profile.ts';
import {
  describeRefusal,
  type ProfileVerdict,
  validateProfiles,
} from '../../shared/app/profiles/validate-profiles.ts';
import { type FanOutDeps, fanOutEvents } from '../../shared/app/push/fan-out-events.ts';
import { decideApproval, listPendingApprovals } from '../../shared/app/runs/decide-approval.ts';
import { ConfigError, defaultConfig, parseConfig } from '../../shared/config/config.ts';
import { type TaskState, taskStates } from '../../shared/domain/a2a.ts';
import { type ApprovalRecord, ApprovalRefusedError } from '../../shared/domain/approvals.ts';
import { TaskNotFoundError } from '../../shared/domain/errors.ts';
import type { ApprovalVerdict } from '../../shared/domain/model.ts';
import type { Sealer } from '../../shared/domain/ports.ts';
import { rootAgent } from '../../shared/domain/task.ts';
import { table } from '../text-table.ts';

/**
 * The operator's admin command (docs/operations.md), first version: validate profiles, purge
 * expired data now, inspect a task's runs (metadata only). It talks to the tables directly with
 * the operator's own AWS credentials; nothing of it is reachable from the public API.
 *
 *   npx tsx infra/admin/cli.ts profiles validate <config.json>
 *   npx tsx infra/admin/cli.ts purge [--now <iso>]
 *   npx tsx infra/admin/cli.ts runs show <taskId>
 *   npx tsx infra/admin/cli.ts approvals list | approve <id> | deny <id>
 *   npx tsx infra/admin/cli.ts dlq replay --queue projector|pusher [--dry-run]
 */

export const usage = `Usage: npx a2a-admin <command> [options]     (also: npm run admin -- <command> [options])

Commands:
  profiles validate <config.json>  check every profile; refuse those that cannot keep a result
                                   (RESULT_NOT_RETAINABLE), naming the setting that causes it
  purge [--now <iso>]              delete every expired item of every table now; counts per table
  runs show <taskId>               a task's state, runs and audit steps — metadata only, never content
  approvals list                   runs waiting for an operator: id, task, run, tools, digest (no arguments)
  approvals approve <id>           approve the pending tool calls and resume the run
      [--digest <hex>]             only if these are still the calls the digest names
  approvals deny <id>              deny them; the model is told and continues
      [--reason <text>] [--digest <hex>]
      [--by <name>]                who decides (default: the OS user)
  profiles put <id> <profile.json> [--config <config.json>]
                                   save one profile (a "profiles" entry of the configuration format)
                                   if it is valid and publishable in that configuration (default: the
                                   built-in one); a refused profile is not saved. Served within 30 s
                                   at /agents/<id> (card and JSON-RPC), next to the configuration's
                                   profiles; a saved profile replaces the configuration's profile of
                                   the same id; checked again when read, and not served once it no
                                   longer validates (0024)
  profiles get <id>                a saved profile, as saved
  profiles list                    the saved profiles: name, providers, privacy level, updated
  profiles delete <id>             delete a saved profile: no longer served within 30 s (the
                                   configuration's profile of that id, if any, is served again);
                                   tasks already accepted run with the settings they were accepted with
  tasks list --owner <tenant>/<principal> [--agent <id>] [--state <state>] [--limit <n>]
                                   a caller's tasks at one agent (default: the root's, "default"),
                                   newest first — metadata only, never content (0049)
  dlq replay --queue projector|pusher
                                   re-drive the projector's or the pusher's dead-letter queue after
                                   a fix: each message's stream range is read back (the stream keeps
                                   24 h) and projected, or fanned out to the webhooks, again;
                                   idempotent; a message is deleted only once its range was replayed;
                                   counts per outcome (0068)
      [--dry-run]                  read the ranges, replay nothing, delete nothing
      [--dlq <url|arn>]            default $PROJECTOR_DLQ_URL / $PUSHER_DLQ_URL, else <prefix>-ProjectorDlq
                                   / <prefix>-PusherDlq (the stack outputs ProjectorDlqArn, PusherDlqArn)
      [--delivery-queue <url|arn>] pusher only: default $DELIVERY_QUEUE_URL, else <prefix>-DeliveryQueue.fifo
                                   (the stack output DeliveryQueueArn)
      [--streams-endpoint <url>]   DynamoDB Streams endpoint (default $AWS_ENDPOINT_URL_DYNAMODB_STREAMS,
                                   else the DynamoDB endpoint)

Table access (purge, runs, approvals, profiles put/get/list/delete, tasks, dlq):
  --prefix <p>            tables <p>-State, <p>-Journal, <p>-Audit (npm start uses a2a-local)
  --state-table <name>    default $STATE_TABLE_NAME
  --journal-table <name>  default $JOURNAL_TABLE_NAME
  --audit-table <name>    default $AUDIT_TABLE_NAME
  --endpoint <url>        DynamoDB endpoint (default $AWS_ENDPOINT_URL_DYNAMODB, $AWS_ENDPOINT_URL, else AWS)
  --region <region>       default $AWS_REGION, else us-east-1

Queues (approve, deny, dlq):
  --queue-url <url>       the run queue: default $RUN_QUEUE_URL, else the queue <prefix>-RunQueue
  --sqs-endpoint <url>    SQS endpoint (default $AWS_ENDPOINT_URL_SQS, $AWS_ENDPOINT_URL, else AWS)

Output:
  --json                  machine-readable JSON on stdout
  -h, --help              this help

Exit codes: 0 done; 1 refused profiles, profile or task not found, a refused decision, dead letters
kept (not replayable yet) or a failure; 2 bad usage.`;

export interface AdminIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
}

class UsageError extends Error {
  override readonly name = 'UsageError';
}

interface Options {
  readonly json: boolean;
  readonly now?: string;
  readonly prefix?: string;
  readonly stateTable?: string;
  readonly journalTable?: string;
  readonly auditTable?: string;
  readonly endpoint?: string;
  readonly region?: string;
  readonly digest?: string;
  readonly reason?: string;
  readonly by?: string;
  readonly queueUrl?: string;
  readonly sqsEndpoint?: string;
  readonly config?: string;
  readonly owner?: string;
  readonly agent?: string;
  readonly state?: string;
  readonly limit?: string;
  readonly queue?: string;
  readonly dryRun: boolean;
  readonly dlq?: string;
  readonly deliveryQueue?: string;
  readonly streamsEndpoint?: string;
  readonly help: boolean;
}

const parseCommandLine = (argv: readonly string[]): { positionals: string[]; options: Options } => {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: {
        json: { type: 'boolean', default: false },
        now: { type: 'string' },
        prefix: { type: 'string' },
        'state-table': { type: 'string' },
        'journal-table': { type: 'string' },
        'audit-table': { type: 'string' },
        endpoint: { type: 'string' },
        region: { type: 'string' },
        digest: { type: 'string' },
        reason: { type: 'string' },
        by: { type: 'string' },
        'queue-url': { type: 'string' },
        'sqs-endpoint': { type: 'string' },
        config: { type: 'string' },
        owner: { type: 'string' },
        agent: { type: 'string' },
        state: { type: 'string' },
        limit: { type: 'string' },
        queue: { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
        dlq: { type: 'string' },
        'delivery-queue': { type: 'string' },
        'streams-endpoint': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: true,
    });
    return {
      positionals,
      options: {
        json: values.json ?? false,
        help: values.help ?? false,
        now: values.now,
        prefix: values.prefix,
        stateTable: values['state-table'],
        journalTable: values['journal-table'],
        auditTable: values['audit-table'],
        endpoint: values.endpoint,
        region: values.region,
        digest: values.digest,
        reason: values.reason,
        by: values.by,
        queueUrl: values['queue-url'],
        sqsEndpoint: values['sqs-endpoint'],
        config: values.config,
        owner: values.owner,
        agent: values.agent,
        state: values.state,
        limit: values.limit,
        queue: values.queue,
        dryRun: values['dry-run'] ?? false,
        dlq: values.dlq,
        deliveryQueue: values['delivery-queue'],
        streamsEndpoint: values['streams-endpoint'],
      },
    };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
};

// ---- table access

interface Tables {
  readonly state: string;
  readonly journal: string;
  readonly audit: string;
}

type TableSuffix = 'State' | 'Journal' | 'Audit';

const tableNameOf = (options: Options, env: NodeJS.ProcessEnv, suffix: TableSuffix): string => {
  const flags = { State: options.stateTable, Journal: options.journalTable, Audit: options.auditTable };
  const flag = flags[suffix];
  const variable = `${suffix.toUpperCase()}_TABLE_NAME`;
  const name = flag ?? (options.prefix ? `${options.prefix}-${suffix}` : env[variable]);
  if (!name) {
    throw new UsageError(
      `No ${suffix.toLowerCase()} table: pass --${suffix.toLowerCase()}-table, --prefix or set ${variable}`,
    );
  }
  return name;
};

const tablesOf = (options: Options, env: NodeJS.ProcessEnv): Tables => ({
  state: tableNameOf(options, env, 'State'),
  journal: tableNameOf(options, env, 'Journal'),
  audit: tableNameOf(options, env, 'Audit'),
});

const isLoopback = (url: string): boolean => {
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
  } catch {
    return false;
  }
};

/** Region, endpoint and (for a loopback emulator, which takes any) dummy credentials of a client. */
const clientConfig = (endpoint: string | undefined, options: Options, env: NodeJS.ProcessEnv) => ({
  region: options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
  ...(endpoint ? { endpoint } : {}),
  // A laptop without an AWS profile should still reach the local emulators.
  ...(endpoint !== undefined && isLoopback(endpoint) && !env.AWS_ACCESS_KEY_ID
    ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
    : {}),
});

const documentClient = (options: Options, env: NodeJS.ProcessEnv): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(
    new DynamoDBClient(
      clientConfig(options.endpoint ?? env.AWS_ENDPOINT_URL_DYNAMODB ?? env.AWS_ENDPOINT_URL, options, env),
    ),
    { marshallOptions: { removeUndefinedValues: true } },
  );

/** Inspection never opens content: a sealer that refuses keeps that true by construction. */
const noSealer: Sealer = {
  seal: async () => {
    throw new Error('the admin command does not seal');
  },
  open: async () => {
    throw new Error('the admin command never opens content');
  },
};

// ---- commands

const readConfig = async (path: string) => {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`Cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    return parseConfig(JSON.parse(text));
  } catch (error) {
    if (error instanceof SyntaxError) throw new ConfigError(`${path} is not valid JSON: ${error.message}`);
    throw error;
  }
};

const formatVerdict = (verdict: ProfileVerdict): string =>
  verdict.publishable
    ? `ok       ${verdict.profileId}: primary provider ${verdict.primaryProviderId}, answer ceiling ${verdict.ceilings.answer}, audit ceiling ${verdict.ceilings.audit}`
    : `REFUSED  ${describeRefusal(verdict)}`;

const validateCommand = async (path: string | undefined, options: Options, io: AdminIo): Promise<number> => {
  if (path === undefined) throw new UsageError('profiles validate needs a configuration file');
  let verdicts: ProfileVerdict[];
  try {
    verdicts = validateProfiles(await readConfig(path));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (options.json) io.out(JSON.stringify({ valid: false, error: error.message }, null, 2));
    else io.err(error.message);
    return 1;
  }
  const refused = verdicts.filter((verdict) => !verdict.publishable);
  if (options.json) {
    io.out(JSON.stringify({ valid: refused.length === 0, profiles: verdicts }, null, 2));
  } else {
    for (const verdict of verdicts) io.out(formatVerdict(verdict));
    io.out(
      refused.length === 0
        ? `${verdicts.length} profile(s) can be published.`
        : `${refused.length} of ${verdicts.length} profile(s) refused: fix the named settings before saving.`,
    );
  }
  return refused.length === 0 ? 0 : 1;
};

const parseNow = (now: string | undefined): Date => {
  if (now === undefined) return new Date();
  const date = new Date(now);
  if (Number.isNaN(date.getTime())) throw new UsageError(`--now must be an ISO timestamp, not "${now}"`);
  return date;
};

const formatPurge = (report: PurgeReport): string[] => [
  `Purged expired data as of ${report.now}: ${report.tasks} task(s).`,
  ...Object.entries(report.tables).map(
    ([table, count]) =>
      `  ${table.padEnd(8)} deleted ${count.deleted} (expired ${count.expired}, with their task ${count.withTask}, skipped ${count.skipped})`,
  ),
];

const purgeCommand = async (options: Options, io: AdminIo): Promise<number> => {
  const now = parseNow(options.now);
  const tables = tablesOf(options, io.env);
  const client = documentClient(options, io.env);
  try {
    const report = await purgeExpired(
      {
        stores: [
          new DynamoDbExpiredItems(client, tables.state, 'state'),
          new DynamoDbExpiredItems(client, tables.journal, 'journal'),
          new DynamoDbExpiredItems(client, tables.audit, 'audit'),
        ],
      },
      now,
    );
    if (options.json) io.out(JSON.stringify(report, null, 2));
    else for (const line of formatPurge(report)) io.out(line);
    return 0;
  } finally {
    client.destroy();
  }
};

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
      // How the run ended is the run record's (decision 0040: no settle row in the audit trail).
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
        row.hasContent ? 'content sealed' : '',
      ];
      lines.push(parts.filter((part) => part !== '').join('  '));
    }
  }
  return lines;
};

const runsShowCommand = async (
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

// ---- approvals (decision 0013)

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

const approvalsListCommand = async (options: Options, io: AdminIo): Promise<number> => {
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

/** SQS at --sqs-endpoint, the SDK's endpoint variables, or AWS. */
const sqsClientOf = (options: Options, env: NodeJS.ProcessEnv): SQSClient =>
  new SQSClient(
    clientConfig(options.sqsEndpoint ?? env.AWS_ENDPOINT_URL_SQS ?? env.AWS_ENDPOINT_URL, options, env),
  );

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

const decideCommand = async (
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

// ---- dlq replay (decision 0068)

const dlqConsumers = ['projector', 'pusher'] as const;
type DlqConsumer = (typeof dlqConsumers)[number];

/**
 * A queue's URL: given as a URL, or as the ARN the stack outputs name (GetQueueUrl), or found by
 * the name an installation of `--prefix` gives it.
 */
const queueUrlOf = async (
  sqs: SQSClient,
  given: string | undefined,
  queueName: string | undefined,
  what: string,
): Promise<string> => {
  const arn = given === undefined ? undefined : /^arn:[^:]+:sqs:[^:]*:(\d*):(.+)$/.exec(given);
  if (given !== undefined && !arn) return given;
  const name = arn ? arn[2] : queueName;
  if (name === undefined) throw new UsageError(`No ${what}: pass its URL or ARN, or --prefix`);
  const { QueueUrl } = await sqs.send(
    new GetQueueUrlCommand({ QueueName: name, ...(arn?.[1] ? { QueueOwnerAWSAccountId: arn[1] } : {}) }),
  );
  if (!QueueUrl) throw new Error(`GetQueueUrl answered no URL for ${name}`);
  return QueueUrl;
};

/** The projector's use case per task-row record, behind its event-source filter (`sk = TASK`). */
const projectorReplay =
  (journal: DynamoDbBackstopJournal) =>
  async (records: readonly DynamoDBRecord[]): Promise<ConsumedRange> => {
    const taskRecords = records.filter(isTaskItemRecord);
    // Replayed records are long committed: no write-through grace (decision 0076).
    const images = batchImagesOf(taskRecords);
    const stateOf = await batchJournalState(journal, images.all);
    const { batchItemFailures } = await processStreamByTask(taskRecords, () => async (record) => {
      const { oldImage, newImage } = images.of(record);
      await projectRecord(journal, oldImage, newImage, stateOf);
    });
    return { handled: taskRecords.length, failed: batchItemFailures.length };
  };

/** The pusher's fan-out per task, behind its event-source filter (inserted `EVT#` items). */
const pusherReplay =
  (deps: FanOutDeps) =>
  async (records: readonly DynamoDBRecord[]): Promise<ConsumedRange> => {
    const events = records.filter(isJournalEventInsert);
    const { batchItemFailures } = await processStreamTaskGroups(events, async (group) => {
      await fanOutEvents(deps, group.map(parseEventRecord));
    });
    return { handled: events.length, failed: batchItemFailures.length };
  };

const formatReplay = (consumer: DlqConsumer, report: ReplayReport): string[] => {
  const { outcomes } = report;
  const given = consumer === 'projector' ? 'projected' : 'fanned out';
  const summary = report.dryRun
    ? `Dry run of the ${consumer}'s dead letters: ${report.messages} message(s), ${outcomes.replayable} replayable (${report.records.read} stream record(s) read); nothing replayed, nothing deleted.`
    : `Replayed the ${consumer}'s dead letters: ${report.messages} message(s), ${outcomes.replayed} replayed and deleted, ${report.kept} kept; ${report.records.read} stream record(s) read, ${report.records.handled} ${given} again.`;
  const kept = [
    outcomes.failed ? `${outcomes.failed} failed again (fix the cause, then replay)` : '',
    outcomes.trimmed
      ? `${outcomes.trimmed} no longer in the stream (older than 24 h: see docs/operations.md)`
      : '',
    outcomes.unreadable ? `${outcomes.unreadable} not an on-failure record` : '',
  ].filter(Boolean);
  return [
    summary,
    ...(kept.length > 0 ? [`Kept: ${kept.join('; ')}.`] : []),
    ...(report.letters.length > 0
      ? table(
          ['MESSAGE', 'OUTCOME', 'SHARD', 'SEQUENCES', 'RECORDS', 'HANDLED', 'ERROR'],
          report.letters.map((letter) => [
            letter.messageId,
            letter.outcome,
            letter.shardId ?? '-',
            letter.startSequenceNumber ? `${letter.startSequenceNumber}…${letter.endSequenceNumber}` : '-',
            letter.records === undefined ? '-' : String(letter.records),
            letter.handled === undefined ? '-' : String(letter.handled),
            letter.error ?? '',
          ]),
        )
      : []),
  ];
};

const dlqReplayCommand = async (
  extra: string | undefined,
  options: Options,
  io: AdminIo,
): Promise<number> => {
  if (extra !== undefined) throw new UsageError('dlq replay takes no arguments');
  const consumer = options.queue as DlqConsumer;
  if (!dlqConsumers.includes(consumer)) throw new UsageError('dlq replay needs --queue projector|pusher');
  const { env } = io;
  const client = documentClient(options, env);
  const sqs = sqsClientOf(options, env);
  const streams = new DynamoDBStreamsClient(
    clientConfig(
      options.streamsEndpoint ??
        env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS ??
        options.endpoint ??
        env.AWS_ENDPOINT_URL_DYNAMODB ??
        env.AWS_ENDPOINT_URL,
      options,
      env,
    ),
  );
  try {
    const dlqId = consumer === 'projector' ? 'ProjectorDlq' : 'PusherDlq';
    const dlqUrl = await queueUrlOf(
      sqs,
      options.dlq ?? env[`${consumer.toUpperCase()}_DLQ_URL`],
      options.prefix && `${options.prefix}-${dlqId}`,
      `${consumer} dead-letter queue (--dlq)`,
    );
    const consume =
      consumer === 'projector'
        ? projectorReplay(new DynamoDbBackstopJournal(client, tableNameOf(options, env, 'Journal')))
        : pusherReplay({
            pushConfigs: new DynamoDbPushConfigRepository(client, tableNameOf(options, env, 'State')),
            deliveries: new SqsDeliveryQueue(
              sqs,
              await queueUrlOf(
                sqs,
                options.deliveryQueue ?? env.DELIVERY_QUEUE_URL,
                options.prefix && `${options.prefix}-DeliveryQueue.fifo`,
                'delivery queue (--delivery-queue)',
              ),
            ),
            clock: systemClock,
          });
    const report = await replayDeadLetters(
      {
        deadLetters: new SqsDeadLetters(sqs, dlqUrl),
        stream: new DynamoDbStreamRangeReader(streams, await streams.config.region()),
        consume,
      },
      { dryRun: options.dryRun },
    );
    if (options.json) io.out(JSON.stringify({ queue: consumer, ...report }, null, 2));
    else for (const line of formatReplay(consumer, report)) io.out(line);
    return report.dryRun || report.kept === 0 ? 0 : 1;
  } finally {
    client.destroy();
    sqs.destroy();
    streams.destroy();
  }
};

// ---- profiles put/get/list and tasks list (decision 0016)

const profileStore = (options: Options, io: AdminIo) => {
  const client = documentClient(options, io.env);
  return { client, profiles: new DynamoDbProfileStore(client, tablesOf(options, io.env).state) };
};

const readJson = async (path: string): Promise<unknown> => {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsageError(`Cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
};

const profilesPutCommand = async (
  profileId: string | undefined,
  [path]: readonly (string | undefined)[],
  options: Options,
  io: AdminIo,
): Promise<number> => {
  if (profileId === undefined || path === undefined) {
    throw new UsageError('profiles put needs a profile id and a profile file');
  }
  const { client, profiles } = profileStore(options, io);
  try {
    const config = options.config === undefined ? defaultConfig : await readConfig(options.config);
    const result = await saveProfile(
      { profiles, clock: { now: () => new Date() } },
      config,
      profileId,
      await readJson(path),
    );
    if (options.json) {
      io.out(JSON.stringify(result, null, 2));
    } else if (result.saved) {
      io.out(`saved    ${formatVerdict(result.verdict).replace(/^ok\s+/, '')}`);
      if (config.profiles[profileId] !== undefined)
        io.out(`It replaces the configuration's profile "${profileId}" where it is served (0024).`);
    } else {
      io.out(`${formatVerdict(result.verdict)}\nNot saved: fix the named setting first.`);
    }
    return result.saved ? 0 : 1;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (options.json) io.out(JSON.stringify({ saved: false, error: error.message }, null, 2));
    else io.err(`${error.message}\nNot saved.`);
    return 1;
  } finally {
    client.destroy();
  }
};

const profilesGetCommand = async (profileId: string | undefined, options: Options, io: AdminIo) => {
  if (profileId === undefined) throw new UsageError('profiles get needs a profile id');
  const { client, profiles } = profileStore(options, io);
  try {
    const stored = await profiles.get(profileId);
    if (stored === undefined) {
      if (options.json) io.out(JSON.stringify({ error: 'PROFILE_NOT_FOUND', profileId }, null, 2));
      else io.err(`No saved profile "${profileId}".`);
      return 1;
    }
    // The saved entry itself, so `profiles get x > x.json` round-trips through `profiles put`.
    io.out(JSON.stringify(options.json ? stored : stored.profile, null, 2));
    return 0;
  } finally {
    client.destroy();
  }
};

const profilesDeleteCommand = async (profileId: string | undefined, options: Options, io: AdminIo) => {
  if (profileId === undefined) throw new UsageError('profiles delete needs a profile id');
  const { client, profiles } = profileStore(options, io);
  try {
    const deleted = await profiles.delete(profileId);
    if (options.json) io.out(JSON.stringify({ deleted, profileId }, null, 2));
    else if (deleted) io.out(`deleted  ${profileId}`);
    else io.err(`No saved profile "${profileId}".`);
    return deleted ? 0 : 1;
  } finally {
    client.destroy();
  }
};

const profilesListCommand = async (extra: string | undefined, options: Options, io: AdminIo) => {
  if (extra !== undefined) throw new UsageError('profiles list takes no arguments');
  const { client, profiles } = profileStore(options, io);
  try {
    const stored = await profiles.list();
    if (options.json) {
      io.out(JSON.stringify({ profiles: stored }, null, 2));
      return 0;
    }
    const text = (value: unknown): string => (typeof value === 'string' ? value : '-');
    for (const line of table(
      ['PROFILE', 'NAME', 'PROVIDERS', 'PRIVACY', 'UPDATED'],
      stored.map(({ profileId, profile, updatedAt }) => [
        profileId,
        text(profile.name),
        Array.isArray(profile.providers) ? profile.providers.join(',') : '-',
        text(profile.privacyLevel),
        updatedAt,
      ]),
    )) {
      io.out(line);
    }
    io.out(`${stored.length} saved profile(s).`);
    return 0;
  } finally {
    client.destroy();
  }
};

const ownerOf = (owner: string | undefined): { tenant: string; principal: string } => {
  const match = owner === undefined ? null : /^([^/]+)\/(.+)$/.exec(owner);
  if (!match) throw new UsageError('tasks list needs --owner <tenant>/<principal> (e.g. local/local)');
  return { tenant: match[1]!, principal: match[2]! };
};

const tasksListCommand = async (extra: string | undefined, options: Options, io: AdminIo) => {
  if (extra !== undefined) throw new UsageError('tasks list takes no arguments');
  const owner = ownerOf(options.owner);
  const agent = options.agent ?? rootAgent;
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be 1…1000');
  const state =
    options.state === undefined
      ? undefined
      : (`TASK_STATE_${options.state
          .toUpperCase()
          .replace(/^TASK_STATE_/, '')
          .replace(/-/g, '_')}` as TaskState);
  if (state !== undefined && !(taskStates as readonly string[]).includes(state)) {
    throw new UsageError(
      `--state must be one of ${taskStates.map((name) => name.replace('TASK_STATE_', '')).join(', ')}`,
    );
  }
  const tables = tablesOf(options, io.env);
  const client = documentClient(options, io.env);
  try {
    // The journal's owner index: one query, never a scan. Only metadata leaves it: sealed blobs stay sealed.
    const page = await new DynamoDbJournalRepository(client, tables.journal).listViews({
      owner: { ...owner, profileId: agent },
      ...(state !== undefined ? { state } : {}),
      now: new Date(),
      limit,
    });
    const tasks = page.views.map((view) => ({
      taskId: view.taskId,
      state: view.state,
      revision: view.revision,
      statusTimestamp: view.statusTimestamp,
      createdAt: view.createdAt,
      contextId: view.contextId,
      expiresAt: new Date(view.expiresAt * 1000).toISOString(),
      ...(view.metadata !== undefined ? { metadata: view.metadata } : {}),
    }));
    if (options.json) {
      io.out(JSON.stringify({ owner, agent, tasks, more: page.more }, null, 2));
      return 0;
    }
    for (const line of table(
      ['TASK', 'STATE', 'REV', 'UPDATED', 'CREATED', 'EXPIRES'],
      tasks.map((task) => [
        task.taskId,
        task.state.replace('TASK_STATE_', ''),
        String(task.revision),
        task.statusTimestamp,
        task.createdAt,
        task.expiresAt,
      ]),
    )) {
      io.out(line);
    }
    io.out(
      `${tasks.length} task(s) of ${owner.tenant}/${owner.principal} at ${agent}${page.more ? ' (more: raise --limit)' : ''}.`,
    );
    return 0;
  } finally {
    client.destroy();
  }
};

/** Runs one admin command; returns the exit code. Never throws for bad input. */
export const runAdmin = async (argv: readonly string[], io: AdminIo): Promise<number> => {
  try {
    const { positionals, options } = parseCommandLine(argv);
    if (options.help || positionals.length === 0) {
      (options.help ? io.out : io.err)(usage);
      return options.help ? 0 : 2;
    }
    const [group, action, argument, ...rest] = positionals;
    const command = group === 'purge' ? 'purge' : `${group} ${action ?? ''}`.trim();
    const extra =
      group === 'purge' ? [action, argument, ...rest] : command === 'profiles put' ? rest.slice(1) : rest;
    if (extra.some((value) => value !== undefined))
      throw new UsageError(`Unexpected argument for ${command}`);
    switch (command) {
      case 'profiles validate':
        return await validateCommand(argument, options, io);
      case 'purge':
        return await purgeCommand(options, io);
      case 'runs show':
        return await runsShowCommand(argument, options, io);
      case 'approvals list':
        if (argument !== undefined) throw new UsageError('Unexpected argument for approvals list');
        return await approvalsListCommand(options, io);
      case 'approvals approve':
        return await decideCommand('approved', argument, options, io);
      case 'approvals deny':
        return await decideCommand('denied', argument, options, io);
      case 'profiles put':
        return await profilesPutCommand(argument, rest, options, io);
      case 'profiles get':
        return await profilesGetCommand(argument, options, io);
      case 'profiles list':
        return await profilesListCommand(argument, options, io);
      case 'profiles delete':
        return await profilesDeleteCommand(argument, options, io);
      case 'tasks list':
        return await tasksListCommand(argument, options, io);
      case 'dlq replay':
        return await dlqReplayCommand(argument, options, io);
      default:
        throw new UsageError(`Unknown command: ${positionals.join(' ')}`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n\n${usage}`);
      return 2;
    }
    // Names and messages of SDK errors carry no content (table names, codes); never a stack.
    io.err(`admin: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    return 1;
  }
};

/** The entry point of `npm run admin` and of `bin/a2a-admin.mjs` (`npx a2a-admin`). */
export const main = (argv: readonly string[]): Promise<number> =>
  runAdmin(argv, {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    env: process.env,
  });

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
