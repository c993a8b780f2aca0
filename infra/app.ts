import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Tags, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { deploymentAuthProblems } from '../shared/config/auth.ts';
import { type Config, defaultConfig, parseConfig } from '../shared/config/config.ts';
import { REPO_ROOT } from './house-function.ts';
import { type FunctionName, ServiceStack } from './service-stack.ts';
import { StatefulStack } from './stateful-stack.ts';

/**
 * The CDK app: `npx cdk synth|deploy [-c stage=<name>] [-c config=<file.json>]`.
 * Two stacks per stage, `<prefix>-stateful` and `<prefix>-service`, with prefix `a2a-<stage>`.
 * Account and region come from the CLI's environment when it has one; nothing is looked up.
 */

/** Goes into stack names, the key alias and the KMS encryption context: keep it short and plain. */
const STAGE_PATTERN = /^[a-z][a-z0-9-]{0,19}$/;

const CROSS_STACK_REFERENCES = '@aws-cdk/core:defaultCrossStackReferences';

export interface InstallationOptions {
  /** Entry file overrides (tests); the real entries otherwise. */
  readonly entries?: Partial<Record<FunctionName, string>>;
  /** `undefined` given explicitly: no authorizer. @default - functions/authorizer/handler.ts when that file exists */
  readonly authorizerEntry?: string;
}

export interface Installation {
  readonly stage: string;
  readonly prefix: string;
  readonly config: Config;
  readonly stateful: StatefulStack;
  readonly service: ServiceStack;
}

/** `-c config=`: a JSON file path (or an object inlined in cdk.json); the default config when absent. */
export const readConfigContext = (value: unknown): Config => {
  if (value === undefined) return defaultConfig;
  if (typeof value === 'object' && value !== null) return parseConfig(value);
  if (typeof value !== 'string' || value === '') {
    throw new Error('-c config=<file.json> expects the path of a JSON configuration file');
  }
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(resolve(value), 'utf8'));
  } catch (error) {
    throw new Error(`-c config=${value}: cannot read it as JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
  try {
    return parseConfig(json);
  } catch (error) {
    throw new Error(`-c config=${value}: ${(error as Error).message}`, { cause: error });
  }
};

export const readStageContext = (value: unknown): string => {
  const stage = value ?? 'dev';
  if (typeof stage !== 'string' || !STAGE_PATTERN.test(stage)) {
    throw new Error(
      `-c stage=${String(stage)}: a stage is 1-20 characters of a-z, 0-9 and '-', starting with a letter`,
    );
  }
  return stage;
};

/** Builds both stacks of one installation into `app`, reading its context. */
export const createInstallation = (app: App, options: InstallationOptions = {}): Installation => {
  const stage = readStageContext(app.node.tryGetContext('stage'));
  const config = readConfigContext(app.node.tryGetContext('config'));
  // Decision 0007: a deployment authenticates (API keys or JWTs) or says `auth.public: true`.
  const authProblems = deploymentAuthProblems(config.auth);
  if (authProblems.length > 0) {
    throw new Error(`-c config: this configuration cannot be deployed:\n  ${authProblems.join('\n  ')}`);
  }
  const prefix = `a2a-${stage}`;
  // The configuration's region wins over the CLI's; the account is always the CLI's.
  const env = {
    account: process.env.CDK_DEFAULT_ACCOUNT,
    region: config.deployment.region ?? process.env.CDK_DEFAULT_REGION,
  };
  const authorizerDefault = join(REPO_ROOT, 'functions/authorizer/handler.ts');
  // Exports/imports: the retained stateful stack cannot be deleted while the service uses it.
  if (app.node.tryGetContext(CROSS_STACK_REFERENCES) === undefined) {
    app.node.setContext(CROSS_STACK_REFERENCES, 'strong');
  }

  const stateful = new StatefulStack(app, `${prefix}-stateful`, {
    env,
    prefix,
    deletionProtection: config.deployment.deletionProtection,
    capacity: config.deployment.dynamodb,
    description: `a2a-serverless ${stage}: tables, content key and queues (retained)`,
  });
  const service = new ServiceStack(app, `${prefix}-service`, {
    env,
    stateful,
    config,
    installation: prefix,
    description: `a2a-serverless ${stage}: API, functions, alarms and dashboard`,
    ...(options.entries ? { entries: options.entries } : {}),
    authorizerEntry: Object.hasOwn(options, 'authorizerEntry')
      ? options.authorizerEntry
      : existsSync(authorizerDefault)
        ? authorizerDefault
        : undefined,
  });
  for (const stack of [stateful, service]) Tags.of(stack).add('a2a:installation', prefix);
  return { stage, prefix, config, stateful, service };
};

/**
 * cdk-nag's AwsSolutions pack on every stack of the app (decision 0055): `cdk synth` and
 * `cdk deploy` stop at a finding that no `Validations.of(…).acknowledge` answers with a reason.
 */
export const addAwsSolutionsChecks = (app: App): void => {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
};

const isMain =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (isMain) {
  const app = new App();
  createInstallation(app);
  addAwsSolutionsChecks(app);
  app.synth();
}
