import { DynamoDbExpiredItems } from '../../../shared/adapters/dynamodb/dynamodb-expired-items.ts';
import { type PurgeReport, purgeExpired } from '../../../shared/app/operations/purge-expired.ts';
import { type AdminIo, documentClient, type Options, tablesOf, UsageError } from '../admin-context.ts';

/** The `purge` command: delete expired data now (I-PURGE). */

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

export const purgeCommand = async (options: Options, io: AdminIo): Promise<number> => {
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
