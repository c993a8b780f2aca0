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
 * kill), so calls are counted across lives. With `holdCall: n`, the n-th provider call of this life
 * never returns: that run is certainly in the middle of its model call when the process is
 * killed, however fast or slow the machine is.
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
  /** The provider call (1-based, this life) that hangs until the process dies. */
  readonly holdCall?: number;
}

const options = JSON.parse(process.env.A2A_CHILD_STACK ?? '{}') as ChildStackOptions;
const run = ScriptedProvider.prototype.run;
let calls = 0;
ScriptedProvider.prototype.run = function (this: ScriptedProvider, request: AgentRequest) {
  appendFileSync(options.callLog, `${request.runId}\n`);
  calls += 1;
  if (calls === options.holdCall) return new Promise(() => {});
  return run.call(this, request);
};
const stack = await startLocalStack({ ...options, config: faultProofConfig, log: () => {} });
process.stdout.write(`READY ${stack.baseUrl}\n`);
