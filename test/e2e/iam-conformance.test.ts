import { randomUUID } from 'node:crypto';
import { createValidatedPolicy } from '@cloud-copilot/iam-policy';
import { runUnsafeSimulation } from '@cloud-copilot/iam-simulate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { KMS_PURPOSE } from '../../shared/adapters/kms-sealer.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { rpc } from '../conformance/sse.ts';
import { type AwsCallRecorder, type RecordedCall, recordAwsCalls } from '../support/aws-call-recorder.ts';
import {
  type InstallationPolicies,
  type PolicyDocument,
  synthesizedPolicies,
} from '../support/iam-policies.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { type McpServerProcess, startMcpTestServer } from '../support/mcp-server-process.ts';
import { expectStackWarnings } from '../support/stack-log.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

// Its failpoints make the stack warn on purpose: those lines are kept for a failure.
expectStackWarnings();

/**
 * Deployed as tested (docs/security.md, control 8): every AWS API call each function of the local
 * stack makes while the tests below drive it — DynamoDB items, each part of a transaction and of a
 * batch, index queries, streams, SQS, KMS with its encryption context — is evaluated against that
 * function's policies in the synthesized template, with the content key's key policy and the
 * queues' policies as resource policies. A call the policies would deny fails; so does a granted
 * action that no call used and that has no reason below (least privilege, both ways).
 *
 * The evaluator is `@cloud-copilot/iam-simulate` (AGPL-3.0, a devDependency used by this test
 * only; nothing of it is bundled or deployed). Its validating entry point ignores
 * `kms:EncryptionContext:<key>` condition keys, so the unvalidated one (`runUnsafeSimulation`)
 * evaluates them; the test proves that it does (a foreign installation's context is denied).
 *
 * A profile calls a write tool of an MCP server (the test server, in its own process) in a
 * blocking run (the rpc) and a queued one (the executor): the fence on the run row is theirs to
 * write. Its API key is a Secrets Manager secret where deployed, the environment here.
 */

const region = 'us-east-1';
const account = '000000000000';

const mcpSecret = `arn:aws:secretsmanager:${region}:${account}:secret:mcp/tools-??????`;
const mcpKey = 'iam-conformance-mcp-key';
const configWith = (mcpUrl: string) =>
  parseConfig({
    privacy: { level: 'metadata' },
    providers: {
      echo: { type: 'scripted', behavior: 'echo' },
      tck: { type: 'scripted', behavior: 'tck' },
      noter: { type: 'scripted', behavior: 'call-tool', tool: 'tools__append_note' },
    },
    profiles: {
      default: { name: 'Echo', description: 'echo', providers: ['echo'], privacyLevel: 'full' },
      tck: { name: 'TCK', description: 'TCK scenarios', providers: ['tck'], privacyLevel: 'full' },
      tools: {
        name: 'Tools',
        description: 'Calls an MCP tool',
        providers: ['noter'],
        privacyLevel: 'full',
        mcp: { tools: { tools: { append_note: {} } } },
      },
    },
    mcpServers: {
      tools: {
        url: mcpUrl,
        headers: { 'x-api-key': { env: 'IAM_CONFORMANCE_MCP_KEY', secret: { secretId: 'mcp/tools' } } },
      },
    },
    webhooks: { retryBaseSeconds: 1 },
    streaming: { heartbeatSeconds: 1 },
  });
let config: ReturnType<typeof configWith>;

/**
 * Granted actions no test here exercises, each with why it is granted. Keyed
 * `<function> <action> <resource>` with the resource's short name.
 */
const unexercisedGrants: Record<string, string> = {
  'deliverer sqs:GetQueueAttributes queue/DeliveryQueue':
    "Lambda's event source mapping polls the queue with the function's role: CDK's SqsEventSource grants what AWS documents for it; the local poller knows the queue's URL and ARN and never asks",
  'deliverer sqs:GetQueueUrl queue/DeliveryQueue':
    "Lambda's event source mapping polls the queue with the function's role: CDK's SqsEventSource grants what AWS documents for it; the local poller knows the queue's URL and ARN and never asks",
  'executor dynamodb:DeleteItem table/Audit':
    "the run's audit rows: a lost start-slot race reads the slot's kind (GetItem); a fallback that tightens the ceiling scrubs the run's rows (Query, UpdateItem, DeleteItem; decision 0010), driven by test/e2e/privacy.test.ts",
  'executor dynamodb:DeleteItem table/State':
    'content chunks of large content (docs/data-model.md "Large content"): PutItem in a writing transaction, DeleteItem of the history chunks a rewrite drops; test/e2e/large-content.test.ts drives them',
  'executor dynamodb:GetItem table/Audit':
    "the run's audit rows: a lost start-slot race reads the slot's kind (GetItem); a fallback that tightens the ceiling scrubs the run's rows (Query, UpdateItem, DeleteItem; decision 0010), driven by test/e2e/privacy.test.ts",
  'executor dynamodb:PutItem table/State':
    'content chunks of large content (docs/data-model.md "Large content"): PutItem in a writing transaction, DeleteItem of the history chunks a rewrite drops; test/e2e/large-content.test.ts drives them',
  'executor dynamodb:Query table/Audit':
    "the run's audit rows: a lost start-slot race reads the slot's kind (GetItem); a fallback that tightens the ceiling scrubs the run's rows (Query, UpdateItem, DeleteItem; decision 0010), driven by test/e2e/privacy.test.ts",
  'executor dynamodb:UpdateItem table/Audit':
    "the run's audit rows: a lost start-slot race reads the slot's kind (GetItem); a fallback that tightens the ceiling scrubs the run's rows (Query, UpdateItem, DeleteItem; decision 0010), driven by test/e2e/privacy.test.ts",
  'executor dynamodb:UpdateItem table/Journal':
    "the owner's ListTasks counters move by UpdateItem in the view's transaction when a revision changes what they count; the rpc's creates move them here",
  'executor sqs:ChangeMessageVisibility queue/RunQueue':
    "Lambda's event source mapping polls the queue with the function's role: CDK's SqsEventSource grants what AWS documents for it; the local poller knows the queue's URL and ARN and never asks",
  'executor sqs:GetQueueAttributes queue/RunQueue':
    "Lambda's event source mapping polls the queue with the function's role: CDK's SqsEventSource grants what AWS documents for it; the local poller knows the queue's URL and ARN and never asks",
  'executor sqs:GetQueueUrl queue/RunQueue':
    "Lambda's event source mapping polls the queue with the function's role: CDK's SqsEventSource grants what AWS documents for it; the local poller knows the queue's URL and ARN and never asks",
  'projector dynamodb:GetItem table/Journal':
    "the backstop's `projected` and the view's reread after a lost conditional view write (a write-through got there first)",
  'projector dynamodb:ListStreams table/State/stream':
    "CDK's DynamoEventSource grant: Lambda's event source mapping lists the table's streams; the local poller is given the stream ARN",
  'projector sqs:GetQueueAttributes queue/ProjectorDlq':
    "the stream mapping's on-failure destination (SqsDlq): Lambda sends a failed batch's coordinates there after its retries; test/integration/dlq-replay.test.ts drives it",
  'projector sqs:GetQueueUrl queue/ProjectorDlq':
    "the stream mapping's on-failure destination (SqsDlq): Lambda sends a failed batch's coordinates there after its retries; test/integration/dlq-replay.test.ts drives it",
  'projector sqs:SendMessage queue/ProjectorDlq':
    "the stream mapping's on-failure destination (SqsDlq): Lambda sends a failed batch's coordinates there after its retries; test/integration/dlq-replay.test.ts drives it",
  'pusher dynamodb:ListStreams table/Journal/stream':
    "CDK's DynamoEventSource grant: Lambda's event source mapping lists the table's streams; the local poller is given the stream ARN",
  'pusher sqs:GetQueueAttributes queue/PusherDlq':
    "the stream mapping's on-failure destination (SqsDlq): Lambda sends a failed batch's coordinates there after its retries; test/integration/dlq-replay.test.ts drives it",
  'pusher sqs:GetQueueUrl queue/PusherDlq':
    "the stream mapping's on-failure destination (SqsDlq): Lambda sends a failed batch's coordinates there after its retries; test/integration/dlq-replay.test.ts drives it",
  'pusher sqs:SendMessage queue/PusherDlq':
    "the stream mapping's on-failure destination (SqsDlq): Lambda sends a failed batch's coordinates there after its retries; test/integration/dlq-replay.test.ts drives it",
  'reaper dynamodb:DeleteItem table/Audit':
    "a claimed run's start slots (decision 0072): a slot taken for a requeue that fails is freed again",
  'reaper dynamodb:DeleteItem table/State':
    'a FAILED revision goes through the writers\' one transaction builder: content chunks of large content (docs/data-model.md "Large content"): PutItem in a writing transaction, DeleteItem of the history chunks a rewrite drops; test/e2e/large-content.test.ts drives them',
  'reaper dynamodb:GetItem table/Audit':
    "a claimed run's start slots (decision 0072): a lost race reads the slot's kind",
  'reaper dynamodb:PutItem table/State':
    'a FAILED revision goes through the writers\' one transaction builder: content chunks of large content (docs/data-model.md "Large content"): PutItem in a writing transaction, DeleteItem of the history chunks a rewrite drops; test/e2e/large-content.test.ts drives them',
  'reaper dynamodb:Query table/State':
    "a task's push configs (a query of its partition) for the direct fan-out of the FAILED revision it projected",
  'reaper dynamodb:UpdateItem table/Journal':
    "the owner's ListTasks counters move by UpdateItem in the view's transaction when a revision changes what they count; the rpc's creates move them here",
  'reaper sqs:SendMessage queue/DeliveryQueue':
    "the direct fan-out of a FAILED revision to the task's webhooks (decision 0061); here the pusher may queue it first",
  [`executor secretsmanager:GetSecretValue ${mcpSecret}`]:
    "an MCP server's credential (mcpServers.tools.headers.x-api-key.secret), read through the Parameters and Secrets extension in Lambda only; the local stack reads the environment variable the same credential names",
  [`rpc secretsmanager:GetSecretValue ${mcpSecret}`]:
    "the rpc runs blocking sends' runs and their tool calls (docs/configuration.md `deployment.blockingRunsInRpc`): an MCP server's credential, read through the Parameters and Secrets extension in Lambda only; the local stack reads the environment variable",
  'rpc dynamodb:DeleteItem table/Audit':
    "the rpc runs blocking sends' runs (decision 0091): the run's audit rows: a lost start-slot race reads the slot's kind (GetItem); a fallback that tightens the ceiling scrubs the run's rows (Query, UpdateItem, DeleteItem; decision 0010), driven by test/e2e/privacy.test.ts",
  'rpc dynamodb:GetItem table/Audit':
    "the rpc runs blocking sends' runs (decision 0091): the run's audit rows: a lost start-slot race reads the slot's kind (GetItem); a fallback that tightens the ceiling scrubs the run's rows (Query, UpdateItem, DeleteItem; decision 0010), driven by test/e2e/privacy.test.ts",
  'rpc dynamodb:Query table/Audit':
    "the rpc runs blocking sends' runs (decision 0091): the run's audit rows: a lost start-slot race reads the slot's kind (GetItem); a fallback that tightens the ceiling scrubs the run's rows (Query, UpdateItem, DeleteItem; decision 0010), driven by test/e2e/privacy.test.ts",
  'rpc dynamodb:UpdateItem table/Audit':
    "the rpc runs blocking sends' runs (decision 0091): the run's audit rows: a lost start-slot race reads the slot's kind (GetItem); a fallback that tightens the ceiling scrubs the run's rows (Query, UpdateItem, DeleteItem; decision 0010), driven by test/e2e/privacy.test.ts",
};

let stack: LocalStack;
let recorder: AwsCallRecorder;
let policies: InstallationPolicies;
let receiver: WebhookReceiver;
let mcp: McpServerProcess;

beforeAll(async () => {
  mcp = await startMcpTestServer({ apiKey: mcpKey });
  process.env.IAM_CONFORMANCE_MCP_KEY = mcpKey;
  config = configWith(mcp.url);
  const endpoints = providedEndpoints();
  // The key id is known only once the stack created it; a Decrypt names it through its ciphertext.
  const scope = { region, account, defaultKeyArn: '' };
  recorder = recordAwsCalls(scope);
  stack = await startLocalStack({
    config,
    endpoints,
    prefix: `e2e-iam-${randomUUID().slice(0, 8)}`,
    log: () => {},
    reaperIntervalMs: 300,
    runLeaseMs: 1_500,
    // The first queued run's executor fails right after its claim (the reaper queues it again),
    // the second's before its settle (the reaper settles it FAILED).
    failpoints: 'executor.afterClaim=#1,executor.beforeSettle=#1',
    observePollerClients: (client, fn) => recorder.observe(client, fn),
  });
  Object.assign(scope, {
    defaultKeyArn: `arn:aws:kms:${region}:${account}:key/${stack.resources.key.keyId}`,
  });
  policies = synthesizedPolicies(config, stack.resources, scope);
  // Fails each webhook path's first POST: the deliverer retries it later (backoff).
  const failedOnce = new Set<string>();
  receiver = await startWebhookReceiver({
    respond: (post) => {
      if (failedOnce.has(post.path)) return 200;
      failedOnce.add(post.path);
      return 503;
    },
  });
});
afterAll(async () => {
  await stack?.stop();
  recorder?.uninstall();
  await Promise.all([receiver?.close(), mcp?.stop()]);
  delete process.env.IAM_CONFORMANCE_MCP_KEY;
});

const agent = (profile: string) => `${stack.baseUrl}/agents/${profile}`;

const call = async (profile: string, method: string, params: unknown): Promise<Record<string, unknown>> => {
  const answer = await rpc(agent(profile), method, params);
  if (answer.kind === 'sse') {
    for await (const _ of answer.frames);
    return {};
  }
  if (answer.body.error) throw new Error(`${method}: ${JSON.stringify(answer.body.error)}`);
  return (answer.body.result ?? {}) as Record<string, unknown>;
};

const message = (messageId: string, extra: Record<string, unknown> = {}) => ({
  message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hello' }], ...extra },
});

const taskOf = (result: Record<string, unknown>) => result.task as { id: string; status: { state: string } };

const waitFor = async (what: string, ready: () => Promise<boolean> | boolean, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((wake) => setTimeout(wake, 100));
  }
};

/** Drives every path a caller can reach: blocking, queued, streamed, follow-ups, push configs, webhooks, cancel, a reaped run. */
const driveTheStack = async (): Promise<void> => {
  // A queued run whose executor fails after its claim: the reaper settles or requeues it.
  const reaped = taskOf(
    await call('default', 'SendMessage', {
      ...message(`m-${randomUUID()}`),
      configuration: { returnImmediately: true },
    }),
  );
  // Blocking (the rpc runs it), non-blocking (the executor), streamed.
  taskOf(await call('default', 'SendMessage', message(`m-${randomUUID()}`)));
  const queued = taskOf(
    await call('default', 'SendMessage', {
      ...message(`m-${randomUUID()}`),
      configuration: {
        returnImmediately: true,
        taskPushNotificationConfig: { url: `${receiver.url}/inline` },
      },
    }),
  );
  await call('tck', 'SendStreamingMessage', message(`tck-stream-001-${randomUUID()}`));
  // A fenced MCP write call in a blocking run (the rpc) and in a queued one (the executor).
  const note = (text: string) => ({
    message: {
      messageId: `m-${randomUUID()}`,
      role: 'ROLE_USER',
      parts: [{ text: JSON.stringify({ text }) }],
    },
  });
  expect(taskOf(await call('tools', 'SendMessage', note('blocking'))).status.state).toBe(
    'TASK_STATE_COMPLETED',
  );
  const noted = taskOf(
    await call('tools', 'SendMessage', { ...note('queued'), configuration: { returnImmediately: true } }),
  );
  // A conversation: input required, push configs, the follow-up completes it; webhooks delivered.
  const waiting = taskOf(await call('tck', 'SendMessage', message(`tck-input-required-${randomUUID()}`)));
  const hook = await call('tck', 'CreateTaskPushNotificationConfig', {
    taskId: waiting.id,
    url: `${receiver.url}/hook`,
  });
  const doomed = await call('tck', 'CreateTaskPushNotificationConfig', {
    taskId: waiting.id,
    url: `${receiver.url}/doomed`,
  });
  await call('tck', 'GetTaskPushNotificationConfig', { taskId: waiting.id, id: hook.id });
  await call('tck', 'ListTaskPushNotificationConfigs', { taskId: waiting.id });
  await call('tck', 'DeleteTaskPushNotificationConfig', { taskId: waiting.id, id: doomed.id });
  await call('tck', 'SendMessage', message(`tck-complete-task-${randomUUID()}`, { taskId: waiting.id }));
  // Read paths: GetTask, ListTasks, a subscription to a live task, cancel.
  await call('default', 'GetTask', { id: queued.id, historyLength: 5 });
  await call('tck', 'ListTasks', { pageSize: 10 });
  const cancelable = taskOf(await call('tck', 'SendMessage', message(`tck-input-required-${randomUUID()}`)));
  await call('tck', 'CancelTask', { id: cancelable.id });
  await receiver.waitFor(
    (posts) => ['/hook', '/inline'].every((path) => posts.some((post) => post.path === path)),
    60_000,
  );
  await waitFor('the queued tool call', async () => {
    const task = taskOf({ task: await call('tools', 'GetTask', { id: noted.id }) });
    return task.status.state === 'TASK_STATE_COMPLETED';
  });
  expect((await mcp.calls()).map((sent) => sent.arguments)).toEqual([
    { text: 'blocking' },
    { text: 'queued' },
  ]);
  await waitFor(
    'the reaper to take the crashed run over',
    async () => {
      const task = taskOf({ task: await call('default', 'GetTask', { id: reaped.id }) });
      return task.status.state !== 'TASK_STATE_WORKING' && task.status.state !== 'TASK_STATE_SUBMITTED';
    },
    60_000,
  );
  // Let the stream consumers (projector, pusher) catch up with the last revisions.
  await new Promise((wake) => setTimeout(wake, 2_000));
};

/** The IAM decision for one recorded call. */
const decide = (recorded: RecordedCall, identityPolicies: PolicyDocument[]): string => {
  const resourcePolicy = policies.resourcePolicies[recorded.resource];
  const result = runUnsafeSimulation(
    {
      request: {
        principal: `arn:aws:iam::${account}:role/${recorded.fn}`,
        action: recorded.action,
        resource: { resource: recorded.resource, accountId: account },
        contextVariables: { ...recorded.context },
      },
      identityPolicies: identityPolicies.map((policy, index) => ({
        name: `${recorded.fn}-${index}`,
        policy,
      })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      ...(resourcePolicy
        ? { resourcePolicy: createValidatedPolicy(resourcePolicy, () => [], { name: 'resource-policy' }) }
        : {}),
    },
    {},
  );
  return result;
};

const shortName = (arn: string): string => {
  const [base, index] = arn.split('/index/');
  const name = policies.names.get(base ?? arn) ?? arn;
  return index ? `${name}/index/${index}` : name;
};

const asList = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** `*` and `?` of an IAM resource pattern. */
const matches = (pattern: string, value: string): boolean =>
  new RegExp(
    `^${pattern
      .split('')
      .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
      .join('')}$`,
  ).test(value);

describe('IAM conformance: the local stack calls AWS only as the synthesized policies allow', () => {
  it('evaluates the KMS encryption context (the evaluator is not vacuous)', () => {
    const key = `arn:aws:kms:${region}:${account}:key/${stack.resources.key.keyId}`;
    const context = (installation: string) => ({
      'kms:CallerAccount': account,
      'kms:EncryptionContextKeys': ['installation', 'purpose'],
      'kms:EncryptionContext:installation': installation,
      'kms:EncryptionContext:purpose': KMS_PURPOSE,
    });
    const request = (installation: string): RecordedCall => ({
      fn: 'executor',
      operation: 'KMS.Decrypt',
      action: 'kms:Decrypt',
      resource: key,
      context: context(installation),
    });
    expect(decide(request('local'), policies.functions.executor)).toBe('Allowed');
    expect(decide(request('another-installation'), policies.functions.executor)).toBe('ImplicitlyDenied');
    expect(decide(request('local'), policies.functions.projector)).toBe('ImplicitlyDenied');
  });

  it('allows every call each function made, and grants nothing unused without a reason', async () => {
    await driveTheStack();
    const calls = recorder.calls;
    const distinct = new Map<string, RecordedCall>();
    for (const recorded of calls) {
      distinct.set(
        JSON.stringify([recorded.fn, recorded.action, recorded.resource, recorded.context]),
        recorded,
      );
    }
    const denied: string[] = [];
    for (const recorded of distinct.values()) {
      const identity = policies.functions[recorded.fn as keyof InstallationPolicies['functions']];
      const decision = identity ? decide(recorded, identity) : 'NoRole';
      if (decision !== 'Allowed') {
        denied.push(
          `${recorded.fn} ${recorded.action} ${shortName(recorded.resource)} (${recorded.operation}): ${decision}`,
        );
      }
    }

    // The reverse pass: every (function, action, resource) an Allow statement grants, exercised or explained.
    const unexercised: string[] = [];
    const granted = new Set<string>();
    for (const [fn, documents] of Object.entries(policies.functions)) {
      for (const statement of documents.flatMap((document) => document.Statement)) {
        if (statement.Effect !== 'Allow') continue;
        for (const action of asList(statement.Action)) {
          // Used by the Lambda runtime for the function (its log group, X-Ray traces), not by its code.
          if (action.startsWith('xray:') || action.startsWith('logs:')) continue;
          for (const resource of asList(statement.Resource)) {
            const used = calls.some(
              (recorded) =>
                recorded.fn === fn &&
                matches(action.toLowerCase(), recorded.action.toLowerCase()) &&
                matches(resource, recorded.resource),
            );
            granted.add(`${fn} ${action} ${shortName(resource)}`);
            if (!used) unexercised.push(`${fn} ${action} ${shortName(resource)}`);
          }
        }
      }
    }
    const byFunction: Record<string, RecordedCall[]> = {};
    for (const recorded of calls) byFunction[recorded.fn] = [...(byFunction[recorded.fn] ?? []), recorded];
    console.info(
      `IAM conformance: ${calls.length} calls (${distinct.size} distinct), ${denied.length} denied; ` +
        Object.entries(byFunction)
          .map(([fn, list]) => `${fn} ${list?.length ?? 0}`)
          .join(', '),
    );
    const exercised = new Set(
      calls.map(
        (recorded) =>
          `${recorded.fn} ${recorded.action} ${shortName(recorded.resource)} (${recorded.operation})`,
      ),
    );
    console.info(`exercised:\n  ${[...exercised].sort().join('\n  ')}`);
    console.info(`granted, never used:\n  ${[...new Set(unexercised)].sort().join('\n  ')}`);
    expect(denied).toEqual([]);
    expect([...new Set(unexercised)].filter((grant) => !(grant in unexercisedGrants)).sort()).toEqual([]);
    // A reason for a grant that no longer exists is out of date.
    expect(
      Object.keys(unexercisedGrants)
        .filter((grant) => !granted.has(grant))
        .sort(),
    ).toEqual([]);
    // Each function that runs was seen calling AWS (the recorder is not vacuous).
    for (const fn of ['rpc', 'executor', 'projector', 'pusher', 'deliverer', 'reaper']) {
      expect(byFunction[fn]?.length ?? 0, fn).toBeGreaterThan(0);
    }
  });
});
