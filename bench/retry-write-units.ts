import { randomUUID } from 'node:crypto';
import { startLocalStack } from '../infra/local/local-stack.ts';
import { parseConfig } from '../shared/config/config.ts';
import { diffSnapshots, Meter, type MeterSnapshot } from './lib/meter.ts';

/**
 * Write units of a new single-turn task and of a retry of the same message (decision 0051): the
 * local stack, the scripted TCK agent at the root and at /agents/alpha, 10 messages each, then the
 * same 10 again; DynamoDB Local's reported write units summed over the handlers. Then 10 new
 * tasks sent with a W3C traceparent, which the task row and its events keep (decision 0059).
 * Run: npx tsx bench/retry-write-units.ts
 */
const meter = new Meter();
meter.install();
const config = parseConfig({
  privacy: { level: 'metadata' },
  providers: { tck: { type: 'scripted', behavior: 'tck' } },
  profiles: {
    default: { name: 'Root', description: 'x', providers: ['tck'], privacyLevel: 'full' },
    alpha: { name: 'Alpha', description: 'x', providers: ['tck'], privacyLevel: 'full' },
  },
});
const stack = await startLocalStack({ port: 0, config, prefix: `wru-${Date.now()}`, log: () => {} });
const send = async (agent: string, message: unknown, traceparent?: string) => {
  const r = await fetch(`${stack.baseUrl}/agents/${agent}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'A2A-Version': '1.0',
      ...(traceparent !== undefined && { traceparent }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } }),
  });
  return r.json();
};
const msgs = (n: number) =>
  Array.from({ length: n }, () => ({
    messageId: `tck-complete-task-${randomUUID()}`,
    role: 'ROLE_USER',
    parts: [{ text: 'hi' }],
  }));
const wru = (snap: MeterSnapshot): number => {
  let units = 0;
  for (const [fn, tables] of Object.entries(snap.capacity)) {
    if (fn !== 'bench') for (const used of Object.values(tables)) units += used.write;
  }
  return units;
};
const N = 10;
for (const m of msgs(3)) await send('default', m); // warm up
await meter.untilIdle();
for (const agent of ['default', 'alpha']) {
  const batch = msgs(N);
  let before = meter.snapshot();
  for (const m of batch) await send(agent, m);
  await meter.untilIdle();
  const fresh = wru(diffSnapshots(meter.snapshot(), before)) / N;
  before = meter.snapshot();
  for (const m of batch) await send(agent, m);
  await meter.untilIdle();
  const retry = wru(diffSnapshots(meter.snapshot(), before)) / N;
  console.log(JSON.stringify({ agent, wruPerNewTask: fresh, wruPerRetry: retry }));
}
{
  const before = meter.snapshot();
  for (const m of msgs(N)) {
    const traceId = randomUUID().replaceAll('-', '');
    await send('default', m, `00-${traceId}-${traceId.slice(0, 16)}-01`);
  }
  await meter.untilIdle();
  const traced = wru(diffSnapshots(meter.snapshot(), before)) / N;
  console.log(JSON.stringify({ agent: 'default', wruPerNewTaskWithTraceparent: traced }));
}
await stack.stop();
meter.uninstall();
process.exit(0);
