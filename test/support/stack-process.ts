import { appendFileSync } from 'node:fs';
import { type LocalStackOptions, startLocalStack } from '../../infra/local/local-stack.ts';
import { ScriptedProvider } from '../../shared/adapters/providers/scripted-provider.ts';
import type { AgentRequest } from '../../shared/domain/ports.ts';
import { faultProofConfig } from './fault-drive.ts';

/**
 * The local stack's handlers, pollers and HTTP harness in a process of their own, for the crash
 * proof (test/e2e/crash.test.ts): the parent keeps the emulators — they stand for DynamoDB, SQS
 * and KMS, which a crashed Lambda does not take down — and kills this process with SIGKILL.
 * Every provider call is appended to a file before it is made (a synchronous write survives the
 * kill), so calls are counted across lives.
 *
 * Input: the JSON of `ChildStackOptions` in A2A_CHILD_STACK. Output: `READY <baseUrl>` on stdout.
 */
export interface ChildStackOptions
  extends Pick<
    LocalStackOptions,
    'endpoints' | 'prefix' | 'failpoints' | 'runLeaseMs' | 'runStartDeadlineMs' | 'existingStreamStart'
  > {
  readonly callLog: string;
  readonly reaperIntervalMs: number;
}

const options = JSON.parse(process.env.A2A_CHILD_STACK ?? '{}') as ChildStackOptions;
const run = ScriptedProvider.prototype.run;
ScriptedProvider.prototype.run = function (this: ScriptedProvider, request: AgentRequest) {
  appendFileSync(options.callLog, `${request.runId}\n`);
  return run.call(this, request);
};
const stack = await startLocalStack({ ...options, config: faultProofConfig, log: () => {} });
process.stdout.write(`READY ${stack.baseUrl}\n`);
