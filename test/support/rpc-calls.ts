import { randomUUID } from 'node:crypto';

/** JSON-RPC calls to one agent endpoint of a local stack: the result, or a throw naming the error. */
export const rpcCalls = (endpoint: () => string, headers: Record<string, string> = {}) => {
  const call = async (method: string, params: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(endpoint(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
    });
    const body = (await response.json()) as { result?: Record<string, unknown> };
    if (!body.result) throw new Error(`${method} failed: ${JSON.stringify(body)}`);
    return body.result;
  };

  /** SendMessage with one text part; the message id starts with `prefix` (the tck scenario). */
  const send = async (prefix: string, taskId?: string) =>
    (
      await call('SendMessage', {
        message: {
          messageId: `${prefix}-${randomUUID()}`,
          role: 'ROLE_USER',
          parts: [{ text: 'hi' }],
          ...(taskId ? { taskId } : {}),
        },
      })
    ).task as { id: string; status: { state: string } };

  return { call, send };
};
