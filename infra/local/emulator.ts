import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from './dynamodb-local.ts';
import { startKmsEmulator } from './kms-emulator.ts';
import { ENDPOINT_VARIABLES } from './local-stack.ts';
import { startSqsEmulator } from './sqs-emulator.ts';

/**
 * One local emulator as a process of its own (decision 0056), for `npm start`'s external-endpoints
 * mode or any AWS SDK client: `tsx infra/local/emulator.ts dynamodb|sqs|kms [--port <n>] [--host <a>]`.
 * Prints the SDK variable that points at it (e.g. `AWS_ENDPOINT_URL_SQS=http://127.0.0.1:4567`)
 * and runs until SIGINT or SIGTERM. Port 0 (the default) picks a free one.
 */

const usage = 'Usage: tsx infra/local/emulator.ts dynamodb|sqs|kms [--port <n>] [--host <address>]';

const services = {
  dynamodb: async (port: number, host: string) => {
    const started = await startDynamoDbLocal({ host, ...(port > 0 ? { port } : {}) });
    return { url: started.endpoint, stop: started.stop, variables: ['dynamodb', 'dynamodbStreams'] as const };
  },
  sqs: async (port: number, host: string) => {
    const started = await startSqsEmulator({ host, port });
    return { url: started.endpoint, stop: started.stop, variables: ['sqs'] as const };
  },
  kms: async (port: number, host: string) => {
    const started = await startKmsEmulator({ host, port });
    return { url: started.url, stop: started.stop, variables: ['kms'] as const };
  },
};

const main = async (): Promise<void> => {
  const { values, positionals } = parseArgs({
    options: { port: { type: 'string', default: '0' }, host: { type: 'string', default: '127.0.0.1' } },
    allowPositionals: true,
  });
  const service = positionals[0];
  const port = Number(values.port);
  if (positionals.length !== 1 || !(service && service in services)) throw new Error(usage);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new Error(`--port: 0 to 65535, not ${values.port}`);
  const started = await services[service as keyof typeof services](port, values.host);
  for (const variable of started.variables) console.log(`${ENDPOINT_VARIABLES[variable]}=${started.url}`);
  const shutdown = (): void => {
    void started.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
};

main().catch((error: unknown) => {
  console.error((error as Error).message);
  process.exit(1);
});
