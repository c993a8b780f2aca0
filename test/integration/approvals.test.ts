import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbApprovals } from '../../shared/adapters/dynamodb/dynamodb-approvals.ts';
import {
  auditContentField,
  DynamoDbAuditTrail,
} from '../../shared/adapters/dynamodb/dynamodb-audit-trail.ts';
import { DynamoDbRunLeases } from '../../shared/adapters/dynamodb/dynamodb-run-leases.ts';
import { DynamoDbTaskRepository } from '../../shared/adapters/dynamodb/dynamodb-task-repository.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { OpenAiProvider } from '../../shared/adapters/providers/openai-provider.ts';
import { runMessageSchema } from '../../shared/adapters/sqs-run-queue.ts';
import { createToolRegistry } from '../../shared/adapters/tools/static-tool-registry.ts';
import { projectRecord } from '../../shared/app/journal/project-record.ts';
import { decideApproval, listPendingApprovals } from '../../shared/app/runs/decide-approval.ts';
import { type ExecuteRunDeps, executeRun } from '../../shared/app/runs/execute-run.ts';
import { ToolLoopAgent } from '../../shared/app/runs/tool-loop-agent.ts';
import { cancelTask } from '../../shared/app/tasks/cancel-task.ts';
import { createTask } from '../../shared/app/tasks/create-task.ts';
import { TaskContentCodec } from '../../shared/app/tasks/task-content.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { awaitingApprovalText } from '../../shared/domain/approvals.ts';
import type { AgentStep } from '../../shared/domain/model.ts';
import type { RunMessage } from '../../shared/domain/ports.ts';
import { webhookPolicyFor } from '../../shared/domain/webhook-address.ts';
import { adminOn } from '../support/admin-on.ts';
import { alice, userMessage } from '../support/core-fixture.ts';
import {
  type FakeModelServer,
  openAiText,
  openAiToolCall,
  type Script,
  startFakeModelServer,
} from '../support/fake-model-servers.ts';
import { InMemoryJournalRepository } from '../support/in-memory-repositories.ts';
import { createTestResources, type TestResources } from '../support/local-guard.ts';

/**
 * Approvals (I-APPROVAL, decision 0013) against DynamoDB Local and the KMS endpoint: the real
 * conditional transactions, the sparse pending index, sealing bound to (task, run). The model is
 * the OpenAI adapter over real HTTP against a local chat-completions server; its requests are
 * counted, so "no finished step is asked of the model again" is measured, not assumed.
 */
describe('approvals against the emulators', () => {
  let env: TestResources;
  let tasks: DynamoDbTaskRepository;
  let approvals: DynamoDbApprovals;
  let leases: DynamoDbRunLeases;
  let codec: TaskContentCodec;
  let sealer: KmsSealer;
  let audit: DynamoDbAuditTrail;
  let model: FakeModelServer;
  let slowSite: Server;
  let slowUrl = '';
  let releaseSlowSite: () => void = () => {};
  let slowSiteClosed = 0;
  let slowSiteRequests = 0;
  const journal = new InMemoryJournalRepository();
  const queued: RunMessage[] = [];
  const steps: AgentStep[] = [];
  const report: Array<{ scenario: string; modelCalls: number }> = [];

  const config = parseConfig({
    // `full`: the audit trail keeps tool arguments and results (sealed), which the test checks.
    privacy: { level: 'full', retention: { approval: 1 } },
    providers: { llm: { type: 'openai', baseUrl: 'http://127.0.0.1:1/v1', model: 'gpt-test' } },
    profiles: {
      default: {
        name: 'Gated calculator',
        description: 'x',
        providers: ['llm'],
        tools: [{ name: 'calculator', requiresApproval: true }],
      },
      fetcher: { name: 'Fetcher', description: 'x', providers: ['llm'], tools: [{ name: 'http_fetch' }] },
    },
  });

  type OpenAiMessage = { role: string; content?: string | null };

  /** Asks the gated calculator for 6 × 7; answers with its result or with the denial it read. */
  const gatedCalculator: Script = (request) => {
    const last = (request.body.messages as OpenAiMessage[]).at(-1);
    if (last?.role !== 'tool')
      return openAiToolCall('call_gated_1', 'calculator', { operation: 'multiply', a: 6, b: 7 });
    const content = JSON.parse(last.content ?? '{}') as { result?: number; error?: string };
    return openAiText(
      content.result !== undefined
        ? `The product is ${content.result}.`
        : `I could not compute it: ${content.error}`,
    );
  };

  beforeAll(async () => {
    env = await createTestResources('approvals');
    const table = env.resources.tables.State.name;
    tasks = new DynamoDbTaskRepository(env.clients.doc, table);
    approvals = new DynamoDbApprovals(env.clients.doc, table);
    leases = new DynamoDbRunLeases(env.clients.doc, table);
    sealer = new KmsSealer({ kms: env.clients.kms, keyId: env.resources.key.keyId, installation: 'test' });
    codec = new TaskContentCodec(sealer);
    audit = new DynamoDbAuditTrail(env.clients.doc, env.resources.tables.Audit.name, sealer);
    model = await startFakeModelServer(gatedCalculator);
    const held = new Promise<void>((resolve) => {
      releaseSlowSite = resolve;
    });
    slowSite = createServer((request, response) => {
      slowSiteRequests++;
      response.on('close', () => {
        if (!response.writableEnded) slowSiteClosed++;
      });
      void held.then(() => {
        if (!response.destroyed) response.writeHead(200, { 'content-type': 'text/plain' }).end('slow page');
      });
      request.resume();
    });
    await new Promise<void>((resolve) => slowSite.listen(0, '127.0.0.1', resolve));
    slowUrl = `http://127.0.0.1:${(slowSite.address() as AddressInfo).port}/slow`;
  });

  afterAll(async () => {
    releaseSlowSite();
    await model?.stop();
    await new Promise<void>((resolve) => (slowSite ? slowSite.close(() => resolve()) : resolve()));
    env?.destroy();
    console.info('model calls per run (counted at the fake server)');
    console.table(report);
  });

  const deps = (): ExecuteRunDeps & Parameters<typeof createTask>[0] & Parameters<typeof cancelTask>[0] => ({
    tasks,
    codec,
    config,
    journal,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    queue: { enqueue: async (message: RunMessage) => void queued.push(message) },
    // The read-your-writes wait of CancelTask: the stream + projector, synchronously.
    sleep: async () => {
      for (const taskId of projectedTasks)
        await projectRecord(journal, undefined, await tasks.getTask(taskId));
    },
    tools: createToolRegistry(webhookPolicyFor(true, true)),
    audit,
    onAgentStep: (_run, step) => void steps.push(step),
    providerFor: () =>
      new ToolLoopAgent(
        new OpenAiProvider({
          providerId: 'llm',
          baseUrl: `${model.url}/v1`,
          model: 'gpt-test',
          timeoutMs: 30_000,
        }),
      ),
  });
  const projectedTasks = new Set<string>();
  const decideDeps = () => ({ tasks, approvals, queue: deps().queue, clock: { now: () => new Date() } });

  /** Sends a message and runs it until it waits for an approval. */
  const suspendOne = async (text: string) => {
    const before = model.requests.length;
    const { taskId } = await createTask(deps(), {
      caller: alice,
      profileId: 'default',
      message: userMessage(text),
    });
    projectedTasks.add(taskId);
    const message = queued.shift()!;
    expect(await executeRun(deps(), message)).toBe('awaiting-approval');
    const run = (await tasks.getRun(taskId, message.runId))!;
    const approval = (await approvals.get(run.approval!.approvalId))!;
    return { taskId, message, run, approval, before };
  };

  const answerOf = async (taskId: string) => {
    const task = (await tasks.getTask(taskId))!;
    const artifacts = await codec.openArtifacts(taskId, task.sealedArtifacts);
    return {
      task,
      text: artifacts.flatMap((artifact) => artifact.parts.map((part) => ('text' in part ? part.text : ''))),
    };
  };

  it('suspends: run AWAITING_APPROVAL without a lease, task WORKING with a waiting message, a pending record', async () => {
    const { taskId, run, approval, before } = await suspendOne('Multiply 6 by 7.');
    expect(model.requests.length - before).toBe(1);
    expect(run).toMatchObject({ status: 'AWAITING_APPROVAL', approval: { approvalId: approval.approvalId } });
    expect(run.leaseUntil).toBeUndefined();
    expect(run.sealedSuspension).toBeInstanceOf(Uint8Array);
    const task = (await tasks.getTask(taskId))!;
    expect(task.state).toBe('TASK_STATE_WORKING');
    const status = await codec.openStatusMessage(taskId, task.sealedStatusMessage);
    expect(status?.parts).toEqual([{ text: awaitingApprovalText }]);
    // The task, its history and the record hold no argument of the pending call (I-LEAVE).
    const history = await codec.openHistory(taskId, task.sealedHistory);
    expect(JSON.stringify({ history, status, approval })).not.toMatch(/multiply|call_gated_1/);
    expect(approval).toMatchObject({
      taskId,
      runId: run.runId,
      decision: 'PENDING',
      toolNames: ['calculator'],
      digest: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // Runs waiting for an approval use `privacy.retention.approval` (1 day here, I-PURGE).
    expect(Math.abs(approval.expiresAt - (Date.now() / 1000 + 86_400))).toBeLessThan(600);
    expect(run.expiresAt).toBe(approval.expiresAt);
    // The sealed state is bound to its task and run: it opens nowhere else.
    await expect(codec.openSuspension('another-task', run.runId, run.sealedSuspension!)).rejects.toThrow();
    await expect(codec.openSuspension(taskId, 'another-run', run.sealedSuspension!)).rejects.toThrow();
    expect((await listPendingApprovals(decideDeps())).map((entry) => entry.approvalId)).toContain(
      approval.approvalId,
    );
  });

  it('approve → the run resumes without asking the model again for finished steps and COMPLETES with the tool result', async () => {
    const { taskId, message, approval, before } = await suspendOne('Multiply 6 by 7.');
    const toolCallsBefore = steps.filter((step) => step.kind === 'tool-call').length;
    const decided = await decideApproval(decideDeps(), {
      approvalId: approval.approvalId,
      verdict: 'approved',
      decidedBy: 'operator-1',
      digest: approval.digest,
    });
    expect(decided).toMatchObject({ decision: 'APPROVED', decidedBy: 'operator-1' });
    expect(queued).toEqual([message]);
    expect(await executeRun(deps(), queued.shift()!)).toBe('completed');
    const { task, text } = await answerOf(taskId);
    expect(task.state).toBe('TASK_STATE_COMPLETED');
    expect(text).toEqual(['The product is 42.']);
    // One call before the wait, one after: the finished turn was not asked again.
    expect(model.requests.length - before).toBe(2);
    const resumed = model.requests.at(-1)!.body.messages as Array<Record<string, unknown>>;
    expect(resumed.map((entry) => entry.role)).toEqual(['user', 'assistant', 'tool']);
    expect(resumed.at(-1)).toMatchObject({
      tool_call_id: 'call_gated_1',
      content: JSON.stringify({ result: 42 }),
    });
    expect(steps.filter((step) => step.kind === 'tool-call').length - toolCallsBefore).toBe(1);
    const run = (await tasks.getRun(taskId, message.runId))!;
    expect(run).toMatchObject({ status: 'COMPLETED', approval: { verdict: 'approved' } });
    expect(run.sealedSuspension).toBeUndefined();
    expect((await approvals.get(approval.approvalId))!.decision).toBe('APPROVED');
    report.push({ scenario: 'approve', modelCalls: model.requests.length - before });

    // The audit trail has every step; the tool call's arguments and result only there, sealed.
    const rows = await audit.listForTask(taskId);
    expect(rows.map((row) => row.kind)).toEqual([
      'claim',
      'model-turn',
      'attempt',
      'suspend',
      'resume',
      'claim',
      'tool-call',
      'model-turn',
      'attempt',
    ]);
    expect(rows.find((row) => row.kind === 'tool-call')).toMatchObject({
      toolNames: ['calculator'],
      outcome: 'ok',
      level: 'full',
      hasContent: true,
    });
    const { Items = [] } = await env.clients.doc.send(
      new QueryCommand({
        TableName: env.resources.tables.Audit.name,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `TASK#${taskId}` },
      }),
    );
    const toolRow = Items.find((item) => item.kind === 'tool-call')!;
    expect(JSON.stringify(toolRow)).not.toContain('multiply');
    const opened = JSON.parse(
      new TextDecoder().decode(
        await sealer.open(toolRow.content, { taskId, field: auditContentField(toolRow.sk) }),
      ),
    );
    expect(opened.toolCall).toEqual({
      name: 'calculator',
      arguments: { operation: 'multiply', a: 6, b: 7 },
      result: JSON.stringify({ result: 42 }),
      isError: false,
    });
    // …and never in the task row the journal is projected from (I-LEAVE).
    const row = (await tasks.getTask(taskId))!;
    const history = await codec.openHistory(taskId, row.sealedHistory);
    const status = await codec.openStatusMessage(taskId, row.sealedStatusMessage);
    expect(JSON.stringify({ history, status, metadata: row.metadata })).not.toMatch(/multiply|call_gated_1/);
  });

  it('deny → the tool never runs, the model reads the denial and the answer says so', async () => {
    const { taskId, approval, before } = await suspendOne('Multiply 6 by 7.');
    const toolCallsBefore = steps.filter((step) => step.kind === 'tool-call').length;
    await decideApproval(decideDeps(), {
      approvalId: approval.approvalId,
      verdict: 'denied',
      decidedBy: 'operator-2',
      reason: 'not today',
    });
    expect(await executeRun(deps(), queued.shift()!)).toBe('completed');
    const { task, text } = await answerOf(taskId);
    expect(task.state).toBe('TASK_STATE_COMPLETED');
    expect(text[0]).toMatch(/^I could not compute it: An operator denied this tool call; it was not run\./);
    expect(text[0]).toContain('not today');
    expect(steps.filter((step) => step.kind === 'tool-call').length - toolCallsBefore).toBe(0);
    expect(model.requests.length - before).toBe(2);
    report.push({ scenario: 'deny', modelCalls: model.requests.length - before });
  });

  it('refuses a decision for other calls (digest mismatch) and a second decision; nothing is queued twice', async () => {
    const { taskId, message, approval } = await suspendOne('Multiply 6 by 7.');
    await expect(
      decideApproval(decideDeps(), {
        approvalId: approval.approvalId,
        verdict: 'approved',
        decidedBy: 'op',
        digest: '0'.repeat(64),
      }),
    ).rejects.toMatchObject({ refusal: 'DIGEST_MISMATCH' });
    expect(queued).toEqual([]);
    expect((await tasks.getRun(taskId, message.runId))!.status).toBe('AWAITING_APPROVAL');

    await decideApproval(decideDeps(), {
      approvalId: approval.approvalId,
      verdict: 'approved',
      decidedBy: 'op',
    });
    await expect(
      decideApproval(decideDeps(), { approvalId: approval.approvalId, verdict: 'denied', decidedBy: 'op-2' }),
    ).rejects.toMatchObject({ refusal: 'ALREADY_DECIDED' });
    expect(queued).toHaveLength(1);
    expect((await approvals.get(approval.approvalId))!).toMatchObject({
      decision: 'APPROVED',
      decidedBy: 'op',
    });
    await expect(
      decideApproval(decideDeps(), { approvalId: `${taskId}.999`, verdict: 'approved', decidedBy: 'op' }),
    ).rejects.toMatchObject({ refusal: 'NOT_FOUND' });
    expect(await executeRun(deps(), queued.shift()!)).toBe('completed');
  });

  it('two concurrent decisions: exactly one wins (the conditional transaction, not the read)', async () => {
    const { approval } = await suspendOne('Multiply 6 by 7.');
    const outcomes = await Promise.allSettled([
      decideApproval(decideDeps(), { approvalId: approval.approvalId, verdict: 'approved', decidedBy: 'a' }),
      decideApproval(decideDeps(), { approvalId: approval.approvalId, verdict: 'denied', decidedBy: 'b' }),
    ]);
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    // The loser reads either the decided record (ALREADY_DECIDED) or, when it reads after the
    // winner's transaction, a run no longer awaiting (NOT_AWAITING): both are a refusal.
    expect(outcomes.find((outcome) => outcome.status === 'rejected')).toMatchObject({
      reason: { refusal: expect.stringMatching(/^(ALREADY_DECIDED|NOT_AWAITING)$/) },
    });
    expect(queued).toHaveLength(1);
    expect(await executeRun(deps(), queued.shift()!)).toBe('completed');
  });

  it('cancel while suspended → CANCELED; the approval is withdrawn and cannot be decided', async () => {
    const { taskId, message, approval, before } = await suspendOne('Multiply 6 by 7.');
    const canceled = await cancelTask(deps(), { caller: alice, taskId });
    expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
    const run = (await tasks.getRun(taskId, message.runId))!;
    expect(run.status).toBe('CANCELED');
    expect(run.sealedSuspension).toBeUndefined();
    await expect(
      decideApproval(decideDeps(), { approvalId: approval.approvalId, verdict: 'approved', decidedBy: 'op' }),
    ).rejects.toMatchObject({ refusal: 'NOT_AWAITING' });
    expect(queued).toEqual([]);
    expect((await listPendingApprovals(decideDeps())).map((entry) => entry.approvalId)).not.toContain(
      approval.approvalId,
    );
    expect((await approvals.get(approval.approvalId))!.decision).toBe('WITHDRAWN');
    // A stale wake-up for the run finds it settled.
    expect(await executeRun(deps(), message)).toBe('duplicate');
    expect((await tasks.getTask(taskId))!.state).toBe('TASK_STATE_CANCELED');
    expect(model.requests.length - before).toBe(1);
    report.push({ scenario: 'cancel while suspended', modelCalls: model.requests.length - before });
  });

  it('a duplicate SQS delivery during the resumed run calls the model once', async () => {
    const { taskId, approval, before } = await suspendOne('Multiply 6 by 7.');
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    model.script = async (request, index) => ({ ...(await gatedCalculator(request, index)), hold: held });
    try {
      await decideApproval(decideDeps(), {
        approvalId: approval.approvalId,
        verdict: 'approved',
        decidedBy: 'op',
      });
      const message = queued.shift()!;
      const live = executeRun({ ...deps(), leases, leaseMs: 60_000, leaseRenewMs: 50 }, message);
      await model.received(before + 2);
      expect(await executeRun(deps(), message)).toBe('duplicate');
      release();
      expect(await live).toBe('completed');
    } finally {
      model.script = gatedCalculator;
      release();
    }
    expect((await answerOf(taskId)).text).toEqual(['The product is 42.']);
    expect(model.requests.length - before).toBe(2);
    report.push({ scenario: 'approve + duplicate delivery', modelCalls: model.requests.length - before });
  });

  it('cancel during a slow tool call aborts the call; the task is CANCELED, never COMPLETED', async () => {
    const before = model.requests.length;
    const closedBefore = slowSiteClosed;
    model.script = (request) => {
      const last = (request.body.messages as OpenAiMessage[]).at(-1);
      return last?.role === 'tool'
        ? openAiText('fetched')
        : openAiToolCall('call_fetch_1', 'http_fetch', { url: slowUrl });
    };
    try {
      const { taskId } = await createTask(deps(), {
        caller: alice,
        profileId: 'fetcher',
        message: userMessage('fetch the slow page'),
      });
      projectedTasks.add(taskId);
      const message = queued.shift()!;
      // Renewals far apart: it is the cancel watch (one read every 50 ms here, 5 s by default)
      // that notices the cancel while the tool is in flight.
      const live = executeRun(
        { ...deps(), leases, leaseMs: 60_000, leaseRenewMs: 60_000, cancelWatchMs: 50 },
        message,
      );
      // The tool is in flight once the site has its request.
      const requestsBefore = slowSiteRequests;
      await waitFor(
        async () => slowSiteRequests,
        (count) => count > requestsBefore,
      );
      const canceled = await cancelTask(deps(), { caller: { ...alice, profileId: 'fetcher' }, taskId });
      expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
      expect(await live).toBe('canceled');
      expect((await tasks.getTask(taskId))!.state).toBe('TASK_STATE_CANCELED');
      expect((await tasks.getRun(taskId, message.runId))!.status).toBe('CANCELED');
      // The fetch was aborted by the run's signal: its connection went away before an answer.
      await waitFor(
        async () => slowSiteClosed,
        (closed) => closed > closedBefore,
      );
      // The model was not asked again after the cancel.
      expect(model.requests.length - before).toBe(1);
      report.push({ scenario: 'cancel during a slow tool call', modelCalls: model.requests.length - before });
    } finally {
      model.script = gatedCalculator;
    }
  });

  describe('the admin command (approvals list | approve | deny) on the emulators, real run queue', () => {
    const admin = (...args: string[]) => adminOn(env, ...args);

    /** The wake-up the command sent, from the real queue. */
    const receiveRunMessage = async (): Promise<RunMessage> => {
      for (;;) {
        const { Messages = [] } = await env.clients.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: env.resources.queues.RunQueue.url, WaitTimeSeconds: 1 }),
        );
        const [received] = Messages;
        if (received?.Body) return runMessageSchema.parse(JSON.parse(received.Body));
      }
    };

    it('lists the pending approval, refuses a wrong digest, approves with the right one, refuses a second decision', async () => {
      const { taskId, message, approval, before } = await suspendOne('Multiply 6 by 7.');
      const listed = await admin('approvals', 'list', '--json');
      expect(listed).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(listed.stdout).approvals).toContainEqual(
        expect.objectContaining({
          approvalId: approval.approvalId,
          digest: approval.digest,
          toolNames: ['calculator'],
        }),
      );
      const table = await admin('approvals', 'list');
      expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+TASK\s+RUN\s+TOOLS\s+REQUESTED\s+DIGEST$/);
      expect(table.stdout).toContain(`${approval.approvalId}  ${taskId}`);
      // Metadata only: no argument of the pending call in either form.
      expect(listed.stdout + table.stdout).not.toMatch(/multiply/);

      const wrong = await admin('approvals', 'approve', approval.approvalId, '--digest', 'f'.repeat(64));
      expect(wrong).toMatchObject({ code: 1, stderr: expect.stringContaining('DIGEST_MISMATCH') });
      const approved = await admin(
        'approvals',
        'approve',
        approval.approvalId,
        '--digest',
        approval.digest,
        '--by',
        'ops-ann',
      );
      expect(approved.code).toBe(0);
      expect(approved.stdout).toContain(`APPROVED ${approval.approvalId} by ops-ann`);
      const again = await admin('approvals', 'deny', approval.approvalId, '--json');
      expect(again.code).toBe(1);
      expect(JSON.parse(again.stdout)).toMatchObject({ error: 'ALREADY_DECIDED' });

      expect(await receiveRunMessage()).toEqual(message);
      expect(await executeRun(deps(), message)).toBe('completed');
      expect((await answerOf(taskId)).text).toEqual(['The product is 42.']);
      expect(model.requests.length - before).toBe(2);
      expect((await admin('approvals', 'list', '--json')).stdout).not.toContain(approval.approvalId);
    });

    it('deny with a reason: the answer reflects it; bad usage exits 2', async () => {
      const { taskId, approval } = await suspendOne('Multiply 6 by 7.');
      expect((await admin('approvals', 'approve', approval.approvalId, '--reason', 'x')).code).toBe(2);
      expect((await admin('approvals', 'approve')).code).toBe(2);
      const denied = await admin('approvals', 'deny', approval.approvalId, '--reason', 'budget frozen');
      expect(denied).toMatchObject({ code: 0, stderr: '' });
      expect(await executeRun(deps(), await receiveRunMessage())).toBe('completed');
      expect((await answerOf(taskId)).text[0]).toContain('budget frozen');
    });
  });
});

const waitFor = async <T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> => {
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    await new Promise((wake) => setTimeout(wake, 20));
  }
};
