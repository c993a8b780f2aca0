import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import {
  type BundlingOptions,
  NodejsFunction,
  type NodejsFunctionProps,
  OutputFormat,
} from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import {
  type HOUSE_ESBUILD_OPTIONS,
  houseEsbuildOptionsFor,
  REPO_ROOT,
  sideBundleCommand,
  sideBundlesFor,
} from './bundling.ts';

export {
  DEPLOYED_DEFINES,
  ESM_REQUIRE_BANNER,
  REPO_ROOT,
  UNREACHED_CREDENTIAL_PROVIDERS,
} from './bundling.ts';

export interface HouseFunctionProps
  extends Omit<
    NodejsFunctionProps,
    | 'entry'
    | 'timeout'
    | 'runtime'
    | 'architecture'
    | 'bundling'
    | 'code'
    | 'handler'
    | 'depsLockFilePath'
    | 'projectRoot'
    | 'tracing'
    | 'logRetention'
    | 'logGroup'
    | 'role'
  > {
  /** Absolute path of the TypeScript entry file; it must export `handler`. */
  readonly entry: string;
  /** Every function states its own timeout: there is no sensible house default. */
  readonly timeout: Duration;
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
  /** Writes the tool sources' own bundle file beside the function's (functions that run runs). */
  readonly toolSources?: boolean;
}

let esbuildChecked = false;

/**
 * CDK silently falls back to Docker bundling when it cannot find esbuild; there is no Docker on
 * these machines, and an image-built bundle would differ from the local one. Fail loudly instead.
 */
const assertLocalEsbuild = (): void => {
  if (esbuildChecked) return;
  try {
    createRequire(join(REPO_ROOT, 'package.json')).resolve('esbuild');
  } catch (error) {
    throw new Error('HouseFunction bundles with the local esbuild, and it is not installed (npm ci).', {
      cause: error,
    });
  }
  esbuildChecked = true;
};

/**
 * The one way this project builds a Lambda function: Node 22 on arm64, an ESM bundle made by the
 * local esbuild (minified, linked source maps, AWS SDK bundled so its version is the one the
 * lock file pins), X-Ray tracing, JSON logs in an explicit log group with a retention, and a role
 * of its own that may write to that log group only (no AWS managed policy, decision 0055).
 */
export class HouseFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: HouseFunctionProps) {
    assertLocalEsbuild();
    const { logRetention, environment, toolSources, ...rest } = props;
    const sideBundles = sideBundlesFor(props.entry, toolSources ?? false);
    // Siblings: `this` does not exist before super(). RETAIN (the CDK default) would leave log
    // groups behind when the stateless service stack is destroyed.
    const logGroup = new LogGroup(scope, `${id}LogGroup`, {
      retention: logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // What AWSLambdaBasicExecutionRole grants on every log group of the account, on this one only.
    const role = new Role(scope, `${id}ServiceRole`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${id}: its log group, its tracing and the grants of its stack`,
    });
    logGroup.grantWrite(role);
    super(scope, id, {
      memorySize: 512,
      ...rest,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      handler: 'handler',
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      projectRoot: REPO_ROOT,
      tracing: Tracing.ACTIVE,
      loggingFormat: LoggingFormat.JSON,
      logGroup,
      role,
      environment: { NODE_OPTIONS: '--enable-source-maps', ...environment },
      bundling: {
        ...houseCdkBundling(houseEsbuildOptionsFor(props.entry)),
        ...(sideBundles.length > 0 && {
          commandHooks: {
            beforeBundling: () => [],
            beforeInstall: () => [],
            afterBundling: (_inputDir: string, outputDir: string) =>
              sideBundles.map((bundle) => sideBundleCommand(bundle, outputDir)),
          },
        }),
      },
    });
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Node.js 22 is the runtime the project tests on (CI runs Node 20 and 22, docs/decisions/0056-node-22-and-external-endpoints.md); a newer runtime comes with a test run on it.',
    });
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) has no resource-level permissions; test/infra/stacks.test.ts asserts these are the only actions on Resource "*".',
    });
  }
}

/**
 * HOUSE_ESBUILD_OPTIONS as CDK's bundling options: each esbuild option has its CDK property,
 * and the aliases, which have none, go through `esbuildArgs` (`--alias:<module>=<path>`). Every
 * key is taken by name, so an option added there without a mapping here does not compile;
 * test/infra/house-bundles.test.ts compares a bundle CDK builds with esbuild's.
 */
export const houseCdkBundling = (options: typeof HOUSE_ESBUILD_OPTIONS): BundlingOptions => {
  const {
    bundle: _impliedByCdk,
    platform: _nodeByCdk,
    format,
    target,
    mainFields,
    banner,
    minify,
    sourcemap,
    sourcesContent,
    external,
    define,
    tsconfig,
    alias,
    ...unmapped
  } = options;
  const nothingUnmapped: Record<string, never> = unmapped;
  return {
    ...nothingUnmapped,
    format: format === 'esm' ? OutputFormat.ESM : OutputFormat.CJS,
    target,
    mainFields: [...mainFields],
    banner: banner.js,
    minify,
    sourceMap: sourcemap === 'linked',
    sourcesContent,
    // The AWS SDK is bundled, so its version is the one the lock file pins.
    bundleAwsSDK: true,
    externalModules: [...external],
    define,
    tsconfig,
    esbuildArgs: { '--alias': Object.entries(alias).map(([module, path]) => `${module}=${path}`) },
    forceDockerBundling: false,
  };
};
