import { Agent, request } from 'node:http';

/**
 * A plain JSON-RPC client for the benchmark: one HTTP request per call (so every call is one API
 * Gateway request, counted here) on keep-alive connections of its own, plus a small pool that
 * keeps `concurrency` calls in flight.
 *
 * The calls go through `node:http` with a keep-alive agent, as a load generator sends them
 * (bench/README.md, "The load generator"): a request costs the client a fraction of what the
 * WHATWG `fetch` of Node 20 costs (its streams and header objects), CPU the client would otherwise
 * take from the server it measures on a machine of two cores. The agent honours the server's
 * `Keep-Alive: timeout` hint, closing an idle connection before the server would.
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
  private readonly agent = new Agent({ keepAlive: true });

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
    const text = await this.post(JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params }));
    const body = JSON.parse(text) as { result?: T; error?: RpcError };
    return { ...body, ms: performance.now() - began };
  }

  /**
   * One streaming call (SendStreamingMessage, SubscribeToTask) read to its end on the same
   * keep-alive connections: each SSE event's data with its arrival (`at` epoch ms, to compare
   * with a status timestamp; `t` performance.now(), to compare with `began`). A plain JSON answer
   * (a JSON-RPC error before any event) comes back as the one event.
   */
  stream(method: string, params: unknown): Promise<{ began: number; events: StreamedEvent[] }> {
    const began = performance.now();
    this.requests += 1;
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
    const events: StreamedEvent[] = [];
    return new Promise((resolve, reject) => {
      const sent = request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            ...this.headers({ Accept: 'text/event-stream' }),
            'Content-Length': Buffer.byteLength(body),
          },
        },
        (response) => {
          response.setEncoding('utf8');
          let buffer = '';
          response.on('data', (chunk: string) => {
            buffer += chunk;
            for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
              const block = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              const data = block
                .split('\n')
                .filter((line) => line.startsWith('data:'))
                .map((line) => line.slice(5).trim())
                .join('\n');
              if (data) events.push({ at: Date.now(), t: performance.now(), data: JSON.parse(data) });
            }
          });
          response.on('end', () => {
            if (events.length === 0 && buffer.trim().startsWith('{'))
              events.push({ at: Date.now(), t: performance.now(), data: JSON.parse(buffer) });
            resolve({ began, events });
          });
          response.on('error', reject);
        },
      );
      sent.on('error', reject);
      sent.end(body);
    });
  }

  /** Closes the idle keep-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  /** One POST of `body`, the response body as text. */
  private post(body: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const sent = request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: { ...this.headers(), 'Content-Length': Buffer.byteLength(body) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          response.on('error', reject);
        },
      );
      sent.on('error', reject);
      sent.end(body);
    });
  }

  /** One blocking SendMessage; the task it returns. */
  async send(text: string, options: SendMessageOptions = {}): Promise<RpcAnswer<{ task?: TaskLike }>> {
    return this.call<{ task?: TaskLike }>('SendMessage', sendMessageParams(text, options));
  }
}

/** One SSE event as a client received it. */
export interface StreamedEvent {
  /** Epoch ms (compared with a status timestamp) and performance.now() (compared with the send). */
  readonly at: number;
  readonly t: number;
  // biome-ignore lint/suspicious/noExplicitAny: StreamResponse JSON as received.
  readonly data: any;
}

// biome-ignore lint/suspicious/noExplicitAny: StreamResponse JSON as received.
export const stateIn = (result: any): { state?: string; timestamp?: string } => {
  const status = result?.statusUpdate?.status ?? result?.task?.status;
  return { state: status?.state, timestamp: status?.timestamp };
};

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
