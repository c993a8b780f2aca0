import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/local-stack.ts';
import { parseConfig } from '../../shared/config/config.ts';
import { rpc, type SseFrame, stateOf } from '../conformance/sse.ts';
import { providedEndpoints } from '../support/local-guard.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Progressive output through the local stack (docs/architecture.md, "Progressive output"): a
 * profile whose scripted model streams its answer word by word. The chunks arrive on the creating
 * SSE stream while the model still writes; a SubscribeToTask re-attach with Last-Event-ID gets
 * exactly the revisions it missed; the webhook receives the same artifact updates in the same
 * order; GetTask holds the whole answer; at `redacted` no chunk carries what redaction removes.
 */

const output = { progressive: true, cadence: { ms: 100, bytes: 256 } };
const config = parseConfig({
  privacy: { level: 'full' },
  providers: {
    streamer: { type: 'scripted', behavior: 'stream', paceMs: 10 },
  },
  profiles: {
    default: { name: 'Streams', description: 'x', providers: ['streamer'], output },
    careful: {
      name: 'Redacted',
      description: 'x',
      providers: ['streamer'],
      privacyLevel: 'redacted',
      output,
    },
  },
  webhooks: { retryBaseSeconds: 1 },
  streaming: { heartbeatSeconds: 1, maxStreamSeconds: 120 },
});

let stack: LocalStack;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  stack = await startLocalStack({
    port: 0,
    config,
    endpoints: providedEndpoints(),
    prefix: 'e2e-progressive',
    log: () => {},
  });
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

interface ArtifactUpdate {
  readonly artifact: { readonly artifactId: string; readonly parts: readonly { text?: string }[] };
  readonly append?: boolean;
  readonly lastChunk?: boolean;
}
type Result = {
  artifactUpdate?: ArtifactUpdate;
  statusUpdate?: { status: { state: string } };
  task?: { id: string };
};

const resultOf = (frame: SseFrame): Result => (frame.data?.result ?? {}) as Result;
const textOf = (update: ArtifactUpdate) => update.artifact.parts.map((part) => part.text ?? '').join('');
const updateKey = (update: ArtifactUpdate) =>
  `${update.append === true}|${update.lastChunk === true}|${textOf(update)}`;

/** Reads a stream to its end, noting when each frame arrived. */
const readAll = async (
  answer: Awaited<ReturnType<typeof rpc>>,
  onFrame: (frames: readonly { frame: SseFrame; at: number }[]) => void = () => {},
) => {
  if (answer.kind !== 'sse') throw new Error(`did not stream: ${JSON.stringify(answer.body)}`);
  const frames: { frame: SseFrame; at: number }[] = [];
  for await (const frame of answer.frames) {
    if (frame.data === undefined) continue;
    frames.push({ frame, at: Date.now() });
    onFrame(frames);
  }
  return frames;
};

/** Each artifact update with its revision: only a revision's last frame carries the id. */
const artifactUpdatesByRevision = (frames: readonly { frame: SseFrame }[]) => {
  const found: { revision: number; key: string }[] = [];
  let pending: string[] = [];
  for (const { frame } of frames) {
    const update = resultOf(frame).artifactUpdate;
    if (update !== undefined) pending.push(updateKey(update));
    if (frame.id !== undefined) {
      found.push(...pending.map((key) => ({ revision: Number(frame.id), key })));
      pending = [];
    }
  }
  return found;
};

/** What a client holds after applying the artifact updates in order (append or replace). */
const applied = (updates: readonly ArtifactUpdate[]): string => {
  let text = '';
  for (const update of updates) text = update.append ? text + textOf(update) : textOf(update);
  return text;
};

const words = (count: number, extra = '') =>
  Array.from({ length: count }, (_, index) => `word${index}${index % 13 === 3 ? extra : ''}`).join(' ');

describe('progressive output through the local stack', () => {
  it('streams committed chunks while the model works, the same on SSE, a re-attach, the webhook and GetTask', async () => {
    const url = `${stack.baseUrl}/agents/default`;
    const text = words(200);
    // A re-attach opened while the model still writes, after the second chunk's revision.
    let reattach: { after: string; frames: Promise<{ frame: SseFrame; at: number }[]> } | undefined;
    const frames = await readAll(
      await rpc(url, 'SendStreamingMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
        configuration: { taskPushNotificationConfig: { url: `${receiver.url}/hook` } },
      }),
      (sofar) => {
        if (reattach !== undefined) return;
        const chunkIds = artifactUpdatesByRevision(sofar).filter(({ key }) => key.includes('|false|'));
        const second = chunkIds[1];
        if (second === undefined) return;
        const taskId = resultOf(sofar[0]!.frame).task?.id as string;
        const after = String(second.revision);
        reattach = {
          after,
          frames: rpc(url, 'SubscribeToTask', { id: taskId }, { 'Last-Event-ID': after }).then((answer) =>
            readAll(answer),
          ),
        };
      },
    );
    const taskId = resultOf(frames[0]!.frame).task?.id as string;
    const updates = frames.flatMap(({ frame, at }) => {
      const update = resultOf(frame).artifactUpdate;
      return update === undefined ? [] : [{ update, at, id: frame.id }];
    });
    const chunks = updates.filter(({ update }) => update.lastChunk === false);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.slice(1).every(({ update }) => update.append === true)).toBe(true);
    // The first chunk came while the model still wrote: well before the completing revision.
    const completedAt = frames.find(({ frame }) => stateOf(frame) === 'TASK_STATE_COMPLETED')?.at ?? 0;
    expect(completedAt - (chunks[0]?.at ?? completedAt)).toBeGreaterThan(300);
    expect(text.startsWith(applied(chunks.map(({ update }) => update)))).toBe(true);
    expect(applied(updates.map(({ update }) => update))).toBe(text);
    // Revision ids only grow.
    const ids = frames.flatMap(({ frame }) => (frame.id === undefined ? [] : [Number(frame.id)]));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));

    // A re-attach after the second chunk's revision gets exactly what followed it.
    if (reattach === undefined) throw new Error('no second chunk to re-attach after');
    const after = reattach.after;
    const reattached = await reattach.frames;
    const missed = artifactUpdatesByRevision(frames).filter(({ revision }) => revision > Number(after));
    expect(missed.length).toBeGreaterThan(0);
    expect(artifactUpdatesByRevision(reattached)).toEqual(missed);

    // The webhook: the same artifact updates in the same order (duplicates of a revision allowed).
    const isCompleted = (posts: readonly { body: unknown }[]) =>
      posts.some((post) => (post.body as Result).statusUpdate?.status.state === 'TASK_STATE_COMPLETED');
    await receiver.waitFor(isCompleted, 60_000);
    const posted = receiver.posts.flatMap((post) => {
      const update = (post.body as Result).artifactUpdate;
      return update === undefined ? [] : [updateKey(update)];
    });
    expect([...new Set(posted)]).toEqual(updates.map(({ update }) => updateKey(update)));

    // GetTask: the whole answer.
    const got = await rpc(url, 'GetTask', { id: taskId });
    const task = (got.kind === 'json' ? got.body.result : undefined) as {
      artifacts?: ArtifactUpdate['artifact'][];
    };
    expect(task.artifacts?.[0]?.parts).toEqual([{ text }]);
  });

  it('with its run in the rpc (no push config), the fed chunks arrive in order and add up to GetTask', async () => {
    const url = `${stack.baseUrl}/agents/default`;
    const text = words(200);
    const frames = await readAll(
      await rpc(url, 'SendStreamingMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
      }),
    );
    const taskId = resultOf(frames[0]!.frame).task?.id as string;
    const updates = frames.flatMap(({ frame }) => {
      const update = resultOf(frame).artifactUpdate;
      return update === undefined ? [] : [update];
    });
    const chunks = updates.filter((update) => update.lastChunk === false);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.slice(1).every((update) => update.append === true)).toBe(true);
    expect(text.startsWith(applied(chunks))).toBe(true);
    // Each revision once, in revision order (I-ORDER), ending COMPLETED.
    const ids = frames.flatMap(({ frame }) => (frame.id === undefined ? [] : [Number(frame.id)]));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, index) => (ids[0] ?? 0) + index));
    expect(stateOf(frames.at(-1)!.frame)).toBe('TASK_STATE_COMPLETED');
    // What the journal holds: a re-attach after the first revision reads the same updates from it.
    const reattached = await readAll(
      await rpc(url, 'SubscribeToTask', { id: taskId }, { 'Last-Event-ID': String(ids[0]) }),
    );
    const sent = (all: readonly { frame: SseFrame }[]) =>
      all.slice(1).map(({ frame }) => ({ id: frame.id, result: frame.data?.result }));
    expect(sent(reattached)).toEqual(sent(frames));
    // GetTask: the whole answer the chunks added up to.
    const got = await rpc(url, 'GetTask', { id: taskId });
    const task = (got.kind === 'json' ? got.body.result : undefined) as {
      artifacts?: ArtifactUpdate['artifact'][];
    };
    expect(task.artifacts?.[0]?.parts).toEqual([{ text }]);
    expect(applied(updates)).toBe(text);
  });

  it('at `redacted` no chunk carries what redaction removes', async () => {
    const text = words(80, ' write to someone@example.com today');
    const frames = await readAll(
      await rpc(`${stack.baseUrl}/agents/careful`, 'SendStreamingMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
      }),
    );
    const chunks = frames.filter(({ frame }) => resultOf(frame).artifactUpdate?.lastChunk === false);
    expect(chunks.length).toBeGreaterThan(1);
    // The artifact updates (the snapshot's history holds the caller's own message as sent).
    const all = JSON.stringify(frames.map(({ frame }) => resultOf(frame).artifactUpdate ?? null));
    expect(all).not.toContain('@example.com');
    expect(all).toContain('[REDACTED:EMAIL]');
  });
});
