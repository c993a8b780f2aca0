import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { REPO_ROOT } from '../../infra/house-function.ts';
import type { LocalResources } from '../../infra/local/resources.ts';
import { type FunctionName, ServiceStack } from '../../infra/service-stack.ts';
import { StatefulStack } from '../../infra/stateful-stack.ts';
import type { Config } from '../../shared/config/config.ts';
import type { ArnScope } from './aws-call-recorder.ts';
import { templatesOnly } from './templates-only.ts';

/**
 * The IAM policies of one installation as `cdk synth` writes them, with every reference to the
 * stateful stack's tables, streams, queues and key resolved to the local stack's resources (same
 * declarations, same ids), so a call recorded there can be evaluated against them: each function
 * role's identity policies, the content key's key policy and each queue's queue policy (resource
 * policies). The functions are built from tiny stand-in entries: IAM does not depend on the code.
 */

export interface PolicyDocument {
  readonly Version?: string;
  readonly Statement: PolicyStatement[];
}

export interface PolicyStatement {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Action?: string | string[];
  readonly Resource?: string | string[];
  readonly Principal?: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}

export type RoleName = FunctionName | 'authorizer';

export interface InstallationPolicies {
  /** Each function role's identity policies (AWS::IAM::Policy resources attached to it). */
  readonly functions: Readonly<Record<RoleName, PolicyDocument[]>>;
  /** Resource policies by resource ARN: the content key's, each queue's. */
  readonly resourcePolicies: Readonly<Record<string, PolicyDocument>>;
  /** Short names of the local resources for reports: ARN → `table/State`, `queue/RunQueue`, … */
  readonly names: ReadonlyMap<string, string>;
}

type Json = unknown;
type Template = {
  Resources: Record<string, { Type: string; Properties?: Record<string, Json> }>;
  Outputs?: Record<string, { Value: Json; Export?: { Name: string } }>;
};

const logicalIdOf = (stack: Stack, construct: IConstruct): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);

/** The installation name the synthesized grants name in their KMS conditions: the local stack's. */
export const LOCAL_INSTALLATION = 'local';

export const synthesizedPolicies = (
  config: Config,
  resources: LocalResources,
  scope: ArnScope,
): InstallationPolicies => {
  const cacheDir = join(REPO_ROOT, '.cache');
  mkdirSync(cacheDir, { recursive: true });
  // Under the repository root: NodejsFunction refuses entries outside its project root.
  const workDir = mkdtempSync(join(cacheDir, 'iam-policies-'));
  try {
    const entry = (name: string): string => {
      const file = join(workDir, `${name}.ts`);
      writeFileSync(file, `export const handler = async () => '${name}';\n`);
      return file;
    };
    const names: FunctionName[] = ['rpc', 'executor', 'projector', 'pusher', 'deliverer', 'reaper'];
    const app = new App({ outdir: join(workDir, 'cdk.out'), context: templatesOnly });
    app.node.setContext('@aws-cdk/core:defaultCrossStackReferences', 'strong');
    const stateful = new StatefulStack(app, 'stateful', { prefix: LOCAL_INSTALLATION });
    const service = new ServiceStack(app, 'service', {
      stateful,
      config,
      installation: LOCAL_INSTALLATION,
      entries: Object.fromEntries(names.map((name) => [name, entry(name)])),
      authorizerEntry: entry('authorizer'),
    });
    const assembly = app.synth();
    const statefulTemplate = assembly.getStackByName(stateful.stackName).template as Template;
    const serviceTemplate = assembly.getStackByName(service.stackName).template as Template;

    // The stateful stack's resources as the local stack has them.
    const { region, account } = scope;
    const localArns = new Map<string, { arn: string; streamArn?: string; name: string }>();
    for (const table of [stateful.stateTable, stateful.journalTable, stateful.auditTable]) {
      const local = resources.tables[table.node.id as keyof LocalResources['tables']];
      localArns.set(logicalIdOf(stateful, table), {
        arn: `arn:aws:dynamodb:${region}:${account}:table/${local.name}`,
        ...(local.streamArn
          ? {
              streamArn: local.streamArn.replace(
                /^arn:aws:dynamodb:[^:]*:[^:]*:/,
                `arn:aws:dynamodb:${region}:${account}:`,
              ),
            }
          : {}),
        name: `table/${table.node.id}`,
      });
    }
    for (const [id, queue] of Object.entries(stateful.queues)) {
      const local = resources.queues[id as keyof LocalResources['queues']];
      localArns.set(logicalIdOf(stateful, queue), {
        arn: `arn:aws:sqs:${region}:${account}:${local.name}`,
        name: `queue/${id}`,
      });
    }
    const keyLogicalId = logicalIdOf(stateful, stateful.contentKey);
    localArns.set(keyLogicalId, {
      arn: `arn:aws:kms:${region}:${account}:key/${resources.key.keyId}`,
      name: 'key/content',
    });

    const exports = new Map(
      Object.values(statefulTemplate.Outputs ?? {}).flatMap((output) =>
        output.Export ? [[output.Export.Name, output.Value] as const] : [],
      ),
    );
    const pseudo: Record<string, string> = {
      'AWS::Region': region,
      'AWS::AccountId': account,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
    };
    const resolve = (value: Json): Json => {
      if (Array.isArray(value)) return value.map(resolve);
      if (typeof value !== 'object' || value === null) return value;
      const entries = Object.entries(value);
      const [intrinsic, argument] = entries[0] ?? [];
      if (entries.length === 1 && intrinsic) {
        if (intrinsic === 'Ref') {
          const name = String(argument);
          return pseudo[name] ?? localArns.get(name)?.arn ?? `unresolved:Ref:${name}`;
        }
        if (intrinsic === 'Fn::GetAtt') {
          const [id, attribute] = argument as [string, string];
          const local = localArns.get(id);
          if (attribute === 'StreamArn') return local?.streamArn ?? `unresolved:${id}.StreamArn`;
          return local?.arn ?? `unresolved:${id}.${attribute}`;
        }
        if (intrinsic === 'Fn::ImportValue') return resolve(exports.get(String(resolve(argument))));
        if (intrinsic === 'Fn::Join') {
          const [separator, parts] = argument as [string, Json[]];
          return (resolve(parts) as Json[]).map(String).join(separator);
        }
      }
      return Object.fromEntries(entries.map(([key, inner]) => [key, resolve(inner)]));
    };

    const roleOf = (fn: { role?: IConstruct }): string => {
      if (!fn.role) throw new Error('a function without a role');
      return logicalIdOf(service, fn.role);
    };
    const functionRoles: Record<RoleName, string> = {
      rpc: roleOf(service.rpc),
      executor: roleOf(service.executor),
      projector: roleOf(service.projector),
      pusher: roleOf(service.pusher),
      deliverer: roleOf(service.deliverer),
      reaper: roleOf(service.reaper),
      authorizer: roleOf(service.authorizer as { role?: IConstruct }),
    };
    const policiesOfRole = (roleId: string): PolicyDocument[] =>
      Object.values(serviceTemplate.Resources)
        .filter(
          (resource) =>
            resource.Type === 'AWS::IAM::Policy' &&
            ((resource.Properties?.Roles ?? []) as Json[]).some(
              (role) => (role as { Ref?: string }).Ref === roleId,
            ),
        )
        .map((resource) => resolve(resource.Properties?.PolicyDocument) as PolicyDocument);

    const resourcePolicies: Record<string, PolicyDocument> = {};
    const keyArn = localArns.get(keyLogicalId)?.arn as string;
    resourcePolicies[keyArn] = resolve(
      statefulTemplate.Resources[keyLogicalId]?.Properties?.KeyPolicy,
    ) as PolicyDocument;
    for (const resource of Object.values(statefulTemplate.Resources)) {
      if (resource.Type !== 'AWS::SQS::QueuePolicy') continue;
      for (const queue of (resource.Properties?.Queues ?? []) as Json[]) {
        const arn = localArns.get((queue as { Ref: string }).Ref)?.arn;
        if (arn) resourcePolicies[arn] = resolve(resource.Properties?.PolicyDocument) as PolicyDocument;
      }
    }
    const namesByArn = new Map<string, string>();
    for (const local of localArns.values()) {
      namesByArn.set(local.arn, local.name);
      if (local.streamArn) namesByArn.set(local.streamArn, `${local.name}/stream`);
    }
    return {
      functions: Object.fromEntries(
        Object.entries(functionRoles).map(([fn, roleId]) => [fn, policiesOfRole(roleId)]),
      ) as Record<RoleName, PolicyDocument[]>,
      resourcePolicies,
      names: namesByArn,
    };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
};
