import { fileURLToPath } from 'node:url';
import {
  DynamoDBClient,
  GetItemCommand,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-dynamodb';
import { DecryptCommand, KMSClient, KMSInternalException } from '@aws-sdk/client-kms';
import { build } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';
import { DEPLOYED_DEFINES } from '../../infra/house-function.ts';
import { injectSdkFaults } from '../../infra/local/sdk-faults.ts';
import {
  armFailpoints,
  disarmFailpoints,
  failpoint,
  failpointCounts,
  failpointNames,
  InjectedFaultError,
  parseFailpointSpec,
} from '../../shared/app/operations/failpoints.ts';

afterEach(disarmFailpoints);

const faultsOf = (hits: number, name: (typeof failpointNames)[number] = 'projector.midBatch'): number[] => {
  const fired: number[] = [];
  for (let hit = 1; hit <= hits; hit++) {
    try {
      failpoint(name);
    } catch (error) {
      expect(error).toBeInstanceOf(InjectedFaultError);
      expect((error as InjectedFaultError).failpoint).toBe(name);
      fired.push(hit);
    }
  }
  return fired;
};

describe('failpoint specs', () => {
  it('parses probabilities, caps, the Nth hit, a default for every point and a seed', () => {
    const { rules, seed } = parseFailpointSpec(
      '*=0.01, projector.midBatch=0.5*3 ,create.afterCommit=#2,seed=9',
    );
    expect(seed).toBe(9);
    expect(rules.size).toBe(failpointNames.length);
    expect(rules.get('projector.midBatch')).toEqual({ probability: 0.5, max: 3 });
    expect(rules.get('create.afterCommit')).toEqual({ nth: 2 });
    expect(rules.get('kms.error')).toEqual({ probability: 0.01 });
  });

  it.each([
    'nowhere.at=0.1',
    'projector.midBatch=2',
    'projector.midBatch=often',
    'projector.midBatch=#x',
    'seed=1.5',
  ])('refuses %s, naming the entry', (spec) => {
    expect(() => parseFailpointSpec(spec)).toThrow(spec.split('=')[0]);
  });
});

describe('failpoint()', () => {
  it('is inert until armed', () => {
    expect(faultsOf(50)).toEqual([]);
    expect(failpointCounts()).toEqual({});
  });

  it('fails exactly the Nth hit with #N, and counts hits and faults', () => {
    armFailpoints('projector.midBatch=#3');
    expect(faultsOf(10)).toEqual([3]);
    expect(faultsOf(5, 'executor.afterClaim')).toEqual([]);
    expect(failpointCounts()).toEqual({ 'projector.midBatch': { hits: 10, faults: 1 } });
  });

  it('fails at the given rate, at most `max` times, repeatably with a seed', () => {
    armFailpoints('projector.midBatch=0.3,seed=42');
    const first = faultsOf(1_000);
    expect(first.length).toBeGreaterThan(200);
    expect(first.length).toBeLessThan(400);
    armFailpoints('projector.midBatch=0.3,seed=42');
    expect(faultsOf(1_000)).toEqual(first);
    armFailpoints('projector.midBatch=1*4');
    expect(faultsOf(10)).toEqual([1, 2, 3, 4]);
  });
});

describe('SDK faults', () => {
  // No request is sent: the middleware fails the call before it is built (the endpoint is unused).
  const common = {
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 1,
  };

  it('throttles DynamoDB calls and fails KMS calls with the services own exceptions', async () => {
    armFailpoints('dynamodb.throttle=1,kms.error=1');
    const dynamodb = new DynamoDBClient(common);
    const kms = new KMSClient(common);
    injectSdkFaults(dynamodb);
    injectSdkFaults(kms);
    await expect(
      dynamodb.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })),
    ).rejects.toBeInstanceOf(ProvisionedThroughputExceededException);
    await expect(kms.send(new DecryptCommand({ CiphertextBlob: new Uint8Array(8) }))).rejects.toBeInstanceOf(
      KMSInternalException,
    );
    expect(failpointCounts()).toMatchObject({
      'dynamodb.throttle': { hits: 1, faults: 1 },
      'kms.error': { hits: 1, faults: 1 },
    });
  });
});

describe('deployed bundles', () => {
  const bundle = async (define: Record<string, string>): Promise<string> => {
    const result = await build({
      entryPoints: [fileURLToPath(new URL('../../functions/executor/handler.ts', import.meta.url))],
      bundle: true,
      write: false,
      platform: 'node',
      format: 'esm',
      minify: true,
      logLevel: 'silent',
      define,
    });
    return result.outputFiles[0]?.text ?? '';
  };

  it('compile the failpoints out (the house function defines A2A_FAILPOINTS as false)', async () => {
    expect(await bundle({})).toContain('Injected fault at');
    const deployed = await bundle(DEPLOYED_DEFINES);
    expect(deployed).not.toContain('Injected fault at');
    expect(deployed).not.toContain('A2A_FAILPOINTS');
  }, 60_000);
});
