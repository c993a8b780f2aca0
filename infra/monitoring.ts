import { CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  type Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, serviceNameOf } from '../shared/adapters/metrics.ts';
import type { DeploymentConfig } from '../shared/config/config.ts';
import { type MetricName, metricCatalog } from '../shared/domain/metrics.ts';

export interface MonitoringProps {
  /** Names the alarms, the topic and the dashboard; the `installation` metric dimension. */
  readonly installation: string;
  readonly settings: DeploymentConfig['alarms'];
  /** Every function of the service, by name: an error-rate alarm each. */
  readonly functions: Readonly<Record<string, IFunction>>;
  /** The DynamoDB stream consumers, by name: an iterator-age alarm each. */
  readonly streamConsumers: Readonly<Record<string, IFunction>>;
  /** Every dead-letter queue, by name: an alarm on its first message. */
  readonly deadLetterQueues: Readonly<Record<string, IQueue>>;
  readonly runQueue: IQueue;
  readonly api: RestApi;
}

const PERIOD = Duration.minutes(5);

/**
 * Alarms, their SNS topic and the dashboard of one installation (decision 0020). Every alarm
 * notifies the topic, on ALARM and on OK; `deployment.alarms.email` subscribes an address.
 * Alarms: any message on any dead-letter queue, stream iterator age of the projector and the
 * pusher, and the error rate of every function. The dashboard shows the application metrics
 * (`a2a-serverless` namespace, emitted as EMF by the functions) next to the AWS ones.
 */
export class Monitoring extends Construct {
  readonly topic: Topic;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { installation, settings } = props;
    this.topic = new Topic(this, 'AlarmTopic', { displayName: `${installation} alarms`, enforceSSL: true });
    if (settings.email) this.topic.addSubscription(new EmailSubscription(settings.email));
    const action = new SnsAction(this.topic);
    const notify = (created: Alarm): void => {
      created.addAlarmAction(action);
      created.addOkAction(action);
      this.alarms.push(created);
    };

    for (const [name, queue] of Object.entries(props.deadLetterQueues)) {
      notify(
        queue
          .metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: PERIOD })
          .createAlarm(this, `${name}MessagesAlarm`, {
            alarmName: `${installation}-${name}-messages`,
            alarmDescription: `${name} holds a message: something failed for good. See docs/operations.md "${name}".`,
            threshold: 1,
            comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: TreatMissingData.NOT_BREACHING,
          }),
      );
    }

    for (const [name, fn] of Object.entries(props.streamConsumers)) {
      notify(
        fn
          .metric('IteratorAge', { statistic: 'Maximum', period: PERIOD })
          .createAlarm(this, `${name}IteratorAgeAlarm`, {
            alarmName: `${installation}-${name}-iterator-age`,
            alarmDescription: `The ${name} is more than ${settings.iteratorAgeSeconds} s behind its DynamoDB stream. See docs/operations.md "Iterator age".`,
            threshold: settings.iteratorAgeSeconds * 1000,
            comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluationPeriods: 1,
            treatMissingData: TreatMissingData.NOT_BREACHING,
          }),
      );
    }

    for (const [name, fn] of Object.entries(props.functions)) {
      notify(
        errorRate(fn).createAlarm(this, `${name}ErrorRateAlarm`, {
          alarmName: `${installation}-${name}-error-rate`,
          alarmDescription: `More than ${settings.errorRatePercent}% of ${name} invocations failed in 5 minutes. See docs/operations.md "Error rate".`,
          threshold: settings.errorRatePercent,
          comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: TreatMissingData.NOT_BREACHING,
        }),
      );
    }

    const app = (name: MetricName, statistic = 'Sum'): Metric =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName: name,
        dimensionsMap: { service: serviceNameOf(metricCatalog[name].emittedBy), installation },
        statistic,
        period: PERIOD,
      });
    const graph = (title: string, left: IMetric[], right: IMetric[] = []): GraphWidget =>
      new GraphWidget({ title, left, right, width: 8, height: 6 });
    const functions = Object.entries(props.functions);

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: installation,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# ${installation}\nApplication metrics: namespace \`${METRICS_NAMESPACE}\`. Alarms and what to do: docs/operations.md.`,
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 4 }),
    );
    this.dashboard.addWidgets(
      graph('Tasks by terminal state', [
        app('TasksCompleted'),
        app('TasksFailed'),
        app('TasksCanceled'),
        app('TasksRejected'),
      ]),
      graph('Refusals, tightenings, reaped and requeued runs', [
        app('Refusals'),
        app('Tightenings'),
        app('RunsReaped'),
        app('RunsRequeued'),
      ]),
      graph(
        'Projection lag and stream iterator age (ms)',
        [app('ProjectorLag', 'p50'), app('ProjectorLag', 'Maximum')],
        Object.entries(props.streamConsumers).map(([name, fn]) =>
          fn.metric('IteratorAge', { statistic: 'Maximum', period: PERIOD, label: `${name} iterator age` }),
        ),
      ),
    );
    this.dashboard.addWidgets(
      graph('Webhook pushes', [
        app('PushAttempts'),
        app('PushDelivered'),
        app('PushFailures'),
        app('PushRefused'),
      ]),
      graph(
        'Dead-letter queues (messages)',
        Object.entries(props.deadLetterQueues).map(([name, queue]) =>
          queue.metricApproximateNumberOfMessagesVisible({
            statistic: 'Maximum',
            period: PERIOD,
            label: name,
          }),
        ),
      ),
      graph(
        'Run queue',
        [props.runQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: PERIOD })],
        [props.runQueue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', period: PERIOD })],
      ),
    );
    // One task's hops in order (docs/operations.md, "Follow one task through the logs"), from the
    // metrics already emitted: API latency, run queue wait, executor duration, commit → journal,
    // journal → pusher, deliverer duration.
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'Per-stage latency of a task (ms, p50; run queue wait: oldest message, s)',
        left: [
          props.api.metricLatency({ statistic: 'p50', period: PERIOD, label: 'rpc (API latency)' }),
          ...(['executor', 'deliverer'] as const).flatMap((name) => {
            const fn = props.functions[name];
            return fn
              ? [fn.metricDuration({ statistic: 'p50', period: PERIOD, label: `${name} duration` })]
              : [];
          }),
          app('ProjectorLag', 'p50'),
          ...Object.entries(props.streamConsumers)
            .filter(([name]) => name === 'pusher')
            .map(([name, fn]) =>
              fn.metric('IteratorAge', { statistic: 'p50', period: PERIOD, label: `${name} iterator age` }),
            ),
        ],
        right: [
          props.runQueue.metricApproximateAgeOfOldestMessage({
            statistic: 'Maximum',
            period: PERIOD,
            label: 'run queue wait',
          }),
        ],
        width: 24,
        height: 6,
      }),
    );
    this.dashboard.addWidgets(
      graph(
        'Function errors',
        functions.map(([name, fn]) => fn.metricErrors({ period: PERIOD, label: name })),
      ),
      graph(
        'Function duration p95 (ms)',
        functions.map(([name, fn]) => fn.metricDuration({ statistic: 'p95', period: PERIOD, label: name })),
      ),
      graph(
        'API',
        [props.api.metricCount({ period: PERIOD }), props.api.metricServerError({ period: PERIOD })],
        [props.api.metricLatency({ statistic: 'p95', period: PERIOD })],
      ),
    );

    // Stack-level ids, so `cdk deploy` prints them under these plain names.
    new CfnOutput(Stack.of(this), 'AlarmTopicArn', {
      description: 'SNS topic every alarm notifies (subscribe more endpoints here)',
      value: this.topic.topicArn,
    });
    new CfnOutput(Stack.of(this), 'DashboardName', {
      description: 'CloudWatch dashboard of this installation',
      value: installation,
    });
  }
}

/** Errors as a percentage of invocations over 5 minutes (0 without invocations). */
const errorRate = (fn: IFunction): MathExpression =>
  new MathExpression({
    expression: 'IF(invocations > 0, 100 * errors / invocations, 0)',
    usingMetrics: {
      errors: fn.metricErrors({ statistic: 'Sum', period: PERIOD }),
      invocations: fn.metricInvocations({ statistic: 'Sum', period: PERIOD }),
    },
    period: PERIOD,
    label: 'error rate (%)',
  });
