import { pathToFileURL } from 'node:url';
import { type AdminIo, parseCommandLine, UsageError } from './admin-context.ts';
import { approvalsListCommand, decideCommand } from './commands/approvals.ts';
import { dlqReplayCommand } from './commands/dlq.ts';
import {
  profilesDeleteCommand,
  profilesGetCommand,
  profilesListCommand,
  profilesPutCommand,
  validateCommand,
} from './commands/profiles.ts';
import { purgeCommand } from './commands/purge.ts';
import { runsShowCommand } from './commands/runs.ts';
import { tasksListCommand } from './commands/tasks.ts';

/**
 * The operator's admin command (docs/operations.md): this module parses the command line and
 * runs one command of `commands/` (profiles, purge, runs, approvals, dlq, tasks); what they share
 * (options, tables, clients) is in `admin-context.ts`. It talks to the tables directly with the
 * operator's own AWS credentials; nothing of it is reachable from the public API.
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
