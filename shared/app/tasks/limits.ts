import type { Config } from '../../config/config.ts';
import type { Message } from '../../domain/a2a.ts';
import { LimitExceededError } from '../../domain/errors.ts';
import type { PushConfigRepository, StreamSlot, StreamSlots } from '../../domain/ports.ts';
import type { HistoryEntry, Owner } from '../../domain/task.ts';

/**
 * The documented limits of one request (docs/configuration.md `limits`), checked
 * before anything is stored; above one, a LimitExceededError whose wire reason names it.
 */

export type Limits = Config['limits'];

/** A configuration parsed before `limits` existed (a test's hand-built one) gets the defaults. */
export const defaultLimits: Limits = {
  pushConfigsPerTask: 10,
  partsPerMessage: 100,
  metadataBytes: 16_384,
  streamsPerCaller: 10,
  blockingSendsPerCaller: 10,
  historyBytes: 2.5 * 1024 * 1024,
};

export const limitsOf = (config: Partial<Pick<Config, 'limits'>> | undefined): Limits =>
  config?.limits ?? defaultLimits;

const utf8Bytes = (value: unknown): number =>
  value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value), 'utf8');

/** Parts per message, and the message's metadata with all its parts' metadata, in UTF-8 bytes of JSON. */
export const checkMessageLimits = (message: Message, limits: Limits): void => {
  if (message.parts.length > limits.partsPerMessage) {
    throw new LimitExceededError('PARTS_PER_MESSAGE', {
      setting: 'limits.partsPerMessage',
      max: limits.partsPerMessage,
      field: 'message.parts',
      description: `At most ${limits.partsPerMessage} parts per message`,
    });
  }
  const metadataBytes =
    utf8Bytes(message.metadata) + message.parts.reduce((total, part) => total + utf8Bytes(part.metadata), 0);
  if (metadataBytes > limits.metadataBytes) {
    throw new LimitExceededError('METADATA_BYTES', {
      setting: 'limits.metadataBytes',
      max: limits.metadataBytes,
      field: 'message.metadata',
      description: `At most ${limits.metadataBytes} bytes of metadata (JSON, the message's and its parts' together)`,
    });
  }
};

/**
 * The task's history with the new message in it, in UTF-8 bytes of JSON (what is sealed), fits
 * `limits.historyBytes`: checked before the message is stored, on a new task and
 * on every follow-up, so a conversation that would grow past it is refused, not truncated.
 */
export const checkHistoryLimit = (history: readonly HistoryEntry[], limits: Limits): void => {
  const max = limits.historyBytes ?? defaultLimits.historyBytes;
  if (utf8Bytes(history) > max) {
    throw new LimitExceededError('HISTORY_BYTES', {
      setting: 'limits.historyBytes',
      max,
      field: 'message',
      description: `At most ${max} bytes of history per task (JSON, every message of every turn)`,
    });
  }
};

/**
 * A new config fits the task's limit; replacing one of its configs (same id) always does. One
 * strongly consistent query of at most `pushConfigsPerTask` configs. Two creates racing at the
 * limit can both pass it: the bound is the limit plus the number of concurrent creates.
 */
export const checkPushConfigLimit = async (
  pushConfigs: PushConfigRepository,
  taskId: string,
  configId: string | undefined,
  limits: Limits,
  field: string,
  nowSeconds: number,
): Promise<void> => {
  const { configs } = await pushConfigs.list(taskId, { limit: limits.pushConfigsPerTask });
  const live = configs.filter((config) => config.expiresAt > nowSeconds);
  if (configId !== undefined && live.some((config) => config.configId === configId)) return;
  if (live.length >= limits.pushConfigsPerTask) {
    throw new LimitExceededError('PUSH_CONFIGS_PER_TASK', {
      setting: 'limits.pushConfigsPerTask',
      max: limits.pushConfigsPerTask,
      field,
      description: `At most ${limits.pushConfigsPerTask} push notification configs per task`,
    });
  }
};

/**
 * Holds one of the caller's stream slots while `open`'s stream runs, across every rpc instance
 * (the slots are items of the state table). A slot is leased for the stream's longest life, so
 * an instance that dies with a stream open frees its slot when that lease ends.
 */
export const withStreamSlot = async <T>(
  deps: { readonly streamSlots?: StreamSlots; readonly config: Pick<Config, 'limits' | 'streaming'> },
  caller: Owner,
  streamId: string,
  open: () => Promise<AsyncGenerator<T>>,
): Promise<AsyncGenerator<T>> => {
  const slots = deps.streamSlots;
  if (slots === undefined) return open();
  const max = limitsOf(deps.config).streamsPerCaller;
  const leaseMs = ((deps.config.streaming?.maxStreamSeconds ?? 840) + 60) * 1000;
  const slot = await acquireOrRefuse(slots, caller, streamId, {
    max,
    leaseMs,
    limit: 'STREAMS_PER_CALLER',
    setting: 'limits.streamsPerCaller',
    description: `At most ${max} open streams per caller; close one or retry later`,
  });
  let stream: AsyncGenerator<T>;
  try {
    stream = await open();
  } catch (error) {
    await slots.release(caller, slot);
    throw error;
  }
  return releasing(stream, () => slots.release(caller, slot));
};

/** One of the caller's slots, or the refusal that names the limit. */
const acquireOrRefuse = async (
  slots: StreamSlots,
  caller: Owner,
  holderId: string,
  options: {
    readonly max: number;
    readonly leaseMs: number;
    readonly limit: 'STREAMS_PER_CALLER' | 'BLOCKING_SENDS_PER_CALLER';
    readonly setting: string;
    readonly description: string;
  },
): Promise<StreamSlot> => {
  const { limit, setting, max, description } = options;
  const slot = await slots.acquire(caller, holderId, options);
  if (slot === undefined) throw new LimitExceededError(limit, { setting, max, description });
  return slot;
};

/**
 * Holds one of the caller's blocking-send slots while `send` waits (`limits.blockingSendsPerCaller`),
 * across every rpc instance: one caller's burst of blocking sends cannot take every rpc instance
 * the account's concurrency allows. Refused before the task exists; the slot is leased for the
 * blocking cap and a minute, so an instance that dies frees it then.
 */
export const withBlockingSlot = async <T>(
  deps: { readonly blockingSlots?: StreamSlots; readonly config: Pick<Config, 'limits'> },
  caller: Owner,
  sendId: string,
  capMs: number,
  send: () => Promise<T>,
): Promise<T> => {
  const slots = deps.blockingSlots;
  if (slots === undefined) return send();
  const max = limitsOf(deps.config).blockingSendsPerCaller;
  const slot = await acquireOrRefuse(slots, caller, sendId, {
    max,
    leaseMs: capMs + 60_000,
    limit: 'BLOCKING_SENDS_PER_CALLER',
    setting: 'limits.blockingSendsPerCaller',
    description: `At most ${max} blocking sends per caller at once; wait for one, or send with returnImmediately`,
  });
  try {
    return await send();
  } finally {
    await slots.release(caller, slot).catch(() => undefined);
  }
};

/** The stream, releasing its slot however it ends: done, failed, or closed by its consumer. */
async function* releasing<T>(stream: AsyncGenerator<T>, release: () => Promise<void>): AsyncGenerator<T> {
  try {
    yield* stream;
  } finally {
    await release().catch(() => undefined);
  }
}
