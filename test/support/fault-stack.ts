import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { type Endpoints, type LocalStack, localCredentials } from '../../infra/local/local-stack.ts';
import type { QueueDefinition } from '../../shared/adapters/dynamodb/tables.ts';

/**
 * Local-stack options for a test that crashes runs on purpose: every run goes through the executor,
 * so a crash fails its queue message as a Lambda's would, and leases are short, so a crashed run is
 * reaped within seconds instead of the deployed 90 s and 60 s.
 */
export const crashedRunsReaped = {
  blockingRunsInRpc: false,
  runLeaseMs: 3_000,
  reaperIntervalMs: 500,
} as const;

/** Messages on each named queue (visible + in flight + delayed), read from the emulator. */
export const queueDepths = async (
  stack: Pick<LocalStack, 'endpoints' | 'resources'>,
  queues: readonly QueueDefinition['id'][],
): Promise<Record<string, number>> => {
  const sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: stack.endpoints.sqs,
    credentials: localCredentials,
  });
  try {
    const depths = await Promise.all(
      queues.map(async (id) => {
        const { Attributes = {} } = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: stack.resources.queues[id].url,
            AttributeNames: [
              'ApproximateNumberOfMessages',
              'ApproximateNumberOfMessagesNotVisible',
              'ApproximateNumberOfMessagesDelayed',
            ],
          }),
        );
        const total =
          Number(Attributes.ApproximateNumberOfMessages ?? 0) +
          Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0) +
          Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0);
        return [id, total] as const;
      }),
    );
    return Object.fromEntries(depths);
  } finally {
    sqs.destroy();
  }
};

/** A run's message sent to the run queue again, as SQS delivers a message twice. */
export const redeliverRun = async (
  stack: Pick<LocalStack, 'endpoints' | 'resources'>,
  message: { readonly taskId: string; readonly runId: string | undefined },
): Promise<void> => {
  const sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: stack.endpoints.sqs,
    credentials: localCredentials,
  });
  try {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.resources.queues.RunQueue.url,
        MessageBody: JSON.stringify(message),
      }),
    );
  } finally {
    sqs.destroy();
  }
};

export interface TaskRow {
  readonly state: string;
  readonly revision: number;
  readonly currentRunId: string;
  readonly reason?: string;
  /** The sealed status message and artifacts are stored (a COMPLETED task's result, I-RESULT). */
  readonly hasResult: boolean;
  /** The sealed artifacts are stored (a tool loop's answer has no status message). */
  readonly hasArtifacts: boolean;
  readonly profileId: string;
}

export interface RunRow {
  readonly status: string;
  readonly taskId: string;
  /** Times the reaper queued the run again because it was never started (decision 0053). */
  readonly requeues: number;
}

/** Every task and run row of an installation's state table, read straight from DynamoDB. */
export const readTaskRows = async (
  endpoints: Endpoints,
  prefix: string,
): Promise<{ tasks: Map<string, TaskRow>; runs: Map<string, RunRow> }> => {
  const client = DynamoDBDocumentClient.from(
    new DynamoDBClient({ region: 'us-east-1', endpoint: endpoints.dynamodb, credentials: localCredentials }),
  );
  const tasks = new Map<string, TaskRow>();
  const runs = new Map<string, RunRow>();
  const current = new Set<string>();
  try {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await client.send(
        new ScanCommand({ TableName: `${prefix}-State`, ExclusiveStartKey: start }),
      );
      for (const item of page.Items ?? []) {
        if (item.sk === 'TASK') {
          tasks.set(String(item.taskId), {
            state: String(item.state),
            revision: Number(item.revision),
            currentRunId: String(item.currentRunId),
            ...(item.metadata?.reason ? { reason: String(item.metadata.reason) } : {}),
            hasResult: item.statusMessage !== undefined && item.artifacts !== undefined,
            hasArtifacts: item.artifacts !== undefined,
            profileId: String(item.profileId),
          });
          // The current run lives in its task row (decision 0038); it wins over an archived copy.
          if (item.run) {
            current.add(String(item.run.runId));
            runs.set(String(item.run.runId), {
              status: String(item.run.status),
              taskId: String(item.taskId),
              requeues: Number(item.run.requeues ?? 0),
            });
          }
        } else if (String(item.sk).startsWith('RUN#') && !current.has(String(item.runId))) {
          runs.set(String(item.runId), {
            status: String(item.status),
            taskId: String(item.taskId),
            requeues: Number(item.requeues ?? 0),
          });
        }
      }
      start = page.LastEvaluatedKey;
    } while (start);
  } finally {
    client.destroy();
  }
  return { tasks, runs };
};

/**
 * The start markers in an installation's audit table, per run: the `claim` rows each claim writes
 * into its version's start slot right before its first provider call (docs/reliability.md). A run
 * that called its provider more often than it has markers called it without a claim (I-ONCE).
 */
export const readClaimMarkers = async (
  endpoints: Endpoints,
  prefix: string,
): Promise<Map<string, number>> => {
  const client = DynamoDBDocumentClient.from(
    new DynamoDBClient({ region: 'us-east-1', endpoint: endpoints.dynamodb, credentials: localCredentials }),
  );
  const claims = new Map<string, number>();
  try {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await client.send(
        new ScanCommand({
          TableName: `${prefix}-Audit`,
          ExclusiveStartKey: start,
          FilterExpression: '#kind = :claim',
          ProjectionExpression: 'runId',
          ExpressionAttributeNames: { '#kind': 'kind' },
          ExpressionAttributeValues: { ':claim': 'claim' },
        }),
      );
      for (const item of page.Items ?? []) {
        const runId = String(item.runId);
        claims.set(runId, (claims.get(runId) ?? 0) + 1);
      }
      start = page.LastEvaluatedKey;
    } while (start);
  } finally {
    client.destroy();
  }
  return claims;
};
