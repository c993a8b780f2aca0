import type { TaskState } from './a2a.ts';
import { isTerminal } from './a2a.ts';
import type { TaskRecord } from './task.ts';

/**
 * The application metrics operators count and alarm on (docs/operations.md, "Application metrics"). A metric
 * is a name, a unit and the function that emits it; it never carries an id, a text or any other content
 * (docs/security.md), so the port takes a name from this list and a number, nothing else.
 */
export const metricCatalog = {
  /** A task reached a terminal state (counted once per committed revision, by the projector). */
  TasksCompleted: { unit: 'Count', emittedBy: 'projector' },
  TasksFailed: { unit: 'Count', emittedBy: 'projector' },
  TasksCanceled: { unit: 'Count', emittedBy: 'projector' },
  TasksRejected: { unit: 'Count', emittedBy: 'projector' },
  /** Commit → projection: now minus the stream record's approximate creation time (1 s precision). */
  ProjectorLag: { unit: 'Milliseconds', emittedBy: 'projector' },
  /** I-REFUSE: a message refused RESULT_NOT_RETAINABLE before any task exists. */
  Refusals: { unit: 'Count', emittedBy: 'rpc' },
  /** I-TIGHTEN: a provider attempt tightened a run's ceilings. */
  Tightenings: { unit: 'Count', emittedBy: 'executor' },
  /** A RUNNING run whose lease expired was settled FAILED (an executor crashed or timed out). */
  RunsReaped: { unit: 'Count', emittedBy: 'reaper' },
  RunsRequeued: { unit: 'Count', emittedBy: 'reaper' },
  /** One delivery message (one revision to one webhook) taken up, retries included. */
  PushAttempts: { unit: 'Count', emittedBy: 'deliverer' },
  PushDelivered: { unit: 'Count', emittedBy: 'deliverer' },
  /** An attempt that failed and will be retried (after maxReceiveCount: the delivery DLQ). */
  PushFailures: { unit: 'Count', emittedBy: 'deliverer' },
  /** The SSRF guard refused the webhook address: dropped, never retried. */
  PushRefused: { unit: 'Count', emittedBy: 'deliverer' },
} as const satisfies Record<string, { unit: 'Count' | 'Milliseconds'; emittedBy: string }>;

export type MetricName = keyof typeof metricCatalog;

/** Where use cases count what operators watch; absent in tests that do not care. */
export interface Metrics {
  add(name: MetricName, value?: number): void;
}

const terminalMetrics: Readonly<Partial<Record<TaskState, MetricName>>> = {
  TASK_STATE_COMPLETED: 'TasksCompleted',
  TASK_STATE_FAILED: 'TasksFailed',
  TASK_STATE_CANCELED: 'TasksCanceled',
  TASK_STATE_REJECTED: 'TasksRejected',
};

/** The metric of a committed revision that ends its task; undefined for every other revision. */
export const taskEndMetric = (
  oldImage: Pick<TaskRecord, 'state'> | undefined,
  newImage: Pick<TaskRecord, 'state'> | undefined,
): MetricName | undefined => {
  if (newImage === undefined || !isTerminal(newImage.state)) return undefined;
  if (oldImage !== undefined && isTerminal(oldImage.state)) return undefined;
  return terminalMetrics[newImage.state];
};
