import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLambdaContext } from '../../infra/local/lambda-invocation.ts';
import {
  createFunctionMetrics,
  METRICS_NAMESPACE,
  recordProjection,
  serviceNameOf,
} from '../../shared/adapters/metrics.ts';
import { scheduledFunction } from '../../shared/adapters/middy-presets.ts';
import { createLogger } from '../../shared/adapters/powertools-logger.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { executeRun } from '../../shared/app/runs/execute-run.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { ResultNotRetainableError } from '../../shared/domain/errors.ts';
import { type MetricName, metricCatalog, taskEndMetric } from '../../shared/domain/metrics.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
import { type CapturedOutput, captureOutput } from '../support/captured-output.ts';
import { alice, createCore, testConfig, userMessage } from '../support/core-fixture.ts';

/** Where Lambda's log lines and EMF go. */
let output: CapturedOutput;

beforeEach(() => {
  output = captureOutput();
});

afterEach(() => {
  output.restore();
});

interface EmfLine {
  readonly _aws: {
    readonly CloudWatchMetrics: ReadonlyArray<{
      readonly Namespace: string;
      readonly Dimensions: string[][];
      readonly Metrics: ReadonlyArray<{ readonly Name: string; readonly Unit: string }>;
    }>;
  };
  readonly [key: string]: unknown;
}

const emfLines = (): EmfLine[] =>
  output.chunks
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"_aws"'))
    .map((line) => JSON.parse(line) as EmfLine);

/** Sum of one metric over every EMF line written. */
const total = (name: MetricName): number =>
  emfLines().reduce((sum, line) => {
    const value = line[name];
    if (value === undefined) return sum;
    return sum + [value].flat().reduce((a: number, b) => a + Number(b), 0);
  }, 0);

const deployed = { installation: 'a2a-test', localMode: false };

describe('taskEndMetric', () => {
  const at = (state: StoredTask['state']) => ({ state });

  it('counts the revision that ends a task, by its terminal state, once', () => {
    expect(taskEndMetric(at('TASK_STATE_WORKING'), at('TASK_STATE_COMPLETED'))).toBe('TasksCompleted');
    expect(taskEndMetric(at('TASK_STATE_WORKING'), at('TASK_STATE_FAILED'))).toBe('TasksFailed');
    expect(taskEndMetric(at('TASK_STATE_INPUT_REQUIRED'), at('TASK_STATE_CANCELED'))).toBe('TasksCanceled');
    expect(taskEndMetric(undefined, at('TASK_STATE_REJECTED'))).toBe('TasksRejected');
    // A later rewrite of an ended task (a scrub, a purge) ends nothing.
    expect(taskEndMetric(at('TASK_STATE_COMPLETED'), at('TASK_STATE_COMPLETED'))).toBeUndefined();
    expect(taskEndMetric(at('TASK_STATE_SUBMITTED'), at('TASK_STATE_WORKING'))).toBeUndefined();
    expect(taskEndMetric(at('TASK_STATE_WORKING'), at('TASK_STATE_INPUT_REQUIRED'))).toBeUndefined();
    expect(taskEndMetric(at('TASK_STATE_COMPLETED'), undefined)).toBeUndefined();
  });
});

describe('createFunctionMetrics', () => {
  it('writes one EMF line per flush: namespace, the service and installation dimensions, the catalog unit', () => {
    const metrics = createFunctionMetrics(deployed, 'projector', {});
    metrics.add('TasksCompleted');
    metrics.add('ProjectorLag', 1200);
    metrics.add('ProjectorLag', 800);
    metrics.flush();
    metrics.flush();
    const lines = emfLines();
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line?._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: METRICS_NAMESPACE,
        Dimensions: [['service', 'installation']],
        Metrics: [
          { Name: 'TasksCompleted', Unit: metricCatalog.TasksCompleted.unit },
          { Name: 'ProjectorLag', Unit: 'Milliseconds' },
        ],
      },
    ]);
    expect(line).toMatchObject({
      service: serviceNameOf('projector'),
      installation: 'a2a-test',
      TasksCompleted: 1,
      ProjectorLag: [1200, 800],
    });
  });

  it('writes nothing in local mode unless POWERTOOLS_METRICS_DISABLED=false, and nothing when disabled', () => {
    for (const [localMode, env, expected] of [
      [true, {}, 0],
      [true, { POWERTOOLS_METRICS_DISABLED: 'false' }, 1],
      [false, { POWERTOOLS_METRICS_DISABLED: 'true' }, 0],
    ] as const) {
      output.chunks.length = 0;
      const metrics = createFunctionMetrics({ installation: 'x', localMode }, 'rpc', env);
      metrics.add('Refusals');
      metrics.flush();
      expect(emfLines(), JSON.stringify({ localMode, env })).toHaveLength(expected);
    }
  });

  it('flushes through the preset when the handler throws, and the error still reaches the caller', async () => {
    const metrics = createFunctionMetrics(deployed, 'deliverer', {});
    let fail = true;
    const handler = scheduledFunction(
      { logger: createLogger('a2a-deliverer', { logLevel: 'SILENT' }), metrics },
      async () => {
        metrics.add('PushAttempts');
        if (fail) throw new Error('boom');
        return 'ok';
      },
    );
    const context = createLambdaContext({ functionName: 'deliverer' });
    await expect(handler(undefined, context)).rejects.toThrow('boom');
    fail = false;
    expect(await handler(undefined, context)).toBe('ok');
    expect(emfLines()).toHaveLength(2);
    expect(total('PushAttempts')).toBe(2);
  });
});

describe('recordProjection', () => {
  const task = (state: StoredTask['state'], revision: number) =>
    ({ taskId: 't', state, revision }) as unknown as StoredTask;

  it('records the lag of every record and the end of a task only when its revision was written', () => {
    const metrics = createFunctionMetrics(deployed, 'projector', {});
    const now = new Date('2026-01-01T00:00:10Z');
    const record = { dynamodb: { ApproximateCreationDateTime: Date.parse('2026-01-01T00:00:07Z') / 1000 } };
    const ending = { oldImage: task('TASK_STATE_WORKING', 2), newImage: task('TASK_STATE_COMPLETED', 3) };
    recordProjection(metrics, record, ending, 'written', now);
    recordProjection(metrics, record, ending, 'duplicate', now);
    recordProjection(metrics, {}, ending, 'skipped', now);
    metrics.flush();
    expect(emfLines()[0]).toMatchObject({ ProjectorLag: [3000, 3000], TasksCompleted: 1 });
  });
});

describe('no content in logs or metrics', () => {
  const MARKER = 'MARKER-7f3a-do-not-log';

  it('counts refusals, tightenings and task ends while no log line or metric carries the content', async () => {
    const config = testConfig({
      profiles: {
        default: { name: 'Echo', description: 'Echo agent', providers: ['local'] },
        'to-strict': { name: 'Fallback strict', description: 'x', providers: ['failing', 'strict'] },
        refused: { name: 'Refused', description: 'x', providers: ['strict'] },
      },
    });
    const core = createCore({ config });
    const logger = createLogger('a2a-test', { logLevel: 'DEBUG' });
    const rpcMetrics = createFunctionMetrics(deployed, 'rpc', {});
    const executorMetrics = createFunctionMetrics(deployed, 'executor', {});
    const projectorMetrics = createFunctionMetrics(deployed, 'projector', {});
    const deps = { ...core.deps, logger, metrics: rpcMetrics };
    const send = (profileId: string) =>
      createTask(deps, {
        caller: alice,
        profileId,
        message: userMessage(`${MARKER} in a text part`, {
          parts: [{ text: MARKER }, { data: { secret: MARKER } }],
          metadata: { note: MARKER },
        }),
      });

    await expect(send('refused')).rejects.toBeInstanceOf(ResultNotRetainableError);
    const completed = await send('default');
    const tightened = await send('to-strict');
    rpcMetrics.flush();

    const images = new Map<string, StoredTask>();
    const project = async () => {
      for (const task of core.tasks.tasks.values()) {
        const before = images.get(task.taskId);
        if (before?.revision === task.revision) continue;
        const result = await projectRecord(core.journal, before, task);
        recordProjection(projectorMetrics, { dynamodb: {} }, { oldImage: before, newImage: task }, result);
        logger.debug('record projected', { taskId: task.taskId, revision: task.revision, result });
        images.set(task.taskId, task);
      }
    };
    await project();
    for (const message of core.queued.splice(0)) {
      const result = await executeRun({ ...core.deps, logger, metrics: executorMetrics }, message);
      logger.info('run handled', { taskId: message.taskId, runId: message.runId, result });
      await project();
    }
    executorMetrics.flush();
    projectorMetrics.flush();

    expect(core.tasks.tasks.get(completed.taskId)?.state).toBe('TASK_STATE_COMPLETED');
    expect(core.tasks.tasks.get(tightened.taskId)?.state).toBe('TASK_STATE_FAILED');
    expect(total('Refusals')).toBe(1);
    expect(total('Tightenings')).toBe(1);
    expect(total('TasksCompleted')).toBe(1);
    expect(total('TasksFailed')).toBe(1);
    // The log lines exist (the test looks at real output) and carry ids, never the content.
    const text = output.chunks.join('');
    expect(text).toContain('"run handled"');
    expect(text).toContain(completed.taskId);
    expect(text).not.toContain(MARKER);
  });
});
