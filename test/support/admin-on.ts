import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { runAdmin } from '../../infra/admin/cli.ts';
import type { Endpoints } from '../../infra/local/local-stack.ts';
import type { LocalResources } from '../../infra/local/resources.ts';

/**
 * `a2a-admin <args>` against an installation on the emulators (a local stack's or a test's own
 * resources): its tables, run queue and endpoints as options, no credentials (against loopback
 * emulators the command brings its own dummy ones).
 */
export const adminOn = async (
  target: { readonly endpoints: Pick<Endpoints, 'dynamodb' | 'sqs'>; readonly resources: LocalResources },
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAdmin(
    [
      ...args,
      '--endpoint',
      target.endpoints.dynamodb,
      '--state-table',
      target.resources.tables.State.name,
      '--journal-table',
      target.resources.tables.Journal.name,
      '--audit-table',
      target.resources.tables.Audit.name,
      '--queue-url',
      target.resources.queues.RunQueue.url,
      '--sqs-endpoint',
      target.endpoints.sqs,
    ],
    {
      out: (text) => void out.push(text),
      err: (text) => void err.push(text),
      env: { AWS_REGION: 'us-east-1' },
    },
  );
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
};

/** Every item of a table, page by page. */
export const scanAll = async (
  doc: DynamoDBDocumentClient,
  table: string,
): Promise<Record<string, unknown>[]> => {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    items.push(...((page.Items ?? []) as Record<string, unknown>[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
};
