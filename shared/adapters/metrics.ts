import { Metrics as PowertoolsMetrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBRecord } from 'aws-lambda';
import type { RuntimeEnv } from '../config/runtime-env.ts';
import { type MetricName, type Metrics, metricCatalog, taskEndMetric } from '../domain/metrics.ts';
import type { ProjectResult, StoredTask } from '../domain/projection.ts';

/**
 * Application metrics as CloudWatch embedded metric format (EMF) lines on stdout, through
 * Powertools Metrics (docs/operations.md, "Application metrics"). One instance per function, flushed once per
 * invocation by the `logMetrics` middleware of its preset (middy-presets.ts); CloudWatch Logs turns each line
 * into metric data. The dimensions are the function's `service` (`a2a-<function>`) and the `installation`:
 * never an id or content.
 */

export const METRICS_NAMESPACE = 'a2a-serverless';

/** The `service` dimension (and POWERTOOLS_SERVICE_NAME) of a function. */
export const serviceNameOf = (functionName: string): string => `a2a-${functionName}`;

/**
 * Powertools Metrics as the domain's `Metrics` port. The function presets (middy-presets.ts) flush
 * it once per invocation with Powertools' `logMetrics` middleware, which calls
 * `publishStoredMetrics`: here that writes one EMF line when something was added and publishing is
 * on, stays silent otherwise (no "no metrics" warning on every quiet invocation), and never throws.
 */
export class FunctionMetrics extends PowertoolsMetrics implements Metrics {
  constructor(
    functionName: string,
    installation: string,
    private readonly enabled: boolean,
  ) {
    super({
      namespace: METRICS_NAMESPACE,
      serviceName: serviceNameOf(functionName),
      defaultDimensions: { installation },
    });
  }

  add(name: MetricName, value = 1): void {
    this.addMetric(name, metricCatalog[name].unit, value);
  }

  /** Writes what was added since the last flush as one EMF line; nothing when nothing was added. */
  flush(): void {
    try {
      if (this.enabled && this.hasStoredMetrics()) super.publishStoredMetrics();
      else this.clearMetrics();
    } catch {
      // Metrics are for operators: a failure to write them never fails the invocation.
      this.clearMetrics();
    }
  }

  override publishStoredMetrics(): this {
    this.flush();
    return this;
  }
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
): FunctionMetrics =>
  new FunctionMetrics(functionName, env.installation, publishes(env.localMode, processEnv));

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
