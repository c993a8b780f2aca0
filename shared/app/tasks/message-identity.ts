import { createHash } from 'node:crypto';
import type { Message } from '../../domain/a2a.ts';
import type { AgentCaller, Owner } from '../../domain/task.ts';

/**
 * I-RETRY without an extra write: the ids a message creates are derived from
 * who sent it where and what it says, so a retried message finds what its first send created.
 *
 * - A new task's id is derived from (tenant, principal, agent, messageId): a retry's create hits
 *   the first one's row, and the create's own "only if absent" condition is the deduplication.
 * - A run's id is derived from its task id and the digest of the whole message: the same messageId
 *   with other content derives another run id, which tells a reuse from a retry without storing
 *   a digest anywhere.
 */

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

/** The id of the task a message without a taskId creates: the same for every retry of it. */
export const taskIdOf = (sender: AgentCaller, message: Message): string =>
  uuidOf(['task', sender.tenant, sender.principal, sender.profileId, message.messageId]);

/** The id of the run a message starts in a task: the same for a retry, another for other content. */
export const runIdOf = (taskId: string, message: Message): string =>
  uuidOf(['run', taskId, canonical(message)]);

/** The sender at the agent it sent to: the scope in which it reads the task it created (I-OWNER). */
export const senderOf = (input: { readonly caller: Owner; readonly profileId: string }): AgentCaller => ({
  tenant: input.caller.tenant,
  principal: input.caller.principal,
  profileId: input.profileId,
});
