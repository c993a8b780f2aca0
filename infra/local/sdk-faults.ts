import { DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { KMSClient, KMSInternalException } from '@aws-sdk/client-kms';
import type { SdkClient } from '../../shared/adapters/sdk-clients.ts';
import { failpointFires } from '../../shared/app/operations/failpoints.ts';

/**
 * The SDK-level failpoints (`kms.error`, `dynamodb.throttle`, shared/app/operations/failpoints.ts) as a
 * middleware on the clients shared/adapters/sdk-clients.ts creates: the call fails with the service's own
 * exception before it is sent, as it surfaces after the SDK's retries, so the code above sees
 * exactly what AWS would give it. Registered with `addSdkClientHook` by the local stack only.
 */
const options = { step: 'initialize', name: 'injectedFaults', priority: 'high', override: true } as const;

/** An initialize middleware that throws `fault()`'s error when there is one, before the request is built. */
const failingWith =
  (fault: () => Error | undefined) =>
  <Args, Result>(next: (args: Args) => Promise<Result>) =>
  async (args: Args): Promise<Result> => {
    const error = fault();
    if (error) throw error;
    return next(args);
  };

export const injectSdkFaults = (client: SdkClient): void => {
  if (client instanceof DynamoDBClient) {
    const fault = () =>
      failpointFires('dynamodb.throttle')
        ? new ProvisionedThroughputExceededException({
            message: 'Injected fault: the request rate is too high (dynamodb.throttle)',
            $metadata: { httpStatusCode: 400 },
          })
        : undefined;
    client.middlewareStack.add(failingWith(fault), options);
  }
  if (client instanceof KMSClient) {
    const fault = () =>
      failpointFires('kms.error')
        ? new KMSInternalException({
            message: 'Injected fault: KMS failed (kms.error)',
            $metadata: { httpStatusCode: 500 },
          })
        : undefined;
    client.middlewareStack.add(failingWith(fault), options);
  }
};
