import { createHash } from 'node:crypto';
import type { Message, ProtocolVersion, SendMessageConfiguration } from '../../domain/a2a.ts';
import type { StoredTask } from '../../domain/projection.ts';
import type { AgentCaller, Owner } from '../../domain/task.ts';

/**
 * I-RETRY without an extra write: the ids a message creates are derived from who sent it where,
 * how, and what it says, so a retried message finds what its first send created
 * (docs/invariants.md I-RETRY, docs/protocol.md §4 "Retries").
 *
 * - A new task's id is derived from the whole send — (tenant, principal, agent, binding, version,
 *   streaming or not, the message and the configuration) — and a level: a retry's create hits the
 *   first one's row, and the create's own "only if absent" condition is the deduplication. Another
 *   message under the same messageId derives another id: it is a new message.
 * - A send is a retry while the task it created is as the caller left it; once the caller acted on
 *   that task (a follow-up, a cancel), or its retention passed, the same send again is a new
 *   message: it derives the next level's id, up to `maxSendLevels`.
 * - A run's id is derived from its task id and the whole message: a follow-up's retry derives the
 *   run it started.
 */

/** A send as its retry repeats it: the parts of a new task's identity. */
export interface SendIdentity {
  readonly sender: AgentCaller;
  readonly message: Message;
  readonly configuration?: SendMessageConfiguration;
  /** The protocol binding the request came over (`JSONRPC`, `HTTP+JSON`). */
  readonly binding?: string;
  readonly protocolVersion?: ProtocolVersion;
  readonly streaming?: boolean;
}

/** How many times one send may start a new task after the caller acted on the one before. */
export const maxSendLevels = 64;

/** JSON with object keys sorted at every level (undefined members dropped): equal content, equal text. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${members.map(([key, member]) => `${JSON.stringify(key)}:${canonical(member)}`).join(',')}}`;
  }
  return JSON.stringify(value);
};

/** A name-based UUID (RFC 9562 version 8) of the parts: the id shape the rest of the code expects. */
const uuidOf = (parts: readonly string[]): string => {
  const hash = createHash('sha256').update(JSON.stringify(parts)).digest();
  hash[6] = ((hash[6] ?? 0) & 0x0f) | 0x80;
  hash[8] = ((hash[8] ?? 0) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

/**
 * The id of the task a send without a taskId creates at `level` (0 first): the same for every
 * retry of it, another for any other send.
 */
export const taskIdOf = (send: SendIdentity, level = 0): string =>
  uuidOf([
    'task',
    send.sender.tenant,
    send.sender.principal,
    send.sender.profileId,
    send.binding ?? 'JSONRPC',
    send.protocolVersion ?? '1.0',
    send.streaming === true ? 'stream' : 'send',
    canonical({ message: send.message, configuration: send.configuration }),
    String(level),
  ]);

/**
 * Whether the caller moved the task its send created on since (a follow-up replaced its run, a
 * cancel ended it): then the same send again is a new message, not a retry.
 */
export const actedOn = (task: StoredTask, firstRunId: string): boolean =>
  task.currentRunId !== firstRunId || task.state === 'TASK_STATE_CANCELED';

/** The id of the run a message starts in a task: the same for a retry, another for other content. */
export const runIdOf = (taskId: string, message: Message): string =>
  uuidOf(['run', taskId, canonical(message)]);

/** The sender at the agent it sent to: the scope in which it reads the task it created (I-OWNER). */
export const senderOf = (input: { readonly caller: Owner; readonly profileId: string }): AgentCaller => ({
  tenant: input.caller.tenant,
  principal: input.caller.principal,
  profileId: input.profileId,
});
