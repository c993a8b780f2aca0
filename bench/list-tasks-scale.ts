/**
 * ListTasks' journal reads at two owner sizes (decisions 0006 and 0034), both owners in one table:
 * the page (owner index, newest first) with `totalSize` from the per-owner counters — what
 * ListTasks does — and each read alone: the raw page Query (no adapter), the counters, and the
 * count as a COUNT query over the owner index (`--count-query`, linear: slow at 10,000).
 * Views are projected through the real journal adapter.
 *
 * Order (decision 0034): each owner is measured alone right after its own seeding (the order the
 * benchmark's scale phase used before 0034), then, with both seeded, the two owners are measured
 * alternately, one call each in turn, so both see the same table, JVM heap and machine load.
 * Prints medians, and the items and capacity one page Query reads.
 * Run: npx tsx bench/list-tasks-scale.ts [--small 100] [--large 10000] [--rounds 200] [--count-query]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ensureDynamoDbLocalJar } from '../infra/local/dynamodb-local.ts';
import { createLocalClients, startEmulators } from '../infra/local/local-stack.ts';
import { createResources } from '../infra/local/resources.ts';
import { DynamoDbJournalRepository } from '../shared/adapters/dynamodb/dynamodb-journal-repository.ts';
import { keys } from '../shared/adapters/dynamodb/keys.ts';
import { projectRecord } from '../shared/app/journal/project-record.ts';
import type { StoredTask } from '../shared/domain/projection.ts';
import { median } from './lib/stats.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const { values } = parseArgs({
  options: {
    small: { type: 'string', default: '100' },
    large: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '200' },
    'count-query': { type: 'boolean', default: false },
  },
});

await ensureDynamoDbLocalJar();
const emulators = await startEmulators();
const clients = createLocalClients(emulators.endpoints);
const resources = await createResources({ prefix: 'bench-list', clients });
const table = resources.tables.Journal.name;
const doc = DynamoDBDocumentClient.from(clients.dynamodb, {
  marshallOptions: { removeUndefinedValues: true },
});
const journal = new DynamoDbJournalRepository(doc, table);
type Owner = { tenant: string; principal: string; profileId: string };

const fill = async (principal: string, count: number): Promise<Owner> => {
  // A published agent other than the root's: its key names the agent (decision 0049).
  const owner = { tenant: 'bench', principal, profileId: 'bench-agent' };
  const base = Date.parse('2026-11-30T00:00:00.000Z');
  const expiresAt = Math.floor(Date.now() / 1000) + 30 * 86_400;
  for (let i = 0; i < count; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, (_, j) => {
        const at = new Date(base + (i + j) * 1000).toISOString();
        const task: StoredTask = {
          taskId: `${principal}-${String(i + j).padStart(6, '0')}`,
          contextId: `ctx-${(i + j) % 10}`,
          owner: { tenant: owner.tenant, principal: owner.principal },
          profileId: owner.profileId,
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

/** The owner index's first page without the adapter: one Query as listViews sends it (limit 50 + 1). */
const rawPage = async (owner: Owner) => {
  const out = await clients.dynamodb.send(
    new QueryCommand({
      TableName: table,
      IndexName: 'byOwner',
      KeyConditionExpression: '#ownerKey = :owner',
      ExpressionAttributeNames: { '#ownerKey': 'ownerKey' },
      ExpressionAttributeValues: {
        ':owner': { S: keys.ownerKey(owner.tenant, owner.principal, owner.profileId) },
      },
      ScanIndexForward: false,
      Limit: 51,
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
  return {
    items: out.Count ?? 0,
    scanned: out.ScannedCount ?? 0,
    rru: out.ConsumedCapacity?.CapacityUnits ?? 0,
  };
};

type Reads = Record<string, () => Promise<unknown>>;
const readsOf = (owner: Owner): Reads => {
  const now = new Date();
  const page = () => journal.listViews({ owner, now, limit: 50 });
  return {
    'page + counters (ListTasks)': () => Promise.all([page(), journal.countViews({ owner, now })]),
    'page (adapter)': page,
    'page (raw Query)': () => rawPage(owner),
    counters: () => journal.countViews({ owner, now }),
    ...(values['count-query']
      ? {
          // A filter that matches everything forces the COUNT query path.
          'page + COUNT query': () =>
            Promise.all([
              page(),
              journal.countViews({ owner, now, statusTimestampAfter: '1970-01-01T00:00:00.000Z' }),
            ]),
        }
      : {}),
  };
};

const timed = async (read: () => Promise<unknown>): Promise<number> => {
  const began = performance.now();
  await read();
  return performance.now() - began;
};

/** `rounds` calls of each read per owner; owners alternate call by call. */
const measure = async (owners: Owner[], rounds: number) => {
  const samples = owners.map(() => new Map<string, number[]>());
  const reads = owners.map(readsOf);
  for (let round = 0; round < rounds; round++) {
    for (const name of Object.keys(reads[0] ?? {})) {
      for (const [i, owner] of owners.entries()) {
        // Alternate which owner goes first, so neither always follows the other.
        const at = (i + round) % owners.length;
        const read = reads[at]?.[name];
        if (!read || !owner) continue;
        const row = samples[at]?.get(name) ?? [];
        row.push(await timed(read));
        samples[at]?.set(name, row);
      }
    }
  }
  return samples.map((row) => Object.fromEntries([...row].map(([name, ms]) => [name, median(ms)])));
};

const rounds = Number(values.rounds);
const fmt = (ms: number | undefined) => (ms === undefined ? '—' : ms.toFixed(1));
const load = () => loadavg()[0]?.toFixed(2);

const small = await fill('small', Number(values.small));
for (let i = 0; i < 20; i++) await journal.listViews({ owner: small, now: new Date(), limit: 50 });
const loadBefore = load();
const [alone] = await measure([small], rounds);
console.log(`small owner alone, right after its seeding, load ${loadBefore}`);
const seedBegan = performance.now();
const large = await fill('large', Number(values.large));
console.log(`seeded ${values.large} views in ${((performance.now() - seedBegan) / 1000).toFixed(1)} s`);
const loadLargeAlone = load();
const [largeAlone] = await measure([large], rounds);
console.log(`large owner alone, right after its seeding, load ${loadLargeAlone}`);
const loadAlternate = load();
const [smallAlt, largeAlt] = await measure([small, large], rounds);
console.log(`alternated, load ${loadAlternate} → ${load()}`);
console.log(
  `items read per page Query: small ${JSON.stringify(await rawPage(small))}, large ${JSON.stringify(await rawPage(large))}`,
);
console.log(
  `\nread (median of ${rounds}, ms) | small alone | large alone, after its seeding | large / small (each alone) | small, alternated | large, alternated | large / small (alternated)`,
);
const ratio = (a?: number, b?: number) => (a && b ? `×${(b / a).toFixed(2)}` : '—');
for (const name of Object.keys(smallAlt ?? {})) {
  const a = smallAlt?.[name];
  const b = largeAlt?.[name];
  console.log(
    `${name} | ${fmt(alone?.[name])} | ${fmt(largeAlone?.[name])} | ${ratio(alone?.[name], largeAlone?.[name])} | ${fmt(a)} | ${fmt(b)} | ${ratio(a, b)}`,
  );
}
clients.destroy();
await emulators.stop();
