import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequestHandler } from 'local-aws-sqs';

/**
 * A pure-Node SQS endpoint: `local-aws-sqs` (JSON and query protocols; LOCAL-STACK.md lists what
 * it was checked for), served on our own node:http server so its long polling can be corrected.
 *
 * local-aws-sqs 2.0.2 answers a long poll only when the batch is full or the wait is over, and
 * while it waits, a message whose visibility timeout runs out is added to the same answer a
 * second time. SQS answers as soon as messages are available. `answerLongPollsEarly` restores
 * that: it waits (in process) until messages are available, then asks the emulator for at most
 * that many with no wait, which it answers at once. Without it every run would sit up to the
 * poller's wait time (1 s) in the queue.
 */
export interface SqsEmulator {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

export interface StartSqsEmulatorOptions {
  /** Fixed port; 0 or omitted picks a free one. */
  readonly port?: number;
  readonly host?: string;
  readonly region?: string;
}

type EmulatedQueue = ReturnType<typeof createRequestHandler>['service']['Queues'][number];
interface ReceiveOptions {
  VisibilityTimeout?: number | string;
  WaitTimeSeconds?: number | string;
  MaxNumberOfMessages?: number | string;
}

const corrected = new WeakSet<EmulatedQueue>();

const availableMessages = (queue: EmulatedQueue): number => {
  const attributes = queue.getAttributes([
    'ApproximateNumberOfMessages',
    'ApproximateNumberOfMessagesNotVisible',
  ]);
  // This emulator counts in-flight messages in ApproximateNumberOfMessages.
  return Math.max(
    0,
    Number(attributes?.ApproximateNumberOfMessages ?? 0) -
      Number(attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
  );
};

const sleep = (ms: number): Promise<void> =>
  new Promise((wake) => {
    setTimeout(wake, ms).unref();
  });

const answerLongPollsEarly = (queue: EmulatedQueue): void => {
  if (corrected.has(queue)) return;
  corrected.add(queue);
  const receive = queue.receive.bind(queue);
  queue.receive = async (options: ReceiveOptions = {}) => {
    const wait = Number(options.WaitTimeSeconds ?? queue.ReceiveMessageWaitTimeSeconds ?? 0);
    const deadline = Date.now() + wait * 1000;
    let available = availableMessages(queue);
    while (available === 0 && Date.now() < deadline) {
      await sleep(5);
      available = availableMessages(queue);
    }
    if (available === 0) return [];
    const max = Number(options.MaxNumberOfMessages ?? 1);
    return receive({ ...options, WaitTimeSeconds: 0, MaxNumberOfMessages: Math.min(max, available) });
  };
};

export const startSqsEmulator = async (options: StartSqsEmulatorOptions = {}): Promise<SqsEmulator> => {
  const host = options.host ?? '127.0.0.1';
  const { service, requestHandler } = createRequestHandler({
    port: options.port ?? 0,
    hostname: host,
    region: options.region ?? 'us-east-1',
    // A test that deletes and recreates a queue must not wait the 60 s AWS imposes.
    emulateQueueCreationLifecycle: false,
  });
  const server = createServer((req, res) => {
    for (const queue of service.Queues) answerLongPollsEarly(queue);
    void requestHandler(req, res);
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const { port } = server.address() as AddressInfo;
  // Queue URLs are built from this; createSqsServer does the same after listen.
  service.PORT = port;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= new Promise<void>((resolveStop) => {
      server.close(() => resolveStop());
      // Long polls would otherwise hold the close for their whole wait time.
      server.closeAllConnections();
    });
    return stopped;
  };
  return { endpoint: `http://${host}:${port}`, port, stop };
};
