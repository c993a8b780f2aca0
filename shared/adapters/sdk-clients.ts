import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The AWS SDK clients the functions use, created once per cold start by their composition roots
 * (functions/compose.ts). Clients find their endpoints through the SDK's own AWS_ENDPOINT_URL_*
 * variables, so the same code runs against AWS, LocalStack and the embedded emulators.
 */

/** The SDK clients this module creates. */
export type SdkClient = DynamoDBClient | SQSClient | KMSClient;
export type SdkClientHook = (client: SdkClient) => void;

const sdkClientHooks = new Set<SdkClientHook>();

/**
 * Instrumentation seam for the local stack's benchmark (bench/run.ts): a hook sees every SDK
 * client created here from now on (handler modules create theirs at import, so register it
 * before importing them) and may add middleware to it. Nothing registers one in Lambda, where
 * this is an empty loop. Returns the function that removes the hook.
 */
export const addSdkClientHook = (hook: SdkClientHook): (() => void) => {
  sdkClientHooks.add(hook);
  return () => {
    sdkClientHooks.delete(hook);
  };
};

const hooked = <T extends SdkClient>(client: T): T => {
  for (const hook of sdkClientHooks) hook(client);
  return client;
};

export const createDocumentClient = (): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(hooked(new DynamoDBClient({})), {
    marshallOptions: { removeUndefinedValues: true },
  });

export const createSqsClient = (): SQSClient => hooked(new SQSClient({}));

export const createKmsClient = (): KMSClient => hooked(new KMSClient({}));
