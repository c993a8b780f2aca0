import type { Task, TaskState } from '../../domain/a2a.ts';
import { InvalidParamsError } from '../../domain/errors.ts';
import type { ViewFilter, ViewPosition } from '../../domain/ports.ts';
import type { AgentCaller } from '../../domain/task.ts';
import { type ReadTaskDeps, toTask } from './read-task.ts';

export interface ListTasksInput {
  /** The owner and the agent whose endpoint is asked: only that agent's tasks are listed (I-OWNER). */
  readonly caller: AgentCaller;
  readonly contextId?: string;
  readonly status?: TaskState;
  /** 1..100 (the schema enforces it); echoed in the answer. */
  readonly pageSize: number;
  readonly pageToken?: string;
  /** undefined = no history (this method's default, docs/protocol.md §6); 0 = none; N = the last N. */
  readonly historyLength?: number;
  /** `YYYY-MM-DDTHH:mm:ss.sssZ`, inclusive. */
  readonly statusTimestampAfter?: string;
  readonly includeArtifacts: boolean;
}

export interface ListTasksResult {
  readonly tasks: Task[];
  /** Always present; "" on the last page. */
  readonly nextPageToken: string;
  readonly pageSize: number;
  readonly totalSize: number;
}

/**
 * The cursor is the position of the last task of the page: its status timestamp and id, the
 * owner index's sort key. base64url JSON with a version, opaque to clients; the owner is never
 * in it (it comes from the caller), so a token cannot open another caller's tasks.
 */
const tokenVersion = 1;
const isoTimestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const encodePageToken = (position: ViewPosition): string =>
  Buffer.from(JSON.stringify({ v: tokenVersion, t: position.statusTimestamp, id: position.taskId })).toString(
    'base64url',
  );

export const decodePageToken = (token: string): ViewPosition => {
  const invalid = () =>
    new InvalidParamsError([
      { field: 'pageToken', description: 'Must be a nextPageToken returned by an earlier ListTasks call' },
    ]);
  if (token.length > 512 || !/^[A-Za-z0-9_-]+$/.test(token)) throw invalid();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof decoded !== 'object' || decoded === null) throw invalid();
  const { v, t, id } = decoded as Record<string, unknown>;
  if (v !== tokenVersion || typeof t !== 'string' || !isoTimestamp.test(t)) throw invalid();
  if (typeof id !== 'string' || id === '' || id.length > 128) throw invalid();
  return { statusTimestamp: t, taskId: id };
};

/**
 * ListTasks (docs/protocol.md §6): the caller's tasks (I-OWNER), newest status first, from the journal's
 * owner index — never a scan. Expired tasks read as absent (I-PURGE). `totalSize` is exact
 * whenever the first page holds everything; otherwise it comes from `countViews`.
 */
export const listTasks = async (deps: ReadTaskDeps, input: ListTasksInput): Promise<ListTasksResult> => {
  const after = input.pageToken === undefined ? undefined : decodePageToken(input.pageToken);
  const filter: ViewFilter = {
    owner: input.caller,
    now: deps.clock.now(),
    ...(input.contextId !== undefined && { contextId: input.contextId }),
    ...(input.status !== undefined && { state: input.status }),
    ...(input.statusTimestampAfter !== undefined && { statusTimestampAfter: input.statusTimestampAfter }),
  };
  const unfiltered =
    filter.contextId === undefined && filter.state === undefined && filter.statusTimestampAfter === undefined;
  // The unfiltered count is one small counter read: it runs alongside the page. A filtered count
  // is a COUNT query, run only when the page does not already show the whole result.
  const [page, counted] = await Promise.all([
    deps.journal.listViews({ ...filter, ...(after && { after }), limit: input.pageSize }),
    unfiltered ? deps.journal.countViews(filter) : undefined,
  ]);
  const complete = after === undefined && !page.more;
  const totalSize = complete
    ? page.views.length
    : Math.max(counted ?? (await deps.journal.countViews(filter)), page.views.length);
  const historyLength = input.historyLength ?? 0;
  const tasks = await Promise.all(
    page.views.map((view) => toTask(deps, view, { historyLength, includeArtifacts: input.includeArtifacts })),
  );
  const last = page.views.at(-1);
  return {
    tasks,
    nextPageToken:
      page.more && last
        ? encodePageToken({ statusTimestamp: last.statusTimestamp, taskId: last.taskId })
        : '',
    pageSize: input.pageSize,
    totalSize,
  };
};
