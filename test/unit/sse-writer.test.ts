import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { toStreamingResponse } from '../../functions/rpc/api-gateway.ts';
import { formatSseEvent } from '../../functions/rpc/http-app.ts';
import type { SseEvent } from '../../shared/app/rpc/dispatcher.ts';

/** The SSE framing of the rpc function and its writer to Lambda's response stream. */

const envelope = { jsonrpc: '2.0' as const, id: 7, result: { statusUpdate: { text: 'a\nb' } } };

describe('formatSseEvent', () => {
  it('writes an id line and exactly one data line per event (docs/protocol.md §2 SSE framing)', () => {
    const text = formatSseEvent({ eventId: '3', message: envelope as never });
    expect(text).toBe(`id: 3\ndata: ${JSON.stringify(envelope)}\n\n`);
    expect(text.split('\n').filter((line) => line.startsWith('data:'))).toHaveLength(1);
  });

  it('omits the id line when the event has none', () => {
    expect(formatSseEvent({ message: envelope as never })).toBe(`data: ${JSON.stringify(envelope)}\n\n`);
  });

  it('writes a heartbeat as an SSE comment, on one line', () => {
    expect(formatSseEvent({ comment: 'keep-alive' })).toBe(': keep-alive\n\n');
    expect(formatSseEvent({ comment: 'a\r\nb' })).toBe(': a b\n\n');
  });
});

async function* events(items: readonly SseEvent[]): AsyncGenerator<SseEvent> {
  yield* items;
}

describe('toStreamingResponse', () => {
  const sse = (events: AsyncIterable<SseEvent>) => ({
    status: 200,
    headers: { 'Content-Type': 'text/event-stream' },
    events,
  });

  /** What middy's streaming wrapper does with the body: pipes it into the response stream. */
  const send = async (body: string | Readable, stream: PassThrough): Promise<void> => {
    await pipeline(typeof body === 'string' ? Readable.from([body]) : body, stream).catch(() => {});
  };

  it('keeps status and headers, and writes a plain body as it is', async () => {
    const response = toStreamingResponse(
      { status: 404, headers: { 'X-A': '1' }, body: '{"a":1}' },
      new AbortController(),
    );
    expect(response).toMatchObject({ statusCode: 404, headers: { 'X-A': '1' }, body: '{"a":1}' });
  });

  it('writes every event as it comes and ends the stream', async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
    const response = toStreamingResponse(
      sse(
        (async function* () {
          yield { eventId: '1', message: envelope as never };
          yield { comment: 'keep-alive' };
        })(),
      ),
      new AbortController(),
    );
    await send(response.body, stream);
    expect(chunks.join('')).toBe(`id: 1\ndata: ${JSON.stringify(envelope)}\n\n: keep-alive\n\n`);
    expect(stream.writableEnded).toBe(true);
  });

  it('stops reading events (and closes the producer) once the client has gone', async () => {
    const stream = new PassThrough();
    stream.resume();
    let produced = 0;
    let markClosed = (): void => {};
    const closed = new Promise<void>((resolve) => {
      markClosed = resolve;
    });
    const events = (async function* () {
      try {
        for (;;) {
          produced++;
          yield { comment: 'keep-alive' };
          if (produced === 2) stream.destroy();
          await new Promise((resolve) => setImmediate(resolve));
        }
      } finally {
        markClosed();
      }
    })();
    await send(toStreamingResponse(sse(events), new AbortController()).body, stream);
    // The producer is returned (a producer never closed times the test out), right after the client left.
    await closed;
    expect(produced).toBe(3);
  });

  it('aborts the connection signal when the client goes away, so a producer suspended in a wait ends at once', async () => {
    const stream = new PassThrough();
    const disconnected = new AbortController();
    const order: string[] = [];
    const events = (async function* () {
      try {
        yield { comment: 'keep-alive' };
        // Suspended until the signal: the body's `return()` alone waits for this wait to end.
        await new Promise<void>((resolve) => {
          disconnected.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        order.push('woken by the signal');
      } finally {
        order.push('producer closed');
      }
    })();
    const sent = send(toStreamingResponse(sse(events), disconnected).body, stream);
    await once(stream, 'data');
    expect(disconnected.signal.aborted).toBe(false);
    stream.destroy();
    await sent;
    expect(order).toEqual(['woken by the signal', 'producer closed']);
  });

  it('leaves the signal alone when the stream ends as it should', async () => {
    const stream = new PassThrough();
    stream.resume();
    const disconnected = new AbortController();
    await send(toStreamingResponse(sse(events([{ comment: 'keep-alive' }])), disconnected).body, stream);
    expect(stream.writableEnded).toBe(true);
    expect(disconnected.signal.aborted).toBe(false);
  });
});
