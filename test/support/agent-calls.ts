import { rpc } from '../conformance/sse.ts';

/** Calls at the profiles of one local stack (test/e2e/delegation*.test.ts). */

export type Json = Record<string, unknown>;

export type TaskJson = Json & {
  id: string;
  status: { state: string };
  artifacts?: { name?: string; parts: { text: string }[] }[];
};

/** The JSON-RPC result of one call at a profile's endpoint. */
export const agentCall =
  (baseUrl: () => string) =>
  async (agent: string, method: string, params: unknown): Promise<Json | undefined> => {
    const answer = await rpc(`${baseUrl()}/agents/${agent}`, method, params);
    return answer.kind === 'json' ? answer.body.result : undefined;
  };

/** A task at a profile, read until it is terminal (or the time is over). */
export const settledTask = async (
  call: ReturnType<typeof agentCall>,
  agent: string,
  id: string,
  timeoutMs = 30_000,
): Promise<TaskJson | undefined> => {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const task = (await call(agent, 'GetTask', { id })) as TaskJson | undefined;
    const state = task?.status.state ?? '';
    if (
      ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED'].includes(state) ||
      Date.now() > until
    )
      return task;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

/** The JSON the scripted `call-tool` model answered with: what the tool returned. */
export const toolAnswerOf = (task: TaskJson | undefined) => {
  const text = task?.artifacts?.[0]?.parts[0]?.text ?? '';
  return JSON.parse(text.slice(text.indexOf('{'))) as Json & { taskId: string; state: string };
};
