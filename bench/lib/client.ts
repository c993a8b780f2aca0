/**
 * A plain JSON-RPC client for the benchmark: one fetch per call (so every call is one API
 * Gateway request, counted here), plus a small pool that keeps `concurrency` calls in flight.
 */

export interface RpcError {
  readonly code: number;
  readonly message: string;
}

export interface RpcAnswer<T> {
  readonly result?: T;
  readonly error?: RpcError;
  /** Client-side wall time from request start to the end of the response body. */
  readonly ms: number;
}

export interface TaskLike {
  readonly id: string;
  readonly contextId?: string;
  readonly status?: { readonly state?: string; readonly timestamp?: string };
}

export class RpcClient {
  /** HTTP requests sent (each is one API Gateway request). */
  requests = 0;
  private nextId = 1;

  constructor(
    readonly url: string,
    private readonly token?: string,
  ) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      'Content-Type': 'application/json',
      'A2A-Version': '1.0',
      ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}),
      ...extra,
    };
  }

  async call<T>(method: string, params: unknown): Promise<RpcAnswer<T>> {
    const began = performance.now();
    this.requests += 1;
    const response = await fetch(this.url, {
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params }),
    });
    const body = (await response.json()) as { result?: T; error?: RpcError };
    return { ...body, ms: performance.now() - began };
  }

  /** One blocking SendMessage; the task it returns. */
  async send(text: string, options: SendMessageOptions = {}): Promise<RpcAnswer<{ task?: TaskLike }>> {
    return this.call<{ task?: TaskLike }>('SendMessage', sendMessageParams(text, options));
  }
}

export interface SendMessageOptions {
  readonly messageId?: string;
  readonly taskId?: string;
  readonly configuration?: Record<string, unknown>;
}

/** The params of the benchmark's SendMessage: one user text part. */
export const sendMessageParams = (text: string, options: SendMessageOptions = {}) => ({
  message: {
    messageId: options.messageId ?? `bench-${crypto.randomUUID()}`,
    role: 'ROLE_USER',
    parts: [{ text }],
    ...(options.taskId ? { taskId: options.taskId } : {}),
  },
  ...(options.configuration ? { configuration: options.configuration } : {}),
});

/** Runs `count` jobs with at most `concurrency` in flight; results in job order. */
export const pool = async <T>(
  count: number,
  concurrency: number,
  job: (index: number) => Promise<T>,
): Promise<T[]> => {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const index = next++;
        results[index] = await job(index);
      }
    }),
  );
  return results;
};

export const stateOf = (answer: RpcAnswer<{ task?: TaskLike }>): string | undefined =>
  answer.result?.task?.status?.state;
