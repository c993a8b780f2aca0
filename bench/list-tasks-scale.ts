/**
 * ListTasks' journal reads at two owner sizes (decision 0006): the page (owner index, newest
 * first) and `totalSize` from the per-owner counters, against the same reads with the count done
 * as a COUNT query over the owner index. Views are projected through the real journal adapter.
 * Run: npx tsx bench/list-tasks-scale.ts [--small 100] [--large 10000] [--rounds 50]
 */
import { parseArgs } from 'node:util';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ensureDynamoDbLocalJar } from '../infra/local/dynamodb-local.ts';
import { createLocalClients, startEmulators } from '../infra/local/local-stack.ts';
import { createResources } from '../infra/local/resources.ts';
import { DynamoDbJournalRepository } from '../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { projectRecord } from '../shared/app/project-record.ts';
import type { StoredTask } from '../shared/domain/projection.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values } = parseArgs({
  options: {
    small: { type: 'string', default: '100' },
    large: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '50' },
  },
});

await ensureDynamoDbLocalJar();
const emulators = await startEmulators();
const clients = createLocalClients(emulators.endpoints);
const resources = await createResources({ prefix: 'bench-list', clients });
const doc = DynamoDBDocumentClient.from(clients.dynamodb, {
  marshallOptions: { removeUndefinedValues: true },
});
const journal = new DynamoDbJournalRepository(doc, resources.tables.Journal.name);

const fill = async (principal: string, count: number) => {
  const owner = { tenant: 'bench', principal };
  const base = Date.parse('2026-11-30T00:00:00.000Z');
  const expiresAt = Math.floor(Date.now() / 1000) + 30 * 86_400;
  for (let i = 0; i < count; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, (_, j) => {
        const at = new Date(base + (i + j) * 1000).toISOString();
        const task: StoredTask = {
          taskId: `${principal}-${String(i + j).padStart(6, '0')}`,
          contextId: `ctx-${(i + j) % 10}`,
          owner,
          profileId: 'default',
          state: 'TASK_STATE_COMPLETED',
          revision: 1,
          currentRunId: 'run',
          statusTimestamp: at,
          createdAt: at,
          // A sealed status message and artifacts of typical size ride along in every view.
          sealedStatusMessage: new Uint8Array(300),
          sealedArtifacts: new Uint8Array(700),
          expiresAt,
        };
        return projectRecord(journal, undefined, task);
      }),
    );
  }
  return owner;
};

const median = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;

const measure = async (owner: { tenant: string; principal: string }, rounds: number) => {
  const now = new Date();
  const time = async (read: () => Promise<unknown>) => {
    const samples: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const began = performance.now();
      await read();
      samples.push(performance.now() - began);
    }
    return median(samples);
  };
  const page = () => journal.listViews({ owner, now, limit: 50 });
  return {
    counters: await time(() => Promise.all([page(), journal.countViews({ owner, now })])),
    // The same count as a COUNT query (a filter that matches everything forces that path).
    countQuery: await time(() =>
      Promise.all([
        page(),
        journal.countViews({ owner, now, statusTimestampAfter: '1970-01-01T00:00:00.000Z' }),
      ]),
    ),
    total: await journal.countViews({ owner, now }),
  };
};

const rounds = Number(values.rounds);
const small = await fill('small', Number(values.small));
const large = await fill('large', Number(values.large));
const results = { small: await measure(small, rounds), large: await measure(large, rounds) };
console.log(JSON.stringify(results, null, 2));
console.log(
  `page + counters: ${results.small.counters.toFixed(1)} ms → ${results.large.counters.toFixed(1)} ms ` +
    `(×${(results.large.counters / results.small.counters).toFixed(2)}); page + COUNT query: ` +
    `${results.small.countQuery.toFixed(1)} ms → ${results.large.countQuery.toFixed(1)} ms ` +
    `(×${(results.large.countQuery / results.small.countQuery).toFixed(2)})`,
);
clients.destroy();
await emulators.stop();
