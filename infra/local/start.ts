import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseFailpointSpec } from '../../shared/app/operations/failpoints.ts';
import { describeRefusal, validateProfiles } from '../../shared/app/profiles/validate-profiles.ts';
import { type Config, ConfigError, defaultConfig, parseConfig } from '../../shared/config/config.ts';
import {
  defaultDynamoDbLocalCacheDir,
  dynamoDbLocalPackage,
  ensureDynamoDbLocalJar,
  hasDynamoDbLocalJar,
} from './dynamodb-local.ts';
import { withLocalPublicUrl } from './local-public-url.ts';
import { type Endpoints, externalEndpoints, type LocalStack, startLocalStack } from './local-stack.ts';

/** `npm start -- [--port <n>] [--config <file.json>]`: the local-run contract of docs/configuration.md. */

const usage = `Usage: npm start -- [--port <n>] [--config <file.json>] [--host <address>] [--failpoints <spec>]

Runs a2a-serverless locally: DynamoDB Local, an SQS emulator and a KMS endpoint, with the same
handlers as in Lambda behind an HTTP harness. Given endpoints started elsewhere, it starts none:
AWS_ENDPOINT_URL (LocalStack: one for all), or AWS_ENDPOINT_URL_DYNAMODB, _SQS, _KMS (and
_DYNAMODB_STREAMS, default the DynamoDB one), e.g. from \`tsx infra/local/emulator.ts <service>\`.

Options:
  -p, --port <n>         HTTP port (default 8787; 0 picks a free one)
  -c, --config <file>    configuration file (JSON, docs/configuration.md); default: one echo profile
      --host <address>   address to listen on (default 127.0.0.1)
      --failpoints <spec> inject faults (default: $A2A_FAILPOINTS, else none), e.g.
                         '*=0.02,projector.midBatch=0.1,seed=7' (docs/reliability.md)
  -h, --help             show this help`;

const fail = (message: string): never => {
  console.error(message);
  process.exit(1);
};

interface CommandLine {
  readonly port: number;
  readonly host: string;
  readonly configPath: string | undefined;
  readonly failpoints: string | undefined;
}

const parseCommandLine = (): CommandLine => {
  let values: { port?: string; config?: string; host?: string; failpoints?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string', short: 'p' },
        config: { type: 'string', short: 'c' },
        host: { type: 'string' },
        failpoints: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return fail(`${(error as Error).message}\n\n${usage}`);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const port = Number(values.port ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    return fail(`--port must be an integer from 0 to 65535, not "${values.port}"`);
  }
  const failpoints = values.failpoints ?? process.env.A2A_FAILPOINTS;
  if (failpoints) {
    try {
      parseFailpointSpec(failpoints);
    } catch (error) {
      return fail((error as Error).message);
    }
  }
  return { port, host: values.host ?? '127.0.0.1', configPath: values.config, failpoints };
};

const loadConfig = async (path: string | undefined): Promise<Config> => {
  if (path === undefined) return defaultConfig;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    return fail(`Cannot read the configuration file ${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return fail(`The configuration file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  try {
    return parseConfig(value);
  } catch (error) {
    if (error instanceof ConfigError) return fail(`${path}: ${error.message}`);
    throw error;
  }
};

/**
 * Shorter leases, start deadline and reaper interval for a faulted run (docs/reliability.md), so
 * what the faults break recovers in seconds: RUN_LEASE_MS, RUN_START_DEADLINE_MS, A2A_REAPER_INTERVAL_MS.
 */
const faultTimings = (): { runLeaseMs?: number; runStartDeadlineMs?: number; reaperIntervalMs?: number } => {
  const ms = (name: string): number | undefined => {
    const value = process.env[name];
    if (value === undefined || value === '') return undefined;
    const parsed = Number(value);
    return Number.isInteger(parsed) && parsed > 0 ? parsed : fail(`${name} must be a positive integer of ms`);
  };
  const [runLeaseMs, runStartDeadlineMs, reaperIntervalMs] = [
    ms('RUN_LEASE_MS'),
    ms('RUN_START_DEADLINE_MS'),
    ms('A2A_REAPER_INTERVAL_MS'),
  ];
  return {
    ...(runLeaseMs ? { runLeaseMs } : {}),
    ...(runStartDeadlineMs ? { runStartDeadlineMs } : {}),
    ...(reaperIntervalMs ? { reaperIntervalMs } : {}),
  };
};

const main = async (): Promise<void> => {
  const { port, host, configPath, failpoints } = parseCommandLine();
  const config = withLocalPublicUrl(await loadConfig(configPath), host, port);
  for (const verdict of validateProfiles(config).filter((profile) => !profile.publishable)) {
    console.warn(
      `Warning: ${describeRefusal(verdict)}. Its agent card is not served and its tasks are refused.`,
    );
  }

  let stack: LocalStack | undefined;
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (stopping || !stack) {
      // A second signal, or one during start-up: leave now; the exit hook still kills Java.
      process.exit(stack ? 1 : 130);
    }
    stopping = true;
    console.log(`\n${signal}: stopping …`);
    stack.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  // Registered before anything starts, so the orderly stop owns the signals.
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);

  let external: Endpoints | undefined;
  try {
    external = externalEndpoints();
  } catch (error) {
    return fail((error as Error).message);
  }
  if (!external && !hasDynamoDbLocalJar()) {
    console.log(
      `Fetching DynamoDB Local from ${dynamoDbLocalPackage} into ${defaultDynamoDbLocalCacheDir} …`,
    );
    const since = performance.now();
    await ensureDynamoDbLocalJar();
    console.log(`DynamoDB Local fetched in ${Math.round(performance.now() - since)} ms`);
  }
  console.log(
    external
      ? `Using external endpoints (no emulator started): DynamoDB ${external.dynamodb}, DynamoDB Streams ${external.dynamodbStreams}, SQS ${external.sqs}, KMS ${external.kms}`
      : 'Starting DynamoDB Local, the SQS emulator and the KMS endpoint …',
  );
  try {
    stack = await startLocalStack({
      port,
      host,
      config,
      ...(failpoints ? { failpoints } : {}),
      ...faultTimings(),
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      return fail(`Port ${port} on ${host} is in use; choose another with --port (0 picks a free one)`);
    }
    throw error;
  }
  console.log(`a2a-serverless listening on ${stack.baseUrl}`);
  console.log(`Agent card: ${stack.baseUrl}/.well-known/agent-card.json`);
  console.log(
    config.publicUrl === undefined
      ? 'Delegation push wake-ups: off (--port 0 and no publicUrl); the reaper wakes waiting runs'
      : `Delegation push wake-ups: ${config.publicUrl}/callbacks/delegations/… (publicUrl)`,
  );
  console.log(`Journal viewer: ${stack.baseUrl}/viewer/   Client: npx a2a --url ${stack.baseUrl} send hello`);
  console.log(
    `Admin: npx a2a-admin tasks list --owner <tenant>/<principal> --endpoint ${stack.endpoints.dynamodb} --prefix ${stack.resources.prefix}`,
  );
  console.log(
    `Approvals: npm run admin -- approvals list|approve <id>|deny <id> --endpoint ${stack.endpoints.dynamodb} --prefix ${stack.resources.prefix} --queue-url ${stack.resources.queues.RunQueue.url} --sqs-endpoint ${stack.endpoints.sqs}`,
  );
  console.log(
    `DLQ replay: npm run admin -- dlq replay --queue projector|pusher --endpoint ${stack.endpoints.dynamodb} --prefix ${stack.resources.prefix} --sqs-endpoint ${stack.endpoints.sqs}`,
  );
  console.log(`Started in ${stack.timings.total} ms ${JSON.stringify(stack.timings)}`);
};

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
