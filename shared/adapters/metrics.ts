import { Metrics as PowertoolsMetrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBRecord } from 'aws-lambda';
import type { ProjectResult } from '../app/project-record.ts';
import type { RuntimeEnv } from '../config/runtime-env.ts';
import { type MetricName, type Metrics, metricCatalog, taskEndMetric } from '../domain/metrics.ts';
import type { StoredTask } from '../domain/projection.ts';

/**
 * Application metrics as CloudWatch embedded metric format (EMF) lines on stdout, through
 * Powertools Metrics (decision 0020). One instance per function, flushed once per invocation by
 * `withMetrics`; CloudWatch Logs turns each line into metric data. The dimensions are the
 * function's `service` (`a2a-<function>`) and the `installation`: never an id or content.
 */

export const METRICS_NAMESPACE = 'a2a-serverless';

/** The `service` dimension (and POWERTOOLS_SERVICE_NAME) of a function. */
export const serviceNameOf = (functionName: string): string => `a2a-${functionName}`;

export interface FunctionMetrics extends Metrics {
  /** Writes what was added since the last flush as one EMF line; nothing when nothing was added. */
  flush(): void;
}

const isTrue = (value: string): boolean => ['1', 'true', 'yes', 'on'].includes(value.trim().toLowerCase());

/**
 * Local mode (`npm start`, tests) keeps stdout free of EMF lines unless POWERTOOLS_METRICS_DISABLED
 * says otherwise explicitly; a deployment publishes unless it says `true`.
 */
const publishes = (localMode: boolean, processEnv: NodeJS.ProcessEnv): boolean => {
  const disabled = processEnv.POWERTOOLS_METRICS_DISABLED;
  return disabled === undefined || disabled === '' ? !localMode : !isTrue(disabled);
};

export const createFunctionMetrics = (
  env: Pick<RuntimeEnv, 'installation' | 'localMode'>,
  functionName: string,
  processEnv: NodeJS.ProcessEnv = process.env,
): FunctionMetrics => {
  const metrics = new PowertoolsMetrics({
    namespace: METRICS_NAMESPACE,
    serviceName: serviceNameOf(functionName),
    defaultDimensions: { installation: env.installation },
  });
  const enabled = publishes(env.localMode, processEnv);
  return {
    add: (name: MetricName, value = 1) => {
      metrics.addMetric(name, metricCatalog[name].unit, value);
    },
    flush: () => {
      try {
        if (enabled && metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
        else metrics.clearMetrics();
      } catch {
        // Metrics are for operators: a failure to write them never fails the invocation.
        metrics.clearMetrics();
      }
    },
  };
};

/** The handler, with the metrics it added flushed when it returns or throws. */
export const withMetrics =
  <A extends unknown[], R>(metrics: FunctionMetrics, handler: (...args: A) => Promise<R>) =>
  async (...args: A): Promise<R> => {
    try {
      return await handler(...args);
    } finally {
      metrics.flush();
    }
  };

/** The projector's metrics of one stream record: its lag, and the task end a written revision commits. */
export const recordProjection = (
  metrics: Metrics,
  record: Pick<DynamoDBRecord, 'dynamodb'>,
  images: { readonly oldImage: StoredTask | undefined; readonly newImage: StoredTask | undefined },
  result: ProjectResult,
  now: Date = new Date(),
): void => {
  const createdSeconds = record.dynamodb?.ApproximateCreationDateTime;
  if (createdSeconds !== undefined) {
    metrics.add('ProjectorLag', Math.max(0, now.getTime() - createdSeconds * 1000));
  }
  if (result !== 'written') return;
  const ended = taskEndMetric(images.oldImage, images.newImage);
  if (ended !== undefined) metrics.add(ended);
};
