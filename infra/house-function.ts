import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, type NodejsFunctionProps, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** The repository root: package-lock.json, tsconfig.json and every entry file live under it. */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * ESM bundles have no `require`; CommonJS dependencies bundled into them (parts of the AWS SDK
 * among them) call it for Node built-ins. The alias keeps the import clear of bundled names.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __houseCreateRequire } from 'node:module'; const require = __houseCreateRequire(import.meta.url);";

/**
 * Credential sources Lambda never reaches, left out of every bundle (decision 0018). Lambda puts
 * the function's role credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN
 * and sets no AWS_PROFILE, so the SDK's default chain stops at its first link (the environment);
 * it loads these only by dynamic `import()` when that link fails. Bundled, they and the STS/SSO
 * clients they pull in were ~130 KB of every function. A static import of one of them would fail
 * at load, which the cold-start bench (bundles loaded outside the repository) and
 * test/unit/house-bundles.test.ts catch.
 */
export const UNREACHED_CREDENTIAL_PROVIDERS = [
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-web-identity',
  '@aws-sdk/credential-provider-http',
  '@smithy/credential-provider-imds',
  // The STS/SSO/sign-in clients of those providers and of Bedrock's SSO token refresh.
  '@aws-sdk/nested-clients',
] as const;

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
  > {
  /** Absolute path of the TypeScript entry file; it must export `handler`. */
  readonly entry: string;
  /** Every function states its own timeout: there is no sensible house default. */
  readonly timeout: Duration;
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
}

/**
 * Compile-time constants of deployed bundles: failpoints (shared/app/failpoints.ts) are compiled
 * out, so no configuration or variable can switch fault injection on in a deployment.
 */
export const DEPLOYED_DEFINES = { A2A_FAILPOINTS: 'false' } as const;

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
 * lock file pins), X-Ray tracing, JSON logs in an explicit log group with a retention.
 */
export class HouseFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: HouseFunctionProps) {
    assertLocalEsbuild();
    const { logRetention, environment, ...rest } = props;
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
      // A sibling construct: `this` does not exist before super(). RETAIN (the CDK default) would
      // leave log groups behind when the stateless service stack is destroyed.
      logGroup: new LogGroup(scope, `${id}LogGroup`, {
        retention: logRetention ?? RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
      environment: { NODE_OPTIONS: '--enable-source-maps', ...environment },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node22',
        // Prefer packages' ESM builds so esbuild can tree-shake them.
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_BANNER,
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        bundleAwsSDK: true,
        externalModules: [...UNREACHED_CREDENTIAL_PROVIDERS],
        tsconfig: join(REPO_ROOT, 'tsconfig.json'),
        define: DEPLOYED_DEFINES,
        forceDockerBundling: false,
      },
    });
  }
}
