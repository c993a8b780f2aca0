import { parseArgs } from 'node:util';
import { ensureDynamoDbLocalJar } from '../../infra/local/dynamodb-local.ts';
import { runSoak } from '../support/soak.ts';

/**
 * `npm run soak -- [--tasks 1000] [--clients 20] [--failpoints <spec>]`: the full soak with faults
 * (issue #7.2, docs/reliability.md) on its own local stack and emulators. Prints the figures and
 * every problem found; exits 1 when there is one.
 */
const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    clients: { type: 'string', default: '20' },
    failpoints: { type: 'string', default: '*=0.02,seed=2026' },
    'drain-seconds': { type: 'string', default: '300' },
  },
});

await ensureDynamoDbLocalJar();
const report = await runSoak({
  tasks: Number(values.tasks),
  concurrency: Number(values.clients),
  failpoints: values.failpoints,
  prefix: 'soak',
  drainMs: Number(values['drain-seconds']) * 1_000,
});
console.log(JSON.stringify(report.figures, null, 2));
if (report.problems.length > 0) {
  const kinds = new Map<string, number>();
  for (const problem of report.problems) {
    const kind = problem.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').replace(/\d+/g, 'N');
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  console.error(`${report.problems.length} problems, by kind:`);
  for (const [kind, count] of kinds) console.error(`  ${count} × ${kind}`);
  console.error(report.problems.slice(0, 50).join('\n'));
  process.exit(1);
}
console.log('soak: no problems');
process.exit(0);
