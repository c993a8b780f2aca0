import {
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { TestResources } from './local-guard.ts';

/** Every record of the state table's stream so far (DynamoDB Local has one shard per table here). */
export const readStream = async (env: TestResources): Promise<StreamRecord[]> => {
  const streamArn = env.resources.tables.State.streamArn!;
  const { StreamDescription } = await env.clients.streams.send(
    new DescribeStreamCommand({ StreamArn: streamArn }),
  );
  const records: StreamRecord[] = [];
  for (const shard of StreamDescription?.Shards ?? []) {
    let { ShardIterator: iterator } = await env.clients.streams.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shard.ShardId!,
        ShardIteratorType: 'TRIM_HORIZON',
      }),
    );
    for (let i = 0; iterator && i < 20; i++) {
      const page = await env.clients.streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      records.push(...(page.Records ?? []));
      if ((page.Records ?? []).length === 0) break;
      iterator = page.NextShardIterator;
    }
  }
  return records;
};

/** The stream records of one task's row, in stream order. */
export const taskRowRecords = async (env: TestResources, taskId: string): Promise<StreamRecord[]> =>
  (await readStream(env)).filter(
    (record) => record.dynamodb?.Keys?.pk?.S === `TASK#${taskId}` && record.dynamodb?.Keys?.sk?.S === 'TASK',
  );
