/**
 * Where a COMPLETED webhook's time goes at any concurrency (decision 0074): the floor's own reading
 * of a trace (bench/lib/latency-floor.ts `webhookRoute`) over every traced task, each step's p50
 * and p95, and COMPLETED's delivery from its queue send to the POST, split where it waits —
 * the FIFO group serves one message at a time, so COMPLETED's message is received only after
 * WORKING's has been posted, recorded (decision 0062) and deleted.
 */
import type { HopMark, HopTrace } from './hop-trace.ts';
import { type RouteStep, type StreamIntervals, webhookRoute } from './latency-floor.ts';
import { summarize } from './stats.ts';

const completed = 'TASK_STATE_COMPLETED';

const byTask = (marks: readonly HopMark[]): Map<string, HopMark[]> => {
  const tasks = new Map<string, HopMark[]>();
  for (const mark of marks) {
    const row = tasks.get(mark.taskId) ?? [];
    row.push(mark);
    tasks.set(mark.taskId, row);
  }
  return tasks;
};

const first = (marks: readonly HopMark[], test: (mark: HopMark) => boolean): HopMark | undefined =>
  marks.filter(test).sort((a, b) => a.at - b.at)[0];

/**
 * COMPLETED's path from its event put to the POST, split: the writer's view put and its fan-out
 * (push configs read, the send); behind the group's previous message (until its delivery record
 * is written, the last thing its handler does before the poller deletes it); the delete, the
 * queue's release and the long poll's answer; the handler's reads (config, watermark, events);
 * its POSTs.
 */
export interface DeliverySplit {
  readonly eventPutToViewPut: number;
  readonly viewPutToSend: number;
  readonly behindPrevious: number;
  readonly releaseToReceive: number;
  readonly receiveToEventsRead: number;
  readonly eventsReadToPost: number;
}

export const deliverySplit = (marks: readonly HopMark[]): DeliverySplit | undefined => {
  const commit = first(marks, (m) => m.hop.endsWith(': commit') && m.state === completed);
  const revision = commit?.revision;
  if (revision === undefined) return undefined;
  const send = first(marks, (m) => m.hop.endsWith(': queue send') && m.revision === revision);
  const receive = first(marks, (m) => m.hop === 'deliverer: receive' && m.revision === revision);
  const body = first(marks, (m) => m.hop === 'receiver: body' && m.state === completed);
  if (!send || !receive || !body) return undefined;
  const writer = send.hop.slice(0, send.hop.indexOf(': '));
  const eventPut = first(marks, (m) => m.hop === `${writer}: event put` && m.revision === revision);
  const viewPut = first(marks, (m) => m.hop === `${writer}: view put` && m.revision === revision);
  const read = first(
    marks,
    (m) => m.hop === 'deliverer: event read' && m.revision === revision && m.at >= receive.at,
  );
  const previous = marks
    .filter(
      (m) => m.hop === 'deliverer: delivery record' && (m.revision ?? 0) < revision && m.at <= receive.at,
    )
    .sort((a, b) => b.at - a.at)[0];
  const released = Math.max(send.at, previous?.at ?? send.at);
  const readAt = read?.at ?? receive.at;
  return {
    eventPutToViewPut: eventPut && viewPut ? viewPut.at - eventPut.at : Number.NaN,
    viewPutToSend: viewPut ? send.at - viewPut.at : Number.NaN,
    behindPrevious: released - send.at,
    releaseToReceive: receive.at - released,
    receiveToEventsRead: readAt - receive.at,
    eventsReadToPost: body.at - readAt,
  };
};

const row = (label: string, samples: readonly number[]): string => {
  const s = summarize(samples);
  return `  ${label.padEnd(92)} ${String(s.n).padStart(4)} ${s.p50.toFixed(1).padStart(8)} ${s.p95.toFixed(1).padStart(8)}`;
};

export const printWebhookTrace = (trace: HopTrace, intervals: StreamIntervals): void => {
  const tasks = byTask(trace.marks);
  const routes = new Map<string, RouteStep[][]>();
  const splits: DeliverySplit[] = [];
  for (const marks of tasks.values()) {
    const route = webhookRoute(marks, intervals);
    if (!route) continue;
    const signature = route.map((step) => step.label).join(' → ');
    routes.set(signature, [...(routes.get(signature) ?? []), route]);
    const split = deliverySplit(marks);
    if (split) splits.push(split);
  }
  console.log(`\nCOMPLETED webhook, hop by hop (${tasks.size} tasks traced): step, n, p50 ms, p95 ms`);
  for (const rows of [...routes.values()].sort((a, b) => b.length - a.length)) {
    const steps = rows[0] as RouteStep[];
    console.log(`route of ${rows.length} tasks:`);
    for (const [index, step] of steps.entries())
      console.log(
        row(
          step.label,
          rows.map((r) => (r[index] as RouteStep).ms),
        ),
      );
    console.log(
      row(
        'from the status timestamp (the sum of the steps after the first)',
        rows.map((r) => r.slice(1).reduce((total, step) => total + step.ms, 0)),
      ),
    );
  }
  console.log("COMPLETED's event put → POST, split:");
  const parts: Array<[string, keyof DeliverySplit]> = [
    ["the writer's event put → its view put", 'eventPutToViewPut'],
    ['→ its queue send (push configs read, the send)', 'viewPutToSend'],
    ["send → the group's previous message final (its delivery record written)", 'behindPrevious'],
    ['that (or the send) → the deliverer receives it (delete, the queue, the long poll)', 'releaseToReceive'],
    ['→ its journal read returned (config, watermark, events)', 'receiveToEventsRead'],
    ['→ the receiver has the POST (bodies opened, the POSTs)', 'eventsReadToPost'],
  ];
  for (const [label, key] of parts)
    console.log(
      row(
        label,
        splits.map((split) => split[key]).filter((ms) => !Number.isNaN(ms)),
      ),
    );
  const loop = trace.eventLoop();
  console.log(
    `event loop: utilisation ${(loop.utilization * 100).toFixed(0)} %, delay p50 ${loop.delayP50.toFixed(1)} ms p99 ${loop.delayP99.toFixed(1)} ms`,
  );
  console.log("the executor's and the deliverer's requests: count, p50 ms, p95 ms");
  const onPath = ([name]: [string, number[]]) =>
    name.startsWith('deliverer ') || name.startsWith('executor ');
  for (const [name, durations] of [...trace.requests].filter(onPath)) {
    const s = summarize(durations);
    console.log(
      `  ${name.padEnd(44)} ${String(s.n).padStart(6)} ${s.p50.toFixed(1).padStart(8)} ${s.p95.toFixed(1).padStart(8)}`,
    );
  }
};
