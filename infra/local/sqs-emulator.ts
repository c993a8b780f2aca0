import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequestHandler } from 'local-aws-sqs';

/**
 * A pure-Node SQS endpoint: `local-aws-sqs` (JSON and query protocols; docs/decisions/0002-local-stack.md lists what
 * it was checked for), served on our own node:http server so its long polling can be corrected.
 *
 * local-aws-sqs 2.0.2 answers a long poll only when the batch is full or the wait is over, and
 * while it waits, a message whose visibility timeout runs out is added to the same answer a
 * second time. SQS answers as soon as messages are available. `answerLongPollsEarly` restores
 * that: it waits (in process) until messages are available, then asks the emulator for at most
 * that many with no wait, which it answers at its first internal tick (10 ms). Without it every
 * run would sit up to the poller's wait time (1 s) in the queue.
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
  const attributes = rawAttributes(queue)([
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

// ---- FIFO semantics local-aws-sqs 2.0.2 lacks (checked by test/integration/sqs-emulator-fifo.test.ts)
//
// 1. Message groups: SQS hands out no message of a group while an earlier one of that group is in
//    flight. The emulator ignores groups, so a consumer could process A2 while A1 is being retried.
// 2. ChangeMessageVisibility must not count as a receive; the emulator increments
//    ApproximateReceiveCount on it, which sends a message to the DLQ after half its attempts.
// 3. Deduplication lasts 5 minutes from the send, also after the message was deleted; the emulator
//    only deduplicates against messages still in the queue.
//
// The correction keeps at most one message per group inside the emulator's queue and holds the
// group's later messages back until it is deleted (or moved to the DLQ): a consumer can never see
// a group's messages out of order, whatever its concurrency. (SQS may hand out several messages
// of one group in one batch; one at a time is the strict subset of that behaviour.)

interface EmulatedRecord {
  MessageId: string;
  attributes: Record<string, string>;
  [key: string]: unknown;
}
interface SendInput {
  MessageBody?: string;
  MessageGroupId?: string;
  MessageDeduplicationId?: string;
  DelaySeconds?: number | string;
  MessageAttributes?: unknown;
  MessageSystemAttributes?: Record<string, { StringValue?: string }>;
  [key: string]: unknown;
}
interface FifoState {
  /** The group's message now inside the emulator's queue, by group. */
  readonly inside: Map<string, string>;
  /** Messages held back, per group, in send order. */
  readonly pending: Map<string, { record: EmulatedRecord; delay: number }[]>;
  /** Every message this correction created, by id: its group and the record the emulator holds. */
  readonly messages: Map<string, { group: string; record: EmulatedRecord }>;
  readonly dedup: Map<string, { messageId: string; sequenceNumber: string; until: number }>;
  release(messageId: string): void;
}

const DEDUP_WINDOW_MS = 5 * 60_000;
const fifoStates = new WeakMap<EmulatedQueue, FifoState>();
const originalGetAttributes = new WeakMap<EmulatedQueue, EmulatedQueue['getAttributes']>();
let sequence = 0n;

const rawAttributes = (queue: EmulatedQueue): EmulatedQueue['getAttributes'] =>
  originalGetAttributes.get(queue) ?? queue.getAttributes.bind(queue);

const pendingCount = (state: FifoState): number =>
  [...state.pending.values()].reduce((sum, held) => sum + held.length, 0);

const messageIdOfHandle = (handle: string): string | undefined => {
  try {
    const decoded = Buffer.from(handle, 'base64').toString('utf8');
    const parsed = JSON.parse(decoded.slice(decoded.indexOf('{'))) as { MessageId?: unknown };
    return typeof parsed.MessageId === 'string' ? parsed.MessageId : undefined;
  } catch {
    return undefined;
  }
};

const enforceFifoSemantics = (queue: EmulatedQueue, queues: () => readonly EmulatedQueue[]): void => {
  if (!queue.FifoQueue || fifoStates.has(queue)) return;
  const createRecord = (
    queue.constructor as unknown as {
      createRecord(input: Record<string, unknown>): [EmulatedRecord, string | undefined];
    }
  ).createRecord;
  const setRecord = queue.setRecord.bind(queue);
  const remove = queue.delete.bind(queue);
  const changeVisibility = queue.changeVisibility.bind(queue);
  const clearRecords = queue.clearRecords.bind(queue);
  const getAttributes = queue.getAttributes.bind(queue);
  const state: FifoState = {
    inside: new Map(),
    pending: new Map(),
    messages: new Map(),
    dedup: new Map(),
    release(messageId) {
      const message = state.messages.get(messageId);
      if (!message) return;
      state.messages.delete(messageId);
      if (state.inside.get(message.group) !== messageId) return;
      state.inside.delete(message.group);
      const held = state.pending.get(message.group);
      const next = held?.shift();
      if (held?.length === 0) state.pending.delete(message.group);
      if (next) {
        state.inside.set(message.group, next.record.MessageId);
        queue.newRecord(next.record, next.delay);
      }
    },
  };
  fifoStates.set(queue, state);
  originalGetAttributes.set(queue, getAttributes);

  queue.setRecord = (input: SendInput, messageId?: string) => {
    const group = input.MessageGroupId;
    if (!group) return setRecord(input, messageId);
    // A message the source queue moved here (DLQ redrive) has left the source queue.
    const source = input.MessageSystemAttributes?.DeadLetterQueueSourceArn?.StringValue?.split(':').pop();
    if (source && messageId) {
      const sourceQueue = queues().find((candidate) => candidate.QueueName === source);
      if (sourceQueue) fifoStates.get(sourceQueue)?.release(messageId);
    }
    const now = Date.now();
    const dedupId =
      input.MessageDeduplicationId ??
      (queue.ContentBasedDeduplication
        ? createHash('sha256')
            .update(String(input.MessageBody ?? ''))
            .digest('hex')
        : undefined);
    const dedupKey = queue.DeduplicationScope === 'messageGroup' ? `${group}\n${dedupId}` : `${dedupId}`;
    // Entries expire in the order they were added (each lasts the same window): stop at the first live one.
    for (const [key, entry] of state.dedup) {
      if (entry.until > now) break;
      state.dedup.delete(key);
    }
    const duplicate = dedupId === undefined ? undefined : state.dedup.get(dedupKey);
    sequence += 1n;
    const sequenceNumber = duplicate?.sequenceNumber ?? sequence.toString().padStart(20, '0');
    const [record, md5OfSystemAttributes] = createRecord({
      MessageId: duplicate?.messageId ?? messageId,
      MessageBody: input.MessageBody,
      MessageAttributes: input.MessageAttributes,
      MessageGroupId: group,
      MessageDeduplicationId: dedupId,
      MessageSystemAttributes: input.MessageSystemAttributes,
      SequenceNumber: sequenceNumber,
    });
    const answer = {
      record,
      ...(md5OfSystemAttributes ? { MD5OfMessageSystemAttributes: md5OfSystemAttributes } : {}),
    };
    if (duplicate) return answer;
    if (dedupId !== undefined) {
      state.dedup.set(dedupKey, {
        messageId: record.MessageId,
        sequenceNumber,
        until: now + DEDUP_WINDOW_MS,
      });
    }
    state.messages.set(record.MessageId, { group, record });
    const delay = Number(input.DelaySeconds);
    if (state.inside.has(group)) {
      state.pending.set(group, [...(state.pending.get(group) ?? []), { record, delay }]);
      return answer;
    }
    state.inside.set(group, record.MessageId);
    const entry = queue.newRecord(record, delay);
    if (md5OfSystemAttributes) entry.MD5OfMessageSystemAttributes = md5OfSystemAttributes;
    return entry;
  };

  queue.delete = (receiptHandle: string) => {
    const deleted = remove(receiptHandle);
    const messageId = messageIdOfHandle(receiptHandle);
    if (messageId) state.release(messageId);
    return deleted;
  };

  queue.changeVisibility = (receiptHandle: string, visibilityTimeout: string) => {
    const record = state.messages.get(messageIdOfHandle(receiptHandle) ?? '')?.record;
    const receives = record?.attributes.ApproximateReceiveCount;
    const changed = changeVisibility(receiptHandle, visibilityTimeout);
    if (record && receives !== undefined) record.attributes.ApproximateReceiveCount = receives;
    return changed;
  };

  queue.clearRecords = () => {
    clearRecords();
    state.inside.clear();
    state.pending.clear();
    state.messages.clear();
  };

  queue.getAttributes = (names?: string[]) => {
    const attributes = getAttributes(names);
    if (attributes && 'ApproximateNumberOfMessages' in attributes) {
      attributes.ApproximateNumberOfMessages = String(
        Number(attributes.ApproximateNumberOfMessages) + pendingCount(state),
      );
    }
    return attributes;
  };
};

/** Long polls waiting on a queue; woken when a message is added or its visibility changes. */
const waiting = new WeakMap<EmulatedQueue, Set<() => void>>();

const wakeWaiters = (queue: EmulatedQueue): void => {
  for (const wake of [...(waiting.get(queue) ?? [])]) wake();
};

/** Sleeps until the queue changes or `ms` pass (timers inside the emulator — visibility timeouts, delays — are caught by the latter). */
const waitForChange = (queue: EmulatedQueue, ms: number): Promise<void> =>
  new Promise((resolveWait) => {
    const waiters = waiting.get(queue) ?? new Set<() => void>();
    waiting.set(queue, waiters);
    const wake = (): void => {
      clearTimeout(timer);
      waiters.delete(wake);
      resolveWait();
    };
    const timer = setTimeout(wake, ms);
    timer.unref();
    waiters.add(wake);
  });

const answerLongPollsEarly = (queue: EmulatedQueue): void => {
  if (corrected.has(queue)) return;
  corrected.add(queue);
  const receive = queue.receive.bind(queue);
  const newRecord = queue.newRecord.bind(queue);
  const changeVisibility = queue.changeVisibility.bind(queue);
  queue.newRecord = (record: Record<string, unknown>, delay?: number) => {
    const entry = newRecord(record, delay);
    // The emulator counts a new message as delayed until its own delay timer fires (a 0 ms
    // timer when there is no delay), so waking now would find nothing: wake when it becomes
    // receivable. This timer is set after the emulator's, so it fires after it.
    const delaySeconds = Number(delay);
    const delayMs = (Number.isNaN(delaySeconds) ? Number(queue.DelaySeconds) : delaySeconds) * 1000;
    setTimeout(() => wakeWaiters(queue), delayMs).unref();
    return entry;
  };
  queue.changeVisibility = (receiptHandle: string, visibilityTimeout: string) => {
    const changed = changeVisibility(receiptHandle, visibilityTimeout);
    wakeWaiters(queue);
    return changed;
  };
  // Event-driven rather than a tight poll: many concurrent long polls on a 2-core machine would
  // otherwise spend the CPU the handlers need.
  queue.receive = async (options: ReceiveOptions = {}) => {
    const wait = Number(options.WaitTimeSeconds ?? queue.ReceiveMessageWaitTimeSeconds ?? 0);
    const deadline = Date.now() + wait * 1000;
    const max = Number(options.MaxNumberOfMessages ?? 1);
    for (;;) {
      const available = availableMessages(queue);
      if (available > 0) {
        const received = await receive({
          ...options,
          WaitTimeSeconds: 0,
          MaxNumberOfMessages: Math.min(max, available),
        });
        // Another long poll may have taken them first: keep waiting until the deadline.
        if (received.length > 0 || Date.now() >= deadline) return received;
      } else if (Date.now() >= deadline) {
        return [];
      }
      await waitForChange(queue, Math.min(50, Math.max(1, deadline - Date.now())));
    }
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
    for (const queue of service.Queues) {
      enforceFifoSemantics(queue, () => service.Queues);
      answerLongPollsEarly(queue);
    }
    void requestHandler(req, res);
  });
  // SQS's endpoints keep an idle connection open for minutes; node:http closes it after 5 s, which
  // made every quiet poller or pusher open new connections, and a new connection to a server in a
  // busy process waits for its accept (decision 0028).
  server.keepAliveTimeout = 120_000;
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
