import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Meter } from '../../bench/lib/meter.ts';
import { createDocumentClient } from '../../shared/adapters/sdk-clients.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';

/**
 * The benchmark's meter against DynamoDB Local: a write whose condition fails is billed (AWS
 * bills it; DynamoDB Local reports no capacity on the error), so a design that loses conditional
 * writes cannot look cheaper than it is.
 */
describe('the benchmark meter', () => {
  let env: TestResources;
  const meter = new Meter();

  beforeAll(async () => {
    env = await createTestResources('bench-meter');
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', env.endpoints.dynamodb);
    vi.stubEnv('AWS_REGION', 'us-east-1');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
    meter.install();
  });
  afterAll(() => {
    meter.uninstall();
    vi.unstubAllEnvs();
  });

  it('bills a lost conditional put like the put it tried (at least one unit, by item size)', async () => {
    const doc = createDocumentClient();
    const table = env.resources.tables.Journal.name;
    const item = { pk: `TASK#meter-${Date.now()}`, sk: 'EVT#0000000001', body: 'x'.repeat(1500) };
    const put = () =>
      doc.send(
        new PutCommand({ TableName: table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
      );
    await put();
    const before = meter.snapshot();
    await expect(put()).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    const after = meter.snapshot();
    const written = (snapshot: typeof before) =>
      Object.values(snapshot.capacity.bench ?? {}).reduce((total, units) => total + units.write, 0);
    // 1.5 KB: two units, as AWS bills the failed put (DynamoDB Local reported none).
    expect(written(after) - written(before)).toBe(2);
    expect(after.errors.bench?.['DynamoDB.PutItem']).toBe(1);
  });

  it('counts nothing and asks for no capacity while paused, and counts again once resumed', async () => {
    const doc = createDocumentClient();
    const table = env.resources.tables.Journal.name;
    const put = (n: number) =>
      doc.send(
        new PutCommand({
          TableName: table,
          Item: { pk: `TASK#meter-paused-${Date.now()}-${n}`, sk: 'EVT#0000000001' },
          ReturnValues: 'NONE',
        }),
      );
    const puts = (snapshot: ReturnType<Meter['snapshot']>) =>
      snapshot.requests.bench?.['DynamoDB.PutItem'] ?? 0;
    const before = meter.snapshot();
    meter.pause();
    const paused = await put(1).finally(() => meter.resume());
    // DynamoDB returns capacity only when asked: the paused meter did not ask.
    expect(paused.ConsumedCapacity).toBeUndefined();
    expect(puts(meter.snapshot())).toBe(puts(before));
    const counted = await put(2);
    expect(counted.ConsumedCapacity).toBeDefined();
    expect(puts(meter.snapshot())).toBe(puts(before) + 1);
  });
});
