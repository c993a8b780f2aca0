/**
 * A small SSE client for the conformance tests: POSTs a JSON-RPC request and reads the answer as
 * it arrives — either a plain JSON-RPC envelope or an SSE stream, parsed frame by frame with the
 * framing kept (how many `data:` lines, the `id:` line, comments) so tests can check it.
 */

export interface SseFrame {
  /** `id:` of the frame, if it had one. */
  readonly id?: string;
  /** How many `data:` lines the frame had (the TCK parser needs exactly one). */
  readonly dataLines: number;
  /** The JSON-decoded `data:` payload (the JSON-RPC envelope), when there was one. */
  readonly data?: JsonRpcEnvelope;
  /** The comment text of a comment-only frame (a heartbeat). */
  readonly comment?: string;
}

export interface JsonRpcEnvelope {
  readonly jsonrpc: string;
  readonly id: string | number | null;
  readonly result?: Record<string, unknown>;
  readonly error?: { code: number; message: string; data?: unknown };
}

export type RpcAnswer =
  | {
      readonly kind: 'json';
      readonly requestId: number;
      readonly status: number;
      readonly contentType: string;
      readonly body: JsonRpcEnvelope;
    }
  | {
      readonly kind: 'sse';
      readonly requestId: number;
      readonly status: number;
      readonly contentType: string;
      readonly headers: Headers;
      /** Frames as they arrive; ends when the server closes the stream. */
      readonly frames: AsyncGenerator<SseFrame>;
      /** Drops the connection (the client goes away). */
      close(): void;
    };

let nextId = 1;

export const rpc = async (
  url: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<RpcAnswer> => {
  const requestId = nextId++;
  const abort = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: requestId, method, params }),
    signal: abort.signal,
  });
  const contentType = response.headers.get('content-type') ?? '';
  if (!contentType.startsWith('text/event-stream')) {
    return {
      kind: 'json',
      status: response.status,
      contentType,
      body: (await response.json()) as JsonRpcEnvelope,
      requestId,
    };
  }
  return {
    kind: 'sse',
    status: response.status,
    contentType,
    headers: response.headers,
    frames: readFrames(response, abort),
    close: () => abort.abort(),
    requestId,
  };
};

/** The SSE frames of a response as they come; the connection is dropped when they end. */
export async function* readFrames(response: Response, abort: AbortController): AsyncGenerator<SseFrame> {
  const body = response.body;
  if (body === null) return;
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        yield parseFrame(block);
      }
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  } finally {
    abort.abort();
  }
}

const parseFrame = (block: string): SseFrame => {
  let id: string | undefined;
  let comment: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) comment = line.slice(1).trim();
    else if (line.startsWith('id:')) id = line.slice(3).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).trim());
  }
  return {
    ...(id !== undefined ? { id } : {}),
    dataLines: data.length,
    ...(data.length > 0 ? { data: JSON.parse(data.join('\n')) as JsonRpcEnvelope } : {}),
    ...(comment !== undefined && data.length === 0 ? { comment } : {}),
  };
};

/** Reads a stream to its end (the server closes it), keeping event frames and counting comments. */
export const drain = async (frames: AsyncIterable<SseFrame>, until?: (frame: SseFrame) => boolean) => {
  const events: SseFrame[] = [];
  let comments = 0;
  for await (const frame of frames) {
    if (frame.data === undefined) comments++;
    else events.push(frame);
    if (until?.(frame)) break;
  }
  return { events, comments };
};

/** The StreamResponse member of an event: `task`, `message`, `statusUpdate` or `artifactUpdate`. */
export const kindOf = (frame: SseFrame): string => Object.keys(frame.data?.result ?? {})[0] ?? 'error';

/** The task state an event carries (Task or statusUpdate), if any. */
export const stateOf = (frame: SseFrame): string | undefined => {
  const result = frame.data?.result as
    | { task?: { status?: { state?: string } }; statusUpdate?: { status?: { state?: string } } }
    | undefined;
  return result?.task?.status?.state ?? result?.statusUpdate?.status?.state;
};

export const terminalStates = [
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
];
