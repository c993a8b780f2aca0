import { createHash } from 'node:crypto';

/**
 * Where a delegated task's push notifications wake the run that waits for it
 * (docs/configuration.md `publicUrl`), and what the run row keeps of the wait's token.
 */

/** The path of a waiting run's callback below this server's public URL. */
export const delegationCallbackPath = (taskId: string, runId: string): string =>
  `/callbacks/delegations/${encodeURIComponent(taskId)}/${encodeURIComponent(runId)}`;

/** Matches a callback path: task id and run id. */
export const delegationCallbackPattern = /^\/callbacks\/delegations\/([^/]+)\/([^/]+)$/;

/** What the run row keeps of a wait's token: its SHA-256, hex. */
export const tokenHashOf = (token: string): string => createHash('sha256').update(token).digest('hex');
