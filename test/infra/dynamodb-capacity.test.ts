import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { createInstallation } from '../../infra/app.ts';
import { REPO_ROOT } from '../../infra/house-function.ts';
import { StatefulStack } from '../../infra/stateful-stack.ts';
import { tableDefinitions } from '../../shared/adapters/dynamodb/tables.ts';
import { defaultConfig, parseConfig } from '../../shared/config/config.ts';
import { templatesOnly } from '../support/templates-only.ts';

/** Provisioned DynamoDB capacity with auto scaling, chosen by configuration (decision 0048). */

const capacityOf = (dynamodb: unknown) =>
  parseConfig({ ...defaultConfig, deployment: { dynamodb } }).deployment.dynamodb;

const tablesOf = (capacity?: ReturnType<typeof capacityOf>) => {
  const stack = new StatefulStack(new App(), 'capacity-stateful', {
    prefix: 'capacity',
    ...(capacity ? { capacity } : {}),
  });
  const template = Template.fromStack(stack);
  const resources = template.findResources('AWS::DynamoDB::GlobalTable');
  const byId = (id: string) => {
    const entry = Object.entries(resources).find(([logicalId]) => logicalId.startsWith(id));
    if (!entry) throw new Error(`no table ${id}`);
    return entry[1].Properties as Record<string, unknown> & {
      GlobalSecondaryIndexes?: Array<Record<string, unknown>>;
      Replicas: Array<Record<string, unknown> & { GlobalSecondaryIndexes?: Array<Record<string, unknown>> }>;
    };
  };
  return { template, byId };
};

/** The auto scaling settings CloudFormation gets for one capacity: target tracking on utilisation. */
const autoScaling = (min: number, max: number, target: number) => ({
  MinCapacity: min,
  MaxCapacity: max,
  TargetTrackingScalingPolicyConfiguration: { TargetValue: target },
});

describe('DynamoDB capacity (decision 0048)', () => {
  it('is on demand unless configured: the schema default, and no throughput settings', () => {
    expect(defaultConfig.deployment.dynamodb.billing).toBe('onDemand');
    const { byId } = tablesOf();
    for (const definition of tableDefinitions) {
      const table = byId(definition.id);
      expect(table.BillingMode).toBe('PAY_PER_REQUEST');
      expect(table.WriteProvisionedThroughputSettings).toBeUndefined();
    }
  });

  it('provisions every table and index with auto-scaled read and write capacity at the target', () => {
    const capacity = capacityOf({ billing: 'provisioned' });
    expect(capacity).toMatchObject({
      targetUtilizationPercent: 70,
      read: { min: 1, max: 100 },
      write: { min: 1, max: 100 },
    });
    const { byId } = tablesOf(capacity);
    for (const definition of tableDefinitions) {
      const table = byId(definition.id);
      expect(table.BillingMode).toBe('PROVISIONED');
      expect(table.WriteProvisionedThroughputSettings).toEqual({
        WriteCapacityAutoScalingSettings: autoScaling(1, 100, 70),
      });
      expect(table.Replicas[0]?.ReadProvisionedThroughputSettings).toEqual({
        ReadCapacityAutoScalingSettings: autoScaling(1, 100, 70),
      });
      // Each index scales on its own consumed units, with the same settings as its table.
      for (const index of definition.globalSecondaryIndexes) {
        expect(table.GlobalSecondaryIndexes).toContainEqual(
          expect.objectContaining({
            IndexName: index.indexName,
            WriteProvisionedThroughputSettings: { WriteCapacityAutoScalingSettings: autoScaling(1, 100, 70) },
          }),
        );
        expect(table.Replicas[0]?.GlobalSecondaryIndexes).toContainEqual({
          IndexName: index.indexName,
          ReadProvisionedThroughputSettings: { ReadCapacityAutoScalingSettings: autoScaling(1, 100, 70) },
        });
      }
    }
  });

  it('takes per-table ranges and the utilisation target from the configuration', () => {
    const { byId } = tablesOf(
      capacityOf({
        billing: 'provisioned',
        targetUtilizationPercent: 60,
        write: { min: 5, max: 500 },
        tables: { Audit: { read: { min: 1, max: 5 }, write: { min: 1, max: 50 } } },
      }),
    );
    expect(byId('State').WriteProvisionedThroughputSettings).toEqual({
      WriteCapacityAutoScalingSettings: autoScaling(5, 500, 60),
    });
    expect(byId('State').Replicas[0]?.ReadProvisionedThroughputSettings).toEqual({
      ReadCapacityAutoScalingSettings: autoScaling(1, 100, 60),
    });
    expect(byId('Audit').WriteProvisionedThroughputSettings).toEqual({
      WriteCapacityAutoScalingSettings: autoScaling(1, 50, 60),
    });
    expect(byId('Audit').Replicas[0]?.ReadProvisionedThroughputSettings).toEqual({
      ReadCapacityAutoScalingSettings: autoScaling(1, 5, 60),
    });
  });

  it('refuses a range whose max is below its min, and a target outside 20–90 %, naming the setting', () => {
    expect(() => capacityOf({ billing: 'provisioned', read: { min: 10, max: 5 } })).toThrow(
      /deployment\.dynamodb\.read: max must be at least min/,
    );
    expect(() => capacityOf({ billing: 'provisioned', targetUtilizationPercent: 95 })).toThrow(
      /deployment\.dynamodb\.targetUtilizationPercent/,
    );
    expect(() => capacityOf({ billing: 'reserved' })).toThrow(/deployment\.dynamodb\.billing/);
  });

  const workDir = (() => {
    mkdirSync(join(REPO_ROOT, '.cache'), { recursive: true });
    return mkdtempSync(join(REPO_ROOT, '.cache', 'capacity-test-'));
  })();
  afterAll(() => rmSync(workDir, { recursive: true, force: true }));

  it('is chosen by the deployment configuration file (`cdk deploy -c config=…`)', () => {
    const stub = join(workDir, 'stub.ts');
    writeFileSync(stub, 'export const handler = async () => ({});\n');
    const configFile = join(workDir, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        ...defaultConfig,
        auth: { public: true },
        deployment: { dynamodb: { billing: 'provisioned', write: { min: 2, max: 20 } } },
      }),
    );
    const entries = Object.fromEntries(
      ['rpc', 'executor', 'projector', 'pusher', 'deliverer', 'reaper'].map((name) => [name, stub]),
    );
    const installation = createInstallation(
      new App({
        outdir: join(workDir, 'cdk.out'),
        context: { config: configFile, stage: 'capacity', ...templatesOnly },
      }),
      { entries, authorizerEntry: undefined },
    );
    Template.fromStack(installation.stateful).allResourcesProperties('AWS::DynamoDB::GlobalTable', {
      BillingMode: 'PROVISIONED',
      WriteProvisionedThroughputSettings: {
        WriteCapacityAutoScalingSettings: Match.objectLike({ MinCapacity: 2, MaxCapacity: 20 }),
      },
    });
  });
});
