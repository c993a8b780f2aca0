import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST as a webhook receiver saw it. */
export interface ReceivedPost {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
  readonly at: number;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly posts: ReceivedPost[];
  /** Resolves once `predicate` holds for the posts received so far (polls every 20 ms). */
  waitFor(predicate: (posts: readonly ReceivedPost[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface ReceiverOptions {
  /** Decides the answer to each POST (default 200). Posts answered non-2xx are recorded too. */
  readonly respond?: (post: ReceivedPost, index: number) => number | Promise<number>;
  readonly redirectTo?: string;
}

/** A real `node:http` webhook receiver on loopback, as the TCK runs one (docs/protocol.md §7). */
export const startWebhookReceiver = async (options: ReceiverOptions = {}): Promise<WebhookReceiver> => {
  const posts: ReceivedPost[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
      const post: ReceivedPost = { path: req.url ?? '', headers: req.headers, body, at: Date.now() };
      const index = posts.push(post) - 1;
      const status = options.respond ? await options.respond(post, index) : 200;
      if (status >= 300 && status < 400 && options.redirectTo) res.setHeader('location', options.redirectTo);
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', () => listening()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    posts,
    async waitFor(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(posts)) {
        if (Date.now() > deadline) {
          throw new Error(
            `webhook receiver: condition not met after ${timeoutMs} ms (${posts.length} posts)`,
          );
        }
        await new Promise((wake) => setTimeout(wake, 20));
      }
    },
    close: () =>
      new Promise<void>((closed) => {
        server.close(() => closed());
        server.closeAllConnections();
      }),
  };
};
