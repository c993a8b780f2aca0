import { addSdkClientHook } from '../../shared/adapters/sdk-clients.ts';

/**
 * Records every AWS API call the handlers of a local stack make, as IAM sees it: one entry per
 * action a request is authorized for (each part of a transaction, each table of a batch), with the
 * resource ARN (an index's ARN for a query on an index) and the request's condition keys (KMS's
 * encryption context). An SDK middleware on every client `shared/adapters/sdk-clients.ts` creates,
 * attributed to the function whose handler module created it (its creation stack), and on the
 * clients the local stack gives each event-source poller (`observePollerClients`): in AWS the
 * mapping reads its queue or stream with the function's role. Never content: table, index, queue,
 * key and stream names, and the encryption context (ids, never content).
 */

export interface RecordedCall {
  /** The function whose role makes the call: `rpc`, `executor`, … */
  readonly fn: string;
  /** The API operation as sent, e.g. `DynamoDB.TransactWriteItems`. */
  readonly operation: string;
  /** The IAM action, e.g. `dynamodb:UpdateItem`. */
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string | string[]>>;
}

export interface ArnScope {
  readonly region: string;
  readonly account: string;
  /** The key a Decrypt without a KeyId names (the ciphertext's own; one key per installation). */
  readonly defaultKeyArn: string;
}

/** The function whose handler module is creating a client right now, from the creation stack. */
const creatingFunction = (): string | undefined => {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 80;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  return /functions\/([\w-]+)\/handler\.ts/.exec(stack)?.[1];
};

type Input = Record<string, unknown>;

/** DynamoDB Local answers with its own region and account; IAM sees the deployment's. */
const normalizeArn = (arn: string, scope: ArnScope): string => {
  const parts = arn.split(':');
  if (parts.length < 6 || parts[0] !== 'arn') return arn;
  return [parts[0], parts[1], parts[2], scope.region, scope.account, ...parts.slice(5)].join(':');
};

const tableArn = (table: unknown, scope: ArnScope): string =>
  `arn:aws:dynamodb:${scope.region}:${scope.account}:table/${String(table)}`;

const queueArn = (queueUrl: unknown, scope: ArnScope): string =>
  `arn:aws:sqs:${scope.region}:${scope.account}:${String(queueUrl).split('/').at(-1)}`;

const keyArn = (keyId: unknown, scope: ArnScope): string => {
  if (typeof keyId !== 'string') return scope.defaultKeyArn;
  return keyId.startsWith('arn:')
    ? normalizeArn(keyId, scope)
    : `arn:aws:kms:${scope.region}:${scope.account}:key/${keyId}`;
};

/** Actions of DynamoDB's transaction parts, by the part's member name. */
const transactionParts: Record<string, string> = {
  Put: 'dynamodb:PutItem',
  Update: 'dynamodb:UpdateItem',
  Delete: 'dynamodb:DeleteItem',
  ConditionCheck: 'dynamodb:ConditionCheckItem',
  Get: 'dynamodb:GetItem',
};

/** SQS batch operations are authorized as their single-message action. */
const sqsAction = (operation: string): string => `sqs:${operation.replace(/Batch$/, '')}`;

type Authorization = Omit<RecordedCall, 'fn' | 'operation'>;

/** The authorizations one request needs, read from its input (and, for streams, its iterator's stream). */
export const authorizationsOf = (
  service: string,
  operation: string,
  input: Input,
  scope: ArnScope,
  streamOfIterator: (iterator: string) => string | undefined,
): Authorization[] => {
  const none = {};
  switch (service) {
    case 'DynamoDB': {
      if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
        return ((input.TransactItems ?? []) as Input[]).flatMap((item) =>
          Object.entries(item).map(([part, request]) => ({
            action: transactionParts[part] ?? `dynamodb:Unknown${part}`,
            resource: tableArn((request as Input).TableName, scope),
            context: none,
          })),
        );
      }
      if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') {
        return Object.keys((input.RequestItems ?? {}) as Input).map((table) => ({
          action: `dynamodb:${operation}`,
          resource: tableArn(table, scope),
          context: none,
        }));
      }
      const table = tableArn(input.TableName, scope);
      return [
        {
          action: `dynamodb:${operation}`,
          resource: typeof input.IndexName === 'string' ? `${table}/index/${input.IndexName}` : table,
          context: none,
        },
      ];
    }
    case 'DynamoDBStreams': {
      const stream =
        typeof input.StreamArn === 'string' ? input.StreamArn : streamOfIterator(String(input.ShardIterator));
      return [
        {
          action: `dynamodb:${operation}`,
          resource: operation === 'ListStreams' ? '*' : normalizeArn(stream ?? 'unknown-stream', scope),
          context: none,
        },
      ];
    }
    case 'SQS':
      return [
        {
          action: sqsAction(operation),
          resource: queueArn(input.QueueUrl ?? input.QueueName, scope),
          context: { 'aws:SecureTransport': 'true' },
        },
      ];
    case 'KMS': {
      const encryptionContext = (input.EncryptionContext ?? {}) as Record<string, string>;
      return [
        {
          action: `kms:${operation}`,
          resource: keyArn(input.KeyId, scope),
          context: {
            'kms:CallerAccount': scope.account,
            'kms:EncryptionContextKeys': Object.keys(encryptionContext),
            ...Object.fromEntries(
              Object.entries(encryptionContext).map(([key, value]) => [
                `kms:EncryptionContext:${key}`,
                value,
              ]),
            ),
          },
        },
      ];
    }
    default:
      return [{ action: `${service.toLowerCase()}:${operation}`, resource: '*', context: none }];
  }
};

interface MiddlewareClient {
  readonly middlewareStack: { add(middleware: unknown, options: Record<string, unknown>): void };
}

export interface AwsCallRecorder {
  readonly calls: RecordedCall[];
  /** Records the calls of `client` as `fn`'s (the local stack's `observePollerClients`). */
  observe(client: MiddlewareClient, fn: string): void;
  uninstall(): void;
}

/**
 * Installs the recorder: every client created from now on by a handler module is recorded (so
 * install it before the local stack imports the handlers). Clients of the test itself are not.
 */
export const recordAwsCalls = (scope: ArnScope): AwsCallRecorder => {
  const calls: RecordedCall[] = [];
  const iterators = new Map<string, string>();
  const observe = (client: MiddlewareClient, fn: string): void => {
    client.middlewareStack.add(
      (next: (args: { input: Input }) => Promise<{ output: Input }>, context: Input) =>
        async (args: { input: Input }) => {
          const service = String(context.clientName ?? 'Unknown').replace(/Client$/, '');
          const operation = String(context.commandName ?? 'Unknown').replace(/Command$/, '');
          for (const authorization of authorizationsOf(service, operation, args.input, scope, (iterator) =>
            iterators.get(iterator),
          )) {
            calls.push({ fn, operation: `${service}.${operation}`, ...authorization });
          }
          const result = await next(args);
          // GetRecords names its stream only through the iterator it reads.
          if (service === 'DynamoDBStreams') {
            const stream =
              typeof args.input.StreamArn === 'string'
                ? args.input.StreamArn
                : iterators.get(String(args.input.ShardIterator));
            for (const iterator of [result.output.ShardIterator, result.output.NextShardIterator]) {
              if (typeof iterator === 'string' && stream) iterators.set(iterator, stream);
            }
          }
          return result;
        },
      { step: 'initialize', name: 'iamConformanceRecorder', priority: 'high', override: true },
    );
  };
  const removeHook = addSdkClientHook((client) => {
    const fn = creatingFunction();
    if (fn) observe(client, fn);
  });
  return { calls, observe, uninstall: removeHook };
};
