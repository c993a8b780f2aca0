import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Sealer } from '../../shared/domain/ports.ts';

/** What every admin command shares: the command line, the tables, the clients (docs/operations.md). */

export interface AdminIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface Options {
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

export const parseCommandLine = (argv: readonly string[]): { positionals: string[]; options: Options } => {
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

export interface Tables {
  readonly state: string;
  readonly journal: string;
  readonly audit: string;
}

type TableSuffix = 'State' | 'Journal' | 'Audit';

export const tableNameOf = (options: Options, env: NodeJS.ProcessEnv, suffix: TableSuffix): string => {
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

export const tablesOf = (options: Options, env: NodeJS.ProcessEnv): Tables => ({
  state: tableNameOf(options, env, 'State'),
  journal: tableNameOf(options, env, 'Journal'),
  audit: tableNameOf(options, env, 'Audit'),
});

export const isLoopback = (url: string): boolean => {
  try {
    const host = new URL(url).hostname;
    return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
  } catch {
    return false;
  }
};

/** Region, endpoint and (for a loopback emulator, which takes any) dummy credentials of a client. */
export const clientConfig = (endpoint: string | undefined, options: Options, env: NodeJS.ProcessEnv) => ({
  region: options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
  ...(endpoint ? { endpoint } : {}),
  // A laptop without an AWS profile should still reach the local emulators.
  ...(endpoint !== undefined && isLoopback(endpoint) && !env.AWS_ACCESS_KEY_ID
    ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
    : {}),
});

export const documentClient = (options: Options, env: NodeJS.ProcessEnv): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(
    new DynamoDBClient(
      clientConfig(options.endpoint ?? env.AWS_ENDPOINT_URL_DYNAMODB ?? env.AWS_ENDPOINT_URL, options, env),
    ),
    { marshallOptions: { removeUndefinedValues: true } },
  );

/** Inspection never opens content: a sealer that refuses keeps that true by construction. */
export const noSealer: Sealer = {
  seal: async () => {
    throw new Error('the admin command does not seal');
  },
  open: async () => {
    throw new Error('the admin command never opens content');
  },
};

/** SQS at --sqs-endpoint, the SDK's endpoint variables, or AWS. */
export const sqsClientOf = (options: Options, env: NodeJS.ProcessEnv): SQSClient =>
  new SQSClient(
    clientConfig(options.sqsEndpoint ?? env.AWS_ENDPOINT_URL_SQS ?? env.AWS_ENDPOINT_URL, options, env),
  );
